import type { Queryable } from '@gateway/db';

/**
 * requested → debited → [provider_pending →] provider_refunded → credit_noted; refused (the ledger
 * refused: nothing moved); debited or provider_pending → provider_refused → failed (the provider
 * refused for good: the money is back in the balance). Migrations 0009 and 0011.
 */
export type RefundState =
  | 'requested' | 'debited' | 'provider_pending' | 'provider_refunded' | 'credit_noted' | 'refused' | 'provider_refused' | 'failed';

/** The states the refund job still carries forward. */
const unfinishedStates = ['requested', 'debited', 'provider_pending', 'provider_refunded', 'provider_refused'] as const;

/** A refund of part or all of a top-up's unspent balance. */
export interface Refund {
  id: string;
  organisationId: string;
  topUpId: string;
  /** What goes back to the payer, paise, GST included. */
  amountPaise: bigint;
  /** What leaves the balance, µ₹. */
  debitMicros: bigint;
  state: RefundState;
  providerRefundId: string | null;
  creditNoteId: string | null;
  /** Why the ledger refused (refused only). */
  refusalReason: string | null;
  /** The payment provider's reason for refusing the refund (provider_refused and failed only). */
  failureReason: string | null;
  /** The last failure of a step still to be retried (a transient one: the provider or ledger unreachable), or null. */
  lastError: string | null;
  /** Failed attempts of the current step. */
  attempts: number;
  /** When the refund job next tries (null once the refund is final). */
  nextAttemptAt: Date | null;
  createdAt: Date;
}

/** A stored row of refunds. */
export interface RefundRow {
  id: string;
  organisation_id: string;
  topup_id: string;
  amount_paise: bigint;
  debit_micros: bigint;
  state: RefundState;
  idempotency_key: string;
  provider_refund_id: string | null;
  credit_note_id: string | null;
  refusal_reason: string | null;
  failure_reason: string | null;
  last_error: string | null;
  attempts: number;
  next_attempt_at: Date;
  created_at: Date;
}

/** The columns a refund is read with. */
export const refundColumns = `id, organisation_id, topup_id, amount_paise, debit_micros, state, idempotency_key, provider_refund_id,
  credit_note_id, refusal_reason, failure_reason, last_error, attempts, next_attempt_at, created_at`;

/** A stored row as the domain record. */
export function toRefund(row: RefundRow): Refund {
  return {
    id: row.id, organisationId: row.organisation_id, topUpId: row.topup_id, amountPaise: row.amount_paise, debitMicros: row.debit_micros,
    state: row.state, providerRefundId: row.provider_refund_id, creditNoteId: row.credit_note_id, refusalReason: row.refusal_reason,
    failureReason: row.failure_reason, lastError: row.last_error, attempts: row.attempts,
    nextAttemptAt: (unfinishedStates as readonly string[]).includes(row.state) ? row.next_attempt_at : null,
    createdAt: row.created_at,
  };
}

/** The longest wait of the refund job before it tries a failed step again, ms. */
const longestRetryMs = 3_600_000;

