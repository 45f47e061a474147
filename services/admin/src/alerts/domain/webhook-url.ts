import { isIP } from 'node:net';
import { disallowedAddressReason, hostAddressProblem, isLocalHostName, unbracketed, type HostResolver } from '@gateway/address-policy';

/** The longest webhook URL accepted, characters. */
export const maxWebhookUrlLength = 2000;

const allowedOnlyWith = 'allowed only with ADMIN_ALLOW_PRIVATE_UPSTREAMS=true';

/**
 * Why a URL may not receive an organisation's alerts (undefined when it may): the address policy
 * upstreams follow (@gateway/address-policy): https, no credentials in it, and no private,
 * loopback or link-local literal or `localhost` unless private receivers are allowed. Host names
 * are judged once resolved (webhookHostProblem) and again at connect time by the sender.
 */
export function webhookUrlProblem(value: string, allowPrivate: boolean): string | undefined {
  if (!URL.canParse(value)) return 'must be an absolute URL such as https://hooks.example.com/gateway';
  const url = new URL(value);
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return 'must use https';
  if (url.protocol === 'http:' && !allowPrivate) return `must use https (http is ${allowedOnlyWith})`;
  if (url.username !== '' || url.password !== '') return 'must not contain credentials';
  if (url.hash !== '' || value.includes('#')) return 'must not contain a fragment';
  if (allowPrivate) return undefined;
  const host = unbracketed(url.hostname);
  if (isLocalHostName(host)) return `must not point at localhost (${allowedOnlyWith})`;
  if (isIP(host) !== 0 && disallowedAddressReason(host) !== undefined) {
    return `must not point at a private, loopback, link-local or otherwise internal address (${allowedOnlyWith})`;
  }
  return undefined;
}

/** Longest the admin waits for a webhook host name to resolve before leaving it to the connect-time check, ms. */
const resolutionTimeoutMs = 5_000;

/**
 * Why a webhook URL's host name may not receive alerts once resolved (a public message: it does
 * not say which address). Undefined when private receivers are allowed, for literals (judged by
 * webhookUrlProblem), and when the name does not resolve in time: the sender's check at connect
 * time is the real guard (DNS can change either way).
 */
export async function webhookHostProblem(value: string, allowPrivate: boolean, resolve: HostResolver): Promise<string | undefined> {
  if (allowPrivate || !URL.canParse(value)) return undefined;
  const host = unbracketed(new URL(value).hostname);
  if (isIP(host) !== 0 || isLocalHostName(host)) return undefined;
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<undefined>((done) => { timer = setTimeout(() => done(undefined), resolutionTimeoutMs); });
  try {
    const problem = await Promise.race([hostAddressProblem(host, resolve), timedOut]);
    return problem === undefined ? undefined : `must not name a host that resolves to a private, loopback, link-local or otherwise internal address (${allowedOnlyWith})`;
  } catch {
    return undefined;
  } finally {
    clearTimeout(timer);
  }
}
