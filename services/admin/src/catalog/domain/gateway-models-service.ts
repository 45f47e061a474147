import type { Database } from '@gateway/db';
import { GatewayError } from '@gateway/errors';
import { systemResolver, type HostResolver } from '@gateway/address-policy';
import { requirePlatformAdmin, systemActor, type Actor } from '../../common/domain/actor.ts';
import type { GatewayModel, Page, PageRequest, Propagation } from '../../common/domain/admin-records.ts';
import { changedFields, recordAuditEvent, type AuditChanges } from '../../common/domain/audit-log.ts';
import type { ConfigPublisher } from '../../common/domain/config-publisher.ts';
import { bumpConfigVersion, configChange, credentialContext } from './config-snapshot.ts';
import type { CredentialCipher } from '../../common/domain/credential-cipher.ts';
import {
  gatewayModelLeaves, gatewayModelSlugPattern, inputClassPriceKeys, leafValue, type CreateGatewayModelInput, type UpdateGatewayModelInput,
} from './gateway-model-schema.ts';
import {
  findGatewayModel, insertGatewayModel, listGatewayModels, updateGatewayModelFields, withoutCredential,
  type GatewayModelChanges, type NewGatewayModel, type StoredGatewayModel,
} from './gateway-model-store.ts';
import { aliasNameInUse } from './model-alias-store.ts';
import { apiVersionQueryProviderKind, type ProviderKind } from './provider-kinds.ts';
import { reasoningControlsProblem } from './reasoning-controls.ts';
import {
  allowsPrivateUpstream, normaliseUpstreamUrl, resolvedHostProblem, resolvesToInternalAddressProblem, upstreamUrlProblem,
} from './upstream-url.ts';

/** The field a refused upstream URL is blamed on: the URL given, or the exception turned off. */
type UpstreamRuleParam = 'upstream.base_url' | 'upstream.allow_private_network';

/** The token class prices of a model priced at its input price (cost) for every input class and as output for reasoning. */
function tokenClassPricesAt(inputPrice: bigint, providerInputCost: bigint) {
  return {
    cachedInputPriceMicrosPerMtok: inputPrice, cacheWrite5mPriceMicrosPerMtok: inputPrice, cacheWrite1hPriceMicrosPerMtok: inputPrice,
    audioInputPriceMicrosPerMtok: inputPrice, imageInputPriceMicrosPerMtok: inputPrice, reasoningPriceMicrosPerMtok: null,
    providerCachedInputCostMicrosPerMtok: providerInputCost, providerCacheWrite5mCostMicrosPerMtok: providerInputCost,
    providerCacheWrite1hCostMicrosPerMtok: providerInputCost, providerAudioInputCostMicrosPerMtok: providerInputCost,
    providerImageInputCostMicrosPerMtok: providerInputCost, providerReasoningCostMicrosPerMtok: null,
  };
}

/**
 * A create input with every input class's price (cost) it leaves out set to its input price
 * (cost): a model created without a per-class sheet bills every input token alike, as before
 * prices by token class. The values are copied, not linked: a later input price change leaves them be.
 */
function withInputClassDefaults(input: CreateGatewayModelInput) {
  const filled: Record<string, unknown> = { ...input };
  for (const [priceKey, costKey] of inputClassPriceKeys) {
    filled[priceKey] ??= input.inputPriceMicrosPerMtok;
    filled[costKey] ??= input.providerInputCostMicrosPerMtok;
  }
  return filled as CreateGatewayModelInput & ReturnType<typeof tokenClassPricesAt>;
}

/** The built-in demo model, seeded when DEMO_UPSTREAM_URL is set (its base URL is that setting). */
const demoGatewayModel = {
  slug: 'demo',
  displayName: 'Demo (built-in demo upstream, no provider account)',
  defaultMaxTokens: 256,
  // Room for an agent's prompt (Claude Code's system prompt and tools are tens of thousands of
  // tokens) with the demo upstream, which has no limit of its own.
  maxContextTokens: 200_000,
  inputPriceMicrosPerMtok: 1_000_000n, // ₹1 per million input tokens
  outputPriceMicrosPerMtok: 2_000_000n, // ₹2 per million output tokens
  providerInputCostMicrosPerMtok: 0n,
  providerOutputCostMicrosPerMtok: 0n,
  ...tokenClassPricesAt(1_000_000n, 0n),
  kind: 'chat',
  // The demo upstream reads only the text, but takes image and audio parts: a user can try them on it.
  inputModalities: ['text', 'image', 'audio'],
  // The demo upstream reasons on request (`reasoning_effort`, answered with `reasoning_content`),
  // so the agents' efforts are served: Claude Code sends `output_config.effort` with its built-in
  // names, which a model without efforts refuses (docs/surfaces/reasoning.md).
  reasoningEfforts: ['low', 'medium', 'high'],
  thinkingModes: [],
  maxThinkingBudgetTokens: 0,
  returnsReasoning: true,
  // No per-model exception: the demo relies on ADMIN_ALLOW_PRIVATE_UPSTREAMS=true, as before.
  upstream: { providerKind: 'openai_compatible', model: 'demo', allowPrivateNetwork: false },
  upstreamApiKeyEncrypted: null,
} as const satisfies Omit<NewGatewayModel, 'upstream'> & { upstream: Omit<NewGatewayModel['upstream'], 'baseUrl'> };

