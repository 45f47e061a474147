import { status as GrpcStatus } from '@grpc/grpc-js';
import type { configV1 } from '@gateway/contracts';
import type { ServerDuplexStreamHandle } from '@gateway/grpc';
import type { Logger } from '@gateway/logger';
import type { Propagation } from '../common/domain/admin-records.ts';

/** What one written update means once the proxy acknowledges it. */
interface InFlightUpdate {
  version: bigint;
  /** false for every part of a split update but the last: its ack does not mean the version is applied. */
  completes: boolean;
}

/** One open StreamConfig call. */
export interface Subscriber {
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

/** The open streams and the calls waiting for their acknowledgements. */
export interface ConfigSubscribers {
  /** Every open stream (said hello or not). */
  readonly all: ReadonlySet<Subscriber>;
  add(subscriber: Subscriber): void;
  /** Forgets a stream (idempotent). */
  remove(subscriber: Subscriber): void;
  /** Ends a stream with UNAVAILABLE: the proxy reconnects and resyncs from a full snapshot. */
  disconnect(subscriber: Subscriber, details: string): void;
  /** Records what an ack of `answered` (the oldest update in flight) says the proxy applied, and releases waiters it satisfies. */
  recordApplied(subscriber: Subscriber, appliedVersion: bigint, answered: InFlightUpdate | undefined): void;
  /** Ids of proxies that said hello on a stream still open, sorted. */
  connectedProxyIds(): string[];
  /**
   * Resolves once every proxy of `proxyIds` acknowledged `version`, or after `ackTimeoutMs`
   * (disconnecting those that did not, so they resync). `closing`: answer at once.
   */
  waitForAcknowledgement(version: bigint, proxyIds: Set<string>, closing: boolean): Promise<Propagation>;
  /** Releases every waiting call (the hub is closing). */
  settleAll(): void;
}

/** The subscriber and acknowledgement bookkeeping of the config stream. `ackTimeoutMs`: how long a publish waits, ms. */
export function createConfigSubscribers(logger: Logger, ackTimeoutMs: number): ConfigSubscribers {
  const subscribers = new Set<Subscriber>();
  const waiters = new Set<AckWaiter>();

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

  function disconnect(subscriber: Subscriber, details: string): void {
    if (!subscriber.open) return;
    remove(subscriber);
    subscriber.stream.fail({ code: GrpcStatus.UNAVAILABLE, details });
  }

  function recordApplied(subscriber: Subscriber, appliedVersion: bigint, answered: InFlightUpdate | undefined): void {
    // A proxy cannot have applied more than the update it answers (or, for an unexpected extra
    // ack, more than it was sent); a part of a split update does not complete its version.
    if (answered === undefined || answered.completes) {
      const limit = answered?.version ?? subscriber.sentVersion;
      const applied = appliedVersion < limit ? appliedVersion : limit;
      if (applied > subscriber.ackedVersion) subscriber.ackedVersion = applied;
    }
    checkWaiters();
  }

  function connectedProxyIds(): string[] {
    const ids = new Set<string>();
    for (const subscriber of subscribers) if (subscriber.proxyId !== undefined) ids.add(subscriber.proxyId);
    return [...ids].sort();
  }

  /** Disconnects the streams of `pending` proxies still below `version`. */
  function disconnectLagging(pending: readonly string[], version: bigint): void {
    for (const subscriber of [...subscribers]) {
      if (subscriber.proxyId !== undefined && pending.includes(subscriber.proxyId) && subscriber.ackedVersion < version) {
        disconnect(subscriber, 'The config version was not acknowledged in time; reconnect to resync.');
      }
    }
  }

  function waitForAcknowledgement(version: bigint, proxyIds: Set<string>, closing: boolean): Promise<Propagation> {
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
          if (timedOut) disconnectLagging(pending, version);
        }
        resolve({ acknowledged: pending.length === 0, pendingProxyIds: pending });
      };
      const waiter: AckWaiter = { version, proxyIds, settle: finish };
      const timer = setTimeout(() => {
        timedOut = true;
        finish();
      }, ackTimeoutMs);
      waiters.add(waiter);
    });
  }

  return {
    all: subscribers,
    add: (subscriber) => { subscribers.add(subscriber); },
    remove,
    disconnect,
    recordApplied,
    connectedProxyIds,
    waitForAcknowledgement,
    settleAll: () => { for (const waiter of [...waiters]) waiter.settle(); },
  };
}
