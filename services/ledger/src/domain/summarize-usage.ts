import type { Queryable } from '@gateway/db';
import { InvalidQueryError } from './invalid-query-error.ts';
import type { BillingMode } from './ledger-types.ts';
import { windowProblem } from './list-usage.ts';
import { idProblem, optionalIdProblem, problemsOf } from './validation.ts';
import { rangeDays, splitUsageWindow } from './usage-window.ts';

/** Which usage to aggregate. */
export interface SummarizeUsageInput {
  /** The organisation; '' with allOrganisations. */
  organisationId: string;
  /** Every organisation (platform analytics): rows carry the organisation and billing mode. */
  allOrganisations: boolean;
  /** Also group by project: rows carry the project. */
  groupByProject: boolean;
  /** Only this project; empty for all. */
  projectId: string;
  /** Window, ms since the epoch (from inclusive, to exclusive); 0 for unbounded. */
  fromMs: bigint;
  toMs: bigint;
}

/** Usage of one day (Asia/Kolkata) and model. */
export interface UsageSummaryRowView {
  /** e.g. '2026-11-21'. */
  day: string;
  modelSlug: string;
  requests: bigint;
  inputTokens: bigint;
  outputTokens: bigint;
  /** Customer-price cost, µ₹. */
  costMicros: bigint;
  /** Provider cost, µ₹. */
  providerCostMicros: bigint;
  /** Debited from the wallet, µ₹. */
  debitedMicros: bigint;
  /** Set with allOrganisations; '' otherwise. */
  organisationId: string;
  /** Set with groupByProject; '' otherwise. */
  projectId: string;
  /** Set with allOrganisations; null otherwise. */
  billingMode: BillingMode | null;
  /** Sums over the row's records that carry token classes, by class name; tokens and µ₹. */
  tokenClasses: UsageSummaryClassView[];
  /** The row's records without token classes (plain usage, expiry charges, days whose raw records were dropped before classes were rolled up). */
  unclassifiedRequests: bigint;
}

/** One token class's sums in a summary row: tokens, customer-price cost µ₹, provider cost µ₹. */
interface UsageSummaryClassView {
  tokenClass: string;
  tokens: bigint;
  costMicros: bigint;
  providerCostMicros: bigint;
}

/** An aggregate row as SQL returns it. */
interface SummaryRow {
  day: string;
  model_slug: string;
  requests: bigint;
  input_tokens: string;
  output_tokens: string;
  cost_micros: string;
  provider_cost_micros: string;
  debited_micros: string;
  unclassified_requests: string;
  organisation_id: string;
  project_id: string;
  billing_mode: BillingMode | '';
}

/** A class aggregate row as SQL returns it: the summary row's key and one class. */
interface SummaryClassRow {
  day: string;
  model_slug: string;
  organisation_id: string;
  project_id: string;
  billing_mode: BillingMode | '';
  token_class: string;
  tokens: string;
  cost_micros: string;
  provider_cost_micros: string;
}

/** An instant in ms as the ISO text a timestamptz parameter takes. */
const isoOf = (instantMs: bigint): string => new Date(Number(instantMs)).toISOString();

/**
 * Aggregates an organisation's usage by calendar day in Asia/Kolkata and model, ordered by day
 * then model, for reports. Whole days come from the daily roll-ups (usage_daily), the partial
 * days at the window's edges from the raw records (their month partitions only), so the answer
 * costs the same at any volume of records. A partial edge day before usage_retention's
 * raw_from_day (its raw records were dropped) is answered whole from its roll-ups: the window
 * widens to that day rather than count it as 0. Sums are computed as numeric and read back as
 * exact integers. Throws InvalidQueryError for bad input.
 */
