import type { ServiceDefinition } from '@grpc/grpc-js';
import { configV1 } from '@gateway/contracts';
import type { ConfigSnapshotSource } from '../catalog/domain/config-snapshot.ts';
import { fullConfigUpdate, splitConfigUpdate, type ResponseStoreSettings } from './config-update.ts';

/** One version's full snapshot, split into the updates a stream is sent in order. */
export interface FullUpdates {
  version: bigint;
  parts: configV1.ConfigUpdate[];
}

/** What a full snapshot is built from. */
export interface FullSnapshotOptions {
  snapshots: ConfigSnapshotSource;
  /** The key proxies seal tool-call ids with, sent in every full snapshot. Never logged. */
  toolCallIdKey: Buffer;
  /** The key proxies scope prompt caches per organisation with, sent in every full snapshot. Never logged. */
  cacheScopeKey?: Buffer | undefined;
  /** The stored-Responses key and the platform's retention, sent in every full snapshot. */
  responseStore?: ResponseStoreSettings | undefined;
  /** Largest update sent in one message, bytes; larger ones are split. */
  maxUpdateBytes: number;
}

/** The newest full snapshot, built once per version and shared by every stream, with the gRPC definition that sends its bytes. */
export interface FullSnapshotUpdates {
  /** The full snapshot of the newest committed version (streams saying hello together share one build). */
  load(): Promise<FullUpdates>;
  /**
   * The ConfigService definition to serve: the generated one, except that a full snapshot's
   * parts are encoded once per version and the same bytes are sent to every proxy.
   */
  readonly definition: ServiceDefinition;
}

/** Builds full snapshots once per version (encoding 100k entries takes hundreds of ms: do it once, not per proxy). */
export function createFullSnapshotUpdates(options: FullSnapshotOptions): FullSnapshotUpdates {
  /** The split full snapshot of the newest version loaded, shared by every stream that needs it. */
  let fullUpdates: FullUpdates | undefined;
  /** A full snapshot being built; streams saying hello together share it. */
  let fullUpdatesInFlight: Promise<FullUpdates> | undefined;
  /** The encoded bytes of full-snapshot parts. */
  const encodedParts = new WeakMap<configV1.ConfigUpdate, Buffer>();
  const definition: ServiceDefinition = {
    ...configV1.ConfigServiceService,
    streamConfig: {
      ...configV1.ConfigServiceService.streamConfig,
      responseSerialize: (update: configV1.ConfigUpdate) => encodedParts.get(update) ?? Buffer.from(configV1.ConfigUpdate.encode(update).finish()),
    },
  };

  function load(): Promise<FullUpdates> {
    fullUpdatesInFlight ??= (async () => {
      const snapshot = await options.snapshots.load();
      if (fullUpdates?.version !== snapshot.version) {
        const update = fullConfigUpdate(snapshot, Date.now(), options.toolCallIdKey, { cacheScopeKey: options.cacheScopeKey, responseStore: options.responseStore });
        const parts = splitConfigUpdate(update, options.maxUpdateBytes);
        for (const part of parts) encodedParts.set(part, Buffer.from(configV1.ConfigUpdate.encode(part).finish()));
        fullUpdates = { version: snapshot.version, parts };
      }
      return fullUpdates;
    })().finally(() => { fullUpdatesInFlight = undefined; });
    return fullUpdatesInFlight;
  }

  return { load, definition };
}
