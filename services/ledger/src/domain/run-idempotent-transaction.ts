import type { Database, Queryable } from '@gateway/db';

/**
 * Thrown inside a transaction when a concurrent call with the same idempotency key committed
 * its row first (our insert found the key taken). Rolling back and running the work again
 * lets it see that row and answer as a replay or a conflict.
 */
export class IdempotencyKeyRace extends Error {
  constructor(key: string) {
    super(`concurrent call with the same idempotency key committed first: ${key}`);
    this.name = 'IdempotencyKeyRace';
  }
}

/** How many times a transaction that lost an idempotency-key race is run again. */
const maxRaceRetries = 3;

/** A SQL function's own signal of a lost idempotency-key race: the SQLSTATE it raises, and the key (for the message). */
export interface SqlKeyRace {
  sqlState: string;
  key: string;
}

/**
 * Runs work in one transaction and re-runs it when it lost an idempotency-key race: an
 * IdempotencyKeyRace thrown by the work, or (for work that is one SQL function call) the
 * function's own `sqlKeyRace.sqlState`. The work must be safe to run again, which it is: a
 * rolled-back attempt left nothing behind.
 */
export async function runIdempotentTransaction<T>(db: Database, work: (tx: Queryable) => Promise<T>, sqlKeyRace?: SqlKeyRace): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await db.transaction(work);
    } catch (error) {
      const lostRace = error instanceof IdempotencyKeyRace
        || (sqlKeyRace !== undefined && (error as { code?: unknown }).code === sqlKeyRace.sqlState);
      if (lostRace && attempt < maxRaceRetries) continue;
      if (lostRace && !(error instanceof IdempotencyKeyRace)) throw new IdempotencyKeyRace(sqlKeyRace!.key);
      throw error;
    }
  }
}