export async function summarizeUsage(db: Queryable, input: SummarizeUsageInput): Promise<UsageSummaryRowView[]> {
  const problems = problemsOf(
    input.allOrganisations
      ? (input.organisationId === '' ? undefined : 'organisation_id must be empty with all_organisations')
      : idProblem('organisation_id', input.organisationId),
    optionalIdProblem('project_id', input.projectId),
    windowProblem('from_ms', input.fromMs),
    windowProblem('to_ms', input.toMs),
    input.fromMs > 0n && input.toMs > 0n && input.fromMs >= input.toMs ? 'from_ms must be before to_ms' : undefined,
  );
  if (problems.length > 0) throw new InvalidQueryError(problems.join('; '));
  const split = splitUsageWindow(input.fromMs, input.toMs);
  // Two raw ranges at most; one is repeated when there is only one (an OR of the same range counts nothing twice).
  const [firstRaw, secondRaw] = [split.rawRanges[0], split.rawRanges[1] ?? split.rawRanges[0]];
  const params = [input.organisationId, input.projectId, input.allOrganisations, input.groupByProject,
    split.hasWholeDays, split.wholeDaysFrom, split.wholeDaysTo, firstRaw !== undefined,
    firstRaw ? isoOf(firstRaw.fromMs) : null, firstRaw ? isoOf(firstRaw.toMs) : null,
    secondRaw ? isoOf(secondRaw.fromMs) : null, secondRaw ? isoOf(secondRaw.toMs) : null,
    ...(firstRaw ? rangeDays(firstRaw) : [null, null]), ...(secondRaw ? rangeDays(secondRaw) : [null, null])];
  const key = `to_char(day, 'YYYY-MM-DD') AS day, model_slug,
       CASE WHEN $3::boolean THEN organisation_id ELSE '' END AS organisation_id,
       CASE WHEN $4::boolean THEN project_id ELSE '' END AS project_id,
       CASE WHEN $3::boolean THEN billing_mode ELSE '' END AS billing_mode`;
  // Which roll-ups and which raw records the window reads; the same for the totals and the classes.
  const rollupsWhere = `($3::boolean OR organisation_id = $1) AND ($2::text = '' OR project_id = $2)
         AND (($5::boolean AND ($6::date IS NULL OR day >= $6::date) AND ($7::date IS NULL OR day < $7::date))
           OR ($8::boolean AND day < (SELECT raw_from_day FROM usage_retention)
             AND ((day >= $13::date AND day <= $14::date) OR (day >= $15::date AND day <= $16::date))))`;
  const rawWhere = `$8::boolean AND ($3::boolean OR organisation_id = $1) AND ($2::text = '' OR project_id = $2)
         AND ((created_at >= $9::timestamptz AND created_at < $10::timestamptz)
           OR (created_at >= $11::timestamptz AND created_at < $12::timestamptz))
         -- The days before raw_from_day came whole from the roll-ups.
         AND created_at >= coalesce((SELECT raw_from_day FROM usage_retention)::timestamp AT TIME ZONE 'Asia/Kolkata', '-infinity')`;
  const { rows } = await db.query<SummaryRow>(
    `SELECT ${key},
       sum(requests)::bigint AS requests,
       sum(input_tokens)::text AS input_tokens, sum(output_tokens)::text AS output_tokens, sum(cost_micros)::text AS cost_micros,
       sum(provider_cost_micros)::text AS provider_cost_micros, sum(debited_micros)::text AS debited_micros,
       sum(unclassified_requests)::text AS unclassified_requests
     FROM (
       SELECT day, model_slug, organisation_id, project_id, billing_mode, requests, input_tokens, output_tokens, cost_micros,
         provider_cost_micros, debited_micros, unclassified_requests
       FROM usage_daily
       WHERE ${rollupsWhere}
       UNION ALL
       SELECT (created_at AT TIME ZONE 'Asia/Kolkata')::date, model_slug, organisation_id, project_id, billing_mode, 1,
         input_tokens, output_tokens, cost_micros, provider_cost_micros, debited_micros,
         CASE WHEN token_classes IS NULL THEN 1 ELSE 0 END
       FROM usage_records
       WHERE ${rawWhere}
     ) AS usage
     GROUP BY 1, 2, 3, 4, 5
     HAVING sum(requests) > 0
     ORDER BY 1, 2, 3, 4, 5`,
    params,
  );
  const classRows = await db.query<SummaryClassRow>(
    `SELECT ${key}, token_class,
       sum(tokens)::text AS tokens, sum(cost_micros)::text AS cost_micros, sum(provider_cost_micros)::text AS provider_cost_micros
     FROM (
       SELECT day, model_slug, organisation_id, project_id, billing_mode, token_class, tokens, cost_micros, provider_cost_micros
       FROM usage_daily_classes
       WHERE ${rollupsWhere}
       UNION ALL
       SELECT (created_at AT TIME ZONE 'Asia/Kolkata')::date, model_slug, organisation_id, project_id, billing_mode,
         e->>'tokenClass', (e->>'tokens')::bigint, (e->>'costMicros')::bigint, (e->>'providerCostMicros')::bigint
       FROM usage_records, jsonb_array_elements(token_classes) AS e
       WHERE token_classes IS NOT NULL AND ${rawWhere}
     ) AS classes
     GROUP BY 1, 2, 3, 4, 5, 6
     ORDER BY 1, 2, 3, 4, 5, 6`,
    params,
  );
  const classesByRow = new Map<string, UsageSummaryClassView[]>();
  for (const row of classRows.rows) {
    const rowKey = [row.day, row.model_slug, row.organisation_id, row.project_id, row.billing_mode].join('\u0000');
    const list = classesByRow.get(rowKey) ?? [];
    list.push({ tokenClass: row.token_class, tokens: BigInt(row.tokens), costMicros: BigInt(row.cost_micros),
      providerCostMicros: BigInt(row.provider_cost_micros) });
    classesByRow.set(rowKey, list);
  }
  return rows.map((row) => ({
    organisationId: row.organisation_id, projectId: row.project_id, billingMode: row.billing_mode === '' ? null : row.billing_mode,
    day: row.day, modelSlug: row.model_slug, requests: row.requests,
    inputTokens: BigInt(row.input_tokens), outputTokens: BigInt(row.output_tokens), costMicros: BigInt(row.cost_micros),
    providerCostMicros: BigInt(row.provider_cost_micros), debitedMicros: BigInt(row.debited_micros),
    tokenClasses: classesByRow.get([row.day, row.model_slug, row.organisation_id, row.project_id, row.billing_mode].join('\u0000')) ?? [],
    unclassifiedRequests: BigInt(row.unclassified_requests),
  }));
}
