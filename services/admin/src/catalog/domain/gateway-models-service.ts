import type { Database } from '@gateway/db';
import { GatewayError } from '@gateway/errors';
import { systemResolver, type HostResolver } from '@gateway/address-policy';
import { requirePlatformAdmin, systemActor, type Actor } from '../../common/domain/actor.ts';
import type { GatewayModel, Page, PageRequest, Propagation } from '../../common/domain/admin-records.ts';
import { changedFields, recordAuditEvent, type AuditChanges } from '../../common/domain/audit-log.ts';
import type { ConfigPublisher } from '../../common/domain/config-publisher.ts';
import { bumpConfigVersion, configChange, credentialContext } from './config-snapshot.ts';
import type { CredentialCipher } from '../../common/domain/credential-cipher.ts';
import { demoEmbeddingModel, demoGatewayModel } from './demo-models.ts';
import {
  gatewayModelLeaves, gatewayModelSlugPattern, leafValue, type CreateGatewayModelInput, type UpdateGatewayModelInput,
} from './gateway-model-fields.ts';
import { requireUpdateFits, requireUpdateFitsDeploymentKind, withInputClassDefaults } from './gateway-model-rules.ts';
import { deploymentProviderKinds } from './upstream-deployment-store.ts';
import {
  findGatewayModel, insertGatewayModel, listGatewayModels, updateGatewayModelFields, withoutCredential,
  type GatewayModelChanges, type StoredGatewayModel,
} from './gateway-model-store.ts';
import { aliasNameInUse } from './model-alias-store.ts';
import { apiVersionQueryProviderKind } from './provider-kinds.ts';
import { normaliseUpstreamUrl } from './upstream-url.ts';
import { createUpstreamGuard, type UpstreamRuleParam } from './upstream-guard.ts';
import type { CatalogSettings } from './catalog-settings.ts';

/** What the gateway models aggregate is built from. */
export interface GatewayModelsServiceDeps {
  db: Database;
  cipher: CredentialCipher;
  publisher: ConfigPublisher;
  /** The area's settings (whether every model may use private upstreams). */
  settings: CatalogSettings;
  /** Resolves upstream host names for the SSRF check; default the system resolver (tests inject a table). */
  resolveHost?: HostResolver | undefined;
}

/** How a stored credential appears in the audit log: whether it is set, never what it is. */
function credentialMarker(sealed: string | null): string | null {
  return sealed === null ? null : '(set)';
}

/** The fields the audit log records: every field a create may give but the slug (the event's resource id), by API name. */
const auditedLeaves = gatewayModelLeaves.filter((leaf) => leaf.creatable && leaf.wireName !== 'slug');
/** Field name → log name for changedFields: the audit record below is already keyed by API name. */
const gatewayModelAuditFields = Object.fromEntries(auditedLeaves.map((leaf) => [leaf.wireName, leaf.wireName]));

/** A gateway model as the audit log records it, by API name; the credential only as a marker. */
function gatewayModelAuditRecord(model: StoredGatewayModel): Record<string, unknown> {
  return Object.fromEntries(auditedLeaves.map((leaf) => [
    leaf.wireName, leaf.shown ? leafValue(model, leaf) : credentialMarker(model.upstreamApiKeyEncrypted),
  ]));
}

/**
 * Gateway models (route tag "gateway models"): customer-facing names with prices and a concealed
 * upstream target, judged by the SSRF rule, their credentials sealed before they are stored.
 */
