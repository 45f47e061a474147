import type { Database } from '@gateway/db';
import { GatewayError } from '@gateway/errors';
import { requirePlatformAdmin, visibleOrganisations, type Actor } from '../../common/domain/actor.ts';
import type { BillingMode, Organisation, OrganisationStatus, Page, PageRequest, Propagation } from '../../common/domain/admin-records.ts';
import { changedFields, recordAuditEvent } from '../../common/domain/audit-log.ts';
import type { ConfigPublisher } from '../../common/domain/config-publisher.ts';
import { bumpConfigVersion, configChange } from '../../catalog/domain/config-snapshot.ts';
import { unknownGatewayModelSlugs } from '../../catalog/domain/gateway-model-store.ts';
import { isId, newId } from '../../common/domain/ids.ts';
import type { LedgerPort } from '../../common/domain/ledger-port.ts';
import {
  findOrganisation, insertOrganisation, listOrganisations, organisationExists, replaceAllowedModels, updateOrganisationFields, updateResponseStorage,
  type ResponseStorageSettings,
} from './organisation-store.ts';
import type { ResourceAccess } from '../../common/domain/resource-access.ts';
import type { TenancySettings } from './tenancy-settings.ts';

/** A new organisation as a platform admin describes it. */
export interface CreateOrganisationInput {
  name: string;
  billingMode: BillingMode;
  rpmLimit: number;
  allowedGatewayModels: string[];
}

/** Changes to an organisation; absent fields stay as they are. */
export interface UpdateOrganisationInput {
  name?: string | undefined;
  status?: OrganisationStatus | undefined;
  billingMode?: BillingMode | undefined;
  rpmLimit?: number | undefined;
  allowedGatewayModels?: string[] | undefined;
}

/** What the organisations aggregate is built from. */
export interface OrganisationsServiceDeps {
  db: Database;
  ledger: LedgerPort;
  publisher: ConfigPublisher;
  access: ResourceAccess;
  /** The area's settings (the platform's retention of stored Responses, which an organisation's may only shorten). */
  settings: TenancySettings;
}

/** The organisation fields the audit log records, under their API names. */
const organisationAuditFields = {
  name: 'name', status: 'status', billingMode: 'billing_mode', rpmLimit: 'rpm_limit', allowedGatewayModels: 'allowed_gateway_models',
  storeResponses: 'store_responses', responseRetentionS: 'response_retention_s',
};

