import { assertOutsideTransaction } from '@gateway/db';
import { status as GrpcStatus, type ServiceDefinition } from '@grpc/grpc-js';
import type { configV1 } from '@gateway/contracts';
import { duplexStream } from '@gateway/grpc';
import type { Logger } from '@gateway/logger';
import type { ConfigPublisher } from '../common/domain/config-publisher.ts';
import type { ConfigSnapshotSource } from '../catalog/domain/config-snapshot.ts';
import { createStreamSync, type StreamSync } from './config-stream-sync.ts';
import { createConfigSubscribers, type ConfigSubscribers, type Subscriber } from './config-subscribers.ts';
import { heartbeatConfigUpdate, maxConfigUpdateBytes, type ResponseStoreSettings } from './config-update.ts';
import { createFullSnapshotUpdates } from './full-snapshot-updates.ts';

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

/** Starts the heartbeat and change-log pruning timers; returns what stops them. */
function startHubTimers(options: ConfigStreamHubOptions, subscribers: ConfigSubscribers, streams: StreamSync): () => void {
  const heartbeatTimer = setInterval(() => {
    for (const subscriber of subscribers.all) {
      if (subscriber.proxyId === undefined || subscriber.sentVersion === 0n) continue;
      // Catch up first (a change made through another admin replica), then beat.
      void streams.sync(subscriber).then(() => {
        if (subscriber.syncing || subscriber.sentVersion === 0n) return;
        void streams.write(subscriber, heartbeatConfigUpdate(subscriber.sentVersion, Date.now()), true);
      });
    }
  }, options.heartbeatIntervalMs);
  heartbeatTimer.unref();

  const pruneTimer = setInterval(() => {
    options.snapshots.prune(options.changeLogRetentionMs ?? 3_600_000).then(
      (pruned) => { if (pruned > 0) options.logger.debug({ pruned }, 'config change log pruned'); },
      (error: unknown) => options.logger.warn({ err: error }, 'config change log could not be pruned'),
    );
  }, pruneIntervalMs);
  pruneTimer.unref();
  return () => {
    clearInterval(heartbeatTimer);
    clearInterval(pruneTimer);
  };
}

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
  let closing = false;
  const subscribers = createConfigSubscribers(logger, options.ackTimeoutMs);
  const full = createFullSnapshotUpdates({
    snapshots, toolCallIdKey: options.toolCallIdKey, cacheScopeKey: options.cacheScopeKey, responseStore: options.responseStore, maxUpdateBytes,
  });
  const streams = createStreamSync({ snapshots, logger, subscribers, loadFull: full.load, maxUpdateBytes, isClosing: () => closing });
  const stopTimers = startHubTimers(options, subscribers, streams);

  // Built ahead, so the first proxy to connect does not wait for it.
  full.load().catch((error: unknown) => logger.warn({ err: error }, 'config snapshot could not be prepared ahead; it is built on the first hello'));

  function onAck(subscriber: Subscriber, ack: configV1.ConfigAck): void {
    if (closing || !subscriber.open) return;
    if (subscriber.proxyId === undefined) {
      subscriber.proxyId = ack.proxyId !== '' ? ack.proxyId : `unnamed@${subscriber.peer()}`;
      logger.info({ proxyId: subscriber.proxyId, appliedVersion: ack.appliedVersion.toString() }, 'proxy connected to the config stream');
      subscriber.needsFull = true;
      void streams.sync(subscriber);
      return;
    }
    const answered = subscriber.inFlight.shift();
    if (ack.error !== '') {
      logger.warn({ proxyId: subscriber.proxyId, appliedVersion: ack.appliedVersion.toString(), proxyError: ack.error.slice(0, 500) },
        'proxy could not apply a config update; resending a full snapshot');
      subscriber.needsFull = true;
      void streams.sync(subscriber);
      return;
    }
    subscribers.recordApplied(subscriber, ack.appliedVersion, answered);
  }

  return {
    definition: full.definition,
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
          subscribers.remove(subscriber);
          stream.end();
        })();
      },
    },

    async publish(version) {
      // It waits for every connected proxy's acknowledgement: never with a transaction open.
      assertOutsideTransaction('config publish');
      // Who must acknowledge: the proxies connected at the moment the change is published.
      const proxyIds = new Set(subscribers.connectedProxyIds());
      for (const subscriber of subscribers.all) {
        if (subscriber.proxyId !== undefined) void streams.sync(subscriber);
      }
      return subscribers.waitForAcknowledgement(version, proxyIds, closing);
    },

    connectedProxyIds: () => subscribers.connectedProxyIds(),

    close() {
      if (closing) return;
      closing = true;
      stopTimers();
      subscribers.settleAll();
      for (const subscriber of [...subscribers.all]) {
        subscribers.remove(subscriber);
        subscriber.stream.end();
      }
    },
  };
}
