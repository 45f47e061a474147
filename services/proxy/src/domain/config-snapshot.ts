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
  /**
   * true: the upstream may be at a private or loopback address (the admin allowed it). false:
   * every address its host resolves to is checked against the SSRF policy when connecting.
   * Absent counts as false (fail closed); the snapshot always sets it.
   */
  allowPrivateNetwork?: boolean;
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
 * Everything the proxy serves from, as request handling sees it: read-only lookups. The holder
 * keeps one live value: a delta is applied to its maps in place, inside one synchronous call
 * (so, in Node's single thread, a request never sees half of an update), and a full snapshot
 * builds fresh maps and is swapped in as a new value.
 */
export interface ConfigSnapshot {
  /** The admin's version this snapshot corresponds to. */
  readonly version: bigint;
  readonly keysByHash: ReadonlyMap<string, KeyEntry>;
  readonly projectsById: ReadonlyMap<string, ProjectEntry>;
  readonly organisationsById: ReadonlyMap<string, OrganisationEntry>;
  readonly modelsBySlug: ReadonlyMap<string, GatewayModelEntry>;
}

/** The snapshot as its holder owns it: the same maps, writable by applyConfigUpdate only. */
export interface LiveConfigSnapshot extends ConfigSnapshot {
  version: bigint;
  readonly keysByHash: Map<string, KeyEntry>;
  readonly projectsById: Map<string, ProjectEntry>;
  readonly organisationsById: Map<string, OrganisationEntry>;
  readonly modelsBySlug: Map<string, GatewayModelEntry>;
}

/**
 * What applying an update produced: the snapshot to hold from now on (the same value, changed
 * in place, for a delta or heartbeat; a new one for a full update) plus entries left out, or
 * why it could not apply (then nothing was changed).
 */
export type ApplyConfigResult =
  | { ok: true; snapshot: LiveConfigSnapshot; changed: boolean; problems: string[] }
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

/**
 * Returns the id string already held for an id, so that 100,000 entries naming the same
 * organisation (or each key naming its project) share one string instead of each keeping the
 * copy its decoded message carried.
 */
type InternId = (id: string) => string;

function projectFrom(message: configV1.Project, internOrganisationId: InternId): ProjectEntry | string {
  if (message.id === '' || message.organisationId === '') return `project ${message.id || '(no id)'}: missing id or organisation`;
  return { id: message.id, organisationId: internOrganisationId(message.organisationId), disabled: message.disabled };
}

function keyFrom(message: configV1.ApiKey, internProjectId: InternId): KeyEntry | string {
  // The admin sends lower-case hashes; lower-casing only when needed keeps one string per hash.
  const keyHash = hexSha256Pattern.test(message.keyHash) ? message.keyHash : message.keyHash.toLowerCase();
  if (!hexSha256Pattern.test(keyHash)) return `key ${message.keyId || '(no id)'}: hash is not hex SHA-256`;
  if (message.projectId === '') return `key ${message.keyId || '(no id)'}: missing project`;
  return { keyHash, keyId: message.keyId, projectId: internProjectId(message.projectId) };
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
    upstream: {
      providerKind: upstream.providerKind, baseUrl: upstream.baseUrl, model: upstream.model, apiKey: upstream.apiKey,
      allowPrivateNetwork: message.allowPrivateNetwork,
    },
    tokenizer: tokenizerForModel(upstream.model),
  };
}

/** A converted entry and the map key it goes under, or why it was left out (and the key it would have replaced). */
type Converted<Entry> = { key: string; entry: Entry } | { key: string; problem: string };

/**
 * Converts the entries of one list. An entry that fails conversion is reported and, when
 * applied, its key is removed: serving a stale row the admin meant to replace would be worse
 * than not serving it.
 */
function convertAll<Message, Entry>(
  messages: readonly Message[],
  convert: (message: Message) => Entry | string,
  keyOf: (message: Message, entry: Entry | undefined) => string,
): Array<Converted<Entry>> {
  return messages.map((message) => {
    const entry = convert(message);
    return typeof entry === 'string' ? { key: keyOf(message, undefined), problem: entry } : { key: keyOf(message, entry), entry };
  });
}

