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

/**
 * Runs work in one transaction and re-runs it when it lost an idempotency-key race. The work
 * must be safe to run again, which it is: a rolled-back attempt left nothing behind.
 */
export async function runIdempotentTransaction<T>(db: Database, work: (tx: Queryable) => Promise<T>): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await db.transaction(work);
    } catch (error) {
      if (error instanceof IdempotencyKeyRace && attempt < maxRaceRetries) continue;
      throw error;
    }
  }
}
