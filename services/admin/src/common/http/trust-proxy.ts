import { isIP } from 'node:net';

/**
 * Which proxies in front of the admin are trusted for X-Forwarded-For/-Proto (ADMIN_TRUST_PROXY),
 * in the form express's `trust proxy` takes: false (none), a hop count, or addresses and CIDRs.
 */
export type TrustProxySetting = false | number | string[];

/** proxy-addr's names for address ranges that express accepts in a trust list. */
const rangeNames = new Set(['loopback', 'linklocal', 'uniquelocal']);

/** Whether one trust-list entry is an IP address, an IP/prefix CIDR, or one of express's range names. */
function isTrustEntry(entry: string): boolean {
  if (rangeNames.has(entry)) return true;
  const [address, prefix, ...rest] = entry.split('/');
  const family = isIP(address ?? '');
  if (family === 0 || rest.length > 0) return false;
  if (prefix === undefined) return true;
  return /^\d{1,3}$/.test(prefix) && Number(prefix) <= (family === 4 ? 32 : 128);
}

/**
 * Reads ADMIN_TRUST_PROXY: `false`; `true` (one hop, as before: the proxy the admin sees is
 * trusted, whatever it says it was told); a hop count (1..10: the last n X-Forwarded-For entries
 * are proxies); or a comma-separated list of proxy addresses and CIDRs (only a connection from
 * one of those is believed, so a client reaching the pod directly cannot spoof its address).
 * Undefined when the value is none of these.
 */
export function parseTrustProxy(value: string): TrustProxySetting | undefined {
  const text = value.trim().toLowerCase();
  if (text === 'false' || text === '0') return false;
  if (text === 'true') return 1;
  if (/^\d+$/.test(text)) return Number(text) <= 10 ? Number(text) : undefined;
  const entries = text.split(',').map((entry) => entry.trim());
  return entries.length > 0 && entries.every(isTrustEntry) ? entries : undefined;
}
