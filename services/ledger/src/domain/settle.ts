import type { Database, Queryable } from '@gateway/db';
import { availableOrZero } from './read-balances.ts';
import { fingerprintOf } from './fingerprint.ts';
import type { BillingMode, ReservationStatus, UsageSource } from './ledger-types.ts';
import { appendMovement } from './append-movement.ts';
import { splitSettlement, type SettlementSplit } from './settlement-split.ts';
import { addProjectSpend, raiseSoftAlertIfDue } from './project-budget.ts';
import { idProblem, nonNegativeAmountProblem, optionalIdProblem, problemsOf } from './validation.ts';

/** The actual usage of a reserved request, to debit and record. */
export interface SettleInput {
  /** The reservation to settle; also the idempotency key of the settlement. */
  reservationId: string;
  inputTokens: bigint;
  outputTokens: bigint;
  /** Customer-price cost of the usage, µ₹. */
  costMicros: bigint;
  /** What the upstream provider charges for it, µ₹ (analytics only). */
  providerCostMicros: bigint;
  modelSlug: string;
  /** null when the caller sent no (or an unknown) usage source: refused as INVALID_ARGUMENT. */
  usageSource: UsageSource | null;
  /** The gateway's request id, kept on the usage record; may be empty. */
  requestId: string;
}

/** Results of Settle, in precedence order. */
export type SettleResultName =
  | 'ok' | 'idempotency_conflict' | 'invalid_argument' | 'reservation_unknown' | 'already_resolved';

/** The answer to Settle. */
export interface SettleOutcome {
  result: SettleResultName;
  /** Debited from the wallet, µ₹ (0 in internal billing mode). */
  debitedMicros: bigint;
  /** Unused Reserve returned to available, µ₹. */
  releasedMicros: bigint;
  /** Debited beyond what was held, µ₹ (streaming overrun, or the whole cost after expiry). */
  overrunMicros: bigint;
  /** Available balance at the time of the answer, µ₹. */
  availableMicros: bigint;
  detail: string;
}

/** Detail of a settle that arrived after the sweeper had expired its reservation. */
export const settledAfterExpiryDetail = 'settled after expiry';

/** The reservation columns a settle reads under its row lock. */
interface ReservationRow {
  organisation_id: string;
  project_id: string;
  billing_mode: BillingMode;
  amount_micros: bigint;
  status: ReservationStatus;
  settle_fingerprint: string | null;
  settle_debited_micros: bigint | null;
  settle_released_micros: bigint | null;
  settle_overrun_micros: bigint | null;
  settle_detail: string | null;
  /** What the expiry charged from the last checkpoint, µ₹; null unless expired with a checkpoint. */
  expiry_charged_micros: bigint | null;
}

/** Builds an answer that moved nothing. */
function refusal(result: Exclude<SettleResultName, 'ok'>, detail: string, availableMicros = 0n): SettleOutcome {
  return { result, debitedMicros: 0n, releasedMicros: 0n, overrunMicros: 0n, availableMicros, detail };
}

const noMoney: SettlementSplit = { debitedMicros: 0n, fromHoldMicros: 0n, releasedMicros: 0n, overrunMicros: 0n };

/**
 * Settles a reservation in one transaction, under a row lock on the reservation so that a
 * racing settle, release or expiry sees the outcome of whichever came first (law 3):
 * commercial: held -= Reserve, available += Reserve - cost, debited += cost (a cost above the
 * Reserve is an overrun that may take available below zero); internal: no wallet change.
 * Either way exactly one usage record is written (law 5). A settle after the sweeper expired
 * the reservation still records the usage and debits the cost, all of it as overrun, because
 * usage that happened must never be lost; a settle after an explicit Release is refused.
 */
