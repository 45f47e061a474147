import type { Database } from '@gateway/db';
import { GatewayError } from '@gateway/errors';
import { visibleOrganisations, type Actor } from './actor.ts';
import type { Page } from './admin-records.ts';
import { listAuditEvents, type AuditEvent } from './audit-log.ts';
import type { ResourceAccess } from './resource-access.ts';

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
     * A page of the audit log, oldest first. A platform admin reads everything or one
     * organisation's events; an organisation token reads only its organisation's.
     */
    async listAuditEvents(actor: Actor, query: { organisationId?: string | undefined; afterId?: bigint | undefined; limit: number }): Promise<Page<AuditEvent>> {
      let organisationId = query.organisationId;
      if (organisationId !== undefined) await requireOrganisation(actor, organisationId);
      const visible = visibleOrganisations(actor);
      if (visible !== undefined && organisationId === undefined) {
        // Someone limited to some organisations reads one of them at a time: their only one by default.
        if (visible.length !== 1) {
          throw new GatewayError('invalid_request', { publicMessage: 'Invalid request: organisation_id: required for a member of several organisations.', param: 'organisation_id' });
        }
        organisationId = visible[0];
      }
      return listAuditEvents(db, { organisationId, afterId: query.afterId, limit: query.limit });
    },
  };
}
