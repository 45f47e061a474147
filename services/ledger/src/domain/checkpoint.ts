import type { Database } from '@gateway/db';
import type { ReservationStatus } from './ledger-types.ts';
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

/** The reservation columns a checkpoint reads under its row lock. */
interface ReservationRow {
  status: ReservationStatus;
  checkpoint_sequence: bigint;
  checkpoint_input_tokens: bigint;
  checkpoint_output_tokens: bigint;
  checkpoint_cost_micros: bigint;
  checkpoint_provider_cost_micros: bigint;
  expires_at_ms: bigint;
  /** The request id the first checkpoint carrying one recorded; '' if none yet. */
  request_id: string;
}

/** Detail of a checkpoint whose sequence was not above the last recorded one. */
const staleCheckpointDetail = 'replay or out of order: sequence is not above the last recorded; nothing changed';

/**
 * Records a stream's running usage on its held reservation, under the reservation's row lock
 * (so a racing settle, release or expiry sees either the old or the new checkpoint, never half).
 * Sequences make retries and reordering harmless: only a higher sequence changes anything.
 * Running totals never go down, and a checkpoint never moves money: only an expiry charges it.
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
  );
  if (problems.length > 0) return { result: 'invalid_argument', expiresAtMs: 0n, detail: problems.join('; ') };

  return db.transaction(async (tx): Promise<CheckpointOutcome> => {
    const { rows } = await tx.query<ReservationRow>(
      `SELECT status, checkpoint_sequence, checkpoint_input_tokens, checkpoint_output_tokens, checkpoint_cost_micros,
         checkpoint_provider_cost_micros, floor(extract(epoch FROM expires_at) * 1000)::bigint AS expires_at_ms, request_id
       FROM reservations WHERE id = $1 FOR UPDATE`,
      [input.reservationId],
    );
    const reservation = rows[0];
    if (!reservation) return { result: 'reservation_unknown', expiresAtMs: 0n, detail: 'no reservation has this id' };
    if (input.sequence <= reservation.checkpoint_sequence) {
      return { result: 'ok', expiresAtMs: reservation.expires_at_ms, detail: staleCheckpointDetail };
    }
    if (reservation.status !== 'held') {
      return { result: 'already_resolved', expiresAtMs: reservation.expires_at_ms, detail: `reservation was ${reservation.status} before this checkpoint` };
    }
    const decreasing = problemsOf(
      input.inputTokens < reservation.checkpoint_input_tokens ? 'input_tokens is below the last checkpoint (totals, not increments)' : undefined,
      input.outputTokens < reservation.checkpoint_output_tokens ? 'output_tokens is below the last checkpoint (totals, not increments)' : undefined,
      input.costMicros < reservation.checkpoint_cost_micros ? 'cost_micros is below the last checkpoint (totals, not increments)' : undefined,
      input.providerCostMicros < reservation.checkpoint_provider_cost_micros ? 'provider_cost_micros is below the last checkpoint (totals, not increments)' : undefined,
      // One reservation is one request: a second id means a caller mixed up its reservations.
      input.requestId !== '' && reservation.request_id !== '' && input.requestId !== reservation.request_id
        ? 'request_id differs from the one an earlier checkpoint recorded' : undefined,
    );
    if (decreasing.length > 0) return { result: 'invalid_argument', expiresAtMs: reservation.expires_at_ms, detail: decreasing.join('; ') };

    const updated = await tx.query<{ expires_at_ms: bigint }>(
      `UPDATE reservations SET checkpoint_sequence = $2, checkpoint_input_tokens = $3, checkpoint_output_tokens = $4,
         checkpoint_cost_micros = $5, checkpoint_provider_cost_micros = $6,
         expires_at = CASE WHEN $7::bigint > 0 THEN now() + $7::bigint * interval '1 millisecond' ELSE expires_at END,
         request_id = CASE WHEN request_id = '' THEN $8 ELSE request_id END
       WHERE id = $1
       RETURNING floor(extract(epoch FROM expires_at) * 1000)::bigint AS expires_at_ms`,
      [input.reservationId, input.sequence, input.inputTokens, input.outputTokens, input.costMicros,
        input.providerCostMicros, input.extendTtlMs, input.requestId],
    );
    return { result: 'ok', expiresAtMs: updated.rows[0]!.expires_at_ms, detail: '' };
  });
}