/**
 * Why a chat model's input modalities do not fit its provider kind, or undefined: Anthropic's
 * Messages API takes no audio, so a model that promised audio would refuse it in the proxy's
 * adapter with words no other slug uses (which would tell a customer the vendor).
 */
export function modalityProblem(providerKind: ProviderKind, inputModalities: readonly string[] | undefined): string | undefined {
  if (providerKind === 'anthropic' && inputModalities?.includes('audio') === true) return 'must not include "audio" for the anthropic provider kind: its API takes no audio input';
  return undefined;
}

/** The fields of a gateway model that the embedding rules judge, as a create gives them or an update changes them. */
interface EmbeddingRuleFields {
  providerKind?: ProviderKind | undefined;
  outputPriceMicrosPerMtok?: bigint | undefined;
  providerOutputCostMicrosPerMtok?: bigint | undefined;
  inputModalities?: readonly string[] | undefined;
}

/** One field an embedding model may not have as given: its API name and why. */
interface EmbeddingRuleProblem {
  param: 'upstream.provider_kind' | 'output_price_micros_per_mtok' | 'provider_output_cost_micros_per_mtok' | 'input_modalities';
  message: string;
}

/**
 * What an embedding model may not be, for the fields given (absent ones are not judged): served
 * by an OpenAI-compatible provider kind (Anthropic's API has no embeddings), priced by its input
 * tokens only (it produces no output tokens, so an output price or cost other than 0 would
 * promise a charge that never happens), and fed text only. The create body's rules
 * (request-schemas.ts) and an update of a stored embedding model both ask it, so both say the same.
 */
export function embeddingModelProblems(fields: EmbeddingRuleFields): EmbeddingRuleProblem[] {
  const problems: EmbeddingRuleProblem[] = [];
  if (fields.providerKind === 'anthropic') {
    problems.push({ param: 'upstream.provider_kind', message: 'an embedding model needs an OpenAI-compatible provider kind: the Anthropic API has no embeddings' });
  }
  if (fields.outputPriceMicrosPerMtok !== undefined && fields.outputPriceMicrosPerMtok !== 0n) {
    problems.push({ param: 'output_price_micros_per_mtok', message: 'must be "0" for an embedding model: it is priced by its input tokens only' });
  }
  if (fields.providerOutputCostMicrosPerMtok !== undefined && fields.providerOutputCostMicrosPerMtok !== 0n) {
    problems.push({ param: 'provider_output_cost_micros_per_mtok', message: 'must be "0" for an embedding model: it produces no output tokens' });
  }
  if (fields.inputModalities !== undefined && (fields.inputModalities.length !== 1 || fields.inputModalities[0] !== 'text')) {
    problems.push({ param: 'input_modalities', message: 'must be ["text"] for an embedding model' });
  }
  return problems;
}

/**
 * The built-in demo embedding model, seeded beside `demo` on the same upstream (the demo
 * upstream serves /v1/embeddings), so /v1/embeddings can be tried without a provider account.
 */
const demoEmbeddingModel = {
  slug: 'demo-embedding',
  displayName: 'Demo embeddings (built-in demo upstream, no provider account)',
  // What a create of an embedding model without it stores: an embedding call has no completion, so it is never read.
  defaultMaxTokens: 1,
  maxContextTokens: 8192,
  inputPriceMicrosPerMtok: 1_000_000n, // ₹1 per million input tokens
  outputPriceMicrosPerMtok: 0n,
  providerInputCostMicrosPerMtok: 0n,
  providerOutputCostMicrosPerMtok: 0n,
  ...tokenClassPricesAt(1_000_000n, 0n),
  kind: 'embedding',
  inputModalities: ['text'],
  reasoningEfforts: [],
  thinkingModes: [],
  maxThinkingBudgetTokens: 0,
  returnsReasoning: false,
  upstream: { providerKind: 'openai_compatible', model: 'demo-embedding', allowPrivateNetwork: false },
  upstreamApiKeyEncrypted: null,
} as const satisfies Omit<NewGatewayModel, 'upstream'> & { upstream: Omit<NewGatewayModel['upstream'], 'baseUrl'> };

