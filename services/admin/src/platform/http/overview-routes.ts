import { z } from 'zod';
import { usageListResponse, usageSummaryResponse } from './platform-schemas.ts';
import { usageRecordJson, usageSummaryRowJson } from './platform-views.ts';
import { balanceResponse } from '../../billing/http/balance-schemas.ts';
import { balanceJson } from '../../billing/http/balance-views.ts';
import { instantMs, windowInOrder } from '../../common/http/request-schemas.ts';
import { defineRoute, routeErrors, type AdminRoute } from '../../common/http/route-definition.ts';
import { timestampShown as timestamp } from '../../common/http/wire-fields.ts';
import { projectBudgetResponse, projectResponse } from '../../tenancy/http/tenancy-schemas.ts';
import { projectBudgetJson, projectJson } from '../../tenancy/http/tenancy-views.ts';

/** Query of GET /admin/v1/organisations/{id}/overview. */
const overviewQuery = z.strictObject({
  from: instantMs('Start of the usage window (inclusive), ISO-8601 or ms since the epoch; default: 30 days before `to`.'),
  to: instantMs('End of the usage window (exclusive), ISO-8601 or ms since the epoch; default: now.'),
}).superRefine(windowInOrder);

/** Everything the dashboard's Overview shows, in one response. */
const overviewResponse = z.strictObject({
  object: z.literal('organisation_overview'),
  from: timestamp.meta({ description: 'Start of the usage window (inclusive).' }),
  to: timestamp.meta({ description: 'End of the usage window (exclusive).' }),
  balance: balanceResponse,
  month: z.string().meta({ description: 'The current calendar month in Asia/Kolkata of the project spends, e.g. "2026-11".' }),
  projects: z.array(z.strictObject({ project: projectResponse, budget: projectBudgetResponse }))
    .meta({ description: 'Every project of the organisation, oldest first, with its budget and spend this month (read in one ledger call).' }),
  usage_by_day: usageSummaryResponse.shape.data.meta({ description: 'Usage in the window by day (Asia/Kolkata) and model.' }),
  usage_by_project: usageSummaryResponse.shape.data.meta({ description: 'Usage in the window by day, model and project (rows carry project_id).' }),
  recent: usageListResponse.shape.data.meta({ description: 'The 20 most recent usage records, newest first (not bound by the window).' }),
});

/** The Overview route: one read per refresh of the dashboard's Overview. */
export function overviewRoutes(): AdminRoute[] {
  return [
    defineRoute({
      method: 'get', path: '/admin/v1/organisations/{id}/overview', operationId: 'getOrganisationOverview', tag: 'balance',
      authenticated: true, access: 'organisation', role: 'viewer', scope: 'organisation',
      summary: 'The organisation at a glance in one read: balance, every project\'s spend this month against its budget, usage in a window by day, model and project, and the recent requests.',
      description: 'What the dashboard\'s Overview shows, so a refresh costs one request however many projects there are. Money in micro-rupees as decimal strings.',
      query: overviewQuery,
      success: { status: 200, description: 'The overview.', schema: overviewResponse },
      errors: [...routeErrors.read, ...routeErrors.ledger],
      async handle({ service }, { actor, params, query }) {
        const overview = await service.platform.getOverview(actor, params.id!, { fromMs: query.from, toMs: query.to });
        return {
          status: 200,
          body: {
            object: 'organisation_overview' as const,
            from: new Date(overview.fromMs).toISOString(),
            to: new Date(overview.toMs).toISOString(),
            balance: balanceJson(overview.balance),
            month: overview.month,
            projects: overview.projects.map(({ project, spend }) => ({ project: projectJson(project), budget: projectBudgetJson(spend) })),
            usage_by_day: overview.usageByDay.map(usageSummaryRowJson),
            usage_by_project: overview.usageByProject.map(usageSummaryRowJson),
            recent: overview.recent.map(usageRecordJson),
          },
        };
      },
    }),
  ];
}
