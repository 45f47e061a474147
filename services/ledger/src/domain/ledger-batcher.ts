import type { Database } from '@gateway/db';
import type { LedgerMetrics } from '@gateway/telemetry';
import {
  applyLedgerOperations, type LedgerOperation, type LedgerOperationAnswer, type LedgerOperationRunner,
} from './apply-ledger-operations.ts';

/** How a batcher groups operations. */
export interface LedgerBatcherOptions {
  /** Most operations in one batch (one transaction, one commit). Default 256. */
  maxBatchOperations?: number;
  /**
   * Most batches in flight at once (each one round trip on its own connection). Default 2: a
   * set-based batch locks its accounts only at its end (sql/ledger_apply_batch_set.sql), so while one batch
   * holds a hot account and commits, the next writes its rows.
   */
  maxBatchesInFlight?: number;
  /**
   * A batch beyond the first in flight starts only when at least this many operations are
   * queued (smaller ones wait for a batch to finish and join the next): tiny batches cost more
   * per operation. Default 16.
   */
  minExtraBatchOperations?: number;
  /**
   * Longest a batch of Settles alone waits for company before it starts, ms; default 0 (none).
   * A Settle is sent after its request was answered, so no client waits for it, while every
   * batch costs PostgreSQL a fixed round of work (about 1 ms of CPU, `pnpm bench batch-cost`):
   * at low concurrency, where batches are of one or two, that round is paid per request. A
   * Reserve (a request is waiting) never waits: one queued ends the wait at once, and so does a
   * full batch.
   */
  settleLingerMs?: number;
  /** Called after each batch with how many operations it held (tests, metrics). */
  onBatch?: (operations: number) => void;
  /** Where each transaction's size and duration are recorded (`ledgerBatchSize`, `ledgerCommitDuration`); none: not recorded. */
  metrics?: BatcherMetrics;
}

/** The metrics the group commit feeds, one observation per database transaction. */
type BatcherMetrics = Pick<LedgerMetrics, 'ledgerBatchSize' | 'ledgerCommitDuration'>;

/** A transaction's `operation` label: `reserve` or `settle` when it holds only that kind, else `mixed`. */
function batchOperationLabel(operations: readonly LedgerOperation[]): 'reserve' | 'settle' | 'mixed' {
  const first = operations[0]?.kind ?? 'reserve';
  return operations.every((operation) => operation.kind === first) ? first : 'mixed';
}

/** Group commit for Reserve and Settle: a runner that applies queued operations in batches. */
export interface LedgerBatcher extends LedgerOperationRunner {
  /** Waits until every queued operation is answered, then refuses new ones. */
  close(): Promise<void>;
}

/** A queued operation and its caller's promise. */
interface Pending {
  operation: LedgerOperation;
  resolve: (answer: LedgerOperationAnswer & { ok: true }) => void;
  reject: (error: Error) => void;
}

const defaultMaxBatchOperations = 256;
const defaultMaxBatchesInFlight = 2;
const defaultMinExtraBatchOperations = 16;

/**
 * Natural batching (group commit): an operation that arrives while no batch is in flight starts
 * one at once (no timer, so a lone caller waits for nothing); operations that arrive while a
 * batch is in flight queue up, and when it completes the next batch takes everything queued
 * (up to the maximum), in arrival order. A second batch (up to `maxBatchesInFlight`) starts
 * without waiting once `minExtraBatchOperations` are queued: the set-based batch locks its
 * accounts only at its end (sql/ledger_apply_batch_set.sql), so two batches on one hot organisation overlap
 * their row writes and serialise only on the account update and the commit. Batches in flight
 * together are ordered by the database (whichever locks the account first), as concurrent
 * callers are. A batch is one round trip and one commit
 * (`applyLedgerOperations`); each operation's answer is exactly what it would be alone after
 * the ones before it, and an operation that fails is rolled back alone. If a whole batch fails
 * (e.g. the database went away, or deadlock retries ran out), each of its operations is tried
 * once more on its own, so one operation can never fail another.
 *
 * With `settleLingerMs`, a queue of Settles alone waits up to that long for more before its
 * batch starts (no client waits for a Settle; every batch costs PostgreSQL a fixed round of
 * work), ended at once by a Reserve, a full batch or close().
 *
 * The batcher is per process and only groups work: correctness (locks, constraints) is the
 * database's, so any number of replicas, each with its own batcher, share one database.
 */