/** Moves a refund to provider_refused with the provider's reason (from `from` only), so the job gives the money back. */
export async function recordProviderRefusal(db: Queryable, refundId: string, from: readonly RefundState[], reason: string, providerRefundId?: string): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE refunds SET state = 'provider_refused', failure_reason = $3, provider_refused_at = clock_timestamp(),
       provider_refund_id = coalesce(provider_refund_id, $4), attempts = 0, last_error = NULL,
       next_attempt_at = clock_timestamp(), updated_at = clock_timestamp()
     WHERE id = $1 AND state = ANY($2)`,
    [refundId, from, reason.slice(0, 500), providerRefundId ?? null],
  );
  return (rowCount ?? 0) > 0;
}

/** Pushes a pending refund's next look out (doubling waits, at most an hour) without counting it as a failure. */
export async function recordWait(db: Queryable, refundId: string, firstWaitMs: number): Promise<void> {
  await db.query(
    `UPDATE refunds SET attempts = attempts + 1, updated_at = clock_timestamp(),
       next_attempt_at = clock_timestamp() + least($2::bigint * power(2, least(attempts, 20))::bigint, $3::bigint) * interval '1 millisecond'
     WHERE id = $1 AND state = 'provider_pending'`,
    [refundId, firstWaitMs, longestRetryMs],
  );
}

/** Records a failed step on the refund: its message, one more attempt, and when the job tries again (doubling waits). */
export async function recordFailure(db: Queryable, refundId: string, failure: string, firstRetryMs: number): Promise<void> {
  await db.query(
    `UPDATE refunds SET last_error = $2, attempts = attempts + 1, updated_at = clock_timestamp(),
       next_attempt_at = clock_timestamp() + least($3::bigint * power(2, least(attempts, 20))::bigint, $4::bigint) * interval '1 millisecond'
     WHERE id = $1 AND state = ANY($5)`,
    [refundId, failure, firstRetryMs, longestRetryMs, unfinishedStates],
  );
}

/**
 * Claims refunds the job finds due (not final, next_attempt_at passed), at most `limit`, by pushing
 * their next attempt `intervalMs` out (SKIP LOCKED, in the caller's transaction): replicas never
 * work on the same refund at once. Returns their ids.
 */
export async function claimDueRefunds(tx: Queryable, limit: number, intervalMs: number): Promise<string[]> {
  const { rows } = await tx.query<{ id: string }>(
    `SELECT id FROM refunds WHERE state = ANY($2) AND next_attempt_at <= clock_timestamp()
     ORDER BY next_attempt_at LIMIT $1 FOR UPDATE SKIP LOCKED`,
    [limit, unfinishedStates],
  );
  const ids = rows.map((row) => row.id);
  if (ids.length > 0) {
    await tx.query(`UPDATE refunds SET next_attempt_at = clock_timestamp() + $2::bigint * interval '1 millisecond' WHERE id = ANY($1)`,
      [ids, intervalMs]);
  }
  return ids;
}

/** What a top-up's credit-noted refunds add up to, paise. */
export async function creditNotedPaiseOf(tx: Queryable, topUpId: string): Promise<bigint> {
  const { rows } = await tx.query<{ refunded: bigint }>(
    `SELECT coalesce(sum(amount_paise), 0)::bigint AS refunded FROM refunds WHERE topup_id = $1 AND state = 'credit_noted'`, [topUpId]);
  return rows[0]!.refunded;
}

/**
 * For the provider's refund.processed webhook: records that the money reached the payer. Matches
 * the refund by the provider's refund id or, when the answer to our refund call was lost (the
 * refund still `debited`), by the receipt (our refund id), recording the provider's id and moving
 * a debited or pending refund to provider_refunded so the job issues its credit note. Returns
 * whether a refund matched (none: a refund made outside the gateway, or a duplicate payment's).
 */
export async function markProviderRefundProcessed(tx: Queryable, providerRefund: { providerRefundId: string; receipt: string | null }): Promise<boolean> {
  const { rowCount } = await tx.query(
    `UPDATE refunds SET provider_processed_at = coalesce(provider_processed_at, clock_timestamp()), updated_at = clock_timestamp(),
       provider_refund_id = coalesce(provider_refund_id, $1),
       state = CASE WHEN state IN ('debited', 'provider_pending') THEN 'provider_refunded' ELSE state END,
       provider_refunded_at = CASE WHEN state IN ('debited', 'provider_pending') THEN clock_timestamp() ELSE provider_refunded_at END,
       next_attempt_at = CASE WHEN state IN ('debited', 'provider_pending') THEN clock_timestamp() ELSE next_attempt_at END
     WHERE provider_refund_id = $1 OR (provider_refund_id IS NULL AND state = 'debited' AND id = $2)`,
    [providerRefund.providerRefundId, providerRefund.receipt ?? ''],
  );
  return (rowCount ?? 0) > 0;
}

/**
 * For the provider's refund.failed webhook: a refund of ours that was debited or pending is
 * refused for good, with the provider's reason, and the job gives its money back. Matches as
 * markProviderRefundProcessed does. Returns whether a refund of ours matched.
 */
export async function markProviderRefundFailed(tx: Queryable, providerRefund: { providerRefundId: string; receipt: string | null; reason: string }): Promise<boolean> {
  const { rows } = await tx.query<{ id: string; state: RefundState }>(
    `SELECT id, state FROM refunds WHERE provider_refund_id = $1 OR (provider_refund_id IS NULL AND id = $2) FOR UPDATE`,
    [providerRefund.providerRefundId, providerRefund.receipt ?? ''],
  );
  const refund = rows[0];
  if (!refund) return false;
  await recordProviderRefusal(tx, refund.id, ['debited', 'provider_pending'], providerRefund.reason, providerRefund.providerRefundId);
  return true;
}
