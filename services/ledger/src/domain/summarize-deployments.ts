import type { Queryable } from '@gateway/db';
import { InvalidQueryError } from './invalid-query-error.ts';
import { windowProblem } from './list-usage.ts';
import { problemsOf } from './validation.ts';

/** One model and upstream deployment's figures over a window; money µ₹. */
export interface DeploymentSummaryView {
  modelSlug: string;
  /** '' for usage records settled without a deployment (an older proxy, an expiry charge). */
  deployment: string;
  /** Usage records the deployment answered. */
  requests: bigint;
  /** Customer cost of those records in commercial billing (internal usage earns nothing), µ₹. */
  costMicros: bigint;
  /** Provider cost of those records, µ₹. */
  providerCostMicros: bigint;
  /** Failed attempts its provider may have billed, and their provider cost, µ₹. */
  failedAttempts: bigint;
  failedAttemptProviderCostMicros: bigint;
}

/**
 * Platform analytics by upstream deployment (issue 29): per model and deployment over
 * [fromMs, toMs) (0: unbounded), the usage records it answered with their customer and provider
 * cost, and the failed attempts recorded for it, in ONE statement. Reads the usage partitions of
 * the window only (created_at bounds). Ordered by model slug, then deployment. Throws
 * InvalidQueryError for a bad window.
 */
export async function summarizeDeployments(db: Queryable, window: { fromMs: bigint; toMs: bigint }): Promise<DeploymentSummaryView[]> {
  const problems = problemsOf(windowProblem('from_ms', window.fromMs), windowProblem('to_ms', window.toMs));
  if (problems.length > 0) throw new InvalidQueryError(problems.join('; '));
  const { rows } = await db.query<{
    model_slug: string; deployment: string; requests: bigint; cost_micros: bigint; provider_cost_micros: bigint;
    failed_attempts: bigint; failed_attempt_provider_cost_micros: bigint;
  }>(
    `WITH answered AS (
       SELECT model_slug, coalesce(deployment, '') AS deployment, count(*)::bigint AS requests,
         coalesce(sum(cost_micros) FILTER (WHERE billing_mode = 'commercial'), 0)::bigint AS cost_micros,
         sum(provider_cost_micros)::bigint AS provider_cost_micros
       FROM usage_records
       WHERE ($1::bigint = 0 OR created_at >= timestamptz 'epoch' + $1::bigint * interval '1 millisecond')
         AND ($2::bigint = 0 OR created_at < timestamptz 'epoch' + $2::bigint * interval '1 millisecond')
       GROUP BY 1, 2
     ), failed AS (
       SELECT model_slug, deployment, count(*)::bigint AS failed_attempts,
         sum(provider_cost_micros)::bigint AS failed_attempt_provider_cost_micros
       FROM provider_attempts
       WHERE ($1::bigint = 0 OR created_at >= timestamptz 'epoch' + $1::bigint * interval '1 millisecond')
         AND ($2::bigint = 0 OR created_at < timestamptz 'epoch' + $2::bigint * interval '1 millisecond')
       GROUP BY 1, 2
     )
     SELECT coalesce(a.model_slug, f.model_slug) AS model_slug, coalesce(a.deployment, f.deployment) AS deployment,
       coalesce(a.requests, 0)::bigint AS requests, coalesce(a.cost_micros, 0)::bigint AS cost_micros,
       coalesce(a.provider_cost_micros, 0)::bigint AS provider_cost_micros,
       coalesce(f.failed_attempts, 0)::bigint AS failed_attempts,
       coalesce(f.failed_attempt_provider_cost_micros, 0)::bigint AS failed_attempt_provider_cost_micros
     FROM answered a FULL JOIN failed f ON f.model_slug = a.model_slug AND f.deployment = a.deployment
     ORDER BY 1, 2`,
    [window.fromMs, window.toMs],
  );
  return rows.map((row) => ({
    modelSlug: row.model_slug, deployment: row.deployment, requests: row.requests, costMicros: row.cost_micros,
    providerCostMicros: row.provider_cost_micros, failedAttempts: row.failed_attempts,
    failedAttemptProviderCostMicros: row.failed_attempt_provider_cost_micros,
  }));
}
