import { cacheScopingForKey, scopeForRequest, type CacheScope } from '../domain/cache-scope.ts';

/** The cache scope production gives one request of an organisation under a key (32 bytes), through the same functions (cacheScopingForKey, scopeForRequest). */
export function cacheScopeOf(key: Uint8Array, organisationId: string, clientPromptCacheKey: string | undefined): CacheScope {
  return scopeForRequest(cacheScopingForKey(0, () => undefined)(key), organisationId, clientPromptCacheKey);
}

/** The marker text production puts in an organisation's prompts under a key, e.g. `[cache scope 3f9a1c0e5b7d2a4f]`. */
export function cacheScopeMarker(key: Uint8Array, organisationId: string): string {
  return cacheScopeOf(key, organisationId, undefined).marker;
}
