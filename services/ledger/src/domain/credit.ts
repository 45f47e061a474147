import type { Database } from '@gateway/db';
import { fingerprintOf } from './fingerprint.ts';
import { runIdempotentTransaction } from './run-idempotent-transaction.ts';
import { idProblem, positiveAmountProblem, problemsOf, reasonProblem } from './validation.ts';

/** A credit to an organisation's wallet (a top-up or a manual credit). */
export interface CreditInput {
  /** Caller-generated idempotency key, e.g. the payment provider's id. */
  creditId: string;
  organisationId: string;
  /** Positive, µ₹. */
  amountMicros: bigint;
  /** Free text kept with the credit and its movement. */
  reason: string;
  /** Money the payer bought (a top-up): only purchased credit is refundable; others are spent last. */
  purchased?: boolean | undefined;
}

/** Results of Credit, in precedence order. */
export type CreditResultName = 'ok' | 'idempotency_conflict' | 'invalid_argument' | 'organisation_unknown';

/** The answer to Credit. */
export interface CreditOutcome {
  result: CreditResultName;
  /** Available balance at the time of the answer, µ₹ (0 when there is no account). */
  availableMicros: bigint;
  detail: string;
}

/** PostgreSQL's numeric_value_out_of_range: a sum left int64. */
const numericOutOfRange = '22003';

/** The SQLSTATE ledger_credit raises when a racing call with the same credit_id committed first. */
const creditIdRaceSqlState = 'LR005';

/**
 * Credits an organisation: credited and available grow by the amount, with one `credit`
 * movement, in one transaction. The same credit_id with the same payload answers OK again
 * without crediting twice; with another payload it is an IDEMPOTENCY_CONFLICT.
 * Input is checked here; the database work is `ledger_credit` (services/ledger/sql/ledger_credit.sql).
 */
export async function credit(db: Database, input: CreditInput): Promise<CreditOutcome> {
  const idIssue = idProblem('credit_id', input.creditId);
  if (idIssue) return { result: 'invalid_argument', availableMicros: 0n, detail: idIssue };
  const problems = problemsOf(
    idProblem('organisation_id', input.organisationId),
    positiveAmountProblem('amount_micros', input.amountMicros),
    reasonProblem('reason', input.reason),
  );
  const fingerprint = fingerprintOf('credit', {
    organisationId: input.organisationId, amountMicros: input.amountMicros, reason: input.reason,
  });
  const purchased = input.purchased === true;
  try {
    return await runIdempotentTransaction(db, async (tx): Promise<CreditOutcome> => {
      const { rows } = await tx.query<{ result: CreditResultName; available_micros: bigint; detail: string }>(
        'SELECT result, available_micros, detail FROM ledger_credit($1, $2, $3, $4, $5, $6, $7)',
        // With problems only the key, the fingerprint, `purchased` and the problems matter (a replay or
        // conflict still takes precedence): the other fields may not even fit their SQL types (NUL, > int64).
        problems.length > 0
          ? [input.creditId, '', 0n, '', fingerprint, problems.join('; '), purchased]
          : [input.creditId, input.organisationId, input.amountMicros, input.reason, fingerprint, '', purchased],
      );
      const row = rows[0];
      if (!row) throw new Error('ledger_credit returned no row');
      return { result: row.result, availableMicros: row.available_micros, detail: row.detail };
    }, { sqlState: creditIdRaceSqlState, key: input.creditId });
  } catch (error) {
    // The transaction rolled back; a credit so large the balance would leave int64 is bad input.
    if ((error as { code?: unknown }).code === numericOutOfRange) {
      return { result: 'invalid_argument', availableMicros: 0n, detail: 'amount_micros would take the balance beyond the largest the ledger can hold' };
    }
    throw error;
  }
}
