// The config stream's wire (configV1) decoded into the snapshot's terms: each message becomes
// a domain entry or the reason it is left out. The rules of applying a change (versions,
// heartbeats, in-place deltas, fresh maps for a full snapshot) live in domain/config-snapshot.ts.
import { priceSheet, type PriceSheetInput } from '../domain/pricing.ts';
import { configV1 } from '@gateway/contracts';
import type {
  ConfigChange, ConfigItem, GatewayModelEntry, KeyEntry, MediaModality, OrganisationEntry, ProjectEntry, UpstreamDeploymentEntry,
} from '../domain/config-snapshot.ts';
import type { ReasoningControls, ThinkingMode } from '../domain/reasoning.ts';
import { tokenizerForModel } from '../domain/token-estimate.ts';
import { cacheScopeKeyBytes } from '../domain/cache-scope.ts';
import { toolCallIdKeyBytes } from '../domain/tool-call-id-codec.ts';
import { responseStoreKeyBytes } from '../domain/responses/response-sealer.ts';

/** Options of configChangeFromProto. */
export interface ConfigDecodeOptions {
  /** Whether the proxy has an adapter for an upstream provider kind. */
  supportsProviderKind(kind: string): boolean;
}

const hexSha256Pattern = /^[0-9a-f]{64}$/;

/** One empty map shared by every organisation without aliases (most of them), so they cost no allocation. */
const noAliases: ReadonlyMap<string, string> = new Map();

/** An alias map off the wire (name -> slug); entries with an empty name or slug are left out. */
function aliasMapFrom(aliases: { [name: string]: string }): ReadonlyMap<string, string> {
  const entries = Object.entries(aliases).filter(([name, slug]) => name !== '' && slug !== '');
  return entries.length === 0 ? noAliases : new Map(entries);
}

function organisationFrom(message: configV1.Organisation): OrganisationEntry | string {
  if (message.id === '') return 'organisation without id';
  let billingMode: OrganisationEntry['billingMode'];
  if (message.billingMode === configV1.BillingMode.BILLING_MODE_COMMERCIAL) billingMode = 'commercial';
  else if (message.billingMode === configV1.BillingMode.BILLING_MODE_INTERNAL) billingMode = 'internal';
  else return `organisation ${message.id}: unknown billing mode ${message.billingMode}`;
  if (!Number.isInteger(message.rpmLimit) || message.rpmLimit < 0) return `organisation ${message.id}: negative rpm_limit`;
  return {
    id: message.id,
    status: message.status === configV1.OrganisationStatus.ORGANISATION_STATUS_ACTIVE ? 'active' : 'suspended',
    billingMode,
    rpmLimit: message.rpmLimit,
    allowedModelSlugs: new Set(message.allowedGatewayModelSlugs),
    modelAliases: aliasMapFrom(message.modelAliases),
    // A retention that is not a positive count of seconds is no retention of its own: the platform's applies.
    ...(message.responseRetentionS !== undefined && message.responseRetentionS > 0n ? { responseRetentionS: Number(message.responseRetentionS) } : {}),
    responseStoreDisabled: message.responseStoreDisabled,
  };
}

function projectFrom(message: configV1.Project): ProjectEntry | string {
  if (message.id === '' || message.organisationId === '') return `project ${message.id || '(no id)'}: missing id or organisation`;
  return { id: message.id, organisationId: message.organisationId, disabled: message.disabled };
}

function keyFrom(message: configV1.ApiKey): KeyEntry | string {
  // The admin sends lower-case hashes; lower-casing only when needed keeps one string per hash.
  const keyHash = hexSha256Pattern.test(message.keyHash) ? message.keyHash : message.keyHash.toLowerCase();
  if (!hexSha256Pattern.test(keyHash)) return `key ${message.keyId || '(no id)'}: hash is not hex SHA-256`;
  if (message.projectId === '') return `key ${message.keyId || '(no id)'}: missing project`;
  return { keyHash, keyId: message.keyId, projectId: message.projectId };
}

function isHttpUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return url.protocol === 'http:' || url.protocol === 'https:';
  } catch {
    return false;
  }
}

/**
 * The per-class prices of a model message: an input class absent (an older admin) at the input
 * price (cost), reasoning absent priced as output (resolved by priceSheet).
 */
