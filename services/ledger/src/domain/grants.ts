import type { Database, Queryable } from '@gateway/db';
import { fingerprintOf } from './fingerprint.ts';
import type { BillingMode } from './ledger-types.ts';
import { runIdempotentTransaction } from './run-idempotent-transaction.ts';
import { idProblem, nonNegativeAmountProblem, positiveAmountProblem, problemsOf, reasonProblem, reserveTtlProblem } from './validation.ts';

/** SQLSTATE the grant functions raise when a racing call with the same new key committed first. */
const keyRaceSqlState = 'LR001';

/** An AcquireGrant request: a hold for one proxy replica and one (organisation, project). */
export interface AcquireGrantInput {
  /** Caller-generated id of the grant; also its idempotency key. */
  grantId: string;
  organisationId: string;
  projectId: string;
  /** null when the caller sent no (or an unknown) billing mode: INVALID_ARGUMENT. */
  billingMode: BillingMode | null;
  /** Smallest grant worth holding, µ₹; positive. */
  minMicros: bigint;
  /** What the caller would like, µ₹; at least minMicros. */
  wantMicros: bigint;
  /** Lifetime from the database clock, ms (1 s .. 24 h). */
  ttlMs: bigint;
  /** The proxy replica that owns the grant (its PROXY_ID). */
  ownerId: string;
}

/** Results of AcquireGrant, in precedence order. */
export type AcquireGrantResultName = 'ok' | 'idempotency_conflict' | 'invalid_argument' | 'organisation_unknown' | 'not_granted';

/** The answer to AcquireGrant, with the grants a not_granted answer recalled. */
export interface AcquireGrantOutcome {
  result: AcquireGrantResultName;
  /** What the grant holds, µ₹ (0 unless ok). */
  grantedMicros: bigint;
  /** Deadline, ms since the Unix epoch by the database clock (0 unless ok). */
  expiresAtMs: bigint;
  /** Available balance after the call, µ₹. */
  availableMicros: bigint;
  detail: string;
  /** Held grants pulled back because of this not_granted answer (empty otherwise). */
  recalled: RecalledGrant[];
}

/**
 * AcquireGrant: sizes and holds a credit grant (`ledger_acquire_grant`, the one home of the
 * sizing: at most `want`, at most `sharePercent` % of available (NO_OVERSPEND) and of the
 * project's budget headroom (PROJECT_BUDGET); nothing when that is below `min`). A not_granted
 * answer then recalls the organisation's (or, budget-bound, the project's) held grants in a
 * statement of its own (`ledger_recall_grants`), so money idling in other replicas' grants comes back.
 */
