import { assertOutsideTransaction } from '@gateway/db';
import { status as GrpcStatus, type ServiceDefinition } from '@grpc/grpc-js';
import { configV1 } from '@gateway/contracts';
import { duplexStream, type ServerDuplexStreamHandle } from '@gateway/grpc';
import type { Logger } from '@gateway/logger';
import type { Propagation } from '../common/domain/admin-records.ts';
import type { ConfigPublisher } from '../common/domain/config-publisher.ts';
import type { ConfigSnapshotSource } from '../catalog/domain/config-snapshot.ts';
import {
  deltaConfigUpdate, fullConfigUpdate, heartbeatConfigUpdate, maxConfigUpdateBytes, splitConfigUpdate, type ResponseStoreSettings,
} from './config-update.ts';

/** What one written update means once the proxy acknowledges it. */
interface InFlightUpdate {
  version: bigint;
  /** false for every part of a split update but the last: its ack does not mean the version is applied. */
  completes: boolean;
}

/** One open StreamConfig call. */
interface Subscriber {
  stream: ServerDuplexStreamHandle<configV1.ConfigAck, configV1.ConfigUpdate>;
  /** The proxy's address, named in place of an id a hello left empty. */
  peer: () => string;
  /** Set by the hello; a stream that has not said hello is not yet a connected proxy. */
  proxyId: string | undefined;
  /** The highest version fully written to this stream; 0 before its first snapshot. */
  sentVersion: bigint;
  /** The highest version this stream acknowledged as applied (never above what it was sent). */
  ackedVersion: bigint;
  /** The next sync sends a full snapshot: after the hello, and after an error ack. */
  needsFull: boolean;
  /** Updates written and not yet acknowledged, oldest first: the proxy acks each exactly once, in order. */
  inFlight: InFlightUpdate[];
  /** A sync is running; `syncAgain` asks it to look once more when it finishes. */
  syncing: boolean;
  syncAgain: boolean;
  open: boolean;
}

/** A config-changing call waiting for proxies to acknowledge its version. */
interface AckWaiter {
  version: bigint;
  proxyIds: Set<string>;
  settle(): void;
}

/** The config stream's server side: the StreamConfig handler plus the publisher admin calls use. */
export interface ConfigStreamHub extends ConfigPublisher {
  /** The gateway.config.v1.ConfigService implementation to add to a grpc-js Server. */
  readonly service: configV1.ConfigServiceServer;
  /**
   * The service definition to add it with: the generated one, except that a full snapshot's
   * parts are encoded once per version and the same bytes are sent to every proxy.
   */
  readonly definition: ServiceDefinition;
  /** Ids of proxies that said hello on a stream still open. */
  connectedProxyIds(): string[];
  /** Ends every stream (proxies reconnect elsewhere), stops heartbeats and releases waiting calls. */
  close(): void;
}

/** Timing of the config stream. */
export interface ConfigStreamHubOptions {
  snapshots: ConfigSnapshotSource;
  /** The key proxies seal tool-call ids with (deriveToolCallIdKey), sent in every full snapshot. Never logged. */
  toolCallIdKey: Buffer;
  /** The key proxies keep prompt caches per organisation with (deriveCacheScopeKey), sent in every full snapshot. Never logged. */
  cacheScopeKey?: Buffer;
  /** The stored-Responses key and the platform's retention, sent in every full snapshot; absent in tests that need none. */
  responseStore?: ResponseStoreSettings;
  logger: Logger;
  /** How long a config-changing call waits for acknowledgements, ms. */
  ackTimeoutMs: number;
  /** Interval of heartbeats on every stream, ms. */
  heartbeatIntervalMs: number;
  /** Largest update sent in one message, bytes; larger ones are split. Default maxConfigUpdateBytes. */
  maxUpdateBytes?: number;
  /** How long change-log rows are kept, ms (a stream further behind gets a full snapshot). Default 1 hour. */
  changeLogRetentionMs?: number;
}

/** How often old change-log rows are pruned, ms. */
const pruneIntervalMs = 60_000;

