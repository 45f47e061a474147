import type { Database, Queryable } from '@gateway/db';
import { fingerprintOf } from './fingerprint.ts';
import { recallGrants, type RecalledGrant } from './grants.ts';
import { raiseSoftAlertIfDue } from './project-budget.ts';
import { IdempotencyKeyRace, runIdempotentTransaction } from './run-idempotent-transaction.ts';
import { idProblem, nonNegativeAmountProblem, problemsOf } from './validation.ts';

/** A change of a project's monthly budget (PROJECT_BUDGET). */
export interface SetProjectBudgetInput {
  /** Caller-generated idempotency id. */
  requestId: string;
  organisationId: string;
  projectId: string;
  /** Monthly cap on the project's customer-price cost, µ₹; 0 clears the budget. */
  monthlyCapMicros: bigint;
  /** Soft alert threshold, percent of the cap: 1..100 with a cap; 0..100 (ignored) when clearing. */
  softAlertPercent: number;
}

/** Results of SetProjectBudget, in precedence order. */
export type SetProjectBudgetResultName = 'ok' | 'idempotency_conflict' | 'invalid_argument' | 'organisation_unknown';

/** The answer to SetProjectBudget. */
export interface SetProjectBudgetOutcome {
  result: SetProjectBudgetResultName;
  detail: string;
  /**
   * The project's held grants whose owners must answer a recall before the change may answer
   * (recalled by this change, or, on a replay, still unanswered): empty when the new cap is a
   * raise or a clear, which every grant already fits under.
   */
  recalled: RecalledGrant[];
}

/**
 * Sets or clears a project's budget, idempotent on request_id. The budget row is locked (the
 * lock Reserves of the project take), so a change applies between two Reserves, never during
 * one. A project stays with the organisation that first budgeted it. If this month's spend is
 * already past the new threshold, the soft alert is raised now.
 *
 * PROJECT_BUDGET with credit grants: a grant was sized under the cap of its day, and its owner
 * carves from it in memory with no budget check. A cap set where there was none, or lowered, can
 * leave a grant holding more than the project may still spend, so such a change recalls every
 * held grant of the project in the same transaction (`ledger_recall_grants`); the caller waits
 * for their owners' answers (waitForRecallAnswers) before it answers. Under the budget-change lock
 * (exclusive; AcquireGrant takes it shared) no grant sized under the old cap commits after it.
 */
