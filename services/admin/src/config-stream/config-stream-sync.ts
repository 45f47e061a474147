import type { configV1 } from '@gateway/contracts';
import type { Logger } from '@gateway/logger';
import type { ConfigSnapshotSource } from '../catalog/domain/config-snapshot.ts';
import { deltaConfigUpdate, splitConfigUpdate } from './config-update.ts';
import type { ConfigSubscribers, Subscriber } from './config-subscribers.ts';
import type { FullUpdates } from './full-snapshot-updates.ts';

/** What bringing streams up to date needs. */
export interface StreamSyncDeps {
  snapshots: ConfigSnapshotSource;
  logger: Logger;
  subscribers: ConfigSubscribers;
  /** The newest full snapshot, shared by every stream. */
  loadFull(): Promise<FullUpdates>;
  /** Largest update sent in one message, bytes; larger ones are split. */
  maxUpdateBytes: number;
  /** Whether the hub is closing (no more syncs). */
  isClosing(): boolean;
}

/** Writing updates to one stream and bringing it up to the newest committed version. */
export interface StreamSync {
  /**
   * Writes one update and records what its ack will mean; resolves false when the stream is
   * gone, else true once it can take more (a proxy slow to read holds the writer here).
   */
  write(subscriber: Subscriber, update: configV1.ConfigUpdate, completes: boolean): Promise<boolean>;
  /**
   * Brings one stream up to the newest committed version: a full snapshot when it needs one,
   * else a delta from the version it holds. Runs one at a time per stream; a request while one
   * runs makes it look again, so no change is missed and none is sent twice.
   */
  sync(subscriber: Subscriber): Promise<void>;
}

/** Builds the writer and the per-stream sync of the config stream. */
export function createStreamSync({ snapshots, logger, subscribers, loadFull, maxUpdateBytes, isClosing }: StreamSyncDeps): StreamSync {
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

  /** One pass of a sync: a full snapshot or a delta, whichever the stream needs. */
  async function syncOnce(subscriber: Subscriber): Promise<void> {
    if (subscriber.needsFull) {
      const full = await loadFull();
      if (!subscriber.open) return;
      subscriber.needsFull = false;
      await writeParts(subscriber, full.parts);
      logger.debug({ proxyId: subscriber.proxyId, version: full.version.toString(), parts: full.parts.length }, 'full config snapshot sent');
      return;
    }
    const delta = await snapshots.deltaSince(subscriber.sentVersion);
    if (!subscriber.open) return;
    if (delta === 'full_needed') {
      subscriber.needsFull = true;
      subscriber.syncAgain = true;
    } else if (delta.version > subscriber.sentVersion) {
      await writeParts(subscriber, splitConfigUpdate(deltaConfigUpdate(delta, Date.now()), maxUpdateBytes));
    }
  }

  async function sync(subscriber: Subscriber): Promise<void> {
    if (subscriber.syncing) {
      subscriber.syncAgain = true;
      return;
    }
    subscriber.syncing = true;
    try {
      do {
        subscriber.syncAgain = false;
        if (!subscriber.open || isClosing()) break;
        await syncOnce(subscriber);
        if (!subscriber.open) break;
      } while (subscriber.syncAgain);
    } catch (error) {
      logger.error({ err: error, proxyId: subscriber.proxyId }, 'config could not be read; ending the stream so the proxy retries');
      subscribers.disconnect(subscriber, 'Configuration is temporarily unavailable.');
    } finally {
      subscriber.syncing = false;
    }
  }

  return { write, sync };
}
