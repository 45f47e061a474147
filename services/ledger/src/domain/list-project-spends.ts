import type { Queryable } from '@gateway/db';
import type { ProjectSpendView } from './get-project-spend.ts';
import { InvalidQueryError } from './invalid-query-error.ts';
import { idProblem } from './validation.ts';

/** Every project of an organisation with a budget, spend or hold this month, and the month (Asia/Kolkata, "2026-11"). */
export interface ProjectSpendsView {
  month: string;
  /** Ordered by project id; each exactly as getProjectSpend reads it. */
  projects: Array<{ projectId: string; spend: ProjectSpendView }>;
}

/**
 * Reads this month's spend against its budget of every project of an organisation in ONE
 * statement (one snapshot, database clock), instead of one GetProjectSpend per project: the
 * dashboard's Overview reads it once per refresh. A project not listed has no budget, spent
 * nothing this month and holds nothing. Throws InvalidQueryError for a bad organisation id.
 */
export async function listProjectSpends(db: Queryable, organisationId: string): Promise<ProjectSpendsView> {
  const problem = idProblem('organisation_id', organisationId);
  if (problem) throw new InvalidQueryError(problem);
  const { rows } = await db.query<{
    month: string; project_id: string | null; settled_micros: bigint; held_micros: bigint;
    monthly_cap_micros: bigint; soft_alert_percent: number; soft_alert_raised: boolean;
  }>(
    `WITH m AS (SELECT ledger_current_month() AS month),
     p AS (
       SELECT project_id FROM project_budgets WHERE organisation_id = $1
       UNION SELECT s.project_id FROM project_month_spend s, m WHERE s.organisation_id = $1 AND s.month = m.month
       UNION SELECT project_id FROM reservations WHERE organisation_id = $1 AND status = 'held'
       UNION SELECT project_id FROM grants WHERE organisation_id = $1 AND status = 'held'
     )
     SELECT m.month, p.project_id,
       coalesce(s.settled_micros, 0)::bigint AS settled_micros,
       (CASE WHEN p.project_id IS NULL THEN 0 ELSE ledger_project_held(p.project_id) END)::bigint AS held_micros,
       coalesce(b.monthly_cap_micros, 0)::bigint AS monthly_cap_micros,
       (CASE WHEN coalesce(b.monthly_cap_micros, 0) > 0 THEN b.soft_alert_percent ELSE 0 END)::int AS soft_alert_percent,
       EXISTS (SELECT 1 FROM budget_alerts a WHERE a.project_id = p.project_id AND a.month = m.month) AS soft_alert_raised
     FROM m
     LEFT JOIN p ON true
     LEFT JOIN project_month_spend s ON s.project_id = p.project_id AND s.month = m.month
     LEFT JOIN project_budgets b ON b.project_id = p.project_id
     ORDER BY p.project_id`,
    [organisationId],
  );
  const month = rows[0]!.month; // the LEFT JOIN keeps one row with the month when no project is listed
  return {
    month,
    projects: rows.filter((row) => row.project_id !== null).map((row) => ({
      projectId: row.project_id!,
      spend: {
        month, settledMicros: row.settled_micros, heldMicros: row.held_micros, monthlyCapMicros: row.monthly_cap_micros,
        softAlertPercent: row.soft_alert_percent, softAlertRaised: row.soft_alert_raised,
      },
    })),
  };
}