/** Writes converted entries into a map (Map.set/delete only: this part cannot fail half-way). */
function upsertAll<Entry>(target: Map<string, Entry>, converted: ReadonlyArray<Converted<Entry>>, problems: string[]): void {
  for (const item of converted) {
    if ('problem' in item) {
      problems.push(item.problem);
      target.delete(item.key);
    } else {
      target.set(item.key, item.entry);
    }
  }
}

/** An interner that returns the id string already held, else that of an entry this update adds, else the given one. */
function internFrom<Entry extends { id: string }>(pending: ReadonlyArray<Converted<Entry>>, held: ReadonlyMap<string, Entry>): InternId {
  let pendingById: Map<string, string> | undefined;
  return (id) => {
    const heldId = held.get(id)?.id;
    if (heldId !== undefined) return heldId;
    if (pending.length === 0) return id;
    pendingById ??= new Map(pending.flatMap((item) => ('entry' in item ? [[item.key, item.entry.id] as const] : [])));
    return pendingById.get(id) ?? id;
  };
}

/** Whether an update carries no changes at all (a heartbeat). */
export function isHeartbeat(update: configV1.ConfigUpdate): boolean {
  return !update.full && update.organisations.length === 0 && update.projects.length === 0
    && update.apiKeys.length === 0 && update.gatewayModels.length === 0
    && update.removedOrganisationIds.length === 0 && update.removedProjectIds.length === 0
    && update.removedKeyHashes.length === 0 && update.removedGatewayModelSlugs.length === 0;
}

/**
 * Applies one update of the config stream. A full update builds fresh maps and returns a new
 * snapshot for the holder to swap in; a delta applies its removals, then its upserts, to the
 * maps of `current` in place, so its cost follows the size of the delta, not of the snapshot.
 * Every entry is converted before the first map is touched, and the writes are plain Map
 * operations in one synchronous call: in Node's single thread a request sees the update whole
 * or not at all. A delta needs a snapshot to apply to and must not go back in version;
 * otherwise nothing changes and the admin is asked (by an error ack) for a full snapshot.
 * Entries that are invalid on their own (say, a model with no upstream) are left out and
 * reported, so one bad row cannot keep every other change from being served.
 */
export function applyConfigUpdate(
  current: LiveConfigSnapshot | undefined,
  update: configV1.ConfigUpdate,
  options: ApplyConfigOptions,
): ApplyConfigResult {
  if (!update.full) {
    if (current === undefined) return { ok: false, reason: `delta ${update.version} arrived before any full snapshot` };
    if (update.version < current.version) {
      return { ok: false, reason: `delta ${update.version} is older than applied version ${current.version}` };
    }
    if (isHeartbeat(update)) {
      current.version = update.version;
      return { ok: true, snapshot: current, changed: false, problems: [] };
    }
  }

  const target: LiveConfigSnapshot = update.full || current === undefined
    ? { version: update.version, keysByHash: new Map(), projectsById: new Map(), organisationsById: new Map(), modelsBySlug: new Map() }
    : current;

  // Convert everything first; nothing below the conversions can throw.
  const organisations = convertAll(update.organisations, organisationFrom, (o) => o.id);
  const internOrganisationId = internFrom(organisations, target.organisationsById);
  const projects = convertAll(update.projects, (p) => projectFrom(p, internOrganisationId), (p) => p.id);
  const internProjectId = internFrom(projects, target.projectsById);
  const apiKeys = convertAll(update.apiKeys, (k) => keyFrom(k, internProjectId), (k, entry) => entry?.keyHash ?? k.keyHash.toLowerCase());
  const gatewayModels = convertAll(update.gatewayModels, (m) => modelFrom(m, options), (m) => m.slug);

  for (const id of update.removedOrganisationIds) target.organisationsById.delete(id);
  for (const id of update.removedProjectIds) target.projectsById.delete(id);
  for (const hash of update.removedKeyHashes) target.keysByHash.delete(hash.toLowerCase());
  for (const slug of update.removedGatewayModelSlugs) target.modelsBySlug.delete(slug);

  const problems: string[] = [];
  upsertAll(target.organisationsById, organisations, problems);
  upsertAll(target.projectsById, projects, problems);
  upsertAll(target.keysByHash, apiKeys, problems);
  upsertAll(target.modelsBySlug, gatewayModels, problems);
  target.version = update.version;

  return { ok: true, changed: true, problems, snapshot: target };
}
