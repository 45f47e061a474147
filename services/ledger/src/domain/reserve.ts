import { runnerOf, type LedgerTarget } from './apply-ledger-operations.ts';
import { fingerprintOf } from './fingerprint.ts';
import type { BillingMode } from './ledger-types.ts';
import { idProblem, positiveAmountProblem, problemsOf, reserveTtlProblem } from './validation.ts';

/** A Reserve to hold before an upstream call. */
export interface ReserveInput {
  /** Caller-generated id of the reservation; also its idempotency key. */
  reservationId: string;
  organisationId: string;
  projectId: string;
  /** null when the caller sent no (or an unknown) billing mode: refused as INVALID_ARGUMENT. */
  billingMode: BillingMode | null;
  /** Amount to hold, µ₹; positive. */
  amountMicros: bigint;
  /** Lifetime from the database clock at reserve time, ms (1 s .. 24 h). */
  ttlMs: bigint;
  modelSlug: string;
  /**
   * Promotion: the grant this Reserve is held out of (a carve made its own reservation); its
   * remaining hold must cover the amount, and no balance or budget check runs again. Absent: an
   * ordinary Reserve against available.
   */
  grantId?: string;
}

/**
 * Results of Reserve, in precedence order: the first that applies is returned, except that
 * `released` (a Release of this id arrived first and left a tombstone) is decided before every
 * result but `invalid_argument` (a tombstone and a reservation never share an id).
 */
export type ReserveResultName =
  | 'ok' | 'idempotency_conflict' | 'invalid_argument' | 'organisation_unknown' | 'insufficient_balance'
  | 'project_budget_exceeded' | 'released' | 'grant_not_held';

/** The answer to Reserve. */
export interface ReserveOutcome {
  result: ReserveResultName;
  /** Available balance at the time of the answer, µ₹ (0 when unknown or irrelevant). */
  availableMicros: bigint;
  /** Deadline of the reservation, ms since the Unix epoch by the database clock (0 unless OK). */
  expiresAtMs: bigint;
  detail: string;
}

/** Builds a refusal: nothing was written, so only the result and its reason matter. */
function refusal(result: Exclude<ReserveResultName, 'ok'>, detail: string, availableMicros = 0n): ReserveOutcome {
  return { result, availableMicros, expiresAtMs: 0n, detail };
}

/**
 * Holds a Reserve. Commercial: one conditional UPDATE moves the amount from available to held
 * only if available covers it (NO_OVERSPEND), in the transaction that inserts the reservation and its
 * `reserve` movement. Internal: the reservation is recorded (so it can be settled) but nothing
 * is held. A refused Reserve writes nothing, so replaying a refused id evaluates it afresh. An id
 * a Release reached first (a tombstone) holds nothing on every path: RELEASED.
 * Input is checked here; the database work is `ledger_reserve` (services/ledger/sql/ledger_reserve.sql;
 * its result is decided by sql/ledger_reserve_decision.sql, on every path), one round trip
 * alone (`target` a Database) or one operation of a group-committed batch (a LedgerBatcher).
 */
export async function reserve(target: LedgerTarget, input: ReserveInput): Promise<ReserveOutcome> {
  const idIssue = idProblem('reservation_id', input.reservationId);
  if (idIssue) return refusal('invalid_argument', idIssue);
  const problems = problemsOf(
    idProblem('organisation_id', input.organisationId),
    idProblem('project_id', input.projectId),
    input.billingMode === null ? 'billing_mode must be BILLING_MODE_COMMERCIAL or BILLING_MODE_INTERNAL' : undefined,
    positiveAmountProblem('amount_micros', input.amountMicros),
    reserveTtlProblem('ttl_ms', input.ttlMs),
    idProblem('model_slug', input.modelSlug),
    input.grantId !== undefined ? idProblem('grant_id', input.grantId) : undefined,
  );
  const fingerprint = fingerprintOf('reserve', {
    organisationId: input.organisationId, projectId: input.projectId, billingMode: input.billingMode,
    amountMicros: input.amountMicros, ttlMs: input.ttlMs, modelSlug: input.modelSlug,
    // Only when set, so ordinary Reserves keep the fingerprint they had before grants existed.
    ...(input.grantId !== undefined ? { grantId: input.grantId } : {}),
  });

  if (problems.length > 0) {
    // Only the key and fingerprint travel: a replay or conflict still takes precedence in the database.
    return toReserveOutcome(await runnerOf(target).run({ kind: 'reserve', reservationId: input.reservationId, fingerprint, problems: problems.join('; ') }));
  }
  return toReserveOutcome(await runnerOf(target).run({
    kind: 'reserve', reservationId: input.reservationId, fingerprint,
    fields: {
      organisationId: input.organisationId, projectId: input.projectId, billingMode: input.billingMode!,
      amountMicros: input.amountMicros.toString(), ttlMs: input.ttlMs.toString(), modelSlug: input.modelSlug,
      ...(input.grantId !== undefined ? { grantId: input.grantId } : {}),
    },
  }));
}

/** The database's answer as a Reserve outcome. */
function toReserveOutcome(answer: { result: string; availableMicros: bigint; expiresAtMs: bigint; detail: string }): ReserveOutcome {
  return {
    result: answer.result as ReserveResultName, availableMicros: answer.availableMicros, expiresAtMs: answer.expiresAtMs,
    detail: answer.detail,
  };
}