/** The organisations aggregate: create, list, read and change organisations (route tag "organisations"). */
export function createOrganisationsService({ db, ledger, publisher, access, settings: { platformResponseRetentionS } }: OrganisationsServiceDeps) {
  const { requireOrganisation } = access;

  async function requireKnownSlugs(slugs: readonly string[]): Promise<void> {
    const unknown = await unknownGatewayModelSlugs(db, slugs);
    if (unknown.length > 0) {
      throw new GatewayError('invalid_request', {
        publicMessage: `Invalid request: allowed_gateway_models: no gateway model has the slug ${unknown.map((s) => `"${s}"`).join(', ')}.`,
        param: 'allowed_gateway_models',
      });
    }
  }

  return {
    /**
     * Sets how the organisation's Responses are stored (its owners' choice, or a platform
     * admin's): storing off, or a retention of its own no longer than the platform's (a longer
     * one is a 400 naming it, rather than a setting the proxies would not honour). Pushed to the
     * proxies like any served change; records already stored follow a shortened retention on read.
     */
    async setResponseStorage(actor: Actor, id: string, settings: ResponseStorageSettings): Promise<{ organisation: Organisation; propagation: Propagation }> {
      if (settings.responseRetentionS !== null && settings.responseRetentionS > platformResponseRetentionS) {
        throw new GatewayError('invalid_request', {
          param: 'response_retention_s',
          publicMessage: `Invalid request: response_retention_s: must be at most the platform's retention, ${platformResponseRetentionS} seconds.`,
        });
      }
      const { version, organisation } = await db.transaction(async (tx) => {
        const current = await requireOrganisation(actor, id, tx, { forUpdate: true });
        await updateResponseStorage(tx, id, settings);
        const updated = (await findOrganisation(tx, id))!;
        const changes = changedFields(current, updated, organisationAuditFields);
        await recordAuditEvent(tx, { actor, organisationId: id, action: 'organisation.response_storage', resourceType: 'organisation', resourceId: id, changes });
        return { version: Object.keys(changes).length > 0 ? await bumpConfigVersion(tx, [configChange('organisation', id)]) : undefined, organisation: updated };
      });
      const propagation = version === undefined ? { acknowledged: true, pendingProxyIds: [] } : await publisher.publish(version);
      return { organisation, propagation };
    },

    /**
     * Creates an organisation: its ledger account is opened first (idempotent on the new id),
     * so a ledger failure leaves nothing behind in the admin.
     */
    async createOrganisation(actor: Actor, input: CreateOrganisationInput): Promise<{ organisation: Organisation; propagation: Propagation }> {
      requirePlatformAdmin(actor);
      await requireKnownSlugs(input.allowedGatewayModels);
      const id = newId('organisation');
      await ledger.openAccount(id);
      const { version, organisation } = await db.transaction(async (tx) => {
        await insertOrganisation(tx, { id, status: 'active', ...input });
        const created = (await findOrganisation(tx, id))!;
        await recordAuditEvent(tx, {
          actor, organisationId: id, action: 'organisation.create', resourceType: 'organisation', resourceId: id,
          changes: changedFields(undefined, created, organisationAuditFields),
        });
        return { version: await bumpConfigVersion(tx, [configChange('organisation', id)]), organisation: created };
      });
      const propagation = await publisher.publish(version);
      return { organisation, propagation };
    },

    /** A page of organisations in creation order (an organisation token sees only its own). */
    async listOrganisations(actor: Actor, page: PageRequest): Promise<Page<Organisation>> {
      const badAfter = () => new GatewayError('invalid_request', { publicMessage: 'Invalid request: after: no organisation has this id.', param: 'after' });
      const visible = visibleOrganisations(actor);
      if (visible !== undefined) {
        // A member or an organisation token: only its own organisations, in creation order.
        const own = (await Promise.all(visible.map((id) => findOrganisation(db, id)))).filter((found) => found !== undefined)
          .sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime() || (a.id < b.id ? -1 : 1));
        let start = 0;
        if (page.after !== undefined) {
          start = own.findIndex((organisation) => organisation.id === page.after) + 1;
          if (start === 0) throw badAfter();
        }
        return { items: own.slice(start, start + page.limit), hasMore: own.length > start + page.limit };
      }
      if (page.after !== undefined && !(isId('organisation', page.after) && await organisationExists(db, page.after))) throw badAfter();
      return listOrganisations(db, page);
    },

    /** The organisation with this id (not_found otherwise). */
    getOrganisation: (actor: Actor, id: string) => requireOrganisation(actor, id),

    /** Changes an organisation and pushes the new configuration (a suspension is a hard cutover). */
    async updateOrganisation(actor: Actor, id: string, input: UpdateOrganisationInput): Promise<{ organisation: Organisation; propagation: Propagation }> {
      await requireOrganisation(actor, id);
      requirePlatformAdmin(actor);
      if (input.allowedGatewayModels !== undefined) await requireKnownSlugs(input.allowedGatewayModels);
      const { version, organisation } = await db.transaction(async (tx) => {
        const current = await requireOrganisation(actor, id, tx, { forUpdate: true });
        await updateOrganisationFields(tx, id, input);
        if (input.allowedGatewayModels !== undefined) await replaceAllowedModels(tx, id, input.allowedGatewayModels);
        const updated = (await findOrganisation(tx, id))!;
        const changes = changedFields(current, updated, organisationAuditFields);
        await recordAuditEvent(tx, { actor, organisationId: id, action: 'organisation.update', resourceType: 'organisation', resourceId: id, changes });
        // A rename alone changes nothing proxies serve: no new version to wait for.
        const servedChanged = Object.keys(changes).some((field) => field !== 'name');
        return { version: servedChanged ? await bumpConfigVersion(tx, [configChange('organisation', id)]) : undefined, organisation: updated };
      });
      const propagation = version === undefined ? { acknowledged: true, pendingProxyIds: [] } : await publisher.publish(version);
      return { organisation, propagation };
    },
  };
}
