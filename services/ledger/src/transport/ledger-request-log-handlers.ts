import type { ledgerV1 } from '@gateway/contracts';
import type { Database } from '@gateway/db';
import { getRequest, listRequests } from '../domain/list-requests.ts';
import type { HandleUnary } from './ledger-read-handlers.ts';

/** The LedgerService methods that read the request log. */
type RequestLogReadMethods = 'listRequests' | 'getRequest';

/**
 * The unary handlers that read the request log (ListRequests, GetRequest): read-only, answered
 * like the ledger's other reads (bad input: INVALID_ARGUMENT with the problems named).
 */
export function createRequestLogReadHandlers(db: Database, handle: HandleUnary): Pick<ledgerV1.LedgerServiceServer, RequestLogReadMethods> {
  return {
    listRequests: handle<ledgerV1.ListRequestsRequest, ledgerV1.ListRequestsResponse>('ListRequests', async (request) => {
      const page = await listRequests(db, request);
      return { response: page, outcome: 'ok', subject: { organisationId: request.organisationId } };
    }),

    getRequest: handle<ledgerV1.GetRequestRequest, ledgerV1.GetRequestResponse>('GetRequest', async (request) => {
      const record = await getRequest(db, request);
      return {
        response: record ? { record } : {},
        outcome: record ? 'ok' : 'not_found', subject: { organisationId: request.organisationId, requestId: request.requestId },
      };
    }),
  };
}