export async function acquireGrant(db: Database, input: AcquireGrantInput, sharePercent: number): Promise<AcquireGrantOutcome> {
  const idIssue = idProblem('grant_id', input.grantId);
  if (idIssue) return { result: 'invalid_argument', grantedMicros: 0n, expiresAtMs: 0n, availableMicros: 0n, detail: idIssue, recalled: [] };
  const problems = problemsOf(
    idProblem('organisation_id', input.organisationId),
    idProblem('project_id', input.projectId),
    input.billingMode === null ? 'billing_mode must be BILLING_MODE_COMMERCIAL or BILLING_MODE_INTERNAL' : undefined,
    positiveAmountProblem('min_micros', input.minMicros),
    positiveAmountProblem('want_micros', input.wantMicros),
    input.wantMicros < input.minMicros ? 'want_micros must be at least min_micros' : undefined,
    reserveTtlProblem('ttl_ms', input.ttlMs),
    idProblem('owner_id', input.ownerId),
  );
  const fingerprint = fingerprintOf('acquire_grant', {
    organisationId: input.organisationId, projectId: input.projectId, billingMode: input.billingMode,
    minMicros: input.minMicros, wantMicros: input.wantMicros, ttlMs: input.ttlMs, ownerId: input.ownerId,
  });
  const op: Record<string, string> = problems.length > 0
    ? { grantId: input.grantId, fingerprint, problems: problems.join('; ') }
    : {
      grantId: input.grantId, fingerprint, organisationId: input.organisationId, projectId: input.projectId,
      billingMode: input.billingMode!, minMicros: input.minMicros.toString(), wantMicros: input.wantMicros.toString(),
      ttlMs: input.ttlMs.toString(), ownerId: input.ownerId,
    };
  const row = await runIdempotentTransaction(db, async (tx) => {
    const { rows } = await tx.query<{
      result: AcquireGrantResultName; granted_micros: bigint; expires_at_ms: bigint; available_micros: bigint; detail: string;
      recall_organisation: boolean; recall_project: boolean;
    }>('SELECT * FROM ledger_acquire_grant($1::jsonb, $2)', [JSON.stringify(op), sharePercent]);
    return rows[0]!;
  }, { sqlState: keyRaceSqlState, key: input.grantId });
  const recalled = row.result === 'not_granted' && (row.recall_organisation || row.recall_project)
    ? await recallGrants(db, {
      organisationId: row.recall_organisation ? input.organisationId : null,
      projectId: row.recall_project ? input.projectId : null,
    })
    : [];
  return {
    result: row.result, grantedMicros: row.granted_micros, expiresAtMs: row.expires_at_ms, availableMicros: row.available_micros,
    detail: row.detail, recalled,
  };
}

/** An AdjustGrant request. */
export interface AdjustGrantInput {
  /** Caller-generated id of this adjustment; its idempotency key. */
  adjustmentId: string;
  grantId: string;
  /** Returned to the wallet, µ₹ (>= 0; capped at what the grant holds). */
  returnMicros: bigint;
  /** Return everything left and resolve the grant. */
  close: boolean;
  /** When positive, the deadline becomes the database's now plus this, ms. */
  extendTtlMs: bigint;
  /** Why (e.g. idle, recalled, shutdown); kept on the movement. */
  reason: string;
}

/** Results of AdjustGrant, in precedence order. */
export type AdjustGrantResultName = 'ok' | 'idempotency_conflict' | 'invalid_argument' | 'grant_unknown' | 'already_resolved';

/** The answer to AdjustGrant. */
export interface AdjustGrantOutcome {
  result: AdjustGrantResultName;
  /** Returned to the wallet by this adjustment, µ₹. */
  returnedMicros: bigint;
  /** What the grant still holds, µ₹. */
  remainingMicros: bigint;
  /** Deadline, ms since the Unix epoch by the database clock. */
  expiresAtMs: bigint;
  /** The ledger wants the grant back. */
  recalled: boolean;
  /** The grant's owner ('' when unknown): the transport learns which stream serves it. */
  ownerId: string;
  detail: string;
}

/**
 * AdjustGrant (`ledger_adjust_grant`): returns part or all of a grant's hold to available
 * (CONSERVATION: one `grant_return` movement), closes it, and/or extends its deadline (EXPIRY),
 * idempotent on adjustment_id (IDEMPOTENCY: the first answer is replayed).
 */
