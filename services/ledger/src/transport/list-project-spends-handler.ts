import type { ledgerV1 } from '@gateway/contracts';
import type { Database } from '@gateway/db';
import { listProjectSpends } from '../domain/list-project-spends.ts';
import type { HandleUnary } from './ledger-read-handlers.ts';

/** The ListProjectSpends handler (every project's month spend against its budget in one call), spread into the service object. */
export function createListProjectSpendsHandler(db: Database, handle: HandleUnary): Pick<ledgerV1.LedgerServiceServer, 'listProjectSpends'> {
  return {
    listProjectSpends: handle<ledgerV1.ListProjectSpendsRequest, ledgerV1.ListProjectSpendsResponse>('ListProjectSpends', async (request) => {
      const view = await listProjectSpends(db, request.organisationId);
      return {
        response: view,
        outcome: 'ok', subject: { organisationId: request.organisationId, projects: String(view.projects.length) },
      };
    }),
  };
}
