import type { Database, Queryable } from '@gateway/db';
import { availableOrZero } from './read-balances.ts';
import { fingerprintOf } from './fingerprint.ts';
import type { BillingMode } from './ledger-types.ts';
import { appendMovement } from './append-movement.ts';
import { IdempotencyKeyRace, runIdempotentTransaction } from './run-idempotent-transaction.ts';
import { lockProjectBudget, raiseSoftAlertIfDue, readProjectSpendNow, type ProjectBudget } from './project-budget.ts';
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
}

/** Results of Reserve, in precedence order: the first that applies is returned. */
export type ReserveResultName =
  | 'ok' | 'idempotency_conflict' | 'invalid_argument' | 'organisation_unknown' | 'insufficient_balance'
  | 'project_budget_exceeded';

/** The answer to Reserve. */
export interface ReserveOutcome {
  result: ReserveResultName;
  /** Available balance at the time of the answer, µ₹ (0 when unknown or irrelevant). */
  availableMicros: bigint;
  /** Deadline of the reservation, ms since the Unix epoch by the database clock (0 unless OK). */
  expiresAtMs: bigint;
  detail: string;
}

/** The columns of an earlier reservation that decide a replay. */
interface EarlierReservation {
  request_fingerprint: string;
  organisation_id: string;
  expires_at_ms: bigint;
}

/** Builds a refusal: nothing was written, so only the result and its reason matter. */
function refusal(result: Exclude<ReserveResultName, 'ok'>, detail: string, availableMicros = 0n): ReserveOutcome {
  return { result, availableMicros, expiresAtMs: 0n, detail };
}

/**
 * Holds a Reserve. Commercial: one conditional UPDATE moves the amount from available to held
 * only if available covers it (law 1), in the transaction that inserts the reservation and its
 * `reserve` movement. Internal: the reservation is recorded (so it can be settled) but nothing
 * is held. A refused Reserve writes nothing, so replaying a refused id evaluates it afresh.
 */
export async function reserve(db: Database, input: ReserveInput): Promise<ReserveOutcome> {
  const idIssue = idProblem('reservation_id', input.reservationId);
  if (idIssue) return refusal('invalid_argument', idIssue);
  const problems = problemsOf(
    idProblem('organisation_id', input.organisationId),
    idProblem('project_id', input.projectId),
    input.billingMode === null ? 'billing_mode must be BILLING_MODE_COMMERCIAL or BILLING_MODE_INTERNAL' : undefined,
    positiveAmountProblem('amount_micros', input.amountMicros),
    reserveTtlProblem('ttl_ms', input.ttlMs),
    idProblem('model_slug', input.modelSlug),
  );
  const fingerprint = fingerprintOf('reserve', {
    organisationId: input.organisationId, projectId: input.projectId, billingMode: input.billingMode,
    amountMicros: input.amountMicros, ttlMs: input.ttlMs, modelSlug: input.modelSlug,
  });

  return runIdempotentTransaction(db, async (tx): Promise<ReserveOutcome> => {
    const earlier = await findEarlier(tx, input.reservationId);
    if (earlier) {
      if (earlier.request_fingerprint !== fingerprint) {
        return refusal('idempotency_conflict', 'reservation_id was already used with a different payload');
      }
      return {
        result: 'ok',
        availableMicros: await availableOrZero(tx, earlier.organisation_id),
        expiresAtMs: earlier.expires_at_ms,
        detail: 'replay: reservation already exists',
      };
    }
    if (problems.length > 0) return refusal('invalid_argument', problems.join('; '));
    const commercial = input.billingMode === 'commercial';

    // Law 9: the project's budget row is locked first (budget, then account: the lock order every
    // path follows), so Reserves of one project check the cap one after another on any replica.
    const budget = await lockProjectBudget(tx, input.projectId);
    const budgetProblem = budget ? await budgetShortfall(tx, input.projectId, budget, input.amountMicros) : undefined;

    let availableMicros: bigint;
    if (commercial && !budgetProblem) {
      // The whole of law 1 is this WHERE: concurrent Reserves serialise on the account row and
      // each re-checks the balance the previous one left.
      const held = await tx.query<{ available_micros: bigint }>(
        `UPDATE accounts SET available_micros = available_micros - $2, held_micros = held_micros + $2
         WHERE organisation_id = $1 AND available_micros >= $2 RETURNING available_micros`,
        [input.organisationId, input.amountMicros],
      );
      const account = held.rows[0];
      if (!account) return refuseUnheld(tx, input.organisationId, input.amountMicros, undefined);
      availableMicros = account.available_micros;
    } else if (budgetProblem) {
      // Nothing is held: answer in precedence order (no account, balance, then budget).
      return refuseUnheld(tx, input.organisationId, commercial ? input.amountMicros : undefined, budgetProblem);
    } else {
      const { rows } = await tx.query<{ available_micros: bigint }>(
        'SELECT available_micros FROM accounts WHERE organisation_id = $1', [input.organisationId],
      );
      if (!rows[0]) return refusal('organisation_unknown', 'organisation has no account');
      availableMicros = rows[0].available_micros;
    }

    const inserted = await tx.query<{ expires_at_ms: bigint }>(
      `INSERT INTO reservations (id, organisation_id, project_id, billing_mode, amount_micros, model_slug,
         expires_at, request_fingerprint)
       VALUES ($1, $2, $3, $4, $5, $6, now() + $7::bigint * interval '1 millisecond', $8)
       ON CONFLICT (id) DO NOTHING
       RETURNING floor(extract(epoch FROM expires_at) * 1000)::bigint AS expires_at_ms`,
      [input.reservationId, input.organisationId, input.projectId, input.billingMode, input.amountMicros,
        input.modelSlug, input.ttlMs, fingerprint],
    );
    const reservation = inserted.rows[0];
    // A concurrent Reserve with this id committed first: roll back our hold and answer as a replay.
    if (!reservation) throw new IdempotencyKeyRace(input.reservationId);
    if (commercial) {
      await appendMovement(tx, {
        organisationId: input.organisationId, kind: 'reserve', amountMicros: input.amountMicros,
        reservationId: input.reservationId,
        detail: { projectId: input.projectId, modelSlug: input.modelSlug },
      });
    }
    if (budget) await raiseSoftAlertIfDue(tx, input.projectId, budget);
    return { result: 'ok', availableMicros, expiresAtMs: reservation.expires_at_ms, detail: '' };
  });
}

