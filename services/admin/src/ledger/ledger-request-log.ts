import { ledgerV1 } from '@gateway/contracts';
import type { RequestLogPort, RequestLogRecord } from '../common/domain/request-log-port.ts';
import type { LedgerCall } from './ledger-results.ts';

/** A request record from the wire as the admin's record. */
function toRequestLogRecord(record: ledgerV1.RequestRecord): RequestLogRecord {
  return {
    requestId: record.requestId,
    projectId: record.projectId,
    surface: record.surface,
    modelSlug: record.modelSlug,
    status: record.status,
    errorCode: record.errorCode === '' ? null : record.errorCode,
    stream: record.stream,
    startedAt: new Date(Number(record.startedAtMs)),
    latencyMs: record.latencyMs,
    timeToFirstTokenMs: record.timeToFirstTokenMs ?? null,
    inputTokens: record.inputTokens,
    outputTokens: record.outputTokens,
    costMicros: record.costMicros,
    tokenClasses: record.tokenClasses.map((entry) => ({ tokenClass: entry.tokenClass, tokens: entry.tokens, costMicros: entry.costMicros })),
  };
}

/** The ledger calls that read the request log (ListRequests, GetRequest), mapped to the admin's records. */
export function ledgerRequestLog(client: ledgerV1.LedgerServiceClient, call: LedgerCall): RequestLogPort {
  return {
    async listRequests(request) {
      const response = await call(client.listRequests, ledgerV1.ListRequestsRequest.fromPartial({
        organisationId: request.organisationId,
        projectId: request.projectId ?? '',
        modelSlug: request.modelSlug ?? '',
        surface: request.surface ?? '',
        status: request.status ?? 0,
        fromMs: BigInt(request.fromMs ?? 0),
        toMs: BigInt(request.toMs ?? 0),
        pageSize: request.pageSize,
        pageToken: request.pageToken ?? '',
      }));
      return { records: response.records.map(toRequestLogRecord), nextPageToken: response.nextPageToken === '' ? null : response.nextPageToken };
    },

    async getRequest(request) {
      const response = await call(client.getRequest, ledgerV1.GetRequestRequest.fromPartial(request));
      return response.record ? toRequestLogRecord(response.record) : null;
    },
  };
}