function priceSheetInput(message: configV1.GatewayModel): PriceSheetInput {
  const input = message.inputPriceMicrosPerMtok;
  const cost = message.providerInputCostMicrosPerMtok;
  return {
    customer: {
      input, output: message.outputPriceMicrosPerMtok, reasoning: message.reasoningPriceMicrosPerMtok,
      cached_input: message.cachedInputPriceMicrosPerMtok ?? input, cache_write_5m: message.cacheWrite5mPriceMicrosPerMtok ?? input,
      cache_write_1h: message.cacheWrite1hPriceMicrosPerMtok ?? input, audio_input: message.audioInputPriceMicrosPerMtok ?? input,
      image_input: message.imageInputPriceMicrosPerMtok ?? input,
    },
    provider: {
      input: cost, output: message.providerOutputCostMicrosPerMtok, reasoning: message.providerReasoningCostMicrosPerMtok,
      cached_input: message.providerCachedInputCostMicrosPerMtok ?? cost, cache_write_5m: message.providerCacheWrite5mCostMicrosPerMtok ?? cost,
      cache_write_1h: message.providerCacheWrite1hCostMicrosPerMtok ?? cost, audio_input: message.providerAudioInputCostMicrosPerMtok ?? cost,
      image_input: message.providerImageInputCostMicrosPerMtok ?? cost,
    },
  };
}

/** The reasoning controls of a model message (fields 26-29), or why they are unusable. */
function reasoningControlsFrom(message: configV1.GatewayModel, label: string): ReasoningControls | string {
  const thinkingModes = new Set<ThinkingMode>();
  for (const mode of message.thinkingModes) {
    if (mode === 'enabled' || mode === 'adaptive') thinkingModes.add(mode);
    else return `${label}: unknown thinking mode ${JSON.stringify(mode)}`;
  }
  if (!Number.isInteger(message.maxThinkingBudgetTokens) || message.maxThinkingBudgetTokens < 0) return `${label}: negative max_thinking_budget_tokens`;
  return {
    efforts: new Set(message.reasoningEfforts),
    thinkingModes,
    maxThinkingBudgetTokens: message.maxThinkingBudgetTokens,
    returnsReasoning: message.returnsReasoning,
  };
}

function modelFrom(message: configV1.GatewayModel, options: ConfigDecodeOptions): GatewayModelEntry | string {
  const label = `gateway model ${message.slug || '(no slug)'}`;
  if (message.slug === '') return `${label}: missing slug`;
  if (message.defaultMaxTokens <= 0 || message.maxContextTokens <= 0) return `${label}: default_max_tokens and max_context_tokens must be positive`;
  const sheet = priceSheetInput(message);
  const prices = [...Object.values(sheet.customer), ...Object.values(sheet.provider)];
  if (prices.some((price) => price !== undefined && price < 0n)) return `${label}: negative price`;
  const upstream = message.upstream;
  if (upstream === undefined) return `${label}: no upstream`;
  if (!options.supportsProviderKind(upstream.providerKind)) return `${label}: unsupported provider kind ${JSON.stringify(upstream.providerKind)}`;
  if (!isHttpUrl(upstream.baseUrl)) return `${label}: upstream base_url is not an http(s) URL`;
  if (upstream.model === '') return `${label}: missing upstream model`;
  const kind = message.kind ?? 'chat';
  if (kind !== 'chat' && kind !== 'embedding') return `${label}: unknown kind ${JSON.stringify(kind)}`;
  const mediaModalities = new Set<MediaModality>();
  for (const modality of message.inputModalities) {
    if (modality === 'image' || modality === 'audio') mediaModalities.add(modality);
    else if (modality !== 'text') return `${label}: unknown input modality ${JSON.stringify(modality)}`;
  }
  const reasoning = reasoningControlsFrom(message, label);
  if (typeof reasoning === 'string') return reasoning;
  const entry: GatewayModelEntry = {
    slug: message.slug,
    displayName: message.displayName,
    kind,
    mediaModalities,
    reasoning,
    defaultMaxTokens: message.defaultMaxTokens,
    maxContextTokens: message.maxContextTokens,
    inputPriceMicrosPerMtok: message.inputPriceMicrosPerMtok,
    outputPriceMicrosPerMtok: message.outputPriceMicrosPerMtok,
    providerInputCostMicrosPerMtok: message.providerInputCostMicrosPerMtok,
    providerOutputCostMicrosPerMtok: message.providerOutputCostMicrosPerMtok,
    priceSheet: priceSheet(sheet, mediaModalities),
    createdAtS: Number(message.createdAtS),
    upstream: {
      providerKind: upstream.providerKind, baseUrl: upstream.baseUrl, model: upstream.model, apiKey: upstream.apiKey,
      allowPrivateNetwork: message.allowPrivateNetwork,
    },
    tokenizer: tokenizerForModel(upstream.model),
  };
  const deployments = deploymentsFrom(message, entry, sheet, options, label);
  if (typeof deployments === 'string') return deployments;
  entry.deployments = deployments;
  return entry;
}

