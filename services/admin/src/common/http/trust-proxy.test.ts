/** ADMIN_TRUST_PROXY's forms: a boolean, a hop count, or a list of addresses and CIDRs (what express's `trust proxy` takes). */
import { expect, it } from 'vitest';
import { parseTrustProxy } from './trust-proxy.ts';

it('reads false, true (one hop), a hop count and an address/CIDR list', () => {
  expect(parseTrustProxy('false')).toBe(false);
  expect(parseTrustProxy('0')).toBe(false);
  expect(parseTrustProxy('true')).toBe(1);
  expect(parseTrustProxy('2')).toBe(2);
  expect(parseTrustProxy('10.0.0.0/8, 192.168.1.7,fd00::/8,loopback')).toEqual(['10.0.0.0/8', '192.168.1.7', 'fd00::/8', 'loopback']);
});

it('refuses anything else: words, prefixes out of range, host names, absurd hop counts', () => {
  for (const value of ['yes', '', '10.0.0.0/33', 'fd00::/129', 'ingress-nginx', '10.0.0.0/8,', '11', '10.0.0.0/8/1', '-1']) {
    expect(parseTrustProxy(value), value).toBeUndefined();
  }
});
