import type { ledgerV1 } from '@gateway/contracts';
import type { Database } from '@gateway/db';
import { summarizeDeployments } from '../domain/summarize-deployments.ts';
import type { HandleUnary } from './ledger-read-handlers.ts';

/** The SummarizeDeployments handler (platform analytics per upstream deployment), spread into the service object. */
export function createSummarizeDeploymentsHandler(db: Database, handle: HandleUnary): Pick<ledgerV1.LedgerServiceServer, 'summarizeDeployments'> {
  return {
    summarizeDeployments: handle<ledgerV1.SummarizeDeploymentsRequest, ledgerV1.SummarizeDeploymentsResponse>('SummarizeDeployments', async (request) => {
      const rows = await summarizeDeployments(db, { fromMs: request.fromMs, toMs: request.toMs });
      return { response: { rows }, outcome: 'ok', subject: { rows: String(rows.length) } };
    }),
  };
}
