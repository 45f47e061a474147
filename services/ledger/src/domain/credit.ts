import type { Database } from '@gateway/db';
import { availableOrZero } from './read-balances.ts';
import { fingerprintOf } from './fingerprint.ts';
import { appendMovement } from './append-movement.ts';
import { IdempotencyKeyRace, runIdempotentTransaction } from './run-idempotent-transaction.ts';
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

/**
 * Credits an organisation: credited and available grow by the amount, with one `credit`
 * movement, in one transaction. The same credit_id with the same payload answers OK again
 * without crediting twice; with another payload it is an IDEMPOTENCY_CONFLICT.
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
  try {
    return await runIdempotentTransaction(db, async (tx): Promise<CreditOutcome> => {
      const existing = await tx.query<{ fingerprint: string; organisation_id: string; purchased: boolean }>(
        'SELECT fingerprint, organisation_id, purchased FROM credits WHERE credit_id = $1', [input.creditId],
      );
      const earlier = existing.rows[0];
      if (earlier) {
        const availableMicros = await availableOrZero(tx, earlier.organisation_id);
        // `purchased` is compared beside the fingerprint (not in it), so credits fingerprinted before it existed still replay.
        return earlier.fingerprint === fingerprint && earlier.purchased === (input.purchased === true)
          ? { result: 'ok', availableMicros, detail: 'replay: credit already applied' }
          : { result: 'idempotency_conflict', availableMicros: 0n, detail: 'credit_id was already used with a different payload' };
      }
      if (problems.length > 0) return { result: 'invalid_argument', availableMicros: 0n, detail: problems.join('; ') };

      const updated = await tx.query<{ available_micros: bigint }>(
        `UPDATE accounts SET credited_micros = credited_micros + $2, available_micros = available_micros + $2
         WHERE organisation_id = $1 RETURNING available_micros`,
        [input.organisationId, input.amountMicros],
      );
      const account = updated.rows[0];
      if (!account) return { result: 'organisation_unknown', availableMicros: 0n, detail: 'organisation has no account' };

      const inserted = await tx.query(
        `INSERT INTO credits (credit_id, organisation_id, amount_micros, reason, fingerprint, purchased)
         VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (credit_id) DO NOTHING`,
        [input.creditId, input.organisationId, input.amountMicros, input.reason, fingerprint, input.purchased === true],
      );
      if (inserted.rowCount !== 1) throw new IdempotencyKeyRace(input.creditId);
      await appendMovement(tx, {
        organisationId: input.organisationId, kind: 'credit', amountMicros: input.amountMicros,
        creditId: input.creditId, detail: { reason: input.reason },
      });
      return { result: 'ok', availableMicros: account.available_micros, detail: '' };
    });
  } catch (error) {
    // The transaction rolled back; a credit so large the balance would leave int64 is bad input.
    if ((error as { code?: unknown }).code === numericOutOfRange) {
      return { result: 'invalid_argument', availableMicros: 0n, detail: 'amount_micros would take the balance beyond the largest the ledger can hold' };
    }
    throw error;
  }
}