export async function settle(db: Database, input: SettleInput): Promise<SettleOutcome> {
  const idIssue = idProblem('reservation_id', input.reservationId);
  if (idIssue) return refusal('invalid_argument', idIssue);
  const problems = problemsOf(
    nonNegativeAmountProblem('input_tokens', input.inputTokens),
    nonNegativeAmountProblem('output_tokens', input.outputTokens),
    nonNegativeAmountProblem('cost_micros', input.costMicros),
    nonNegativeAmountProblem('provider_cost_micros', input.providerCostMicros),
    idProblem('model_slug', input.modelSlug),
    input.usageSource === null ? 'usage_source must be USAGE_SOURCE_UPSTREAM or USAGE_SOURCE_GATEWAY_ESTIMATE' : undefined,
    optionalIdProblem('request_id', input.requestId),
  );
  const fingerprint = fingerprintOf('settle', {
    inputTokens: input.inputTokens, outputTokens: input.outputTokens, costMicros: input.costMicros,
    providerCostMicros: input.providerCostMicros, modelSlug: input.modelSlug, usageSource: input.usageSource,
    requestId: input.requestId,
  });

  return db.transaction(async (tx): Promise<SettleOutcome> => {
    const { rows } = await tx.query<ReservationRow>(
      `SELECT organisation_id, project_id, billing_mode, amount_micros, status, settle_fingerprint,
         settle_debited_micros, settle_released_micros, settle_overrun_micros, settle_detail, expiry_charged_micros
       FROM reservations WHERE id = $1 FOR UPDATE`,
      [input.reservationId],
    );
    const reservation = rows[0];
    if (reservation?.settle_fingerprint != null) {
      if (reservation.settle_fingerprint !== fingerprint) {
        return refusal('idempotency_conflict', 'reservation was already settled with a different payload');
      }
      return {
        result: 'ok',
        debitedMicros: reservation.settle_debited_micros ?? 0n,
        releasedMicros: reservation.settle_released_micros ?? 0n,
        overrunMicros: reservation.settle_overrun_micros ?? 0n,
        availableMicros: await availableOrZero(tx, reservation.organisation_id),
        detail: reservation.settle_detail ?? '',
      };
    }
    if (problems.length > 0) return refusal('invalid_argument', problems.join('; '));
    if (!reservation) return refusal('reservation_unknown', 'no reservation has this id');
    if (reservation.status === 'released' || reservation.status === 'settled') {
      return refusal('already_resolved', `reservation was ${reservation.status} before this settle`,
        await availableOrZero(tx, reservation.organisation_id));
    }
    return applySettlement(tx, input, reservation, fingerprint);
  });
}

/** SQL of a usage record's month (Asia/Kolkata), the month its cost counts against a Project Budget. */
const recordMonthSql = "to_char(created_at AT TIME ZONE 'Asia/Kolkata', 'YYYY-MM')";

/**
 * Moves the money, resolves the reservation and writes (or finalises) the usage record; the
 * reservation row is locked. Three cases:
 * - held: the Reserve covers the cost first; the rest is released, any excess is overrun;
 * - expired without a checkpoint: the hold is already back in available, the whole cost is overrun;
 * - expired with a checkpoint: the expiry already charged `k` and wrote a provisional record;
 *   this settle debits only `max(0, cost − k)` (as overrun) and finalises the record with the
 *   actual totals. An actual cost below `k` keeps the checkpointed charge and figures.
 */