/** What the gateway models aggregate is built from. */
export interface GatewayModelsServiceDeps {
  db: Database;
  cipher: CredentialCipher;
  publisher: ConfigPublisher;
  /** true: upstream base URLs may be http and private addresses (development, demo). */
  allowPrivateUpstreams: boolean;
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

  /** The SSRF policy for a model with (or without) its own exception: ADMIN_ALLOW_PRIVATE_UPSTREAMS || its flag. */
  const upstreamPolicy = (modelAllowsPrivateNetwork: boolean) => ({ allowPrivate: allowsPrivateUpstream(deps.allowPrivateUpstreams, modelAllowsPrivateNetwork) });
  /**
   * The 400 for a base URL the SSRF rule refuses. `param` is upstream.base_url when the request
   * gave the URL, or upstream.allow_private_network when it only turned the exception off and the
   * stored URL needs it.
   */
  const refusedUpstream = (param: UpstreamRuleParam, problem: string, internalMessage?: string) => new GatewayError('invalid_request', {
    publicMessage: param === 'upstream.base_url'
      ? `Invalid request: upstream.base_url: ${problem}.`
      : `Invalid request: upstream.allow_private_network: cannot be false while the model's upstream.base_url needs it (upstream.base_url ${problem}); give a public https upstream.base_url in the same request.`,
    param,
    ...(internalMessage === undefined ? {} : { internalMessage }),
  });
  /** Refuses a base URL the SSRF rule forbids for this provider kind and exception (400). */
  const requireUpstreamUrl = (baseUrl: string, providerKind: ProviderKind, allowPrivateNetwork: boolean, param: UpstreamRuleParam = 'upstream.base_url') => {
    const problem = upstreamUrlProblem(baseUrl, upstreamPolicy(allowPrivateNetwork), { providerKind });
    if (problem) throw refusedUpstream(param, problem);
  };
  /**
   * Refuses a base URL whose host name resolves to an address the SSRF policy refuses (400; the
   * address stays in the internal message). DNS can change after this: the proxy checks again
   * at connect time, which is the real guard.
   */
  const requireResolvedUpstream = async (baseUrl: string, allowPrivateNetwork: boolean, param: UpstreamRuleParam = 'upstream.base_url') => {
    const problem = await resolvedHostProblem(baseUrl, upstreamPolicy(allowPrivateNetwork), deps.resolveHost ?? systemResolver);
    if (problem) throw refusedUpstream(param, resolvesToInternalAddressProblem, problem);
  };
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
        // The kind is fixed at create: an update of an embedding model keeps to its rules.
        const [problem] = current.kind === 'embedding' ? embeddingModelProblems(input) : [];
        if (problem !== undefined) {
          throw new GatewayError('invalid_request', { publicMessage: `Invalid request: ${problem.param}: ${problem.message}.`, param: problem.param });
        }
        const modalities = modalityProblem(current.upstream.providerKind, input.inputModalities);
        if (modalities !== undefined) {
          throw new GatewayError('invalid_request', { publicMessage: `Invalid request: input_modalities: ${modalities}.`, param: 'input_modalities' });
        }
        const reasoning = reasoningControlsProblem(current.upstream.providerKind, current.kind, input.reasoningEfforts, input.thinkingModes);
        if (reasoning !== undefined) {
          throw new GatewayError('invalid_request', { publicMessage: `Invalid request: ${reasoning.param}: ${reasoning.message}.`, param: reasoning.param });
        }
        const defaultMaxTokens = input.defaultMaxTokens ?? current.defaultMaxTokens;
        const maxContextTokens = input.maxContextTokens ?? current.maxContextTokens;
        if (maxContextTokens < defaultMaxTokens) {
          throw new GatewayError('invalid_request', {
            publicMessage: `Invalid request: max_context_tokens: must be at least default_max_tokens (${defaultMaxTokens}).`,
            param: input.maxContextTokens !== undefined ? 'max_context_tokens' : 'default_max_tokens',
          });
        }
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
