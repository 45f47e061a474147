import type { Database } from '@gateway/db';
import { requirePlatformAdmin, type Actor } from '../../common/domain/actor.ts';
import type { Page } from '../../common/domain/admin-records.ts';
import { listAuditEvents, type AuditEvent } from '../../common/domain/audit-log.ts';
import type { ResourceAccess } from '../../common/domain/resource-access.ts';

/** What the audit log reads are built from. */
export interface AuditServiceDeps {
  db: Database;
  access: ResourceAccess;
}

/** Reading the audit log (route tag "audit"); every aggregate writes it in its own transactions. */
export function createAuditService({ db, access }: AuditServiceDeps) {
  const { requireOrganisation } = access;

  return {
    /**
     * A page of the audit log, oldest first: one organisation's events, or (`organisationId`
     * undefined) every organisation's, which only a platform actor reads. The role it takes (an
     * owner's) is the route's, checked by the route's authorization with the organisation it found.
     */
    async listAuditEvents(actor: Actor, query: { organisationId: string | undefined; afterId?: bigint | undefined; limit: number }): Promise<Page<AuditEvent>> {
      if (query.organisationId === undefined) requirePlatformAdmin(actor);
      else await requireOrganisation(actor, query.organisationId, db, { param: 'organisation_id' });
      return listAuditEvents(db, { organisationId: query.organisationId, afterId: query.afterId, limit: query.limit });
    },
  };
}
