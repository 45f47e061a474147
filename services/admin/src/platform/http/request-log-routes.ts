import { pageSizes } from '../../common/http/request-schemas.ts';
import { defineRoute, routeErrors, type AdminRoute } from '../../common/http/route-definition.ts';
import { requestLogListResponse, requestLogQuery, requestLogRecordJson, requestLogRecordResponse } from './request-log-schemas.ts';

/** The routes reading an organisation's request log: the list (filtered, cursor-paged) and one request. */
export function requestLogRoutes(): AdminRoute[] {
  const errors = [...routeErrors.read, ...routeErrors.ledger];
  return [
    defineRoute({
      method: 'get', path: '/admin/v1/organisations/{id}/requests', operationId: 'listRequests', tag: 'balance',
      authenticated: true, access: 'organisation', role: 'viewer', scope: 'organisation',
      summary: 'List the organisation\'s requests, newest first (cursor paging): served and refused, with status, error code, latency and cost.',
      description: 'Every finished request the gateway answered for the organisation\'s keys, as the proxy saw it, kept for LEDGER_REQUEST_LOG_RETENTION_DAYS. '
        + 'For debugging: the usage records (GET .../usage) are what was billed.',
      query: requestLogQuery,
      success: { status: 200, description: 'A page of requests.', schema: requestLogListResponse },
      errors,
      async handle({ service }, { actor, params, query }) {
        const page = await service.platform.listRequests(actor, params.id!, {
          projectId: query.project_id, modelSlug: query.model, surface: query.surface, status: query.status,
          fromMs: query.from, toMs: query.to, pageSize: query.limit ?? pageSizes.usageDefault, pageToken: query.cursor,
        });
        return { status: 200, body: { object: 'list', data: page.records.map(requestLogRecordJson), next_cursor: page.nextCursor } };
      },
    }),
    defineRoute({
      method: 'get', path: '/admin/v1/organisations/{id}/requests/{request_id}', operationId: 'getRequest', tag: 'balance',
      authenticated: true, access: 'organisation', role: 'viewer', scope: 'organisation',
      summary: 'One request of the organisation by its request id (the x-request-id the gateway answered); 404 when it has none or it is past retention.',
      success: { status: 200, description: 'The request.', schema: requestLogRecordResponse },
      errors,
      async handle({ service }, { actor, params }) {
        const record = await service.platform.getRequest(actor, params.id!, params.request_id!);
        return { status: 200, body: requestLogRecordJson(record) };
      },
    }),
  ];
}
