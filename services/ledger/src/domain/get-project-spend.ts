import type { Queryable } from '@gateway/db';
import { InvalidQueryError } from './invalid-query-error.ts';
import { readProjectSpendNow } from './project-budget.ts';
import { idProblem } from './validation.ts';

/** A project's spend this month against its budget. */
export interface ProjectSpendView {
  /** The current calendar month in Asia/Kolkata, e.g. '2026-11'. */
  month: string;
  /** Customer-price cost settled this month, µ₹ (both billing modes). */
  settledMicros: bigint;
  /** Held by the project's open reservations, µ₹. */
  heldMicros: bigint;
  /** 0 when the project has no budget. */
  monthlyCapMicros: bigint;
  softAlertPercent: number;
  /** Whether this month's soft alert has been raised. */
  softAlertRaised: boolean;
}

/** Reads a project's spend this month (database clock, Asia/Kolkata); a project never seen reads as zeros. Throws InvalidQueryError for a bad id. */
export async function getProjectSpend(db: Queryable, projectId: string): Promise<ProjectSpendView> {
  const problem = idProblem('project_id', projectId);
  if (problem) throw new InvalidQueryError(problem);
  const spend = await readProjectSpendNow(db, projectId);
  const budget = await db.query<{ monthly_cap_micros: bigint; soft_alert_percent: number }>(
    'SELECT monthly_cap_micros, soft_alert_percent FROM project_budgets WHERE project_id = $1', [projectId],
  );
  const alert = await db.query('SELECT 1 FROM budget_alerts WHERE project_id = $1 AND month = $2', [projectId, spend.month]);
  const capMicros = budget.rows[0]?.monthly_cap_micros ?? 0n;
  return {
    ...spend,
    monthlyCapMicros: capMicros,
    softAlertPercent: capMicros > 0n ? budget.rows[0]!.soft_alert_percent : 0,
    softAlertRaised: alert.rowCount > 0,
  };
}
