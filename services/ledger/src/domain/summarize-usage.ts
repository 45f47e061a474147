import type { Queryable } from '@gateway/db';
import { InvalidQueryError } from './invalid-query-error.ts';
import type { BillingMode } from './ledger-types.ts';
import { windowProblem } from './list-usage.ts';
import { idProblem, optionalIdProblem, problemsOf } from './validation.ts';

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
  organisation_id: string;
  project_id: string;
  billing_mode: BillingMode | '';
}

/**
 * Aggregates an organisation's usage records by calendar day in Asia/Kolkata and model, ordered
 * by day then model, for reports. Sums are computed as numeric and read back as exact integers.
 * Throws InvalidQueryError for bad input.
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
  const { rows } = await db.query<SummaryRow>(
    `SELECT to_char(created_at AT TIME ZONE 'Asia/Kolkata', 'YYYY-MM-DD') AS day, model_slug,
       CASE WHEN $5::boolean THEN organisation_id ELSE '' END AS organisation_id,
       CASE WHEN $6::boolean THEN project_id ELSE '' END AS project_id,
       CASE WHEN $5::boolean THEN billing_mode ELSE '' END AS billing_mode,
       count(*) AS requests,
       sum(input_tokens)::text AS input_tokens, sum(output_tokens)::text AS output_tokens, sum(cost_micros)::text AS cost_micros,
       sum(provider_cost_micros)::text AS provider_cost_micros, sum(debited_micros)::text AS debited_micros
     FROM usage_records
     WHERE ($5::boolean OR organisation_id = $1)
       AND ($2::text = '' OR project_id = $2)
       AND ($3::bigint = 0 OR created_at >= timestamptz 'epoch' + $3::bigint * interval '1 millisecond')
       AND ($4::bigint = 0 OR created_at < timestamptz 'epoch' + $4::bigint * interval '1 millisecond')
     GROUP BY 1, 2, 3, 4, 5
     ORDER BY 1, 2, 3, 4, 5`,
    [input.organisationId, input.projectId, input.fromMs, input.toMs, input.allOrganisations, input.groupByProject],
  );
  return rows.map((row) => ({
    organisationId: row.organisation_id, projectId: row.project_id, billingMode: row.billing_mode === '' ? null : row.billing_mode,
    day: row.day, modelSlug: row.model_slug, requests: row.requests,
    inputTokens: BigInt(row.input_tokens), outputTokens: BigInt(row.output_tokens), costMicros: BigInt(row.cost_micros),
    providerCostMicros: BigInt(row.provider_cost_micros), debitedMicros: BigInt(row.debited_micros),
  }));
}