export function createLedgerBatcher(db: Database, options: LedgerBatcherOptions = {}): LedgerBatcher {
  const maxBatchOperations = options.maxBatchOperations ?? defaultMaxBatchOperations;
  const maxBatchesInFlight = Math.max(1, options.maxBatchesInFlight ?? defaultMaxBatchesInFlight);
  const minExtraBatchOperations = Math.max(1, options.minExtraBatchOperations ?? defaultMinExtraBatchOperations);
  const settleLingerMs = Math.max(0, options.settleLingerMs ?? 0);
  const queue: Pending[] = [];
  let inFlight = 0;
  let closed = false;
  /** Reserves in the queue: while there is one, nothing lingers. */
  let queuedReserves = 0;
  /** When the oldest queued operation arrived (performance.now(), ms), for the linger. */
  let oldestQueuedAtMs = 0;
  /** The timer that ends a linger; undefined while none runs. */
  let lingerTimer: NodeJS.Timeout | undefined;
  let idle: Promise<void> = Promise.resolve();
  let markIdle: () => void = () => undefined;

  // One database transaction (one statement, one commit), timed and sized when metrics are given.
  // Only a committed transaction is observed: a batch that rolled back as a whole is not a commit,
  // and its operations are observed again when they are retried (and commit) alone.
  const apply = async (operations: LedgerOperation[]): Promise<LedgerOperationAnswer[]> => {
    const { metrics } = options;
    if (!metrics) return applyLedgerOperations(db, operations);
    const startedAt = performance.now();
    const answers = await applyLedgerOperations(db, operations);
    const operation = batchOperationLabel(operations);
    metrics.ledgerBatchSize.observe({ operation }, operations.length);
    metrics.ledgerCommitDuration.observe({ operation }, (performance.now() - startedAt) / 1000);
    return answers;
  };

  const settleOne = (pending: Pending, answer: LedgerOperationAnswer) => {
    if (answer.ok) pending.resolve(answer);
    else pending.reject(answer.error);
  };

  const runBatch = async (batch: Pending[]) => {
    try {
      const answers = await apply(batch.map((pending) => pending.operation));
      batch.forEach((pending, index) => settleOne(pending, answers[index]!));
    } catch (error) {
      if (batch.length === 1) { batch[0]!.reject(error as Error); return; }
      // The batch rolled back as a whole and left nothing: each operation is tried alone, in order.
      for (const pending of batch) {
        try {
          const [answer] = await apply([pending.operation]);
          settleOne(pending, answer!);
        } catch (aloneError) {
          pending.reject(aloneError as Error);
        }
      }
    }
  };

  /**
   * Whether the queue should wait for more before its next batch starts (SETTLE_LINGER): only
   * Settles queued, fewer than a full batch, the oldest younger than the linger, not closing.
   * Starts the timer that ends the wait when it is due.
   */
  const lingering = (): boolean => {
    if (settleLingerMs === 0 || closed || queuedReserves > 0 || queue.length >= maxBatchOperations) return false;
    const waitMs = oldestQueuedAtMs + settleLingerMs - performance.now();
    if (waitMs <= 0) return false;
    lingerTimer ??= setTimeout(() => { lingerTimer = undefined; drain(); }, waitMs);
    return true;
  };

  const drain = () => {
    while (queue.length > 0 && (inFlight === 0 || (inFlight < maxBatchesInFlight && queue.length >= minExtraBatchOperations)) && !lingering()) {
      if (lingerTimer !== undefined) { clearTimeout(lingerTimer); lingerTimer = undefined; }
      inFlight++;
      const batch = queue.splice(0, maxBatchOperations);
      // What stays queued (past a full batch) arrived after oldestQueuedAtMs: it lingers no longer than it should.
      for (const pending of batch) if (pending.operation.kind === 'reserve') queuedReserves--;
      void runBatch(batch).finally(() => {
        options.onBatch?.(batch.length);
        inFlight--;
        if (queue.length > 0) drain();
        else if (inFlight === 0) markIdle();
      });
    }
  };

  return {
    run(operation) {
      if (closed) return Promise.reject(new Error('ledger batcher is closed'));
      if (inFlight === 0 && queue.length === 0) idle = new Promise((resolve) => { markIdle = resolve; });
      return new Promise((resolve, reject) => {
        if (queue.length === 0) oldestQueuedAtMs = performance.now();
        if (operation.kind === 'reserve') queuedReserves++;
        queue.push({ operation, resolve, reject });
        drain();
      });
    },
    async close() {
      closed = true;
      // Whatever lingers leaves now.
      drain();
      await idle;
    },
  };
}
