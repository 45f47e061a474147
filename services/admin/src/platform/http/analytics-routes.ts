import type { DeploymentReportRow, MarginReport, MarginRow } from '../domain/analytics-service.ts';
import type { UsageFigures } from '../domain/usage-figures.ts';
import { csvResponse, deploymentReportQuery, deploymentReportResponse, marginQuery, marginReportResponse, usageExportQuery } from './analytics-schemas.ts';
import { defineRoute, routeErrors, type AdminRoute } from '../../common/http/route-definition.ts';

/** The content type of the CSV downloads. */
const csvContentType = 'text/csv; charset=utf-8';

/** Headers that make a browser save the body as `fileName` (ids and dates only: nothing to escape). */
function downloadHeaders(fileName: string): Record<string, string> {
  return { 'content-disposition': `attachment; filename="${fileName}"`, 'cache-control': 'no-store' };
}

/** The JSON of usage figures: token counts as numbers, money as decimal strings. */
function figuresJson(figures: UsageFigures) {
  return {
    requests: Number(figures.requests),
    input_tokens: Number(figures.inputTokens),
    output_tokens: Number(figures.outputTokens),
    customer_price_micros: figures.customerPriceMicros.toString(),
    provider_cost_micros: figures.providerCostMicros.toString(),
    token_classes: figures.tokenClasses.map((entry) => ({
      class: entry.tokenClass,
      tokens: Number(entry.tokens),
      customer_price_micros: entry.costMicros.toString(),
      provider_cost_micros: entry.providerCostMicros.toString(),
    })),
    unclassified_requests: Number(figures.unclassifiedRequests),
  };
}

/** The JSON of one margin report row. */
function marginRowJson(row: MarginRow) {
  return {
    key: row.key,
    ...(row.organisationName === undefined ? {} : { organisation_name: row.organisationName }),
    billing_mode: row.billingMode,
    ...figuresJson(row),
    margin_micros: row.marginMicros === null ? null : row.marginMicros.toString(),
  };
}

/** The JSON of the margin report. */
function marginReportJson(report: MarginReport) {
  return {
    object: 'list' as const,
    group_by: report.groupBy,
    data: report.data.map(marginRowJson),
    totals: { ...figuresJson(report.totals), margin_micros: report.totals.marginMicros.toString() },
    internal: { data: report.internal.data.map(marginRowJson), totals: figuresJson(report.internal.totals) },
  };
}

/** The JSON of one row of the report per upstream deployment: counts as numbers, money as decimal strings. */
function deploymentRowJson(row: DeploymentReportRow) {
  return {
    gateway_model: row.modelSlug,
    deployment: row.deployment,
    requests: Number(row.requests),
    customer_price_micros: row.costMicros.toString(),
    provider_cost_micros: row.totalProviderCostMicros.toString(),
    failed_attempt_provider_cost_micros: row.failedAttemptProviderCostMicros.toString(),
    margin_micros: row.marginMicros.toString(),
    failed_attempts: Number(row.failedAttempts),
  };
}

/** The analytics routes of the admin API: the usage export and the platform's margin report. */
export function analyticsRoutes(): AdminRoute[] {
  return [
    defineRoute({
      method: 'get', path: '/admin/v1/organisations/{id}/usage/export', operationId: 'exportUsage', tag: 'balance',
      authenticated: true, access: 'organisation', role: 'viewer', scope: 'organisation',
      summary: 'Download the usage records listUsage selects with the same filters (every page) as CSV.',
      description: 'Columns: id, created_at (ISO-8601 UTC), created_at_ist (Asia/Kolkata), project_id, model, input_tokens, output_tokens, '
        + 'cost_micros, debited_micros, usage_source, request_id, overrun_output_tokens; newest first. At most 100000 records: a larger '
        + 'selection answers 400 asking to narrow the filters.',
      query: usageExportQuery,
      success: { status: 200, description: 'The CSV, as an attachment named usage-<organisation id>-<day>.csv.', schema: csvResponse, contentType: csvContentType },
      errors: [...routeErrors.read, ...routeErrors.ledger],
      async handle({ service }, { actor, params, query }) {
        const { csv, fileName } = await service.platform.exportUsage(actor, params.id!, {
          projectId: query.project_id, modelSlug: query.model, fromMs: query.from, toMs: query.to,
        });
        return { status: 200, body: csv, contentType: csvContentType, headers: downloadHeaders(fileName) };
      },
    }),
    defineRoute({
      method: 'get', path: '/admin/v1/analytics/margin', operationId: 'getMarginReport', tag: 'analytics', authenticated: true, access: 'platform',
      summary: 'Customer price, provider cost and margin of all usage by day, model or organisation (platform admins).',
      description: 'Commercial usage: margin = customer price (the usage\'s cost) − provider cost. Internal (sponsored) organisations\' usage is '
        + 'reported apart, at customer price and at provider cost: it is never debited, so its margin is not revenue. Sums are exact (µ₹). '
        + 'Every row and total carries token_classes (customer price and provider cost per token class of the requests recorded by class) '
        + 'and unclassified_requests (requests recorded without classes, in no class).',
      query: marginQuery,
      success: { status: 200, description: 'The report.', schema: marginReportResponse },
      errors: [...routeErrors.read, ...routeErrors.platform, ...routeErrors.ledger],
      async handle({ service }, { actor, query }) {
        const report = await service.platform.marginReport(actor, { fromMs: query.from, toMs: query.to, groupBy: query.group_by ?? 'day' });
        return { status: 200, body: marginReportJson(report) };
      },
    }),
    defineRoute({
      method: 'get', path: '/admin/v1/analytics/deployments', operationId: 'getDeploymentReport', tag: 'analytics', authenticated: true, access: 'platform',
      summary: 'Requests, customer price, provider cost and margin per gateway model and upstream deployment (platform admins).',
      description: 'Which deployment answered each request, and the provider cost of attempts that failed over but that their provider may have '
        + 'billed (never charged to customers), from the ledger. Sums are exact (µ₹). Deployment names are never shown to organisations.',
      query: deploymentReportQuery,
      success: { status: 200, description: 'The report.', schema: deploymentReportResponse },
      errors: [...routeErrors.read, ...routeErrors.platform, ...routeErrors.ledger],
      async handle({ service }, { actor, query }) {
        const rows = await service.platform.deploymentReport(actor, { fromMs: query.from, toMs: query.to });
        return { status: 200, body: { object: 'list' as const, data: rows.map(deploymentRowJson) } };
      },
    }),
    defineRoute({
      method: 'get', path: '/admin/v1/analytics/margin/export', operationId: 'exportMarginReport', tag: 'analytics', authenticated: true, access: 'platform',
      summary: 'Download the margin report as CSV (platform admins).',
      description: 'Columns: key, organisation_name, billing_mode, requests, input_tokens, output_tokens, customer_price_micros, '
        + 'provider_cost_micros, margin_micros (empty for internal usage); commercial rows first, then internal ones.',
      query: marginQuery,
      success: { status: 200, description: 'The CSV, as an attachment named margin-by-<group_by>-<day>.csv.', schema: csvResponse, contentType: csvContentType },
      errors: [...routeErrors.read, ...routeErrors.platform, ...routeErrors.ledger],
      async handle({ service }, { actor, query }) {
        const { csv, fileName } = await service.platform.exportMarginReport(actor, { fromMs: query.from, toMs: query.to, groupBy: query.group_by ?? 'day' });
        return { status: 200, body: csv, contentType: csvContentType, headers: downloadHeaders(fileName) };
      },
    }),
  ];
}
