import { configV1 } from '@gateway/contracts';
import { tokenizerForModel, type TokenizerName } from './token-estimate.ts';

/** An API key as the proxy knows it: only its hash, and whom it belongs to. */
export interface KeyEntry {
  /** Lower-case hex SHA-256 of the whole key. */
  keyHash: string;
  keyId: string;
  projectId: string;
}

/** An organisation as the proxy serves it. */
export interface OrganisationEntry {
  id: string;
  /** Anything the admin sends other than ACTIVE counts as suspended (fail closed). */
  status: 'active' | 'suspended';
  billingMode: 'commercial' | 'internal';
  /** Requests per minute of the organisation's one pool; 0 means no limit. */
  rpmLimit: number;
  allowedModelSlugs: ReadonlySet<string>;
}

/** A project as the proxy serves it. */
export interface ProjectEntry {
  id: string;
  organisationId: string;
  disabled: boolean;
}

/** Where a gateway model's requests go. The credential is never logged or shown. */
export interface UpstreamTarget {
  providerKind: string;
  /** e.g. `https://api.openai.com/v1`. */
  baseUrl: string;
  /** The provider's model name; never shown to customers. */
  model: string;
  /** Provider credential; empty when the upstream needs none. */
  apiKey: string;
}

/** A gateway model with its prices (µ₹ per million tokens) and upstream target. */
export interface GatewayModelEntry {
  slug: string;
  displayName: string;
  defaultMaxTokens: number;
  maxContextTokens: number;
  inputPriceMicrosPerMtok: bigint;
  outputPriceMicrosPerMtok: bigint;
  providerInputCostMicrosPerMtok: bigint;
  providerOutputCostMicrosPerMtok: bigint;
  /** Unix seconds, shown as `created` in /v1/models. */
  createdAtS: number;
  upstream: UpstreamTarget;
  /** The BPE encoding its tokens are counted with, chosen from the upstream model name. */
  tokenizer: TokenizerName;
}

/**
 * Everything the proxy serves from, as one immutable value: an update builds a new snapshot
 * and the holder swaps one reference, so a request never sees half of an update.
 */
export interface ConfigSnapshot {
  /** The admin's version this snapshot corresponds to. */
  version: bigint;
  keysByHash: ReadonlyMap<string, KeyEntry>;
  projectsById: ReadonlyMap<string, ProjectEntry>;
  organisationsById: ReadonlyMap<string, OrganisationEntry>;
  modelsBySlug: ReadonlyMap<string, GatewayModelEntry>;
}

/** What applying an update produced: a new snapshot (plus entries left out), or why it could not apply. */
export type ApplyConfigResult =
  | { ok: true; snapshot: ConfigSnapshot; changed: boolean; problems: string[] }
  | { ok: false; reason: string };

/** Options of applyConfigUpdate. */
export interface ApplyConfigOptions {
  /** Whether the proxy has an adapter for an upstream provider kind. */
  supportsProviderKind(kind: string): boolean;
}

const hexSha256Pattern = /^[0-9a-f]{64}$/;

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
  };
}

function projectFrom(message: configV1.Project): ProjectEntry | string {
  if (message.id === '' || message.organisationId === '') return `project ${message.id || '(no id)'}: missing id or organisation`;
  return { id: message.id, organisationId: message.organisationId, disabled: message.disabled };
}

