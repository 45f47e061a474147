import { status as GrpcStatus, type ServerDuplexStream } from '@grpc/grpc-js';
import type { configV1 } from '@gateway/contracts';
import type { Logger } from '@gateway/logger';
import type { Propagation } from '../domain/admin-records.ts';
import type { ConfigPublisher } from '../domain/config-publisher.ts';
import type { ConfigSnapshot, ConfigSnapshotSource } from '../domain/config-snapshot.ts';
import { fullConfigUpdate, heartbeatConfigUpdate } from './config-update.ts';

/** One open StreamConfig call. */
interface Subscriber {
  call: ServerDuplexStream<configV1.ConfigAck, configV1.ConfigUpdate>;
  /** Set by the hello; a stream that has not said hello is not yet a connected proxy. */
  proxyId: string | undefined;
  /** The highest version written to this stream; 0 before its first snapshot. */
  sentVersion: bigint;
  /** The highest version this stream acknowledged (never above sentVersion). */
  ackedVersion: bigint;
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
  /** Ids of proxies that said hello on a stream still open. */
  connectedProxyIds(): string[];
  /** Ends every stream (proxies reconnect elsewhere), stops heartbeats and releases waiting calls. */
  close(): void;
}

/** Timing of the config stream. */
export interface ConfigStreamHubOptions {
  snapshots: ConfigSnapshotSource;
  logger: Logger;
  /** How long a config-changing call waits for acknowledgements, ms. */
  ackTimeoutMs: number;
  /** Interval of heartbeats on every stream, ms. */
  heartbeatIntervalMs: number;
}

/**
 * Serves ConfigService/StreamConfig as docs/config-stream.md describes: a full snapshot answers
 * every hello and every error ack; each committed change is sent as a full snapshot to every
 * proxy; heartbeats repeat the version a stream holds; `publish` waits for acknowledgements.
 */