export async function adjustGrant(db: Database, input: AdjustGrantInput): Promise<AdjustGrantOutcome> {
  const refusal = (detail: string): AdjustGrantOutcome => ({
    result: 'invalid_argument', returnedMicros: 0n, remainingMicros: 0n, expiresAtMs: 0n, recalled: false, ownerId: '', detail,
  });
  const idIssue = idProblem('adjustment_id', input.adjustmentId);
  if (idIssue) return refusal(idIssue);
  const problems = problemsOf(
    idProblem('grant_id', input.grantId),
    nonNegativeAmountProblem('return_micros', input.returnMicros),
    input.extendTtlMs !== 0n ? reserveTtlProblem('extend_ttl_ms', input.extendTtlMs) : undefined,
    reasonProblem('reason', input.reason),
  );
  const fingerprint = fingerprintOf('adjust_grant', {
    grantId: input.grantId, returnMicros: input.returnMicros, close: input.close, extendTtlMs: input.extendTtlMs, reason: input.reason,
  });
  const op: Record<string, string | boolean> = problems.length > 0
    ? { adjustmentId: input.adjustmentId, fingerprint, problems: problems.join('; ') }
    : {
      adjustmentId: input.adjustmentId, grantId: input.grantId, fingerprint, returnMicros: input.returnMicros.toString(),
      close: input.close, extendTtlMs: input.extendTtlMs.toString(), reason: input.reason,
    };
  const row = await runIdempotentTransaction(db, async (tx) => {
    const { rows } = await tx.query<{
      result: AdjustGrantResultName; returned_micros: bigint; remaining_micros: bigint; expires_at_ms: bigint; recalled: boolean;
      owner_id: string; detail: string;
    }>('SELECT * FROM ledger_adjust_grant($1::jsonb)', [JSON.stringify(op)]);
    return rows[0]!;
  }, { sqlState: keyRaceSqlState, key: input.adjustmentId });
  return {
    result: row.result, returnedMicros: row.returned_micros, remainingMicros: row.remaining_micros, expiresAtMs: row.expires_at_ms,
    recalled: row.recalled, ownerId: row.owner_id, detail: row.detail,
  };
}

/** A held grant the ledger wants back, and the replica that owns it. */
export interface RecalledGrant {
  grantId: string;
  ownerId: string;
  /** Marked by this call (false: it was recalled before and is still held). */
  newlyRecalled: boolean;
}

/**
 * Marks recalled every held grant in scope (`ledger_recall_grants`): the organisation's
 * commercial grants when its balance ran low, the project's grants when its budget did. Returns
 * every held grant in scope that is recalled, so a refusal can say how many are coming back.
 */
export async function recallGrants(
  db: Queryable, scope: { organisationId: string | null; projectId: string | null },
): Promise<RecalledGrant[]> {
  const { rows } = await db.query<{ grant_id: string; owner_id: string; newly_recalled: boolean }>(
    'SELECT * FROM ledger_recall_grants($1, $2)', [scope.organisationId, scope.projectId],
  );
  return rows.map((row) => ({ grantId: row.grant_id, ownerId: row.owner_id, newlyRecalled: row.newly_recalled }));
}

/**
 * Whether a refused Reserve of `amountMicros` could fit once the money now held comes back
 * (`ledger_refusal_liftable`): the balance refusal iff amount ≤ available + held, the budget one
 * iff this month's settled spend + amount ≤ the cap. False: only a credit (or a cap change) can
 * lift it, so nothing is recalled for it and the caller answers at once (NO_OVERSPEND's promise
 * kept without waiting on holds that cannot help).
 */
export async function refusalLiftable(
  db: Queryable, refusal: { organisationId: string; projectId: string; amountMicros: bigint; budget: boolean },
): Promise<boolean> {
  const { rows } = await db.query<{ liftable: boolean }>(
    'SELECT ledger_refusal_liftable($1, $2, $3, $4) AS liftable', [refusal.organisationId, refusal.projectId, refusal.amountMicros, refusal.budget],
  );
  return rows[0]?.liftable ?? true;
}

/**
 * The recall poller's query: held, recalled grants of these owners (one index scan,
 * grants_owner_recalled), so a replica pushes recalls another ledger replica marked.
 */
export async function findRecalledGrants(db: Queryable, ownerIds: readonly string[]): Promise<Array<{ grantId: string; ownerId: string }>> {
  if (ownerIds.length === 0) return [];
  const { rows } = await db.query<{ id: string; owner_id: string }>(
    `SELECT id, owner_id FROM grants WHERE owner_id = ANY ($1::text[]) AND status = 'held' AND recalled_at IS NOT NULL`,
    [ownerIds],
  );
  return rows.map((row) => ({ grantId: row.id, ownerId: row.owner_id }));
}