async function applySettlement(
  tx: Queryable, input: SettleInput, reservation: ReservationRow, fingerprint: string,
): Promise<SettleOutcome> {
  const expired = reservation.status === 'expired';
  const commercial = reservation.billing_mode === 'commercial';
  const detail = expired ? settledAfterExpiryDetail : '';
  const chargedAtExpiryMicros = reservation.expiry_charged_micros;
  const finalising = expired && chargedAtExpiryMicros !== null;
  // What this settle adds to the project's spend and (commercial) to the wallet's debits.
  const extraCostMicros = finalising
    ? (input.costMicros > chargedAtExpiryMicros ? input.costMicros - chargedAtExpiryMicros : 0n)
    : input.costMicros;
  // Once expired, the hold is already back in available: whatever is charged now is overrun.
  const split = commercial ? splitSettlement(expired ? 0n : reservation.amount_micros, extraCostMicros) : noMoney;

  let availableMicros: bigint;
  if (commercial) {
    const updated = await tx.query<{ available_micros: bigint }>(
      `UPDATE accounts SET held_micros = held_micros - $2, available_micros = available_micros + $3 - $4,
         debited_micros = debited_micros + $5
       WHERE organisation_id = $1 RETURNING available_micros`,
      [reservation.organisation_id, split.fromHoldMicros + split.releasedMicros, split.releasedMicros,
        split.overrunMicros, split.debitedMicros],
    );
    availableMicros = updated.rows[0]!.available_micros;
    await appendMovement(tx, {
      organisationId: reservation.organisation_id, kind: 'settle', amountMicros: split.debitedMicros,
      overrunMicros: split.overrunMicros, reservationId: input.reservationId,
      detail: {
        usageSource: input.usageSource, requestId: input.requestId, ...(expired ? { afterExpiry: true } : {}),
        ...(finalising ? { chargedAtExpiryMicros: String(chargedAtExpiryMicros) } : {}),
      },
    });
    await appendMovement(tx, {
      organisationId: reservation.organisation_id, kind: 'release', amountMicros: split.releasedMicros,
      reservationId: input.reservationId, detail: { reason: 'unused reserve returned at settlement' },
    });
  } else {
    availableMicros = await availableOrZero(tx, reservation.organisation_id);
  }

  // An expired reservation keeps its one outcome (expired); the late settlement is recorded beside it.
  await tx.query(
    `UPDATE reservations SET status = CASE WHEN status = 'held' THEN 'settled' ELSE status END,
       resolved_at = coalesce(resolved_at, now()), settle_fingerprint = $2, settle_debited_micros = $3,
       settle_released_micros = $4, settle_overrun_micros = $5, settle_detail = $6
     WHERE id = $1`,
    [input.reservationId, fingerprint, split.debitedMicros, split.releasedMicros, split.overrunMicros, detail],
  );
  let month: string;
  if (finalising) {
    // The one usage record exists (provisional, from the checkpoint): it becomes final, with the
    // actual totals when they are at least what was charged, else with the charged figures kept.
    const actualCounts = input.costMicros >= chargedAtExpiryMicros;
    const { rows } = await tx.query<{ month: string }>(
      `UPDATE usage_records SET provisional = false,
         input_tokens = CASE WHEN $2::boolean THEN $3::bigint ELSE input_tokens END,
         output_tokens = CASE WHEN $2::boolean THEN $4::bigint ELSE output_tokens END,
         cost_micros = CASE WHEN $2::boolean THEN $5::bigint ELSE cost_micros END,
         provider_cost_micros = CASE WHEN $2::boolean THEN $6::bigint ELSE provider_cost_micros END,
         debited_micros = debited_micros + $7::bigint,
         model_slug = CASE WHEN $2::boolean THEN $8::text ELSE model_slug END,
         usage_source = CASE WHEN $2::boolean THEN $9::text ELSE usage_source END,
         request_id = CASE WHEN $2::boolean THEN $10::text ELSE request_id END
       WHERE reservation_id = $1 AND provisional
       RETURNING ${recordMonthSql} AS month`,
      [input.reservationId, actualCounts, input.inputTokens, input.outputTokens, input.costMicros, input.providerCostMicros,
        split.debitedMicros, input.modelSlug, input.usageSource, input.requestId],
    );
    if (!rows[0]) throw new Error(`reservation ${input.reservationId} expired with a checkpoint but has no provisional usage record`);
    month = rows[0].month;
  } else {
    const { rows } = await tx.query<{ month: string }>(
      `INSERT INTO usage_records (reservation_id, organisation_id, project_id, model_slug, input_tokens, output_tokens,
         cost_micros, provider_cost_micros, debited_micros, billing_mode, usage_source, request_id)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
       RETURNING ${recordMonthSql} AS month`,
      [input.reservationId, reservation.organisation_id, reservation.project_id, input.modelSlug, input.inputTokens,
        input.outputTokens, input.costMicros, input.providerCostMicros, split.debitedMicros, reservation.billing_mode,
        input.usageSource, input.requestId],
    );
    month = rows[0]!.month;
  }
  await addProjectSpend(tx, {
    projectId: reservation.project_id, organisationId: reservation.organisation_id, month, costMicros: extraCostMicros,
  });
  await raiseSoftAlertIfDue(tx, reservation.project_id);
  return {
    result: 'ok',
    debitedMicros: split.debitedMicros,
    releasedMicros: split.releasedMicros,
    overrunMicros: split.overrunMicros,
    availableMicros,
    detail,
  };
}