export function createConfigStreamHub(options: ConfigStreamHubOptions): ConfigStreamHub {
  const { snapshots, logger } = options;
  const subscribers = new Set<Subscriber>();
  const waiters = new Set<AckWaiter>();
  let closing = false;

  // Broadcasts run one at a time; calls that arrive while one is queued share it, since each
  // broadcast reads the newest snapshot when it starts.
  let broadcastChain: Promise<void> = Promise.resolve();
  let queuedBroadcast: Promise<void> | undefined;

  const heartbeatTimer = setInterval(() => {
    const producedAtMs = Date.now();
    for (const subscriber of subscribers) {
      if (subscriber.proxyId !== undefined && subscriber.sentVersion > 0n) {
        write(subscriber, heartbeatConfigUpdate(subscriber.sentVersion, producedAtMs));
      }
    }
  }, options.heartbeatIntervalMs);
  heartbeatTimer.unref();

  function write(subscriber: Subscriber, update: configV1.ConfigUpdate): void {
    if (!subscriber.open || subscriber.call.destroyed || subscriber.call.writableEnded) return;
    try {
      subscriber.call.write(update);
    } catch (error) {
      // The stream went away between the check and the write; its close event removes it.
      logger.debug({ err: error, proxyId: subscriber.proxyId }, 'config update not written: stream closed');
      return;
    }
    if (update.version > subscriber.sentVersion) subscriber.sentVersion = update.version;
  }

  /** Writes a snapshot to a stream unless the stream already holds something newer. */
  function offer(subscriber: Subscriber, snapshot: ConfigSnapshot, evenIfSame: boolean): void {
    const isNewer = snapshot.version > subscriber.sentVersion;
    if (isNewer || (evenIfSame && snapshot.version === subscriber.sentVersion)) write(subscriber, fullConfigUpdate(snapshot, Date.now()));
  }

  function sendFullSnapshot(subscriber: Subscriber, reason: 'hello' | 'error_ack'): void {
    snapshots.load().then(
      (snapshot) => offer(subscriber, snapshot, reason === 'error_ack'),
      (error: unknown) => {
        logger.error({ err: error, proxyId: subscriber.proxyId }, 'config snapshot could not be built; ending the stream so the proxy retries');
        if (subscriber.open) subscriber.call.emit('error', { code: GrpcStatus.UNAVAILABLE, details: 'Configuration is temporarily unavailable.' });
      },
    );
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

  function onAck(subscriber: Subscriber, ack: configV1.ConfigAck): void {
    if (closing || !subscriber.open) return;
    if (subscriber.proxyId === undefined) {
      subscriber.proxyId = ack.proxyId !== '' ? ack.proxyId : `unnamed@${subscriber.call.getPeer()}`;
      logger.info({ proxyId: subscriber.proxyId, appliedVersion: ack.appliedVersion.toString() }, 'proxy connected to the config stream');
      sendFullSnapshot(subscriber, 'hello');
      return;
    }
    // A proxy cannot have applied more than it was sent; a larger claim is not trusted.
    const applied = ack.appliedVersion < subscriber.sentVersion ? ack.appliedVersion : subscriber.sentVersion;
    if (applied > subscriber.ackedVersion) subscriber.ackedVersion = applied;
    if (ack.error !== '') {
      logger.warn({ proxyId: subscriber.proxyId, appliedVersion: ack.appliedVersion.toString(), proxyError: ack.error.slice(0, 500) },
        'proxy could not apply a config update; resending a full snapshot');
      sendFullSnapshot(subscriber, 'error_ack');
    }
    checkWaiters();
  }

  async function broadcast(): Promise<void> {
    const snapshot = await snapshots.load();
    for (const subscriber of subscribers) {
      if (subscriber.proxyId !== undefined) offer(subscriber, snapshot, false);
    }
  }

  function requestBroadcast(): Promise<void> {
    if (!queuedBroadcast) {
      const run = broadcastChain.then(() => {
        queuedBroadcast = undefined;
        return broadcast();
      });
      queuedBroadcast = run;
      broadcastChain = run.catch(() => undefined);
    }
    return queuedBroadcast;
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
      const finish = () => {
        clearTimeout(timer);
        waiters.delete(waiter);
        const pending = pendingIds();
        if (pending.length > 0) {
          logger.warn({ version: version.toString(), pendingProxyIds: pending }, 'proxies did not acknowledge the config version in time; it reaches them when they resync');
        }
        resolve({ acknowledged: pending.length === 0, pendingProxyIds: pending });
      };
      const waiter: AckWaiter = { version, proxyIds, settle: finish };
      const timer = setTimeout(finish, options.ackTimeoutMs);
      waiters.add(waiter);
    });
  }

  return {
    service: {
      streamConfig(call) {
        if (closing) {
          call.emit('error', { code: GrpcStatus.UNAVAILABLE, details: 'The admin is shutting down.' });
          return;
        }
        const subscriber: Subscriber = { call, proxyId: undefined, sentVersion: 0n, ackedVersion: 0n, open: true };
        subscribers.add(subscriber);
        call.on('data', (ack: configV1.ConfigAck) => onAck(subscriber, ack));
        call.on('end', () => {
          // The proxy half-closed: finish our side too.
          remove(subscriber);
          if (!call.writableEnded) call.end();
        });
        call.on('cancelled', () => remove(subscriber));
        call.on('error', () => remove(subscriber));
        call.on('close', () => remove(subscriber));
      },
    },

    async publish(version) {
      // Who must acknowledge: the proxies connected at the moment the change is published.
      const proxyIds = new Set(connectedProxyIds());
      try {
        await requestBroadcast();
      } catch (error) {
        // The change is committed; proxies get it with the next snapshot or on reconnect.
        logger.error({ err: error, version: version.toString() }, 'config snapshot could not be broadcast');
      }
      return waitForAcknowledgement(version, proxyIds);
    },

    connectedProxyIds,

    close() {
      if (closing) return;
      closing = true;
      clearInterval(heartbeatTimer);
      for (const waiter of [...waiters]) waiter.settle();
      for (const subscriber of [...subscribers]) {
        remove(subscriber);
        if (!subscriber.call.writableEnded) subscriber.call.end();
      }
    },
  };
}
