import type { ClassPrices } from './token-classes.ts';
import type { ReasoningControls } from './reasoning.ts';

/** The BPE encodings the gateway counts tokens with. */
export type TokenizerName = 'o200k_base' | 'cl100k_base';

/**
 * A model's price sheet, resolved once per model when the config arrives (so the hot path only
 * reads it): customer prices, provider costs, and the two prices its Reserve uses.
 */
export interface PriceSheet {
  /** Customer prices, µ₹ per million tokens (reasoning already resolved to output when unset). */
  customer: ClassPrices;
  /** Provider costs, µ₹ per million tokens (recorded, never billed). */
  provider: ClassPrices;
  /** The highest customer price a prompt token can be billed at, µ₹ per million tokens (Reserve). */
  reserveInput: bigint;
  /** The highest customer price an output token can be billed at: max(output, reasoning), µ₹ per million tokens. */
  reserveOutput: bigint;
}

/** An API key as the proxy knows it: only its hash, and whom it belongs to. */
export interface KeyEntry {
  /** Lower-case hex SHA-256 of the whole key. */
  keyHash: string;
  keyId: string;
  projectId: string;
}

/**
 * A key rotated away (revoked) within the last 7 days: it never authenticates, but a request
 * presenting it is recorded in its project's request log as a 401 (docs/proxy.md, "Request log").
 */
interface RetiredKeyEntry {
  /** Lower-case hex SHA-256 of the whole key. */
  keyHash: string;
  projectId: string;
  /** When it was revoked, ms since the Unix epoch. */
  retiredAtMs: number;
}

/** How long after its revocation a retired key is attributed to its project, ms (7 days, as the admin sends them). */
export const retiredKeyWindowMs = 7 * 24 * 60 * 60 * 1000;

