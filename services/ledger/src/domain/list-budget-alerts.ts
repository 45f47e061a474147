import type { Queryable } from '@gateway/db';
import { InvalidQueryError } from './invalid-query-error.ts';
import { optionalIdProblem, problemsOf } from './validation.ts';

/** Which budget alerts to list. */
export interface ListBudgetAlertsInput {
  /** Only alerts with a larger id; empty for the first. */
  afterId: string;
  /** Only this organisation; empty for all. */
  organisationId: string;
  /** 1..500; 0 means 100. */
  limit: number;
}

/** A soft budget alert as the ledger reports it. */
export interface BudgetAlertView {
  /** Increasing; the cursor of listings and watches. */
  id: string;
  organisationId: string;
  projectId: string;
  /** e.g. '2026-11' (Asia/Kolkata). */
  month: string;
  /** Settled + held when raised, µ₹. */
  spentMicros: bigint;
  monthlyCapMicros: bigint;
  softAlertPercent: number;
  /** ms since the Unix epoch. */
  raisedAtMs: bigint;
}

/** Alerts per listing when the caller asks for 0. */
const defaultBudgetAlertLimit = 100;

/** Largest listing a caller may ask for, in alerts. */
const maxBudgetAlertLimit = 500;

/** A budget_alerts row as SQL returns it. */
interface AlertRow {
  id: bigint;
  organisation_id: string;
  project_id: string;
  month: string;
  spent_micros: bigint;
  monthly_cap_micros: bigint;
  soft_alert_percent: number;
  raised_at_ms: bigint;
}

/** Parses an alert cursor: empty (from the start) or a decimal id. Throws InvalidQueryError otherwise. */
export function parseAlertCursor(afterId: string): bigint {
  if (afterId === '') return 0n;
  if (!/^\d{1,18}$/.test(afterId)) throw new InvalidQueryError('after_id must be empty or an alert id');
  return BigInt(afterId);
}

/**
 * Lists budget alerts raised after a cursor, oldest first. Alerts commit in id order (see
 * raiseSoftAlertIfDue), so the last id returned is a cursor that never skips one.
 * Throws InvalidQueryError for bad input.
 */
export async function listBudgetAlerts(db: Queryable, input: ListBudgetAlertsInput): Promise<BudgetAlertView[]> {
  const problems = problemsOf(
    optionalIdProblem('organisation_id', input.organisationId),
    !Number.isInteger(input.limit) || input.limit < 0 || input.limit > maxBudgetAlertLimit
      ? `limit must be between 1 and ${maxBudgetAlertLimit} (0 means ${defaultBudgetAlertLimit})` : undefined,
  );
  let afterId = 0n;
  try {
    afterId = parseAlertCursor(input.afterId);
  } catch (error) {
    problems.push((error as Error).message);
  }
  if (problems.length > 0) throw new InvalidQueryError(problems.join('; '));
  const { rows } = await db.query<AlertRow>(
    `SELECT id, organisation_id, project_id, month, spent_micros, monthly_cap_micros, soft_alert_percent,
       floor(extract(epoch FROM raised_at) * 1000)::bigint AS raised_at_ms
     FROM budget_alerts WHERE id > $1 AND ($2::text = '' OR organisation_id = $2) ORDER BY id LIMIT $3`,
    [afterId, input.organisationId, input.limit === 0 ? defaultBudgetAlertLimit : input.limit],
  );
  return rows.map((row) => ({
    id: row.id.toString(), organisationId: row.organisation_id, projectId: row.project_id, month: row.month,
    spentMicros: row.spent_micros, monthlyCapMicros: row.monthly_cap_micros, softAlertPercent: row.soft_alert_percent,
    raisedAtMs: row.raised_at_ms,
  }));
}
