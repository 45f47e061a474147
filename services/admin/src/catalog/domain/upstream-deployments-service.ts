import type { Database, Queryable } from '@gateway/db';
import { GatewayError } from '@gateway/errors';
import { systemResolver, type HostResolver } from '@gateway/address-policy';
import { requirePlatformAdmin, type Actor } from '../../common/domain/actor.ts';
import type { Page, PageRequest, Propagation } from '../../common/domain/admin-records.ts';
import { changedFields, recordAuditEvent, type AuditChanges } from '../../common/domain/audit-log.ts';
import type { ConfigPublisher } from '../../common/domain/config-publisher.ts';
import type { CredentialCipher } from '../../common/domain/credential-cipher.ts';
import { isId, newId } from '../../common/domain/ids.ts';
import { bumpConfigVersion, configChange } from './config-snapshot.ts';
import { embeddingModelProblems, modalityProblem } from './gateway-model-rules.ts';
import { findGatewayModel, type StoredGatewayModel } from './gateway-model-store.ts';
import { gatewayModelSlugPattern } from './gateway-model-fields.ts';
import type { ProviderKind } from './provider-kinds.ts';
import { reasoningControlsProblem } from './reasoning-controls.ts';
import {
  countUpstreamDeployments, deleteUpstreamDeployment, deploymentCredentialContext, deploymentWithoutCredential, findUpstreamDeployment, insertUpstreamDeployment,
  listUpstreamDeployments, maxExtraDeploymentsPerModel, primaryDeploymentName, updateUpstreamDeploymentFields,
  type DeploymentCosts, type StoredUpstreamDeployment, type UpstreamDeployment, type UpstreamDeploymentChanges,
} from './upstream-deployment-store.ts';
import { createUpstreamGuard, type UpstreamRuleParam } from './upstream-guard.ts';
import { normaliseUpstreamUrl } from './upstream-url.ts';
import type { CatalogSettings } from './catalog-settings.ts';

/** What the upstream deployments aggregate is built from. */
export interface UpstreamDeploymentsServiceDeps {
  db: Database;
  cipher: CredentialCipher;
  publisher: ConfigPublisher;
  /** The area's settings (whether every upstream may be private). */
  settings: CatalogSettings;
  /** Resolves upstream host names for the SSRF check; default the system resolver (tests inject a table). */
  resolveHost?: HostResolver | undefined;
}

/** A new deployment as a create body gives it (camelCased), class costs left out defaulted here. */
export interface CreateUpstreamDeploymentInput extends Partial<Omit<DeploymentCosts, 'providerInputCostMicrosPerMtok' | 'providerOutputCostMicrosPerMtok'>> {
  gatewayModel: string;
  name: string;
  priority: number;
  weight: number;
  upstream: { providerKind: ProviderKind; baseUrl: string; model: string; apiKey?: string | undefined; allowPrivateNetwork: boolean };
  providerInputCostMicrosPerMtok: bigint;
  providerOutputCostMicrosPerMtok: bigint;
}

/** Changes to a deployment as an update body gives them (camelCased); absent fields stay. */
export interface UpdateUpstreamDeploymentInput extends Partial<DeploymentCosts> {
  priority?: number | undefined;
  weight?: number | undefined;
  upstream?: {
    baseUrl?: string | undefined; model?: string | undefined; apiKey?: string | null | undefined; allowPrivateNetwork?: boolean | undefined;
  } | undefined;
}

/** The fields the audit log records, by API name. */
function deploymentAuditRecord(deployment: StoredUpstreamDeployment): Record<string, unknown> {
  return {
    gateway_model: deployment.gatewayModel, name: deployment.name, priority: deployment.priority, weight: deployment.weight,
    'upstream.provider_kind': deployment.upstream.providerKind, 'upstream.base_url': deployment.upstream.baseUrl,
    'upstream.model': deployment.upstream.model, 'upstream.allow_private_network': deployment.upstream.allowPrivateNetwork,
    // Whether a credential is set, never what it is.
    'upstream.api_key': deployment.upstreamApiKeyEncrypted === null ? null : '(set)',
    provider_input_cost_micros_per_mtok: deployment.providerInputCostMicrosPerMtok,
    provider_output_cost_micros_per_mtok: deployment.providerOutputCostMicrosPerMtok,
    provider_cached_input_cost_micros_per_mtok: deployment.providerCachedInputCostMicrosPerMtok,
    provider_cache_write_5m_cost_micros_per_mtok: deployment.providerCacheWrite5mCostMicrosPerMtok,
    provider_cache_write_1h_cost_micros_per_mtok: deployment.providerCacheWrite1hCostMicrosPerMtok,
    provider_reasoning_cost_micros_per_mtok: deployment.providerReasoningCostMicrosPerMtok,
    provider_audio_input_cost_micros_per_mtok: deployment.providerAudioInputCostMicrosPerMtok,
    provider_image_input_cost_micros_per_mtok: deployment.providerImageInputCostMicrosPerMtok,
  };
}