/** An organisation as the proxy serves it. */
export interface OrganisationEntry {
  id: string;
  /** Anything the admin sends other than ACTIVE counts as suspended (fail closed). */
  status: 'active' | 'suspended';
  billingMode: 'commercial' | 'internal';
  /** Requests per minute of the organisation's one pool; 0 means no limit. */
  rpmLimit: number;
  allowedModelSlugs: ReadonlySet<string>;
  /**
   * The organisation's own model aliases, name -> gateway model slug; they override the
   * platform's aliases of the same name (domain/model-aliases.ts). Empty for most.
   */
  modelAliases: ReadonlyMap<string, string>;
  /** The organisation's own retention of stored Responses, seconds, when shorter than the platform's; undefined: the platform's. */
  responseRetentionS?: number;
  /** true: nothing of the organisation's is stored (`store: true` is a 400 naming `store`). */
  responseStoreDisabled?: boolean;
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

/** What a gateway model serves: chat (chat completions, Responses, Messages) or embeddings (/v1/embeddings). */
export type GatewayModelKind = 'chat' | 'embedding';

/** A kind of input a chat model's upstream accepts besides text. */
export type MediaModality = 'image' | 'audio';

/**
 * One upstream deployment of a gateway model (docs/proxy.md "Routing"): where an attempt goes,
 * resolved once when the config arrives so an attempt only reads it. Never shown to customers.
 */
export interface UpstreamDeploymentEntry {
  /** Its name within the model (`primary` for the model's own upstream); a bounded metric label, kept on the usage record. */
  name: string;
  /** Lower is tried first, 0..100. */
  priority: number;
  /** Share of the requests within its priority, 1..1000. */
  weight: number;
  /** Where its requests go (its own SSRF permission included). */
  upstream: UpstreamTarget;
  /**
   * The model as this deployment serves it: the model's customer prices, tokenizer and limits,
   * with this deployment's upstream and provider costs, so the pricing functions price an answer
   * it gave (provider cost included) unchanged. The `primary` of a model is the model entry itself.
   */
  served: GatewayModelEntry;
}

/** A gateway model with its prices (µ₹ per million tokens) and upstream target. */
export interface GatewayModelEntry {
  slug: string;
  displayName: string;
  kind: GatewayModelKind;
  /** What its requests may carry besides text (image_url and input_audio parts); empty: text only. */
  mediaModalities: ReadonlySet<MediaModality>;
  defaultMaxTokens: number;
  maxContextTokens: number;
  inputPriceMicrosPerMtok: bigint;
  outputPriceMicrosPerMtok: bigint;
  providerInputCostMicrosPerMtok: bigint;
  providerOutputCostMicrosPerMtok: bigint;
  /**
   * Its prices by token class, resolved when the config arrives. Absent (an entry built
   * by hand): every class at the input or output price (pricing.ts sheetOf).
   */
  priceSheet?: PriceSheet;
  /** Unix seconds, shown as `created` in /v1/models. */
  createdAtS: number;
  /** The upstream of its `primary` deployment (the model's own). */
  upstream: UpstreamTarget;
  /**
   * Every deployment that serves it, the primary included, as the admin sent them. Absent (an
   * entry built by hand): the primary alone (routing/deployment-router.ts deploymentsOf).
   */
  deployments?: readonly UpstreamDeploymentEntry[];
  /** The BPE encoding its tokens are counted with, chosen from the upstream model name. */
  tokenizer: TokenizerName;
  /** The reasoning controls its upstream accepts; absent: none (domain/reasoning.ts). */
  reasoning?: ReasoningControls;
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
  /** Keys revoked within retiredKeyWindowMs, by hash: never authenticate; the request log's 401s name their project. Absent: none. */
  readonly retiredKeysByHash?: ReadonlyMap<string, RetiredKeyEntry>;
  readonly projectsById: ReadonlyMap<string, ProjectEntry>;
  readonly organisationsById: ReadonlyMap<string, OrganisationEntry>;
  readonly modelsBySlug: ReadonlyMap<string, GatewayModelEntry>;
  /** Platform-wide model aliases, name -> gateway model slug (domain/model-aliases.ts). */
  readonly platformModelAliases: ReadonlyMap<string, string>;
  /**
   * The 32-byte key tool-call ids are sealed with, the same on every replica of one admin
   * (domain/tool-call-id-codec.ts); undefined when the admin sent none. Never logged.
   */
  readonly toolCallIdKey?: Uint8Array;
  /**
   * The 32-byte key cacheable prompts are marked with per organisation, the same on every replica
   * (domain/cache-scope.ts); undefined when the admin sent none. Never logged.
   */
  readonly cacheScopeKey?: Uint8Array;
  /** The 32-byte key stored Responses are sealed under (per organisation, derived); undefined when the admin sent none. Never logged. */
  readonly responseStoreKey?: Uint8Array;
  /** The platform's retention of stored Responses, seconds; undefined when the admin sent none. */
  readonly responseRetentionS?: number;
}

/** The snapshot as its holder owns it: the same maps, writable by applyConfigChange only. */
export interface LiveConfigSnapshot extends ConfigSnapshot {
  version: bigint;
  readonly keysByHash: Map<string, KeyEntry>;
  retiredKeysByHash?: Map<string, RetiredKeyEntry>;
  readonly projectsById: Map<string, ProjectEntry>;
  readonly organisationsById: Map<string, OrganisationEntry>;
  readonly modelsBySlug: Map<string, GatewayModelEntry>;
  readonly platformModelAliases: Map<string, string>;
  toolCallIdKey?: Uint8Array;
  cacheScopeKey?: Uint8Array;
  responseStoreKey?: Uint8Array;
  responseRetentionS?: number;
}

/**
 * What applying an update produced: the snapshot to hold from now on (the same value, changed
 * in place, for a delta or heartbeat; a new one for a full update) plus entries left out, or
 * why it could not apply (then nothing was changed).
 */
export type ApplyConfigResult =
  | { ok: true; snapshot: LiveConfigSnapshot; changed: boolean; problems: string[] }
  | { ok: false; reason: string };

/**
 * One entry of a config change, already decoded: the map key it goes under and the entry, or why
 * the entry sent under that key was left out (then an older entry under the key is dropped).
 */
export type ConfigItem<Entry> = { key: string; entry: Entry } | { key: string; problem: string };

/**
 * One update of the config, in the snapshot's terms (config-stream/ decodes it from the wire).
 * Its entries become the snapshot's own: the apply stores them as they are, after pointing
 * their ids at strings the snapshot already holds.
 */
export interface ConfigChange {
  /** The admin's version after this change. */
  version: bigint;
  /** true: replaces everything held (a full snapshot, or its first part); false: a delta, or a later part of a full snapshot of the same version. */
  full: boolean;
  organisations: ReadonlyArray<ConfigItem<OrganisationEntry>>;
  projects: ReadonlyArray<ConfigItem<ProjectEntry>>;
  apiKeys: ReadonlyArray<ConfigItem<KeyEntry>>;
  gatewayModels: ReadonlyArray<ConfigItem<GatewayModelEntry>>;
  removedOrganisationIds: readonly string[];
  removedProjectIds: readonly string[];
  /** Lower-case hex SHA-256 of each removed key. */
  removedKeyHashes: readonly string[];
  /** Keys revoked within the window (a full change: all of them; a delta: those revoked since); absent: none. */
  retiredApiKeys?: readonly RetiredKeyEntry[];
  removedGatewayModelSlugs: readonly string[];
  /** Platform aliases (name, slug) added or retargeted; in a full change, all of them. */
  platformModelAliases: ReadonlyArray<readonly [string, string]>;
  /** Names of platform aliases deleted (a delta only). */
  removedPlatformModelAliases: readonly string[];
  /** The tool-call id key a full change brings (undefined: none, an older admin); a delta's is ignored, the held key stays. */
  toolCallIdKey?: Uint8Array;
  /** The cache scope key a full change brings (undefined: none, an older admin); a delta's is ignored, the held key stays. */
  cacheScopeKey?: Uint8Array;
  /** The stored-Responses key a full change brings (as toolCallIdKey: a delta's is ignored). */
  responseStoreKey?: Uint8Array;
  /** The platform's retention of stored Responses, seconds, a full change brings. */
  responseRetentionS?: number;
}

/**
 * Returns the id string already held for an id, so that 100,000 entries naming the same
 * organisation (or each key naming its project) share one string instead of each keeping the
 * copy its decoded message carried.
 */
type InternId = (id: string) => string;

/** Writes items into a map (Map.set/delete only: this part cannot fail half-way). */
function upsertAll<Entry>(target: Map<string, Entry>, items: ReadonlyArray<ConfigItem<Entry>>, problems: string[]): void {
  for (const item of items) {
    if ('problem' in item) {
      problems.push(item.problem);
      target.delete(item.key);
    } else {
      target.set(item.key, item.entry);
    }
  }
}

/** An interner that returns the id string already held, else that of an entry this change adds, else the given one. */
function internFrom<Entry extends { id: string }>(pending: ReadonlyArray<ConfigItem<Entry>>, held: ReadonlyMap<string, Entry>): InternId {
  let pendingById: Map<string, string> | undefined;
  return (id) => {
    const heldId = held.get(id)?.id;
    if (heldId !== undefined) return heldId;
    if (pending.length === 0) return id;
    pendingById ??= new Map(pending.flatMap((item) => ('entry' in item ? [[item.key, item.entry.id] as const] : [])));
    return pendingById.get(id) ?? id;
  };
}

/** Whether a change carries nothing at all (a heartbeat): it only moves the version. */
function isHeartbeat(change: ConfigChange): boolean {
  return !change.full && change.organisations.length === 0 && change.projects.length === 0
    && change.apiKeys.length === 0 && change.gatewayModels.length === 0
    && change.removedOrganisationIds.length === 0 && change.removedProjectIds.length === 0
    && change.removedKeyHashes.length === 0 && change.removedGatewayModelSlugs.length === 0
    && change.platformModelAliases.length === 0 && change.removedPlatformModelAliases.length === 0
    && (change.retiredApiKeys?.length ?? 0) === 0;
}

/**
 * Applies one change of the config. A full change builds fresh maps and returns a new snapshot
 * for the holder to swap in; a delta applies its removals, then its upserts, to the maps of
 * `current` in place, so its cost follows the size of the delta, not of the snapshot. Every
 * entry was decoded (and checked) before this call, and the writes are plain Map operations in
 * one synchronous call: in Node's single thread a request sees the change whole or not at all.
 * A delta needs a snapshot to apply to and must not go back in version; otherwise nothing
 * changes and the admin is asked (by an error ack) for a full snapshot. Entries that were
 * invalid on their own (say, a model with no upstream) are left out, their key's older entry
 * dropped, and reported, so one bad row cannot keep every other change from being served.
 * The tool-call id key comes with a full change (the first part of a split one) and stays
 * through every delta, so later parts of the same version and heartbeats keep it.
 */
export function applyConfigChange(current: LiveConfigSnapshot | undefined, change: ConfigChange): ApplyConfigResult {
  if (!change.full) {
    if (current === undefined) return { ok: false, reason: `delta ${change.version} arrived before any full snapshot` };
    if (change.version < current.version) {
      return { ok: false, reason: `delta ${change.version} is older than applied version ${current.version}` };
    }
    if (isHeartbeat(change)) {
      current.version = change.version;
      return { ok: true, snapshot: current, changed: false, problems: [] };
    }
  }

  const target: LiveConfigSnapshot = change.full || current === undefined
    ? {
      version: change.version, keysByHash: new Map(), projectsById: new Map(), organisationsById: new Map(), modelsBySlug: new Map(),
      platformModelAliases: new Map(), toolCallIdKey: change.toolCallIdKey,
      cacheScopeKey: change.cacheScopeKey,
      responseStoreKey: change.responseStoreKey,
      responseRetentionS: change.responseRetentionS,
    }
    : current;

  // Share id strings with what is held or arrives alongside (see InternId); nothing here can throw.
  const internOrganisationId = internFrom(change.organisations, target.organisationsById);
  for (const item of change.projects) if ('entry' in item) item.entry.organisationId = internOrganisationId(item.entry.organisationId);
  const internProjectId = internFrom(change.projects, target.projectsById);
  for (const item of change.apiKeys) if ('entry' in item) item.entry.projectId = internProjectId(item.entry.projectId);

  for (const id of change.removedOrganisationIds) target.organisationsById.delete(id);
  for (const id of change.removedProjectIds) target.projectsById.delete(id);
  for (const hash of change.removedKeyHashes) target.keysByHash.delete(hash);
  for (const slug of change.removedGatewayModelSlugs) target.modelsBySlug.delete(slug);
  for (const name of change.removedPlatformModelAliases) target.platformModelAliases.delete(name);

  const problems: string[] = [];
  upsertAll(target.organisationsById, change.organisations, problems);
  upsertAll(target.projectsById, change.projects, problems);
  upsertAll(target.keysByHash, change.apiKeys, problems);
  upsertAll(target.modelsBySlug, change.gatewayModels, problems);
  for (const [name, slug] of change.platformModelAliases) target.platformModelAliases.set(name, slug);
  if (change.retiredApiKeys !== undefined && change.retiredApiKeys.length > 0) {
    const retired = target.retiredKeysByHash ?? new Map<string, RetiredKeyEntry>();
    for (const entry of change.retiredApiKeys) retired.set(entry.keyHash, entry);
    // Those past the window go as the next ones arrive (authenticate also ignores them).
    const oldestKeptMs = Date.now() - retiredKeyWindowMs;
    for (const [hash, entry] of retired) if (entry.retiredAtMs < oldestKeptMs) retired.delete(hash);
    target.retiredKeysByHash = retired;
  }
  target.version = change.version;

  return { ok: true, changed: true, problems, snapshot: target };
}