export async function setProjectBudget(db: Database, input: SetProjectBudgetInput): Promise<SetProjectBudgetOutcome> {
  const idIssue = idProblem('request_id', input.requestId);
  if (idIssue) return { result: 'invalid_argument', detail: idIssue, recalled: [] };
  const clearing = input.monthlyCapMicros === 0n;
  const problems = problemsOf(
    idProblem('organisation_id', input.organisationId),
    idProblem('project_id', input.projectId),
    nonNegativeAmountProblem('monthly_cap_micros', input.monthlyCapMicros),
    !Number.isInteger(input.softAlertPercent) || input.softAlertPercent > 100 || input.softAlertPercent < (clearing ? 0 : 1)
      ? `soft_alert_percent must be between ${clearing ? 0 : 1} and 100` : undefined,
  );
  const fingerprint = fingerprintOf('set_project_budget', {
    organisationId: input.organisationId, projectId: input.projectId, monthlyCapMicros: input.monthlyCapMicros,
    softAlertPercent: input.softAlertPercent,
  });

  return runIdempotentTransaction(db, async (tx): Promise<SetProjectBudgetOutcome> => {
    const earlier = await tx.query<{ fingerprint: string }>(
      'SELECT fingerprint FROM project_budget_changes WHERE request_id = $1', [input.requestId],
    );
    if (earlier.rows[0]) {
      if (earlier.rows[0].fingerprint !== fingerprint) {
        return { result: 'idempotency_conflict', detail: 'request_id was already used with a different payload', recalled: [] };
      }
      // A retry (the first answer may have been lost waiting for owners) waits for what is still unanswered.
      return { result: 'ok', detail: 'replay: budget change already applied', recalled: clearing ? [] : await unansweredRecalls(tx, input.projectId) };
    }
    if (problems.length > 0) return { result: 'invalid_argument', detail: problems.join('; '), recalled: [] };
    const account = await tx.query('SELECT 1 FROM accounts WHERE organisation_id = $1', [input.organisationId]);
    if (account.rowCount === 0) return { result: 'organisation_unknown', detail: 'organisation has no account', recalled: [] };

    // The budget-change lock first (the lock order: it comes before the budget row), also when
    // the project has no budget row yet.
    await tx.query('SELECT pg_advisory_xact_lock(ledger_budget_change_lock_class(), hashtext($1))', [input.projectId]);
    const current = await tx.query<{ organisation_id: string; monthly_cap_micros: bigint }>(
      'SELECT organisation_id, monthly_cap_micros FROM project_budgets WHERE project_id = $1 FOR UPDATE', [input.projectId],
    );
    const owner = current.rows[0]?.organisation_id;
    if (owner !== undefined && owner !== input.organisationId) {
      return { result: 'invalid_argument', detail: 'project_id has a budget under another organisation', recalled: [] };
    }
    const previousCapMicros = current.rows[0]?.monthly_cap_micros ?? 0n;
    const percent = clearing ? 0 : input.softAlertPercent;
    const inserted = await tx.query(
      `INSERT INTO project_budget_changes (request_id, organisation_id, project_id, monthly_cap_micros, soft_alert_percent, fingerprint)
       VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (request_id) DO NOTHING`,
      [input.requestId, input.organisationId, input.projectId, input.monthlyCapMicros, percent, fingerprint],
    );
    if (inserted.rowCount !== 1) throw new IdempotencyKeyRace(input.requestId);
    await tx.query(
      `INSERT INTO project_budgets (project_id, organisation_id, monthly_cap_micros, soft_alert_percent) VALUES ($1, $2, $3, $4)
       ON CONFLICT (project_id) DO UPDATE SET monthly_cap_micros = EXCLUDED.monthly_cap_micros,
         soft_alert_percent = EXCLUDED.soft_alert_percent, updated_at = now()`,
      [input.projectId, input.organisationId, input.monthlyCapMicros, percent],
    );
    if (!clearing) await raiseSoftAlertIfDue(tx, input.projectId);
    // A raise or a clear: every grant was sized under a cap at most this one (or none is set now).
    const tightened = !clearing && (previousCapMicros === 0n || input.monthlyCapMicros < previousCapMicros);
    const recalled = tightened ? await recallGrants(tx, { organisationId: null, projectId: input.projectId }) : [];
    return { result: 'ok', detail: clearing ? 'budget cleared' : '', recalled };
  });
}

/** The project's held grants that are recalled and not yet answered, with their owners (a replay's wait). */
async function unansweredRecalls(tx: Queryable, projectId: string): Promise<RecalledGrant[]> {
  const { rows } = await tx.query<{ id: string; owner_id: string }>(
    `SELECT id, owner_id FROM grants
     WHERE project_id = $1 AND status = 'held' AND recalled_at IS NOT NULL AND recall_answered_at IS NULL`, [projectId],
  );
  return rows.map((row) => ({ grantId: row.id, ownerId: row.owner_id, newlyRecalled: false }));
}

/** How the wait for recall answers is bounded. */
export interface RecallWaitOptions {
  /** Longest wait, ms (LEDGER_BUDGET_RECALL_WAIT_MS): a grant whose deadline is further than this is left pending (logged by the caller). */
  timeoutMs: number;
  /** How often the grants are looked at, ms. */
  pollIntervalMs: number;
}

/**
 * Waits until no grant of `grantIds` can still be carved from: each is answered (its owner
 * returned what it had not carved and carves nothing more), resolved (closed or expired), or past
 * its deadline by the database clock (a proxy never carves from a grant past its own deadline,
 * which is never later than the ledger's; an extension granted after the recall answers
 * `recalled`, which stops its carving too). Returns the ids still pending when `timeoutMs` ran
 * out (empty: the cap binds every carve from now on).
 */
export async function waitForRecallAnswers(db: Queryable, grantIds: readonly string[], options: RecallWaitOptions): Promise<string[]> {
  if (grantIds.length === 0) return [];
  const giveUpAtMs = Date.now() + options.timeoutMs;
  for (;;) {
    const { rows } = await db.query<{ id: string }>(
      `SELECT id FROM grants
       WHERE id = ANY ($1::text[]) AND status = 'held' AND recall_answered_at IS NULL AND expires_at > now()`, [grantIds],
    );
    if (rows.length === 0 || Date.now() >= giveUpAtMs) return rows.map((row) => row.id);
    await new Promise((resolve) => setTimeout(resolve, options.pollIntervalMs));
  }
}
