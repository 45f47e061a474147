import type { Database } from '@gateway/db';
import type { Logger } from '@gateway/logger';
import { findRecalledGrants } from '../domain/grants.ts';

/** One Operate stream as the recall push sees it: how to push, and which recalls it was already told. */
export interface RecallTarget {
  push(grantIds: string[]): void;
  /** Grant ids already pushed on this stream (pruned to those still held and recalled). */
  pushed: Set<string>;
  /**
   * Grants acquired or adjusted through this stream: its owner carves them only while this
   * stream is open (docs/proxy.md), so when the owner goes away they are closed at once.
   */
  grantIds: Set<string>;
}

/** The recall push of one replica (docs/ledger.md "Recall"): recalled grants told to the Operate streams of their owners. */
export interface RecallPush {
  /** Pushes recalls to the streams of their owners that this replica serves, each id once per stream. */
  push(recalled: ReadonlyArray<{ grantId: string; ownerId: string }>): void;
  /** Registers a stream as serving an owner (learned from its grant messages); starts the poller. */
  serveOwner(ownerId: string, target: RecallTarget): void;
  /** Forgets a stream that ended; stops the poller when no owner is served. */
  forget(target: RecallTarget): void;
  /** Stops the poller for good (shutdown): streams registered later start none. */
  stop(): void;
}

/**
 * The recall push: owner (PROXY_ID) -> the Operate streams of this replica that carried its grant
 * messages, and a poller (every `pollIntervalMs`, ms) that finds recalled held grants of those
 * owners (marked by any replica) and pushes those not yet pushed.
 */
export function createRecallPush(db: Database, logger: Logger, pollIntervalMs: number): RecallPush {
  const recallTargets = new Map<string, Set<RecallTarget>>();
  let recallTimer: NodeJS.Timeout | undefined;
  let recallPolling = false;
  let stopped = false;

  const push = (recalled: ReadonlyArray<{ grantId: string; ownerId: string }>) => {
    const byOwner = new Map<string, string[]>();
    for (const { grantId, ownerId } of recalled) byOwner.set(ownerId, [...(byOwner.get(ownerId) ?? []), grantId]);
    for (const [ownerId, grantIds] of byOwner) {
      for (const target of recallTargets.get(ownerId) ?? []) {
        const fresh = grantIds.filter((id) => !target.pushed.has(id));
        if (fresh.length === 0) continue;
        for (const id of fresh) target.pushed.add(id);
        target.push(fresh);
        logger.info({ ownerId, grantIds: fresh }, 'grant recall pushed');
      }
    }
  };

  /** The poller: recalled held grants of the owners served here (marked by any replica), pushed if not yet. */
  const pollRecalls = async () => {
    if (recallPolling || recallTargets.size === 0) return;
    recallPolling = true;
    try {
      const recalled = await findRecalledGrants(db, [...recallTargets.keys()]);
      const stillRecalled = new Set(recalled.map((grant) => grant.grantId));
      // Forget pushes of grants resolved since: the set stays as small as what is outstanding.
      for (const targets of recallTargets.values()) {
        for (const target of targets) for (const id of target.pushed) if (!stillRecalled.has(id)) target.pushed.delete(id);
      }
      push(recalled);
    } catch (error) {
      logger.warn({ err: error }, 'recall poll failed; will retry');
    } finally {
      recallPolling = false;
    }
  };

  return {
    push,
    serveOwner(ownerId, target) {
      if (ownerId === '') return;
      let targets = recallTargets.get(ownerId);
      if (!targets) { targets = new Set(); recallTargets.set(ownerId, targets); }
      targets.add(target);
      if (!recallTimer && !stopped) {
        recallTimer = setInterval(() => { void pollRecalls(); }, pollIntervalMs);
        recallTimer.unref();
      }
    },
    forget(target) {
      for (const [ownerId, targets] of recallTargets) {
        targets.delete(target);
        if (targets.size === 0) recallTargets.delete(ownerId);
      }
      if (recallTargets.size === 0 && recallTimer) { clearInterval(recallTimer); recallTimer = undefined; }
    },
    stop() {
      stopped = true;
      if (recallTimer) { clearInterval(recallTimer); recallTimer = undefined; }
    },
  };
}