/** Whether a deployment has exactly the model's own upstream, SSRF permission and provider costs (the admin's `primary`). */
function servesAsModel(deployment: configV1.UpstreamDeployment, message: configV1.GatewayModel): boolean {
  const own = message.upstream;
  const upstream = deployment.upstream;
  return own !== undefined && upstream !== undefined
    && upstream.providerKind === own.providerKind && upstream.baseUrl === own.baseUrl && upstream.model === own.model && upstream.apiKey === own.apiKey
    && deployment.allowPrivateNetwork === message.allowPrivateNetwork
    && deployment.providerInputCostMicrosPerMtok === message.providerInputCostMicrosPerMtok
    && deployment.providerOutputCostMicrosPerMtok === message.providerOutputCostMicrosPerMtok
    && deployment.providerCachedInputCostMicrosPerMtok === message.providerCachedInputCostMicrosPerMtok
    && deployment.providerCacheWrite5mCostMicrosPerMtok === message.providerCacheWrite5mCostMicrosPerMtok
    && deployment.providerCacheWrite1hCostMicrosPerMtok === message.providerCacheWrite1hCostMicrosPerMtok
    && deployment.providerReasoningCostMicrosPerMtok === message.providerReasoningCostMicrosPerMtok
    && deployment.providerAudioInputCostMicrosPerMtok === message.providerAudioInputCostMicrosPerMtok
    && deployment.providerImageInputCostMicrosPerMtok === message.providerImageInputCostMicrosPerMtok;
}

/** The shape of a deployment name (docs/proxy.md "Routing"): a bounded metric label. */
const deploymentNamePattern = /^[a-z0-9][a-z0-9-]{0,31}$/;

/** Most deployments of one model (the primary and 15 more). */
const maxDeploymentsPerModel = 16;

/**
 * The deployments of a model message, each resolved for its attempts: its upstream, and the model
 * as it serves it (the model's customer prices with its own provider costs). An empty list (an
 * older admin) is the model's own upstream alone, as `primary`. One invalid deployment makes the
 * whole model a problem: serving the slug from fewer deployments than the admin meant would move
 * its traffic without anyone deciding so.
 */
function deploymentsFrom(
  message: configV1.GatewayModel, entry: GatewayModelEntry, sheet: PriceSheetInput, options: ConfigDecodeOptions, label: string,
): UpstreamDeploymentEntry[] | string {
  if (message.deployments.length === 0) return [{ name: 'primary', priority: 0, weight: 1, upstream: entry.upstream, served: entry }];
  if (message.deployments.length > maxDeploymentsPerModel) return `${label}: more than ${maxDeploymentsPerModel} deployments`;
  const names = new Set<string>();
  const deployments: UpstreamDeploymentEntry[] = [];
  for (const deployment of message.deployments) {
    const where = `${label}: deployment ${JSON.stringify(deployment.name)}`;
    if (!deploymentNamePattern.test(deployment.name)) return `${where}: name is not [a-z0-9][a-z0-9-]{0,31}`;
    if (names.has(deployment.name)) return `${where}: name given twice`;
    names.add(deployment.name);
    if (!Number.isInteger(deployment.priority) || deployment.priority < 0 || deployment.priority > 100) return `${where}: priority outside 0..100`;
    if (!Number.isInteger(deployment.weight) || deployment.weight < 1 || deployment.weight > 1000) return `${where}: weight outside 1..1000`;
    const upstream = deployment.upstream;
    if (upstream === undefined) return `${where}: no upstream`;
    if (!options.supportsProviderKind(upstream.providerKind)) return `${where}: unsupported provider kind ${JSON.stringify(upstream.providerKind)}`;
    if (!isHttpUrl(upstream.baseUrl)) return `${where}: upstream base_url is not an http(s) URL`;
    if (upstream.model === '') return `${where}: missing upstream model`;
    const cost = deployment.providerInputCostMicrosPerMtok;
    const provider = {
      input: cost, output: deployment.providerOutputCostMicrosPerMtok, reasoning: deployment.providerReasoningCostMicrosPerMtok,
      cached_input: deployment.providerCachedInputCostMicrosPerMtok ?? cost, cache_write_5m: deployment.providerCacheWrite5mCostMicrosPerMtok ?? cost,
      cache_write_1h: deployment.providerCacheWrite1hCostMicrosPerMtok ?? cost, audio_input: deployment.providerAudioInputCostMicrosPerMtok ?? cost,
      image_input: deployment.providerImageInputCostMicrosPerMtok ?? cost,
    };
    if (Object.values(provider).some((price) => price !== undefined && price < 0n)) return `${where}: negative provider cost`;
    const target = {
      providerKind: upstream.providerKind, baseUrl: upstream.baseUrl, model: upstream.model, apiKey: upstream.apiKey,
      allowPrivateNetwork: deployment.allowPrivateNetwork,
    };
    // The primary is the model's own upstream and costs (the admin sends them so): the entry itself
    // serves it, so a model with one deployment prices exactly as before. One that differs gets its own.
    const served: GatewayModelEntry = deployment.name === 'primary' && servesAsModel(deployment, message) ? entry : {
      ...entry,
      upstream: target,
      providerInputCostMicrosPerMtok: provider.input,
      providerOutputCostMicrosPerMtok: provider.output,
      priceSheet: priceSheet({ customer: sheet.customer, provider }, entry.mediaModalities),
    };
    deployments.push({ name: deployment.name, priority: deployment.priority, weight: deployment.weight, upstream: served.upstream, served });
  }
  return deployments;
}

