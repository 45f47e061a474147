import type { ServerUnaryCall, sendUnaryData } from '@grpc/grpc-js';
import { ledgerV1 } from '@gateway/contracts';

/** The fake ledger's wrapper of one unary method (records the call, may fail it). */
type Unary = <Req, Res>(method: string, handle: (request: Req) => Res) => (call: ServerUnaryCall<Req, Res>, callback: sendUnaryData<Res>) => void;

/**
 * The fake ledger's ListRequests and GetRequest over the records a test seeds: the contract's
 * filters (project, model, surface, status any / class 2, 4, 5 / exact, window on the start),
 * newest first (ties by request id, descending), offset page tokens.
 */
export function fakeRequestLogHandlers(requests: ledgerV1.RequestRecord[], unary: Unary): Pick<ledgerV1.LedgerServiceServer, 'listRequests' | 'getRequest'> {
  const statusMatches = (filter: number, status: number) =>
    filter === 0 || (filter < 10 ? Math.floor(status / 100) === filter : status === filter);
  return {
    listRequests: unary('listRequests', (request: ledgerV1.ListRequestsRequest) => {
      const matching = requests
        .filter((record) => record.organisationId === request.organisationId
          && (request.projectId === '' || record.projectId === request.projectId)
          && (request.modelSlug === '' || record.modelSlug === request.modelSlug)
          && (request.surface === '' || record.surface === request.surface)
          && statusMatches(request.status, record.status)
          && (request.fromMs === 0n || record.startedAtMs >= request.fromMs)
          && (request.toMs === 0n || record.startedAtMs < request.toMs))
        .sort((a, b) => Number(b.startedAtMs - a.startedAtMs) || b.requestId.localeCompare(a.requestId));
      const offset = request.pageToken === '' ? 0 : Number(request.pageToken);
      const pageSize = request.pageSize === 0 ? 50 : request.pageSize;
      const records = matching.slice(offset, offset + pageSize);
      const nextPageToken = offset + pageSize < matching.length ? String(offset + pageSize) : '';
      return ledgerV1.ListRequestsResponse.fromPartial({ records, nextPageToken });
    }),
    getRequest: unary('getRequest', (request: ledgerV1.GetRequestRequest) => {
      const record = requests.find((entry) => entry.organisationId === request.organisationId && entry.requestId === request.requestId);
      return ledgerV1.GetRequestResponse.fromPartial(record ? { record } : {});
    }),
  };
}
