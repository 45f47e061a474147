import type { Actor } from '../../common/domain/actor.ts';
import type { RequestLogPort, RequestLogQuery, RequestLogRecord } from '../../common/domain/request-log-port.ts';
import { notFound, type ResourceAccess } from '../../common/domain/resource-access.ts';

/** A request id as the ledger keeps it: 1..128 printable ASCII characters without spaces. */
const requestIdPattern = /^[\x21-\x7e]{1,128}$/;

/** What the request-log reads are built from. */
export interface RequestLogServiceDeps {
  ledger: RequestLogPort;
  access: ResourceAccess;
}

/** An organisation's request log as the ledger keeps it: every finished request, served or refused (route tag "balance", under /requests). */
export function createRequestLogService({ ledger, access }: RequestLogServiceDeps) {
  const { requireOrganisation, requireProjectOf } = access;

  return {
    /** A page of an organisation's requests, newest first; a project filter must name one of its projects. */
    async listRequests(actor: Actor, organisationId: string, query: RequestLogQuery): Promise<{ records: RequestLogRecord[]; nextCursor: string | null }> {
      await requireOrganisation(actor, organisationId);
      if (query.projectId !== undefined) await requireProjectOf(actor, organisationId, query.projectId);
      const page = await ledger.listRequests({ organisationId, ...query });
      return { records: page.records, nextCursor: page.nextPageToken };
    },

    /** One request of an organisation by its request id; not_found when it has none (or it is past retention). */
    async getRequest(actor: Actor, organisationId: string, requestId: string): Promise<RequestLogRecord> {
      await requireOrganisation(actor, organisationId);
      // An id the gateway could not have issued (the ledger's id rules) is simply not there.
      if (!requestIdPattern.test(requestId)) throw notFound('request of this organisation', requestId, 'request_id');
      const record = await ledger.getRequest({ organisationId, requestId });
      if (!record) throw notFound('request of this organisation', requestId, 'request_id');
      return record;
    },
  };
}