/** Decodes the messages of one list, each with the map key it goes under (an entry that fails keeps the key it would have replaced). */
function decodeAll<Message, Entry>(
  messages: readonly Message[],
  decode: (message: Message) => Entry | string,
  keyOf: (message: Message, entry: Entry | undefined) => string,
): Array<ConfigItem<Entry>> {
  return messages.map((message) => {
    const entry = decode(message);
    return typeof entry === 'string' ? { key: keyOf(message, undefined), problem: entry } : { key: keyOf(message, entry), entry };
  });
}

/**
 * Decodes one update of the config stream into a ConfigChange for applyConfigChange. Each
 * message that is invalid on its own (an unknown billing mode, a key hash that is not hex
 * SHA-256, a model with no upstream or an unsupported provider kind, ...) becomes a problem
 * under its key, so the apply drops the older entry it meant to replace. Key hashes, sent or
 * removed, are lower-cased: the snapshot holds them so. A tool_call_id_key that is not 32 bytes
 * is decoded as none.
 */
export function configChangeFromProto(update: configV1.ConfigUpdate, options: ConfigDecodeOptions): ConfigChange {
  return {
    version: update.version,
    full: update.full,
    organisations: decodeAll(update.organisations, organisationFrom, (o) => o.id),
    projects: decodeAll(update.projects, projectFrom, (p) => p.id),
    apiKeys: decodeAll(update.apiKeys, keyFrom, (k, entry) => entry?.keyHash ?? k.keyHash.toLowerCase()),
    gatewayModels: decodeAll(update.gatewayModels, (m) => modelFrom(m, options), (m) => m.slug),
    removedOrganisationIds: update.removedOrganisationIds,
    removedProjectIds: update.removedProjectIds,
    removedKeyHashes: update.removedKeyHashes.map((hash) => hash.toLowerCase()),
    // Only well-formed ones: a retired key is a display hint (the request log's 401), never a credential.
    retiredApiKeys: update.retiredApiKeys.flatMap((key) => {
      const keyHash = key.keyHash.toLowerCase();
      return hexSha256Pattern.test(keyHash) && key.projectId !== '' ? [{ keyHash, projectId: key.projectId, retiredAtMs: Number(key.retiredAtMs) }] : [];
    }),
    removedGatewayModelSlugs: update.removedGatewayModelSlugs,
    platformModelAliases: [...aliasMapFrom(update.platformModelAliases)],
    removedPlatformModelAliases: update.removedPlatformModelAliases,
    // A key of another size cannot seal ids: held as none (the proxy then uses a key of its own and warns).
    toolCallIdKey: update.toolCallIdKey?.length === toolCallIdKeyBytes ? update.toolCallIdKey : undefined,
    // Likewise a cache scope key of another size: the proxy then marks prompts under a key of its own.
    cacheScopeKey: update.cacheScopeKey?.length === cacheScopeKeyBytes ? update.cacheScopeKey : undefined,
    // Same rule for the stored-Responses key: another size is none (the proxy then seals with a key of its own).
    responseStoreKey: update.responseStoreKey?.length === responseStoreKeyBytes ? update.responseStoreKey : undefined,
    responseRetentionS: update.responseRetentionS !== undefined && update.responseRetentionS > 0n ? Number(update.responseRetentionS) : undefined,
  };
}
