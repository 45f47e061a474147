import type { Database } from '@gateway/db';
import { fingerprintOf } from './fingerprint.ts';
import { runIdempotentTransaction } from './run-idempotent-transaction.ts';
import { idProblem, positiveAmountProblem, problemsOf, reasonProblem } from './validation.ts';

/** A refund of part of a credit's unspent money (the admin's refund of a top-up). */
export interface RefundCreditInput {
  /** Caller-generated idempotency key, e.g. the admin's refund id. */
  refundId: string;
  organisationId: string;
  /** The credit whose money is returned. */
  creditId: string;
  /** Positive, µ₹: what leaves available (and credited). */
  amountMicros: bigint;
  /** Free text kept with the refund and its movement. */
  reason: string;
  /**
   * Take what available allows, up to the amount, instead of refusing: money the payer already
   * got back outside the gateway (the purchased-only rule does not apply).
   */
  upToAvailable?: boolean | undefined;
}

/** Results of RefundCredit, in precedence order. */
export type RefundCreditResultName =
  | 'ok' | 'idempotency_conflict' | 'invalid_argument' | 'organisation_unknown' | 'credit_unknown' | 'exceeds_credit'
  | 'insufficient_balance';

/** The answer to RefundCredit. */
export interface RefundCreditOutcome {
  result: RefundCreditResultName;
  /** Available balance at the time of the answer, µ₹ (0 when the answer names no account). */
  availableMicros: bigint;
  detail: string;
  /** What the refund took from the balance, µ₹ (ok only; with upToAvailable possibly less than asked, or 0). */
  refundedMicros: bigint;
}

/** SQLSTATE ledger_refund_credit raises when a racing call with the same new refund_id committed first. */
const refundIdRaceSqlState = 'LR003';

/**
 * Refunds part of a credit: available and credited shrink by the amount, with one `refund`
 * movement and a `refunds` row, in one transaction (`ledger_refund_credit`, where the rules
 * live: IDEMPOTENCY, NO_OVERSPEND with only purchased, unspent credit refundable, CONSERVATION (credits)). Input is checked here; the same
 * refund_id with the same payload answers OK again without refunding twice.
 */
export async function refundCredit(db: Database, input: RefundCreditInput): Promise<RefundCreditOutcome> {
  const idIssue = idProblem('refund_id', input.refundId);
  if (idIssue) return { result: 'invalid_argument', availableMicros: 0n, detail: idIssue, refundedMicros: 0n };
  const problems = problemsOf(
    idProblem('organisation_id', input.organisationId),
    idProblem('credit_id', input.creditId),
    positiveAmountProblem('amount_micros', input.amountMicros),
    reasonProblem('reason', input.reason),
  );
  const fingerprint = fingerprintOf('refund_credit', {
    organisationId: input.organisationId, creditId: input.creditId, amountMicros: input.amountMicros, reason: input.reason,
    // Only when set, so refunds fingerprinted before the field existed still replay.
    ...(input.upToAvailable === true ? { upToAvailable: true } : {}),
  });
  return runIdempotentTransaction(db, async (tx): Promise<RefundCreditOutcome> => {
    const { rows } = await tx.query<{ result: RefundCreditResultName; available_micros: bigint; detail: string; refunded_micros: bigint }>(
      'SELECT result, available_micros, detail, refunded_micros FROM ledger_refund_credit($1, $2, $3, $4, $5, $6, $7, $8)',
      // With problems only the key, the fingerprint and the problems matter (a replay or conflict
      // still takes precedence): the other fields may not even fit their SQL types (NUL, > int64).
      problems.length > 0
        ? [input.refundId, '', '', 0n, '', fingerprint, problems.join('; '), false]
        : [input.refundId, input.organisationId, input.creditId, input.amountMicros, input.reason, fingerprint, '', input.upToAvailable === true],
    );
    const row = rows[0];
    if (!row) throw new Error('ledger_refund_credit returned no row');
    return { result: row.result, availableMicros: row.available_micros, detail: row.detail, refundedMicros: row.refunded_micros };
  }, { sqlState: refundIdRaceSqlState, key: input.refundId });
}
