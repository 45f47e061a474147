import type { Queryable } from '@gateway/db';

/**
 * The SQL expression of the current calendar month in Asia/Kolkata, e.g. '2026-11', by the
 * database clock (never a replica's clock, so every replica agrees on when a month ends).
 */
const currentMonthSql = "to_char(now() AT TIME ZONE 'Asia/Kolkata', 'YYYY-MM')";

/** A project's budget as the ledger enforces it; only present when a cap is set. */
export interface ProjectBudget {
  organisationId: string;
  /** Monthly cap on customer-price cost, µ₹; positive. */
  monthlyCapMicros: bigint;
  /** Soft alert threshold, percent of the cap (1..100). */
  softAlertPercent: number;
}

/** A project's spend in the current month. */
export interface ProjectSpendNow {
  /** e.g. '2026-11' (Asia/Kolkata). */
  month: string;
  /** Customer-price cost settled this month, µ₹ (both billing modes). */
  settledMicros: bigint;
  /** Held by the project's open reservations, µ₹ (both billing modes). */
  heldMicros: bigint;
}

/** A project_budgets row as SQL returns it. */
interface BudgetRow {
  organisation_id: string;
  monthly_cap_micros: bigint;
  soft_alert_percent: number;
}

function toBudget(row: BudgetRow | undefined): ProjectBudget | undefined {
  if (!row || row.monthly_cap_micros <= 0n) return undefined;
  return { organisationId: row.organisation_id, monthlyCapMicros: row.monthly_cap_micros, softAlertPercent: row.soft_alert_percent };
}

/** Reads a project's budget without locking it (alerts, reports). */
async function readProjectBudget(tx: Queryable, projectId: string): Promise<ProjectBudget | undefined> {
  const { rows } = await tx.query<BudgetRow>(
    'SELECT organisation_id, monthly_cap_micros, soft_alert_percent FROM project_budgets WHERE project_id = $1',
    [projectId],
  );
  return toBudget(rows[0]);
}

/** Reads what a project has settled this month and holds right now, µ₹, in one statement (one snapshot). */
export async function readProjectSpendNow(tx: Queryable, projectId: string): Promise<ProjectSpendNow> {
  const { rows } = await tx.query<{ month: string; settled_micros: bigint; held_micros: bigint }>(
    `WITH month AS (SELECT ${currentMonthSql} AS month)
     SELECT month.month,
       coalesce((SELECT settled_micros FROM project_month_spend s WHERE s.project_id = $1 AND s.month = month.month), 0)::bigint
         AS settled_micros,
       coalesce((SELECT sum(amount_micros) FROM reservations WHERE project_id = $1 AND status = 'held'), 0)::bigint
         AS held_micros
     FROM month`,
    [projectId],
  );
  const row = rows[0]!;
  return { month: row.month, settledMicros: row.settled_micros, heldMicros: row.held_micros };
}

/**
 * Adds settled customer-price cost to a project's month (the month of its usage record), in
 * the transaction that writes or finalises the record. Zero adds nothing.
 */
export async function addProjectSpend(
  tx: Queryable, spend: { projectId: string; organisationId: string; month: string; costMicros: bigint },
): Promise<void> {
  if (spend.costMicros === 0n) return;
  await tx.query(
    `INSERT INTO project_month_spend (project_id, month, organisation_id, settled_micros) VALUES ($1, $2, $3, $4)
     ON CONFLICT (project_id, month) DO UPDATE SET settled_micros = project_month_spend.settled_micros + EXCLUDED.settled_micros`,
    [spend.projectId, spend.month, spend.organisationId, spend.costMicros],
  );
}

/** Whether settled + held has reached the soft threshold of the cap: spent × 100 ≥ cap × percent (exact, no division). */
function softThresholdReached(spentMicros: bigint, budget: ProjectBudget): boolean {
  return spentMicros * 100n >= budget.monthlyCapMicros * BigInt(budget.softAlertPercent);
}

/**
 * Raises this month's soft alert of a project when its spend (settled + held) has reached the
 * threshold and none was raised yet this month. Idempotent by the (project, month) unique key.
 * The advisory lock makes alert inserts commit in id order, which lets readers use the id as a
 * cursor without ever skipping an alert; alerts are rare, so serialising them costs nothing.
 */
export async function raiseSoftAlertIfDue(tx: Queryable, projectId: string, knownBudget?: ProjectBudget): Promise<boolean> {
  const budget = knownBudget ?? await readProjectBudget(tx, projectId);
  if (!budget) return false;
  const spend = await readProjectSpendNow(tx, projectId);
  const spentMicros = spend.settledMicros + spend.heldMicros;
  if (!softThresholdReached(spentMicros, budget)) return false;
  const existing = await tx.query('SELECT 1 FROM budget_alerts WHERE project_id = $1 AND month = $2', [projectId, spend.month]);
  if (existing.rowCount > 0) return false;
  await tx.query("SELECT pg_advisory_xact_lock(hashtext('ledger.budget_alerts'))");
  const inserted = await tx.query(
    `INSERT INTO budget_alerts (organisation_id, project_id, month, spent_micros, monthly_cap_micros, soft_alert_percent)
     VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (project_id, month) DO NOTHING`,
    [budget.organisationId, projectId, spend.month, spentMicros, budget.monthlyCapMicros, budget.softAlertPercent],
  );
  return inserted.rowCount === 1;
}
