import type { Database } from '@gateway/db';
import { fingerprintOf } from './fingerprint.ts';
import { runIdempotentTransaction } from './run-idempotent-transaction.ts';
import { idProblem, problemsOf, reasonProblem } from './validation.ts';

/** A refund whose money goes back to the balance (the provider refused it; a dispute was won). */
export interface ReverseRefundInput {
  /** Caller-generated idempotency key of the reversal. */
  reversalId: string;
  organisationId: string;
  /** The refund (RefundCredit's refund_id) whose money returns. */
  refundId: string;
  /** Free text kept with the reversal and its movement. */
  reason: string;
}

/** Results of ReverseRefund, in precedence order. */
export type ReverseRefundResultName = 'ok' | 'idempotency_conflict' | 'invalid_argument' | 'refund_unknown' | 'already_reversed';

/** The answer to ReverseRefund. */
export interface ReverseRefundOutcome {
  result: ReverseRefundResultName;
  /** What went back to available, µ₹ (ok only): everything the refund took. */
  reversedMicros: bigint;
  /** Available balance at the time of the answer, µ₹ (0 when the answer names no account). */
  availableMicros: bigint;
  detail: string;
}

/** SQLSTATE ledger_reverse_refund raises when a racing call with the same new reversal_id committed first. */
const reversalIdRaceSqlState = 'LR004';

/**
 * Gives a refund's money back: available and credited grow by what the refund took, with one
 * `refund_reversal` movement and a `refund_reversals` row, in one transaction
 * (`ledger_reverse_refund`, where the rules live: IDEMPOTENCY, one reversal per refund,
 * CONSERVATION (credits)). The same reversal_id with the same payload answers OK again.
 */
export async function reverseRefund(db: Database, input: ReverseRefundInput): Promise<ReverseRefundOutcome> {
  const idIssue = idProblem('reversal_id', input.reversalId);
  if (idIssue) return { result: 'invalid_argument', reversedMicros: 0n, availableMicros: 0n, detail: idIssue };
  const problems = problemsOf(
    idProblem('organisation_id', input.organisationId),
    idProblem('refund_id', input.refundId),
    reasonProblem('reason', input.reason),
  );
  const fingerprint = fingerprintOf('reverse_refund', { organisationId: input.organisationId, refundId: input.refundId, reason: input.reason });
  return runIdempotentTransaction(db, async (tx): Promise<ReverseRefundOutcome> => {
    const { rows } = await tx.query<{ result: ReverseRefundResultName; reversed_micros: bigint; available_micros: bigint; detail: string }>(
      'SELECT result, reversed_micros, available_micros, detail FROM ledger_reverse_refund($1, $2, $3, $4, $5, $6)',
      problems.length > 0
        ? [input.reversalId, '', '', '', fingerprint, problems.join('; ')]
        : [input.reversalId, input.organisationId, input.refundId, input.reason, fingerprint, ''],
    );
    const row = rows[0];
    if (!row) throw new Error('ledger_reverse_refund returned no row');
    return { result: row.result, reversedMicros: row.reversed_micros, availableMicros: row.available_micros, detail: row.detail };
  }, { sqlState: reversalIdRaceSqlState, key: input.reversalId });
}
