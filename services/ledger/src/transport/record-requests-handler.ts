import type { ledgerV1 } from '@gateway/contracts';
import type { Database } from '@gateway/db';
import { recordRequests } from '../domain/record-requests.ts';
import type { HandleUnary } from './ledger-read-handlers.ts';

/**
 * The RecordRequests handler (docs/ledger.md, "Request log"): the proxy's batch of finished
 * requests kept in request_log. A malformed batch is refused whole with INVALID_ARGUMENT naming
 * the first bad record; the answer counts the records written now (a retried one counts 0).
 */
export function createRecordRequestsHandler(db: Database, handle: HandleUnary): Pick<ledgerV1.LedgerServiceServer, 'recordRequests'> {
  return {
    recordRequests: handle<ledgerV1.RecordRequestsRequest, ledgerV1.RecordRequestsResponse>('RecordRequests', async (request) => {
      const recorded = await recordRequests(db, request.records.map((record) => ({
        ...record,
        tokenClasses: record.tokenClasses.map(({ tokenClass, tokens, costMicros }) => ({ tokenClass, tokens, costMicros })),
      })));
      return {
        response: { recorded },
        outcome: 'ok', subject: { records: String(request.records.length), recorded: String(recorded) },
      };
    }),
  };
}