/** Field name → log name for changedFields: the audit record is already keyed by API name. */
const auditFieldNames = (record: Record<string, unknown>) => Object.fromEntries(Object.keys(record).map((key) => [key, key]));

/**
 * Refuses (400, param upstream.provider_kind) a deployment whose provider kind cannot serve what
 * the model promises: every deployment of a slug must answer the same requests alike, or a
 * failover would show a customer another vendor's refusal.
 */
function requireKindServesModel(model: StoredGatewayModel, providerKind: ProviderKind): void {
  const problem = (model.kind === 'embedding' ? embeddingModelProblems({ providerKind })[0]?.message : undefined)
    ?? modalityProblem(providerKind, model.inputModalities)
    ?? reasoningControlsProblem(providerKind, model.kind, model.reasoningEfforts, model.thinkingModes)?.message;
  if (problem !== undefined) {
    throw new GatewayError('invalid_request', {
      publicMessage: `Invalid request: upstream.provider_kind: ${providerKind} cannot serve the gateway model "${model.slug}" as configured (${problem}).`,
      param: 'upstream.provider_kind',
    });
  }
}

/**
 * Upstream deployments (route tag "upstream deployments"): further upstreams that serve a gateway
 * model beside its own, each judged by the SSRF rule like the model's, its credential sealed
 * before it is stored. Every write changes the model's config entry (the proxies get the whole
 * deployment list with the model) and is audited.
 */