export function createGatewayModelsService(deps: GatewayModelsServiceDeps) {
  const { db, cipher, publisher } = deps;

  /** The not_found answer for a slug; only a well-formed slug is echoed back. */
  function gatewayModelNotFound(slug: string): GatewayError {
    const publicMessage = gatewayModelSlugPattern.test(slug) ? `No gateway model has the slug "${slug}".` : 'No gateway model has this slug.';
    return new GatewayError('not_found', { publicMessage, param: 'slug' });
  }

  const { requireUpstreamUrl, requireResolvedUpstream } = createUpstreamGuard(deps.settings.allowPrivateUpstreams, deps.resolveHost ?? systemResolver);
  return {
    /**
     * Creates a gateway model. The base URL is checked against the SSRF rule here as well as at
     * the API edge, and the credential is sealed with AES-256-GCM before it touches the database.
     */
    async createGatewayModel(actor: Actor, input: CreateGatewayModelInput): Promise<{ gatewayModel: GatewayModel; propagation: Propagation }> {
      requirePlatformAdmin(actor);
      const allowPrivateNetwork = input.upstream.allowPrivateNetwork ?? false;
      requireUpstreamUrl(input.upstream.baseUrl, input.upstream.providerKind, allowPrivateNetwork);
      await requireResolvedUpstream(input.upstream.baseUrl, allowPrivateNetwork);
      const { version, stored } = await db.transaction(async (tx) => {
        // The proxy resolves a slug before any alias: a new slug equal to an alias would silently
        // take that name from the model its users reach now (docs/model-aliases.md).
        if (await aliasNameInUse(tx, input.slug)) {
          throw new GatewayError('conflict', { publicMessage: `The slug "${input.slug}" is in use as a model alias; delete or rename the alias first.`, param: 'slug' });
        }
        const { upstream: { apiKey, ...upstream }, ...fields } = withInputClassDefaults(input);
        const inserted = await insertGatewayModel(tx, {
          ...fields,
          displayName: fields.displayName ?? fields.slug,
          upstream: { ...upstream, baseUrl: normaliseUpstreamUrl(upstream.baseUrl), allowPrivateNetwork },
          upstreamApiKeyEncrypted: apiKey === undefined ? null : cipher.encrypt(apiKey, credentialContext(input.slug)),
        });
        if (!inserted) {
          throw new GatewayError('conflict', { publicMessage: `A gateway model with the slug "${input.slug}" already exists.`, param: 'slug' });
        }
        const created = (await findGatewayModel(tx, input.slug))!;
        await recordAuditEvent(tx, {
          actor, organisationId: null, action: 'gateway_model.create', resourceType: 'gateway_model', resourceId: input.slug,
          changes: changedFields(undefined, gatewayModelAuditRecord(created), gatewayModelAuditFields),
        });
        return { version: await bumpConfigVersion(tx, [configChange('gateway_model', input.slug)]), stored: created };
      });
      const propagation = await publisher.publish(version);
      return { gatewayModel: withoutCredential(stored), propagation };
    },

    /**
     * Changes a gateway model (prices, limits, upstream target, credential) and pushes it. The
     * combination is checked after merging (max_context_tokens ≥ default_max_tokens; an embedding
     * model's output price and cost stay 0 and its input text only, embeddingModelProblems); a new base
     * URL passes the SSRF rule with the model's exception as it will be (the body's
     * allowPrivateNetwork if given, else the stored one), and turning the exception off re-judges
     * the stored URL (400 naming upstream.allow_private_network when it needs it); a new
     * credential is sealed before it is stored.
     */
    async updateGatewayModel(actor: Actor, slug: string, input: UpdateGatewayModelInput): Promise<{ gatewayModel: GatewayModel; propagation: Propagation }> {
      requirePlatformAdmin(actor);
      const baseUrl = input.upstream?.baseUrl;
      const flag = input.upstream?.allowPrivateNetwork;
      // The URL the SSRF rule judges: a new one, or the stored one when only the exception changes.
      const judged = (model: StoredGatewayModel | undefined) => baseUrl ?? (flag !== undefined ? model?.upstream.baseUrl : undefined);
      // The exception the model will have: the body's value if given, else the stored one.
      const allowedFor = (model: StoredGatewayModel | undefined) => flag ?? model?.upstream.allowPrivateNetwork ?? false;
      const param: UpstreamRuleParam = baseUrl !== undefined ? 'upstream.base_url' : 'upstream.allow_private_network';
      // Judged before the row is locked (name resolution may take seconds): the form first, with
      // any query let through (whether it may stay depends on the stored provider kind).
      const seen = baseUrl === undefined && flag === undefined ? undefined : await findGatewayModel(db, slug);
      const seenUrl = judged(seen);
      if (baseUrl !== undefined) requireUpstreamUrl(baseUrl, apiVersionQueryProviderKind, allowedFor(seen));
      if (seenUrl !== undefined) await requireResolvedUpstream(seenUrl, allowedFor(seen), param);
      const { version, stored } = await db.transaction(async (tx) => {
        const current = await findGatewayModel(tx, slug, { forUpdate: true });
        if (!current) throw gatewayModelNotFound(slug);
        const currentUrl = judged(current);
        if (currentUrl !== undefined) {
          requireUpstreamUrl(currentUrl, current.upstream.providerKind, allowedFor(current), param);
          // A concurrent change between the read above and the lock: judge the name again under the lock.
          if (currentUrl !== seenUrl || allowedFor(current) !== allowedFor(seen)) await requireResolvedUpstream(currentUrl, allowedFor(current), param);
        }
        requireUpdateFits(current, input);
        // Every deployment serves what the model promises: a change its provider kinds cannot serve is refused too.
        for (const providerKind of await deploymentProviderKinds(tx, slug)) requireUpdateFitsDeploymentKind(current, input, providerKind);
        const { upstream: upstreamInput, ...fields } = input;
        const { apiKey, ...upstream } = upstreamInput ?? {};
        const changes: GatewayModelChanges = {
          ...fields,
          upstream: { ...upstream, baseUrl: baseUrl === undefined ? undefined : normaliseUpstreamUrl(baseUrl) },
          upstreamApiKeyEncrypted: apiKey === undefined ? undefined : apiKey === null ? null : cipher.encrypt(apiKey, credentialContext(slug)),
        };
        await updateGatewayModelFields(tx, slug, changes);
        const updated = (await findGatewayModel(tx, slug))!;
        const auditChanges: AuditChanges = changedFields(gatewayModelAuditRecord(current), gatewayModelAuditRecord(updated), gatewayModelAuditFields);
        // A replaced credential is a change even though both sides read "(set)".
        if (typeof apiKey === 'string' && current.upstreamApiKeyEncrypted !== null) auditChanges['upstream.api_key'] = { before: '(set)', after: '(replaced)' };
        await recordAuditEvent(tx, { actor, organisationId: null, action: 'gateway_model.update', resourceType: 'gateway_model', resourceId: slug, changes: auditChanges });
        return { version: await bumpConfigVersion(tx, [configChange('gateway_model', slug)]), stored: updated };
      });
      const propagation = await publisher.publish(version);
      return { gatewayModel: withoutCredential(stored), propagation };
    },

    /** A page of gateway models ordered by slug (platform admins only: they show upstream targets). */
    async listGatewayModels(actor: Actor, page: PageRequest): Promise<Page<GatewayModel>> {
      requirePlatformAdmin(actor);
      const result = await listGatewayModels(db, page);
      return { items: result.items.map(withoutCredential), hasMore: result.hasMore };
    },

    /** The gateway model with this slug (not_found otherwise). */
    async getGatewayModel(actor: Actor, slug: string): Promise<GatewayModel> {
      requirePlatformAdmin(actor);
      const model = await findGatewayModel(db, slug);
      if (!model) throw gatewayModelNotFound(slug);
      return withoutCredential(model);
    },

    /**
     * Creates the built-in `demo` model and `demo-embedding` pointing at `baseUrl`, each unless a
     * model with its slug exists (none is ever overwritten). The URL is operator configuration,
     * not API input, so the SSRF rule does not apply. Resolves whether `demo` was created.
     */
    async seedDemoModel(baseUrl: string): Promise<boolean> {
      return db.transaction(async (tx) => {
        const createdSlugs: string[] = [];
        for (const demoModel of [demoGatewayModel, demoEmbeddingModel]) {
          const inserted = await insertGatewayModel(tx, { ...demoModel, upstream: { ...demoModel.upstream, baseUrl: normaliseUpstreamUrl(baseUrl) } });
          if (!inserted) continue;
          const created = (await findGatewayModel(tx, demoModel.slug))!;
          await recordAuditEvent(tx, {
            actor: systemActor, organisationId: null, action: 'gateway_model.create', resourceType: 'gateway_model', resourceId: demoModel.slug,
            changes: changedFields(undefined, gatewayModelAuditRecord(created), gatewayModelAuditFields),
          });
          createdSlugs.push(demoModel.slug);
        }
        if (createdSlugs.length > 0) await bumpConfigVersion(tx, createdSlugs.map((slug) => configChange('gateway_model', slug)));
        return createdSlugs.includes(demoGatewayModel.slug);
      });
    },
  };
}
