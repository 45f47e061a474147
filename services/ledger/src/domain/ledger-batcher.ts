import type { Database } from '@gateway/db';
import {
  applyLedgerOperations, type LedgerOperation, type LedgerOperationAnswer, type LedgerOperationRunner,
} from './apply-ledger-operations.ts';

/** How a batcher groups operations. */
export interface LedgerBatcherOptions {
  /** Most operations in one batch (one transaction, one commit). Default 256. */
  maxBatchOperations?: number;
  /** Called after each batch with how many operations it held (tests, metrics). */
  onBatch?: (operations: number) => void;
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

/**
 * Natural batching (group commit): an operation that arrives while no batch is in flight starts
 * one at once (no timer, so a lone caller waits for nothing); operations that arrive while a
 * batch is in flight queue up, and when it completes the next batch takes everything queued
 * (up to the maximum), in arrival order. A batch is one round trip and one commit
 * (`applyLedgerOperations`); each operation's answer is exactly what it would be alone after
 * the ones before it, and an operation that fails is rolled back alone. If a whole batch fails
 * (e.g. the database went away, or deadlock retries ran out), each of its operations is tried
 * once more on its own, so one operation can never fail another.
 *
 * The batcher is per process and only groups work: correctness (locks, constraints) is the
 * database's, so any number of replicas, each with its own batcher, share one database.
 */
export function createLedgerBatcher(db: Database, options: LedgerBatcherOptions = {}): LedgerBatcher {
  const maxBatchOperations = options.maxBatchOperations ?? defaultMaxBatchOperations;
  const queue: Pending[] = [];
  let inFlight = false;
  let closed = false;
  let idle: Promise<void> = Promise.resolve();
  let markIdle: () => void = () => undefined;

  const settleOne = (pending: Pending, answer: LedgerOperationAnswer) => {
    if (answer.ok) pending.resolve(answer);
    else pending.reject(answer.error);
  };

  const runBatch = async (batch: Pending[]) => {
    try {
      const answers = await applyLedgerOperations(db, batch.map((pending) => pending.operation));
      batch.forEach((pending, index) => settleOne(pending, answers[index]!));
    } catch (error) {
      if (batch.length === 1) { batch[0]!.reject(error as Error); return; }
      // The batch rolled back as a whole and left nothing: each operation is tried alone, in order.
      for (const pending of batch) {
        try {
          const [answer] = await applyLedgerOperations(db, [pending.operation]);
          settleOne(pending, answer!);
        } catch (aloneError) {
          pending.reject(aloneError as Error);
        }
      }
    }
  };

  const drain = () => {
    if (inFlight || queue.length === 0) return;
    inFlight = true;
    const batch = queue.splice(0, maxBatchOperations);
    void runBatch(batch).finally(() => {
      options.onBatch?.(batch.length);
      inFlight = false;
      if (queue.length > 0) drain();
      else markIdle();
    });
  };

  return {
    run(operation) {
      if (closed) return Promise.reject(new Error('ledger batcher is closed'));
      if (!inFlight && queue.length === 0) idle = new Promise((resolve) => { markIdle = resolve; });
      return new Promise((resolve, reject) => {
        queue.push({ operation, resolve, reject });
        drain();
      });
    },
    async close() {
      closed = true;
      await idle;
    },
  };
}
