import type { Database } from '@gateway/db';
import { attemptsJson, attemptsProblem, type ProviderAttemptInput } from './provider-attempts.ts';
import { idProblem, problemsOf, reasonProblem } from './validation.ts';

/** A Reserve to give back because its request reached no upstream. */
export interface ReleaseInput {
  reservationId: string;
  /** Why, e.g. "upstream_not_called"; kept on the reservation and the movement. May be empty. */
  reason: string;
  /**
   * Attempts of the request that failed over but that their provider may have billed (analytics
   * only): kept once, by the Release that released the reservation. Not part of any payload.
   */
  failedAttempts?: readonly ProviderAttemptInput[];
}

/** Results of Release, in precedence order. */
export type ReleaseResultName = 'ok' | 'invalid_argument' | 'reservation_unknown' | 'already_resolved';

/** The answer to Release. */
export interface ReleaseOutcome {
  result: ReleaseResultName;
  /** Returned from held to available, µ₹ (0 in internal billing mode). */
  releasedMicros: bigint;
  /** Available balance at the time of the answer, µ₹. */
  availableMicros: bigint;
  detail: string;
}

/**
 * Releases a held reservation: held -= Reserve, available += Reserve, one `release` movement;
 * nothing is debited and no usage is recorded. Input is checked here; the database work is
 * `ledger_release` (services/ledger/sql/ledger_release.sql: the row lock that gives a racing
 * settle or expiry exactly one winner, the replay, and the tombstone a Release of an unknown id
 * leaves, ONE_OUTCOME), one statement in one transaction.
 */
export async function release(db: Database, input: ReleaseInput): Promise<ReleaseOutcome> {
  const idIssue = idProblem('reservation_id', input.reservationId);
  if (idIssue) return { result: 'invalid_argument', releasedMicros: 0n, availableMicros: 0n, detail: idIssue };
  const reasonIssue = problemsOf(reasonProblem('reason', input.reason), attemptsProblem(input.failedAttempts ?? [])).join('; ');
  const attempts = reasonIssue === '' && input.failedAttempts !== undefined && input.failedAttempts.length > 0
    ? attemptsJson(input.failedAttempts) : undefined;

  // In a transaction, so a deadlock or serialization failure is retried like any transaction's.
  type Row = { result: ReleaseResultName; released_micros: bigint; available_micros: bigint; detail: string };
  const { rows } = await db.transaction(async (tx) => {
    const answer = await tx.query<Row>(
      'SELECT result, released_micros, available_micros, detail FROM ledger_release($1, $2, $3)',
      // With a problem the reason is not sent: it may not even fit a text value (NUL); a replay still takes precedence.
      reasonIssue !== '' ? [input.reservationId, '', reasonIssue] : [input.reservationId, input.reason, ''],
    );
    // The attempts stay with the release that released the reservation (a replay's are the same
    // rows, (reservation_id, attempt) the key); the reservation's row names organisation and model.
    if (attempts !== undefined && answer.rows[0]?.result === 'ok') {
      await tx.query(
        `SELECT ledger_keep_attempts(r.id, r.organisation_id, r.model_slug, $2::jsonb)
         FROM reservations r
         WHERE r.id = $1 AND r.status = 'released'
           -- The release that released it keeps its attempts; a replay's (not part of any payload) add none.
           AND NOT EXISTS (SELECT 1 FROM provider_attempts p WHERE p.reservation_id = r.id)`,
        [input.reservationId, attempts],
      );
    }
    return answer;
  });
  const row = rows[0];
  if (!row) throw new Error('ledger_release returned no row');
  return { result: row.result, releasedMicros: row.released_micros, availableMicros: row.available_micros, detail: row.detail };
}
