import { createHmac, randomBytes } from 'node:crypto';

// Prompt caches are per upstream account, and every organisation shares the gateway's accounts:
// a prefix one organisation got cached would answer faster, and bill cheaper, for any other that
// sends it, so B could time A's prompts (docs/decisions.md, "Prompt caching, isolated per
// organisation"). Every request that can be cached therefore starts with a short marker of its
// organisation that no client can write or remove: an HMAC of the organisation id under a key the
// admin derives for every replica (ConfigUpdate.cache_scope_key). The upstream sees neither the id
// nor the key, and a prefix cached for A can only match a request that starts with A's marker.

/** Bytes of the cache scope key (HMAC-SHA256's block-size-friendly 32). */
export const cacheScopeKeyBytes = 32;

/** Hex digits of the marker's HMAC: 64 bits, so two organisations share a marker with probability 2^-64 per pair. */
const markerHexDigits = 16;

/** What a request's upstream call carries to keep its prompt cache to its organisation. */
export interface CacheScope {
  /**
   * The text the upstream must see first: at the start of the first cacheable block (the first
   * tool on Anthropic, whose prefix order is tools → system → messages; the system prompt otherwise).
   */
  marker: string;
  /**
   * The `prompt_cache_key` for upstreams that route by one: derived from the organisation and
   * the client's own key (if any), so no two organisations share one and the client's key
   * never leaves as it is.
   */
  promptCacheKey: string;
}

/** HMAC-SHA256 of a purpose and its parts under the key, hex. */
function hmacHex(key: Uint8Array, ...parts: string[]): string {
  return createHmac('sha256', key).update(parts.join('\u0000')).digest('hex');
}

/** The marker text of an organisation under a key, e.g. `[cache scope 3f9a1c0e5b7d2a4f]`. */
function cacheScopeMarker(key: Uint8Array, organisationId: string): string {
  return `[cache scope ${hmacHex(key, 'marker', organisationId).slice(0, markerHexDigits)}]`;
}

/** The cache scope of one request of an organisation, with the client's `prompt_cache_key` when it sent one. */
function cacheScopeOf(key: Uint8Array, organisationId: string, clientPromptCacheKey: string | undefined): CacheScope {
  const promptCacheKey = clientPromptCacheKey === undefined
    ? hmacHex(key, 'prompt_cache_key', organisationId)
    : hmacHex(key, 'prompt_cache_key', organisationId, clientPromptCacheKey);
  return { marker: cacheScopeMarker(key, organisationId), promptCacheKey: `pck_${promptCacheKey.slice(0, 32)}` };
}

/** Most organisations whose scope (and marker token counts) one CacheScoping remembers before starting over. */
const maxRememberedScopes = 10_000;

/**
 * The cache scope of a request under a scoping, remembered per organisation when the client
 * sent no key (the common case), so a request pays no HMAC: cacheScopeOf's answer, the same.
 */
export function scopeForRequest(scoping: CacheScoping, organisationId: string, clientPromptCacheKey: string | undefined): CacheScope {
  if (clientPromptCacheKey !== undefined) return cacheScopeOf(scoping.key, organisationId, clientPromptCacheKey);
  let scope = scoping.scopes.get(organisationId);
  if (scope === undefined) {
    if (scoping.scopes.size >= maxRememberedScopes) scoping.scopes.clear();
    scope = cacheScopeOf(scoping.key, organisationId, undefined);
    scoping.scopes.set(organisationId, scope);
  }
  return scope;
}

/**
 * Tokens a marker adds to a prompt under a tokenizer, remembered (a marker is one organisation's,
 * so there are as many as organisations): `count` runs once per marker and tokenizer.
 */
export function markerTokensOf(scoping: CacheScoping, marker: string, tokenizer: string, count: () => number): number {
  const memoKey = `${tokenizer}\u0000${marker}`;
  let tokens = scoping.markerTokens.get(memoKey);
  if (tokens === undefined) {
    if (scoping.markerTokens.size >= maxRememberedScopes) scoping.markerTokens.clear();
    tokens = count();
    scoping.markerTokens.set(memoKey, tokens);
  }
  return tokens;
}

/** How the proxy scopes prompt caches: the key, and from which estimated prompt length on. */
export interface CacheScoping {
  /** The admin's cache scope key, or this process's own when the admin sent none. Never logged. */
  key: Uint8Array;
  /**
   * Estimated prompt tokens from which a request without breakpoints or `prompt_cache_key` is
   * scoped (PROXY_CACHE_SCOPE_MIN_PROMPT_TOKENS): below the shortest prefix an upstream caches by
   * itself, a request can be neither cached nor served from a cache, so it needs no marker.
   */
  minPromptTokens: number;
  /** Each organisation's scope without a client key, remembered (scopeForRequest). */
  readonly scopes: Map<string, CacheScope>;
  /** Tokens of each marker by tokenizer, remembered (markerTokensOf). */
  readonly markerTokens: Map<string, number>;
}

/**
 * The cache scoping for the key a snapshot holds. A snapshot without one (an admin older than the
 * key) gets a random key of this process, made once with `onLocalKey` called once (the warning):
 * isolation holds, but replicas then cache apart.
 */
export function cacheScopingForKey(minPromptTokens: number, onLocalKey: () => void): (key: Uint8Array | undefined) => CacheScoping {
  let local: CacheScoping | undefined;
  let last: CacheScoping | undefined;
  return (key) => {
    if (key === undefined) {
      if (local === undefined) {
        onLocalKey();
        local = { key: randomBytes(cacheScopeKeyBytes), minPromptTokens, scopes: new Map(), markerTokens: new Map() };
      }
      return local;
    }
    // A full snapshot brings the same key in a new buffer: what was remembered stays good for the same bytes.
    if (last?.key !== key) {
      last = last !== undefined && Buffer.compare(last.key, key) === 0
        ? { ...last, key }
        : { key, minPromptTokens, scopes: new Map(), markerTokens: new Map() };
    }
    return last;
  };
}
