import { auditEventResponse, auditEventsQuery, usageListResponse, usageQuery, usageSummaryQuery, usageSummaryResponse } from './platform-schemas.ts';
import { auditEventJson, usageRecordJson, usageSummaryRowJson } from './platform-views.ts';
import { listJson } from '../../common/http/json-views.ts';
import { pageSizes } from '../../common/http/request-schemas.ts';
import { listResponse } from '../../common/http/response-schemas.ts';
import { defineRoute, routeErrors, type AdminRoute } from '../../common/http/route-definition.ts';

const readErrors = routeErrors.read;
const ledgerErrors = routeErrors.ledger;

/** The route listing an organisation's usage records. */
export function usageRecordRoutes(): AdminRoute[] {
  return [
    defineRoute({
      method: 'get', path: '/admin/v1/organisations/{id}/usage', operationId: 'listUsage', tag: 'balance', authenticated: true, access: 'organisation', role: 'viewer', scope: 'organisation',
      summary: 'List usage records, newest first (cursor paging).',
      query: usageQuery,
      success: { status: 200, description: 'A page of usage records.', schema: usageListResponse },
      errors: [...readErrors, ...ledgerErrors],
      async handle({ service }, { actor, params, query }) {
        const page = await service.platform.listUsage(actor, params.id!, {
          projectId: query.project_id, modelSlug: query.model, fromMs: query.from, toMs: query.to,
          limit: query.limit ?? pageSizes.usageDefault, cursor: query.cursor,
        });
        return { status: 200, body: { object: 'list', data: page.records.map(usageRecordJson), next_cursor: page.nextCursor } };
      },
    }),
  ];
}

/** The route summing an organisation's usage by day and model. */
export function usageSummaryRoutes(): AdminRoute[] {
  return [
    defineRoute({
      method: 'get', path: '/admin/v1/organisations/{id}/usage/summary', operationId: 'summarizeUsage', tag: 'balance',
      authenticated: true, access: 'organisation', role: 'viewer', scope: 'organisation',
      summary: 'Usage summed by day (Asia/Kolkata) and gateway model (and project with group_by=project), from the ledger.',
      query: usageSummaryQuery,
      success: { status: 200, description: 'The summary rows, by day then model.', schema: usageSummaryResponse },
      errors: [...readErrors, ...ledgerErrors],
      async handle({ service }, { actor, params, query }) {
        const rows = await service.platform.summarizeUsage(actor, params.id!, {
          projectId: query.project_id, fromMs: query.from, toMs: query.to, groupByProject: query.group_by === 'project',
        });
        return { status: 200, body: { object: 'list', data: rows.map(usageSummaryRowJson) } };
      },
    }),
  ];
}

/** The audit log route. */
export function auditRoutes(): AdminRoute[] {
  return [
    defineRoute({
      method: 'get', path: '/admin/v1/audit-events', operationId: 'listAuditEvents', tag: 'audit', authenticated: true,
      access: 'organisation', role: 'owner', scope: 'organisation_id',
      summary: 'The audit log, oldest first (cursor paging): who changed what, when, with before/after values.',
      description: 'One organisation\'s events, for its owners: the one `organisation_id` names, or without it the caller\'s only organisation (a member of several must name one: 400; an organisation token reads its own). Below owner there: 403; an organisation the caller cannot see: 404, as an unknown id. A platform admin reads every event, or one organisation\'s with `organisation_id`.',
      query: auditEventsQuery,
      success: { status: 200, description: 'A page of audit events.', schema: listResponse(auditEventResponse) },
      errors: [...readErrors, 'permission_denied'],
      async handle({ service }, { actor, organisationId, query }) {
        const page = await service.platform.listAuditEvents(actor, { organisationId, afterId: query.after, limit: query.limit ?? pageSizes.default });
        return { status: 200, body: listJson(page, auditEventJson) };
      },
    }),
  ];
}