export function createUpstreamDeploymentsService(deps: UpstreamDeploymentsServiceDeps) {
  const { db, cipher, publisher } = deps;
  const { requireUpstreamUrl, requireResolvedUpstream } = createUpstreamGuard(deps.settings.allowPrivateUpstreams, deps.resolveHost ?? systemResolver);

  const deploymentNotFound = () => new GatewayError('not_found', { publicMessage: 'No upstream deployment has this id.', param: 'id' });
  const modelNotFound = (slug: string) => new GatewayError('not_found', {
    publicMessage: gatewayModelSlugPattern.test(slug) ? `No gateway model has the slug "${slug}".` : 'No gateway model has this slug.',
    param: 'gateway_model',
  });
  /** A stored deployment by id; a malformed id is simply unknown. */
  const find = (queryable: Queryable, id: string, forUpdate = false) =>
    (isId('upstreamDeployment', id) ? findUpstreamDeployment(queryable, id, { forUpdate }) : Promise.resolve(undefined));

  return {
    /**
     * Adds a deployment to a gateway model. The base URL passes the SSRF rule (here and at the API
     * edge) with the deployment's own exception; the name is unique within the model and never
     * "primary" (409); a model has at most 15 further deployments (409).
     */
    async createUpstreamDeployment(actor: Actor, input: CreateUpstreamDeploymentInput): Promise<{ deployment: UpstreamDeployment; propagation: Propagation }> {
      requirePlatformAdmin(actor);
      const { upstream } = input;
      requireUpstreamUrl(upstream.baseUrl, upstream.providerKind, upstream.allowPrivateNetwork);
      await requireResolvedUpstream(upstream.baseUrl, upstream.allowPrivateNetwork);
      const id = newId('upstreamDeployment');
      const { version, stored } = await db.transaction(async (tx) => {
        // The model's row lock orders concurrent creates, so the limit holds.
        const model = await findGatewayModel(tx, input.gatewayModel, { forUpdate: true });
        if (!model) throw modelNotFound(input.gatewayModel);
        if (input.name === primaryDeploymentName) {
          throw new GatewayError('conflict', { publicMessage: 'The name "primary" is the gateway model\'s own upstream; choose another name.', param: 'name' });
        }
        requireKindServesModel(model, upstream.providerKind);
        if (await countUpstreamDeployments(tx, model.slug) >= maxExtraDeploymentsPerModel) {
          throw new GatewayError('conflict', {
            publicMessage: `The gateway model "${model.slug}" already has ${maxExtraDeploymentsPerModel} upstream deployments besides its own upstream (at most ${maxExtraDeploymentsPerModel + 1} in all); delete one first.`,
            param: 'gateway_model',
          });
        }
        const inserted = await insertUpstreamDeployment(tx, {
          id, gatewayModel: model.slug, name: input.name, priority: input.priority, weight: input.weight,
          upstream: {
            providerKind: upstream.providerKind, baseUrl: normaliseUpstreamUrl(upstream.baseUrl), model: upstream.model,
            allowPrivateNetwork: upstream.allowPrivateNetwork,
          },
          providerInputCostMicrosPerMtok: input.providerInputCostMicrosPerMtok,
          providerOutputCostMicrosPerMtok: input.providerOutputCostMicrosPerMtok,
          // Input classes left out cost what input costs; reasoning left out is priced as output.
          providerCachedInputCostMicrosPerMtok: input.providerCachedInputCostMicrosPerMtok ?? input.providerInputCostMicrosPerMtok,
          providerCacheWrite5mCostMicrosPerMtok: input.providerCacheWrite5mCostMicrosPerMtok ?? input.providerInputCostMicrosPerMtok,
          providerCacheWrite1hCostMicrosPerMtok: input.providerCacheWrite1hCostMicrosPerMtok ?? input.providerInputCostMicrosPerMtok,
          providerReasoningCostMicrosPerMtok: input.providerReasoningCostMicrosPerMtok ?? null,
          providerAudioInputCostMicrosPerMtok: input.providerAudioInputCostMicrosPerMtok ?? input.providerInputCostMicrosPerMtok,
          providerImageInputCostMicrosPerMtok: input.providerImageInputCostMicrosPerMtok ?? input.providerInputCostMicrosPerMtok,
          upstreamApiKeyEncrypted: upstream.apiKey === undefined ? null : cipher.encrypt(upstream.apiKey, deploymentCredentialContext(id)),
        });
        if (!inserted) {
          throw new GatewayError('conflict', { publicMessage: `The gateway model "${model.slug}" already has a deployment named "${input.name}".`, param: 'name' });
        }
        const created = (await findUpstreamDeployment(tx, id))!;
        const record = deploymentAuditRecord(created);
        await recordAuditEvent(tx, {
          actor, organisationId: null, action: 'upstream_deployment.create', resourceType: 'upstream_deployment', resourceId: id,
          changes: changedFields(undefined, record, auditFieldNames(record)),
        });
        return { version: await bumpConfigVersion(tx, [configChange('gateway_model', model.slug)]), stored: created };
      });
      const propagation = await publisher.publish(version);
      return { deployment: deploymentWithoutCredential(stored), propagation };
    },

    /**
     * Changes a deployment (priority, weight, base URL, upstream model, credential, exception,
     * costs). A new base URL passes the SSRF rule with the exception as it will be; turning the
     * exception off re-judges the stored URL (400 naming upstream.allow_private_network).
     */
    async updateUpstreamDeployment(actor: Actor, id: string, input: UpdateUpstreamDeploymentInput): Promise<{ deployment: UpstreamDeployment; propagation: Propagation }> {
      requirePlatformAdmin(actor);
      const baseUrl = input.upstream?.baseUrl;
      const flag = input.upstream?.allowPrivateNetwork;
      const judged = (deployment: StoredUpstreamDeployment | undefined) => baseUrl ?? (flag !== undefined ? deployment?.upstream.baseUrl : undefined);
      const allowedFor = (deployment: StoredUpstreamDeployment | undefined) => flag ?? deployment?.upstream.allowPrivateNetwork ?? false;
      const param: UpstreamRuleParam = baseUrl !== undefined ? 'upstream.base_url' : 'upstream.allow_private_network';
      // Judged before the row is locked (name resolution may take seconds).
      const seen = await find(db, id);
      if (!seen) throw deploymentNotFound();
      const seenUrl = judged(seen);
      if (baseUrl !== undefined) requireUpstreamUrl(baseUrl, seen.upstream.providerKind, allowedFor(seen));
      if (seenUrl !== undefined) await requireResolvedUpstream(seenUrl, allowedFor(seen), param);
      const { version, stored } = await db.transaction(async (tx) => {
        const current = await find(tx, id, true);
        if (!current) throw deploymentNotFound();
        const currentUrl = judged(current);
        if (currentUrl !== undefined) {
          requireUpstreamUrl(currentUrl, current.upstream.providerKind, allowedFor(current), param);
          // A concurrent change between the read above and the lock: judge the name again under the lock.
          if (currentUrl !== seenUrl || allowedFor(current) !== allowedFor(seen)) await requireResolvedUpstream(currentUrl, allowedFor(current), param);
        }
        const { upstream: upstreamInput, ...fields } = input;
        const { apiKey, ...upstream } = upstreamInput ?? {};
        const changes: UpstreamDeploymentChanges = {
          ...fields,
          upstream: { ...upstream, baseUrl: baseUrl === undefined ? undefined : normaliseUpstreamUrl(baseUrl) },
          upstreamApiKeyEncrypted: apiKey === undefined ? undefined : apiKey === null ? null : cipher.encrypt(apiKey, deploymentCredentialContext(id)),
        };
        await updateUpstreamDeploymentFields(tx, id, changes);
        const updated = (await findUpstreamDeployment(tx, id))!;
        const before = deploymentAuditRecord(current);
        const auditChanges: AuditChanges = changedFields(before, deploymentAuditRecord(updated), auditFieldNames(before));
        // A replaced credential is a change even though both sides read "(set)".
        if (typeof apiKey === 'string' && current.upstreamApiKeyEncrypted !== null) auditChanges['upstream.api_key'] = { before: '(set)', after: '(replaced)' };
        await recordAuditEvent(tx, {
          actor, organisationId: null, action: 'upstream_deployment.update', resourceType: 'upstream_deployment', resourceId: id, changes: auditChanges,
        });
        return { version: await bumpConfigVersion(tx, [configChange('gateway_model', current.gatewayModel)]), stored: updated };
      });
      const propagation = await publisher.publish(version);
      return { deployment: deploymentWithoutCredential(stored), propagation };
    },

    /** Deletes a deployment: proxies stop sending requests to it once they have the change. */
    async deleteUpstreamDeployment(actor: Actor, id: string): Promise<Propagation> {
      requirePlatformAdmin(actor);
      const version = await db.transaction(async (tx) => {
        const current = await find(tx, id, true);
        if (!current) throw deploymentNotFound();
        await deleteUpstreamDeployment(tx, id);
        const before = deploymentAuditRecord(current);
        await recordAuditEvent(tx, {
          actor, organisationId: null, action: 'upstream_deployment.delete', resourceType: 'upstream_deployment', resourceId: id,
          changes: Object.fromEntries(Object.entries(changedFields(undefined, before, auditFieldNames(before)))
            .map(([field, change]) => [field, { before: change.after, after: null }])),
        });
        return bumpConfigVersion(tx, [configChange('gateway_model', current.gatewayModel)]);
      });
      return publisher.publish(version);
    },

    /** A page of deployments by model slug then name, optionally one model's (not_found for an unknown model). */
    async listUpstreamDeployments(actor: Actor, filter: { gatewayModel?: string | undefined }, page: PageRequest): Promise<Page<UpstreamDeployment>> {
      requirePlatformAdmin(actor);
      if (filter.gatewayModel !== undefined && !await findGatewayModel(db, filter.gatewayModel)) throw modelNotFound(filter.gatewayModel);
      const result = await listUpstreamDeployments(db, filter, page);
      return { items: result.items.map(deploymentWithoutCredential), hasMore: result.hasMore };
    },

    /** The deployment with this id (not_found otherwise). */
    async getUpstreamDeployment(actor: Actor, id: string): Promise<UpstreamDeployment> {
      requirePlatformAdmin(actor);
      const deployment = await find(db, id);
      if (!deployment) throw deploymentNotFound();
      return deploymentWithoutCredential(deployment);
    },
  };
}
