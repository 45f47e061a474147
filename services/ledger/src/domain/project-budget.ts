import type { Queryable } from '@gateway/db';

/** A project's spend in the current month. */
export interface ProjectSpendNow {
  /** e.g. '2026-11' (Asia/Kolkata). */
  month: string;
  /** Customer-price cost settled this month, µ₹ (both billing modes). */
  settledMicros: bigint;
  /** Held by the project's open reservations and credit grants, µ₹ (both billing modes). */
  heldMicros: bigint;
}

/** Reads what a project has settled this month and holds right now, µ₹, in one statement (one snapshot). */
export async function readProjectSpendNow(tx: Queryable, projectId: string): Promise<ProjectSpendNow> {
  const { rows } = await tx.query<{ month: string; settled_micros: bigint; held_micros: bigint }>(
    `WITH month AS (SELECT ledger_current_month() AS month)
     SELECT month.month,
       coalesce((SELECT settled_micros FROM project_month_spend s WHERE s.project_id = $1 AND s.month = month.month), 0)::bigint
         AS settled_micros,
       ledger_project_held($1)::bigint
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

/**
 * Raises this month's soft alert of a project when its spend (settled + held) has reached the
 * threshold and none was raised yet this month (PROJECT_BUDGET). The rule has one home,
 * services/ledger/sql/ledger_raise_soft_alert_if_due.sql, which Reserve and Settle call in the
 * database; the sweeper and SetProjectBudget call it here, in their transaction.
 */
export async function raiseSoftAlertIfDue(tx: Queryable, projectId: string): Promise<boolean> {
  const { rows } = await tx.query<{ raised: boolean }>('SELECT ledger_raise_soft_alert_if_due($1) AS raised', [projectId]);
  return rows[0]!.raised;
}
