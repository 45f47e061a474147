import type { Database } from '@gateway/db';
import { deploymentProblem } from './provider-attempts.ts';
import { idProblem, nonNegativeAmountProblem, optionalIdProblem, problemsOf, reserveTtlProblem } from './validation.ts';

/** The running usage of a long stream, recorded so that an expiry charges it instead of nothing (EXPIRY). */
export interface CheckpointInput {
  reservationId: string;
  /** Increases with every checkpoint of a reservation; one at or below the last recorded changes nothing. */
  sequence: bigint;
  /** Running totals so far (not increments). */
  inputTokens: bigint;
  outputTokens: bigint;
  /** Customer-price cost so far, µ₹. */
  costMicros: bigint;
  /** Provider cost so far, µ₹. */
  providerCostMicros: bigint;
  /** When positive, the deadline becomes the database's now() plus this, ms; 0 leaves it. */
  extendTtlMs: bigint;
  /**
   * The gateway's request id, or '' for none: the first checkpoint that carries one records it,
   * and the usage record an expiry writes carries it. Not part of the replay rule (a sequence at or
   * below the last changes nothing whatever it carries); a different one later is refused.
   */
  requestId: string;
  /** The deployment streaming the answer, or '' / absent: the first checkpoint that names one records it (issue 29). */
  deployment?: string;
}

/** Results of Checkpoint, in precedence order. */
export type CheckpointResultName = 'ok' | 'invalid_argument' | 'reservation_unknown' | 'already_resolved';

/** The answer to Checkpoint. */
export interface CheckpointOutcome {
  result: CheckpointResultName;
  /** The reservation's deadline after the call, ms since the Unix epoch (database clock); 0 when unknown. */
  expiresAtMs: bigint;
  detail: string;
}

/**
 * Records a stream's running usage on its held reservation. Input is checked here; the database
 * work is `ledger_checkpoint` (services/ledger/sql/ledger_checkpoint.sql: the row lock, the
 * sequence rule, totals that never go down), one statement in one transaction. A checkpoint
 * never moves money: only an expiry charges it (EXPIRY).
 */
export async function checkpoint(db: Database, input: CheckpointInput): Promise<CheckpointOutcome> {
  const problems = problemsOf(
    idProblem('reservation_id', input.reservationId),
    input.sequence <= 0n ? 'sequence must be positive' : nonNegativeAmountProblem('sequence', input.sequence),
    nonNegativeAmountProblem('input_tokens', input.inputTokens),
    nonNegativeAmountProblem('output_tokens', input.outputTokens),
    nonNegativeAmountProblem('cost_micros', input.costMicros),
    nonNegativeAmountProblem('provider_cost_micros', input.providerCostMicros),
    input.extendTtlMs < 0n ? 'extend_ttl_ms must not be negative' : input.extendTtlMs > 0n ? reserveTtlProblem('extend_ttl_ms', input.extendTtlMs) : undefined,
    optionalIdProblem('request_id', input.requestId),
    deploymentProblem('deployment', input.deployment ?? '', true),
  );
  if (problems.length > 0) return { result: 'invalid_argument', expiresAtMs: 0n, detail: problems.join('; ') };

  // One statement in a transaction, so a deadlock or serialization failure is retried like any transaction's.
  const { rows } = await db.transaction(async (tx) => {
    const answer = await tx.query<{ result: CheckpointResultName; expires_at_ms: bigint; detail: string }>(
      'SELECT result, expires_at_ms, detail FROM ledger_checkpoint($1, $2, $3, $4, $5, $6, $7, $8)',
      [input.reservationId, input.sequence, input.inputTokens, input.outputTokens, input.costMicros,
        input.providerCostMicros, input.extendTtlMs, input.requestId],
    );
    // The first checkpoint that names the streaming deployment records it (as the request id), so
    // the provisional usage record an expiry writes names it; the row is locked by ledger_checkpoint.
    if ((input.deployment ?? '') !== '' && answer.rows[0]?.result === 'ok') {
      await tx.query(`UPDATE reservations SET deployment = $2 WHERE id = $1 AND deployment = '' AND status = 'held'`,
        [input.reservationId, input.deployment]);
    }
    return answer;
  });
  const row = rows[0];
  if (!row) throw new Error('ledger_checkpoint returned no row');
  return { result: row.result, expiresAtMs: row.expires_at_ms, detail: row.detail };
}
