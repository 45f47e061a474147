import type { Database } from '@gateway/db';
import { fingerprintOf } from './fingerprint.ts';
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
}

/**
 * Sets or clears a project's budget, idempotent on request_id. The budget row is locked (the
 * lock Reserves of the project take), so a change applies between two Reserves, never during
 * one. A project stays with the organisation that first budgeted it. If this month's spend is
 * already past the new threshold, the soft alert is raised now.
 */
export async function setProjectBudget(db: Database, input: SetProjectBudgetInput): Promise<SetProjectBudgetOutcome> {
  const idIssue = idProblem('request_id', input.requestId);
  if (idIssue) return { result: 'invalid_argument', detail: idIssue };
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
      return earlier.rows[0].fingerprint === fingerprint
        ? { result: 'ok', detail: 'replay: budget change already applied' }
        : { result: 'idempotency_conflict', detail: 'request_id was already used with a different payload' };
    }
    if (problems.length > 0) return { result: 'invalid_argument', detail: problems.join('; ') };
    const account = await tx.query('SELECT 1 FROM accounts WHERE organisation_id = $1', [input.organisationId]);
    if (account.rowCount === 0) return { result: 'organisation_unknown', detail: 'organisation has no account' };

    const current = await tx.query<{ organisation_id: string }>(
      'SELECT organisation_id FROM project_budgets WHERE project_id = $1 FOR UPDATE', [input.projectId],
    );
    const owner = current.rows[0]?.organisation_id;
    if (owner !== undefined && owner !== input.organisationId) {
      return { result: 'invalid_argument', detail: 'project_id has a budget under another organisation' };
    }
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
    return { result: 'ok', detail: clearing ? 'budget cleared' : '' };
  });
}