function keyFrom(message: configV1.ApiKey): KeyEntry | string {
  const keyHash = message.keyHash.toLowerCase();
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

function modelFrom(message: configV1.GatewayModel, options: ApplyConfigOptions): GatewayModelEntry | string {
  const label = `gateway model ${message.slug || '(no slug)'}`;
  if (message.slug === '') return `${label}: missing slug`;
  if (message.defaultMaxTokens <= 0 || message.maxContextTokens <= 0) return `${label}: default_max_tokens and max_context_tokens must be positive`;
  const prices = [message.inputPriceMicrosPerMtok, message.outputPriceMicrosPerMtok, message.providerInputCostMicrosPerMtok, message.providerOutputCostMicrosPerMtok];
  if (prices.some((price) => price < 0n)) return `${label}: negative price`;
  const upstream = message.upstream;
  if (upstream === undefined) return `${label}: no upstream`;
  if (!options.supportsProviderKind(upstream.providerKind)) return `${label}: unsupported provider kind ${JSON.stringify(upstream.providerKind)}`;
  if (!isHttpUrl(upstream.baseUrl)) return `${label}: upstream base_url is not an http(s) URL`;
  if (upstream.model === '') return `${label}: missing upstream model`;
  return {
    slug: message.slug,
    displayName: message.displayName,
    defaultMaxTokens: message.defaultMaxTokens,
    maxContextTokens: message.maxContextTokens,
    inputPriceMicrosPerMtok: message.inputPriceMicrosPerMtok,
    outputPriceMicrosPerMtok: message.outputPriceMicrosPerMtok,
    providerInputCostMicrosPerMtok: message.providerInputCostMicrosPerMtok,
    providerOutputCostMicrosPerMtok: message.providerOutputCostMicrosPerMtok,
    createdAtS: Number(message.createdAtS),
    upstream: { providerKind: upstream.providerKind, baseUrl: upstream.baseUrl, model: upstream.model, apiKey: upstream.apiKey },
    tokenizer: tokenizerForModel(upstream.model),
  };
}

/**
 * Upserts converted entries into a map. An entry that fails conversion is reported and left
 * out, and any older entry under its key is dropped too: serving a stale row the admin meant
 * to replace would be worse than not serving it.
 */
function upsertAll<Message, Entry>(
  target: Map<string, Entry>,
  messages: readonly Message[],
  convert: (message: Message) => Entry | string,
  keyOf: (message: Message) => string,
  problems: string[],
): void {
  for (const message of messages) {
    const entry = convert(message);
    if (typeof entry === 'string') {
      problems.push(entry);
      target.delete(keyOf(message));
    } else {
      target.set(keyOf(message), entry);
    }
  }
}

/** Whether an update carries no changes at all (a heartbeat). */
export function isHeartbeat(update: configV1.ConfigUpdate): boolean {
  return !update.full && update.organisations.length === 0 && update.projects.length === 0
    && update.apiKeys.length === 0 && update.gatewayModels.length === 0
    && update.removedOrganisationIds.length === 0 && update.removedProjectIds.length === 0
    && update.removedKeyHashes.length === 0 && update.removedGatewayModelSlugs.length === 0;
}

/**
 * Applies one update of the config stream to the current snapshot and returns the next one,
 * never modifying `current`. A full update replaces everything; a delta applies its removals,
 * then its upserts. A delta needs a snapshot to apply to and must not go back in version;
 * otherwise the update cannot be applied and the admin is asked (by an error ack) for a full
 * snapshot. Entries that are invalid on their own (say, a model with no upstream) are left out
 * and reported, so one bad row cannot keep every other change from being served.
 */
export function applyConfigUpdate(
  current: ConfigSnapshot | undefined,
  update: configV1.ConfigUpdate,
  options: ApplyConfigOptions,
): ApplyConfigResult {
  if (!update.full) {
    if (current === undefined) return { ok: false, reason: `delta ${update.version} arrived before any full snapshot` };
    if (update.version < current.version) {
      return { ok: false, reason: `delta ${update.version} is older than applied version ${current.version}` };
    }
    if (isHeartbeat(update)) {
      const snapshot = update.version === current.version ? current : { ...current, version: update.version };
      return { ok: true, snapshot, changed: false, problems: [] };
    }
  }

  const base = update.full || current === undefined ? undefined : current;
  const keysByHash = new Map(base?.keysByHash);
  const projectsById = new Map(base?.projectsById);
  const organisationsById = new Map(base?.organisationsById);
  const modelsBySlug = new Map(base?.modelsBySlug);

  for (const id of update.removedOrganisationIds) organisationsById.delete(id);
  for (const id of update.removedProjectIds) projectsById.delete(id);
  for (const hash of update.removedKeyHashes) keysByHash.delete(hash.toLowerCase());
  for (const slug of update.removedGatewayModelSlugs) modelsBySlug.delete(slug);

  const problems: string[] = [];
  upsertAll(organisationsById, update.organisations, organisationFrom, (o) => o.id, problems);
  upsertAll(projectsById, update.projects, projectFrom, (p) => p.id, problems);
  upsertAll(keysByHash, update.apiKeys, keyFrom, (k) => k.keyHash.toLowerCase(), problems);
  upsertAll(modelsBySlug, update.gatewayModels, (m) => modelFrom(m, options), (m) => m.slug, problems);

  return {
    ok: true,
    changed: true,
    problems,
    snapshot: { version: update.version, keysByHash, projectsById, organisationsById, modelsBySlug },
  };
}