/**
 * Serves ConfigService/StreamConfig as docs/config-stream.md describes: a full snapshot answers
 * every hello and every error ack; each committed change reaches every proxy as a delta from
 * the version its stream holds (built from the change log, so several changes coalesce into
 * one delta); heartbeats repeat the version a stream holds and also pick up changes committed
 * by another admin replica; `publish` waits for acknowledgements and disconnects proxies that
 * do not acknowledge in time, so they resync from a full snapshot.
 */
export function createConfigStreamHub(options: ConfigStreamHubOptions): ConfigStreamHub {
  const { snapshots, logger } = options;
  const maxUpdateBytes = options.maxUpdateBytes ?? maxConfigUpdateBytes;
  const subscribers = new Set<Subscriber>();
  const waiters = new Set<AckWaiter>();
  let closing = false;
  /** The split full snapshot of the newest version loaded, shared by every stream that needs it. */
  let fullUpdates: { version: bigint; parts: configV1.ConfigUpdate[] } | undefined;
  /** A full snapshot being built; streams saying hello together share it. */
  let fullUpdatesInFlight: Promise<{ version: bigint; parts: configV1.ConfigUpdate[] }> | undefined;
  /** The encoded bytes of full-snapshot parts (encoding 100k entries takes hundreds of ms: do it once). */
  const encodedParts = new WeakMap<configV1.ConfigUpdate, Buffer>();
  const definition: ServiceDefinition = {
    ...configV1.ConfigServiceService,
    streamConfig: {
      ...configV1.ConfigServiceService.streamConfig,
      responseSerialize: (update: configV1.ConfigUpdate) => encodedParts.get(update) ?? Buffer.from(configV1.ConfigUpdate.encode(update).finish()),
    },
  };

  const heartbeatTimer = setInterval(() => {
    for (const subscriber of subscribers) {
      if (subscriber.proxyId === undefined || subscriber.sentVersion === 0n) continue;
      // Catch up first (a change made through another admin replica), then beat.
      void sync(subscriber).then(() => {
        if (subscriber.syncing || subscriber.sentVersion === 0n) return;
        void write(subscriber, heartbeatConfigUpdate(subscriber.sentVersion, Date.now()), true);
      });
    }
  }, options.heartbeatIntervalMs);
  heartbeatTimer.unref();

  const pruneTimer = setInterval(() => {
    snapshots.prune(options.changeLogRetentionMs ?? 3_600_000).then(
      (pruned) => { if (pruned > 0) logger.debug({ pruned }, 'config change log pruned'); },
      (error: unknown) => logger.warn({ err: error }, 'config change log could not be pruned'),
    );
  }, pruneIntervalMs);
  pruneTimer.unref();

  /**
   * Writes one update and records what its ack will mean; resolves false when the stream is
   * gone, else true once it can take more (a proxy slow to read holds the writer here).
   */
  function write(subscriber: Subscriber, update: configV1.ConfigUpdate, completes: boolean): Promise<boolean> {
    if (!subscriber.open || !subscriber.stream.writable) return Promise.resolve(false);
    // The write happens now, so the record below is in the order the proxy will ack.
    const accepted = subscriber.stream.send(update);
    subscriber.inFlight.push({ version: update.version, completes });
    return accepted.then((written) => {
      // The stream went away meanwhile; the end of its iteration removes it.
      if (!written) logger.debug({ proxyId: subscriber.proxyId }, 'config update not written: stream closed');
      return written;
    });
  }

  /** Writes the parts of one version in order; the version counts as sent once all are written. */
  async function writeParts(subscriber: Subscriber, parts: readonly configV1.ConfigUpdate[]): Promise<void> {
    for (const [index, part] of parts.entries()) {
      if (!await write(subscriber, part, index === parts.length - 1)) return;
    }
    const version = parts[0]!.version;
    if (version > subscriber.sentVersion) subscriber.sentVersion = version;
  }

  function loadFullUpdates(): Promise<{ version: bigint; parts: configV1.ConfigUpdate[] }> {
    fullUpdatesInFlight ??= (async () => {
      const snapshot = await snapshots.load();
      if (fullUpdates?.version !== snapshot.version) {
        const parts = splitConfigUpdate(fullConfigUpdate(snapshot, Date.now(), options.toolCallIdKey, { cacheScopeKey: options.cacheScopeKey, responseStore: options.responseStore }), maxUpdateBytes);
        for (const part of parts) encodedParts.set(part, Buffer.from(configV1.ConfigUpdate.encode(part).finish()));
        fullUpdates = { version: snapshot.version, parts };
      }
      return fullUpdates;
    })().finally(() => { fullUpdatesInFlight = undefined; });
    return fullUpdatesInFlight;
  }

  // Built ahead, so the first proxy to connect does not wait for it.
  loadFullUpdates().catch((error: unknown) => logger.warn({ err: error }, 'config snapshot could not be prepared ahead; it is built on the first hello'));

  /**
   * Brings one stream up to the newest committed version: a full snapshot when it needs one,
   * else a delta from the version it holds. Runs one at a time per stream; a request while one
   * runs makes it look again, so no change is missed and none is sent twice.
   */
  async function sync(subscriber: Subscriber): Promise<void> {
    if (subscriber.syncing) {
      subscriber.syncAgain = true;
      return;
    }
    subscriber.syncing = true;
    try {
      do {
        subscriber.syncAgain = false;
        if (!subscriber.open || closing) break;
        if (subscriber.needsFull) {
          const full = await loadFullUpdates();
          if (!subscriber.open) break;
          subscriber.needsFull = false;
          await writeParts(subscriber, full.parts);
          logger.debug({ proxyId: subscriber.proxyId, version: full.version.toString(), parts: full.parts.length }, 'full config snapshot sent');
        } else {
          const delta = await snapshots.deltaSince(subscriber.sentVersion);
          if (!subscriber.open) break;
          if (delta === 'full_needed') {
            subscriber.needsFull = true;
            subscriber.syncAgain = true;
          } else if (delta.version > subscriber.sentVersion) {
            await writeParts(subscriber, splitConfigUpdate(deltaConfigUpdate(delta, Date.now()), maxUpdateBytes));
          }
        }
      } while (subscriber.syncAgain);
    } catch (error) {
      logger.error({ err: error, proxyId: subscriber.proxyId }, 'config could not be read; ending the stream so the proxy retries');
      disconnect(subscriber, 'Configuration is temporarily unavailable.');
    } finally {
      subscriber.syncing = false;
    }
  }

  function isAcknowledgedBy(proxyId: string, version: bigint): boolean {
    for (const subscriber of subscribers) {
      if (subscriber.proxyId === proxyId && subscriber.ackedVersion >= version) return true;
    }
    return false;
  }

  function checkWaiters(): void {
    for (const waiter of waiters) {
      if ([...waiter.proxyIds].every((proxyId) => isAcknowledgedBy(proxyId, waiter.version))) waiter.settle();
    }
  }

  function remove(subscriber: Subscriber): void {
    if (!subscriber.open) return;
    subscriber.open = false;
    subscribers.delete(subscriber);
    if (subscriber.proxyId !== undefined) logger.info({ proxyId: subscriber.proxyId }, 'proxy disconnected from the config stream');
  }

  /** Ends a stream with UNAVAILABLE: the proxy reconnects and resyncs from a full snapshot. */
  function disconnect(subscriber: Subscriber, details: string): void {
    if (!subscriber.open) return;
    remove(subscriber);
    subscriber.stream.fail({ code: GrpcStatus.UNAVAILABLE, details });
  }

  function onAck(subscriber: Subscriber, ack: configV1.ConfigAck): void {
    if (closing || !subscriber.open) return;
    if (subscriber.proxyId === undefined) {
      subscriber.proxyId = ack.proxyId !== '' ? ack.proxyId : `unnamed@${subscriber.peer()}`;
      logger.info({ proxyId: subscriber.proxyId, appliedVersion: ack.appliedVersion.toString() }, 'proxy connected to the config stream');
      subscriber.needsFull = true;
      void sync(subscriber);
      return;
    }
    const answered = subscriber.inFlight.shift();
    if (ack.error !== '') {
      logger.warn({ proxyId: subscriber.proxyId, appliedVersion: ack.appliedVersion.toString(), proxyError: ack.error.slice(0, 500) },
        'proxy could not apply a config update; resending a full snapshot');
      subscriber.needsFull = true;
      void sync(subscriber);
      return;
    }
    // A proxy cannot have applied more than the update it answers (or, for an unexpected extra
    // ack, more than it was sent); a part of a split update does not complete its version.
    if (answered === undefined || answered.completes) {
      const limit = answered?.version ?? subscriber.sentVersion;
      const applied = ack.appliedVersion < limit ? ack.appliedVersion : limit;
      if (applied > subscriber.ackedVersion) subscriber.ackedVersion = applied;
    }
    checkWaiters();
  }

  function connectedProxyIds(): string[] {
    const ids = new Set<string>();
    for (const subscriber of subscribers) if (subscriber.proxyId !== undefined) ids.add(subscriber.proxyId);
    return [...ids].sort();
  }

  function waitForAcknowledgement(version: bigint, proxyIds: Set<string>): Promise<Propagation> {
    return new Promise((resolve) => {
      const pendingIds = () => [...proxyIds].filter((proxyId) => !isAcknowledgedBy(proxyId, version)).sort();
      if (pendingIds().length === 0 || closing) {
        resolve({ acknowledged: pendingIds().length === 0, pendingProxyIds: pendingIds() });
        return;
      }
      let timedOut = false;
      const finish = () => {
        clearTimeout(timer);
        waiters.delete(waiter);
        const pending = pendingIds();
        if (pending.length > 0) {
          logger.warn({ version: version.toString(), pendingProxyIds: pending }, 'proxies did not acknowledge the config version in time; disconnecting them so they resync');
          if (timedOut) {
            for (const subscriber of [...subscribers]) {
              if (subscriber.proxyId !== undefined && pending.includes(subscriber.proxyId) && subscriber.ackedVersion < version) {
                disconnect(subscriber, 'The config version was not acknowledged in time; reconnect to resync.');
              }
            }
          }
        }
        resolve({ acknowledged: pending.length === 0, pendingProxyIds: pending });
      };
      const waiter: AckWaiter = { version, proxyIds, settle: finish };
      const timer = setTimeout(() => {
        timedOut = true;
        finish();
      }, options.ackTimeoutMs);
      waiters.add(waiter);
    });
  }

  return {
    definition,
    service: {
      streamConfig(call) {
        const stream = duplexStream(call);
        if (closing) {
          stream.fail({ code: GrpcStatus.UNAVAILABLE, details: 'The admin is shutting down.' });
          return;
        }
        const subscriber: Subscriber = {
          stream, peer: () => call.getPeer(), proxyId: undefined, sentVersion: 0n, ackedVersion: 0n, needsFull: true, inFlight: [],
          syncing: false, syncAgain: false, open: true,
        };
        subscribers.add(subscriber);
        void (async () => {
          try {
            for await (const ack of stream) onAck(subscriber, ack);
          } catch {
            // The call broke; the proxy reconnects.
          }
          // The proxy half-closed or went away, or this side ended the stream: finish ours too.
          remove(subscriber);
          stream.end();
        })();
      },
    },

    async publish(version) {
      // It waits for every connected proxy's acknowledgement: never with a transaction open.
      assertOutsideTransaction('config publish');
      // Who must acknowledge: the proxies connected at the moment the change is published.
      const proxyIds = new Set(connectedProxyIds());
      for (const subscriber of subscribers) {
        if (subscriber.proxyId !== undefined) void sync(subscriber);
      }
      return waitForAcknowledgement(version, proxyIds);
    },

    connectedProxyIds,

    close() {
      if (closing) return;
      closing = true;
      clearInterval(heartbeatTimer);
      clearInterval(pruneTimer);
      for (const waiter of [...waiters]) waiter.settle();
      for (const subscriber of [...subscribers]) {
        remove(subscriber);
        subscriber.stream.end();
      }
    },
  };
}
