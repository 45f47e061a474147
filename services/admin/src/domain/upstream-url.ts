import { BlockList, isIP } from 'node:net';
import { apiVersionQueryProviderKind, type ProviderKind } from './provider-kinds.ts';

/** How strictly an upstream base URL is checked. */
export interface UpstreamUrlPolicy {
  /** true: http and private, loopback and link-local addresses are allowed (development, demo). */
  allowPrivate: boolean;
}

/**
 * Addresses an upstream may not point at unless private upstreams are allowed: a gateway that
 * calls whatever URL an admin typed must not become a way into its own network (SSRF).
 * IPv4-mapped IPv6 addresses (::ffff:a.b.c.d) match the IPv4 rules.
 */
const forbiddenAddresses = (() => {
  const list = new BlockList();
  const ipv4: Array<[string, number]> = [
    ['0.0.0.0', 8], // "this network", including 0.0.0.0
    ['10.0.0.0', 8], ['172.16.0.0', 12], ['192.168.0.0', 16], // private
    ['100.64.0.0', 10], // carrier-grade NAT, private in practice
    ['127.0.0.0', 8], // loopback
    ['169.254.0.0', 16], // link-local, including cloud metadata at 169.254.169.254
    ['224.0.0.0', 4], ['240.0.0.0', 4], // multicast, reserved and broadcast
  ];
  const ipv6: Array<[string, number]> = [
    ['::', 96], // unspecified, loopback (::1) and IPv4-compatible addresses
    ['fc00::', 7], // unique-local
    ['fe80::', 10], // link-local
    ['ff00::', 8], // multicast
    ['64:ff9b::', 96], ['64:ff9b:1::', 48], // NAT64, which can reach private IPv4 addresses
  ];
  for (const [network, prefix] of ipv4) list.addSubnet(network, prefix, 'ipv4');
  for (const [network, prefix] of ipv6) list.addSubnet(network, prefix, 'ipv6');
  return list;
})();

/** Whether a host name names this machine rather than an address (`localhost`, `*.localhost`). */
function isLocalHostName(hostname: string): boolean {
  const name = hostname.toLowerCase().replace(/\.+$/, '');
  return name === 'localhost' || name.endsWith('.localhost');
}

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
 * Why a base URL may not be an upstream (undefined when it may). Host names are not resolved
 * here: only literal addresses are judged; see docs/admin-api.md on DNS. The rule is the same
 * for every provider kind, except that Azure OpenAI's base URL may pin its `api-version`.
 */
export function upstreamUrlProblem(value: string, policy: UpstreamUrlPolicy, context: UpstreamUrlContext = {}): string | undefined {
  if (!URL.canParse(value)) return 'must be an absolute URL such as https://api.example.com/v1';
  const url = new URL(value);
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return 'must use https';
  if (url.protocol === 'http:' && !policy.allowPrivate) return 'must use https (http is allowed only with ADMIN_ALLOW_PRIVATE_UPSTREAMS=true)';
  if (url.username !== '' || url.password !== '') return 'must not contain credentials; give the credential as upstream.api_key';
  if (url.hash !== '' || value.includes('#')) return 'must not contain a query or a fragment';
  if (url.search !== '' || value.includes('?')) {
    if (context.providerKind !== apiVersionQueryProviderKind) return 'must not contain a query or a fragment';
    if (!apiVersionQueryPattern.test(url.search)) return 'may carry only ?api-version=YYYY-MM-DD (optionally -preview) as its query, and no fragment';
  }
  if (policy.allowPrivate) return undefined;
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (isLocalHostName(host)) return 'must not point at localhost (allowed only with ADMIN_ALLOW_PRIVATE_UPSTREAMS=true)';
  const family = isIP(host);
  if (family !== 0 && forbiddenAddresses.check(host, family === 4 ? 'ipv4' : 'ipv6')) {
    return 'must not point at a private, loopback, link-local or otherwise internal address (allowed only with ADMIN_ALLOW_PRIVATE_UPSTREAMS=true)';
  }
  return undefined;
}

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