/** Reads the reservation an id already names, if any. */
async function findEarlier(tx: Queryable, reservationId: string): Promise<EarlierReservation | undefined> {
  const { rows } = await tx.query<EarlierReservation>(
    `SELECT request_fingerprint, organisation_id, floor(extract(epoch FROM expires_at) * 1000)::bigint AS expires_at_ms
     FROM reservations WHERE id = $1`,
    [reservationId],
  );
  return rows[0];
}

/**
 * Why a Reserve of `amountMicros` would pass the project's cap, or undefined when it fits:
 * settled this month + held by the project's open reservations + amount <= cap.
 */
async function budgetShortfall(tx: Queryable, projectId: string, budget: ProjectBudget, amountMicros: bigint): Promise<string | undefined> {
  const spend = await readProjectSpendNow(tx, projectId);
  if (spend.settledMicros + spend.heldMicros + amountMicros <= budget.monthlyCapMicros) return undefined;
  return `project ${spend.month} spend ${spend.settledMicros} + held ${spend.heldMicros} + amount ${amountMicros} µ₹ would pass its monthly cap of ${budget.monthlyCapMicros} µ₹`;
}

/**
 * Tells why a Reserve holds nothing, in precedence order: no account, then (commercial, when
 * `commercialAmountMicros` is given) not enough available, then the project budget.
 */
async function refuseUnheld(
  tx: Queryable, organisationId: string, commercialAmountMicros: bigint | undefined, budgetProblem: string | undefined,
): Promise<ReserveOutcome> {
  const { rows } = await tx.query<{ available_micros: bigint }>(
    'SELECT available_micros FROM accounts WHERE organisation_id = $1', [organisationId],
  );
  const account = rows[0];
  if (!account) return refusal('organisation_unknown', 'organisation has no account');
  if (commercialAmountMicros !== undefined && account.available_micros < commercialAmountMicros) {
    return refusal('insufficient_balance', 'available balance is below amount_micros', account.available_micros);
  }
  if (budgetProblem) return refusal('project_budget_exceeded', budgetProblem, account.available_micros);
  // The conditional UPDATE found too little, but a concurrent credit has landed since: retry later.
  return refusal('insufficient_balance', 'available balance is below amount_micros', account.available_micros);
}
