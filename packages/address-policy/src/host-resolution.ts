import { lookup as dnsLookup } from 'node:dns';
import type { LookupAddress, LookupOptions } from 'node:dns';
import { isIP } from 'node:net';
import { disallowedAddressReason, isLocalHostName, unbracketed } from './address-policy.ts';

/** One address a host name resolved to. */
export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/** Resolves a host name to every address it has (tests inject a fixed table). */
export type HostResolver = (hostname: string) => Promise<ResolvedAddress[]>;

/** The system resolver (getaddrinfo, as every Node socket uses): every address, in the order the system gives. */
export const systemResolver: HostResolver = (hostname) => new Promise((resolve, reject) => {
  dnsLookup(hostname, { all: true, order: 'verbatim' }, (error, addresses) => {
    if (error) reject(error);
    else resolve(addresses.map(({ address, family }) => ({ address, family: family === 6 ? 6 : 4 })));
  });
});

/** Error code of a connection refused by the address policy (never a network error: nothing was sent). */
export const addressRefusedCode = 'ERR_UPSTREAM_ADDRESS_REFUSED';

/**
 * A host whose address the policy refuses. Its message names the host and the address and the
 * range (internal detail for logs; no secret in it); callers never show it to a client.
 */
export class AddressRefusedError extends Error {
  override name = 'AddressRefusedError';
  readonly code = addressRefusedCode;
}

/**
 * Why a host (name or IP literal) may not be connected to: the first address it is or resolves
 * to that the policy refuses, or a `localhost` name; undefined when every address is allowed.
 * Resolution errors (no such name, no DNS) are thrown to the caller, which decides.
 */
export async function hostAddressProblem(host: string, resolve: HostResolver): Promise<string | undefined> {
  const hostname = unbracketed(host);
  if (isIP(hostname) !== 0) {
    const reason = disallowedAddressReason(hostname);
    return reason === undefined ? undefined : `${hostname} is ${reason}`;
  }
  if (isLocalHostName(hostname)) return `${hostname} names this machine`;
  const addresses = await resolve(hostname);
  for (const { address } of addresses) {
    const reason = disallowedAddressReason(address);
    if (reason !== undefined) return `${hostname} resolves to ${address}, ${reason}`;
  }
  return undefined;
}

/** The callback of a `net.connect` lookup: one address, or every address when `all` was asked. */
type LookupCallback = (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/** A `lookup` function for `net.connect` / `tls.connect` (and so for undici's connector). */
export type ConnectLookup = (hostname: string, options: LookupOptions, callback: LookupCallback) => void;

/**
 * A `net.connect` lookup that resolves with `resolve` and, unless `allowPrivate`, refuses the
 * connection (AddressRefusedError, code ERR_UPSTREAM_ADDRESS_REFUSED) when ANY resolved address
 * is in a refused range: checking only the one the socket picks would let a name with one public
 * and one private address through on a retry or a happy-eyeballs fallback. The check happens at
 * connect time, after DNS, so a name that changes what it resolves to (DNS rebinding) is caught.
 */
export function checkedLookup(resolve: HostResolver, allowPrivate: boolean): ConnectLookup {
  return (hostname, options, callback) => {
    resolve(hostname).then((resolved) => {
      const wanted = options.family === 4 || options.family === 6 ? options.family : undefined;
      const addresses = wanted === undefined ? resolved : resolved.filter((entry) => entry.family === wanted);
      if (addresses.length === 0) {
        const error: NodeJS.ErrnoException = new Error(`${hostname} has no address`);
        error.code = 'ENOTFOUND';
        callback(error, []);
        return;
      }
      if (!allowPrivate) {
        for (const { address } of addresses) {
          const reason = disallowedAddressReason(address);
          if (reason !== undefined) {
            callback(new AddressRefusedError(`${hostname} resolves to ${address}, ${reason}: refused before connecting (SSRF guard)`), []);
            return;
          }
        }
      }
      if (options.all) callback(null, addresses);
      else callback(null, addresses[0]!.address, addresses[0]!.family);
    }, (error: NodeJS.ErrnoException) => callback(error, []));
  };
}
