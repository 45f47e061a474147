import { isIP } from 'node:net';
import { disallowedAddressReason, hostAddressProblem, isLocalHostName, unbracketed, type HostResolver } from '@gateway/address-policy';
import { apiVersionQueryProviderKind, type ProviderKind } from './provider-kinds.ts';

/** How strictly an upstream base URL is checked. */
export interface UpstreamUrlPolicy {
  /**
   * true: http and private, loopback and link-local addresses are allowed: ADMIN_ALLOW_PRIVATE_UPSTREAMS
   * (development, demo) or the model's own upstream.allow_private_network (see allowsPrivateUpstream).
   */
  allowPrivate: boolean;
}

/**
 * A model's effective SSRF exception: the admin-wide setting (ADMIN_ALLOW_PRIVATE_UPSTREAMS) or
 * the model's explicit, audited upstream.allow_private_network.
 */
export function allowsPrivateUpstream(allowPrivateUpstreams: boolean, modelAllowsPrivateNetwork: boolean): boolean {
  return allowPrivateUpstreams || modelAllowsPrivateNetwork;
}

/** How a refusal names the two ways to allow what it refused. */
const allowedOnlyWith = 'allowed only for a model with upstream.allow_private_network true, or with ADMIN_ALLOW_PRIVATE_UPSTREAMS=true';

/**
 * The one query a base URL may carry, and only for Azure OpenAI: its API version, e.g.
 * `?api-version=2024-10-21` or `2025-04-01-preview`. Nothing else, so a credential cannot hide
 * in a query string (base URLs are shown in responses and the audit log).
 */
const apiVersionQueryPattern = /^\?api-version=\d{4}-\d{2}-\d{2}(?:-preview)?$/;

/** What a base URL is for, when it matters to the rule. */
export interface UpstreamUrlContext {
  /** The model's provider kind: only `azure_openai` may carry `?api-version=…`. Default: no query allowed. */
  providerKind?: ProviderKind;
}

/**
 * Why a base URL may not be an upstream (undefined when it may). Literal addresses are judged
 * by the shared SSRF address policy (@gateway/address-policy, the one the proxy checks at
 * connect time); host names are not resolved here (see upstreamHostProblem). The rule is the
 * same for every provider kind, except that Azure OpenAI's base URL may pin its `api-version`.
 */
export function upstreamUrlProblem(value: string, policy: UpstreamUrlPolicy, context: UpstreamUrlContext = {}): string | undefined {
  if (!URL.canParse(value)) return 'must be an absolute URL such as https://api.example.com/v1';
  const url = new URL(value);
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return 'must use https';
  if (url.protocol === 'http:' && !policy.allowPrivate) return `must use https (http is ${allowedOnlyWith})`;
  if (url.username !== '' || url.password !== '') return 'must not contain credentials; give the credential as upstream.api_key';
  if (url.hash !== '' || value.includes('#')) return 'must not contain a query or a fragment';
  if (url.search !== '' || value.includes('?')) {
    if (context.providerKind !== apiVersionQueryProviderKind) return 'must not contain a query or a fragment';
    if (!apiVersionQueryPattern.test(url.search)) return 'may carry only ?api-version=YYYY-MM-DD (optionally -preview) as its query, and no fragment';
  }
  if (policy.allowPrivate) return undefined;
  const host = unbracketed(url.hostname);
  if (isLocalHostName(host)) return `must not point at localhost (${allowedOnlyWith})`;
  if (isIP(host) !== 0 && disallowedAddressReason(host) !== undefined) return internalAddressProblem;
  return undefined;
}

const internalAddressProblem = `must not point at a private, loopback, link-local or otherwise internal address (${allowedOnlyWith})`;

/** Longest the admin waits for a host name to resolve before letting the connect-time check decide, ms. */
const hostResolutionTimeoutMs = 5_000;

/**
 * Why the host name of a base URL may not be an upstream once resolved, in internal detail
 * (name, address, range: for logs, never for a response): a name any of whose addresses the
 * SSRF policy refuses. Undefined when private upstreams are allowed, when the host is a literal
 * (upstreamUrlProblem judges those), when every address is public, and when the name does not
 * resolve within hostResolutionTimeoutMs: DNS can change either way, so the proxy's check at
 * connect time is the real guard; this one turns an obvious mistake or probe into a 400 (or an
 * unserved model at start) instead of a 502 later.
 */
export async function resolvedHostProblem(value: string, policy: UpstreamUrlPolicy, resolve: HostResolver): Promise<string | undefined> {
  if (policy.allowPrivate || !URL.canParse(value)) return undefined;
  const host = unbracketed(new URL(value).hostname);
  if (isIP(host) !== 0 || isLocalHostName(host)) return undefined;
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<undefined>((done) => { timer = setTimeout(() => done(undefined), hostResolutionTimeoutMs); });
  try {
    return await Promise.race([hostAddressProblem(host, resolve), timedOut]);
  } catch {
    return undefined;
  } finally {
    clearTimeout(timer);
  }
}

/** The public form of a resolvedHostProblem: says that the name resolves to an internal address, not which. */
export const resolvesToInternalAddressProblem = `must not name a host that resolves to a private, loopback, link-local or otherwise internal address (${allowedOnlyWith})`;

/**
 * The stored form of an accepted base URL: as the WHATWG parser normalises it (lowercase host,
 * canonical IP literals, default port dropped), without trailing slashes on its path, so the
 * proxy can append `/chat/completions` (or `/messages`).
 */
export function normaliseUpstreamUrl(value: string): string {
  const url = new URL(value);
  // Azure's `?api-version=…` stays; trailing slashes go from the path before it.
  if (url.search !== '') return `${url.origin}${url.pathname.replace(/\/+$/, '')}${url.search}`;
  return url.href.replace(/\/+$/, '');
}
