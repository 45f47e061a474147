import { describe, expect, it } from 'vitest';
import { disallowedAddressReason, isDisallowedAddress, isLocalHostName } from './address-policy.ts';
import { AddressRefusedError, checkedLookup, hostAddressProblem, type HostResolver } from './host-resolution.ts';

describe('disallowedAddressReason', () => {
  it.each([
    // IPv4 special-purpose ranges
    ['0.0.0.0', /this network/], ['0.1.2.3', /this network/],
    ['10.0.0.1', /private/], ['172.16.0.1', /private/], ['172.31.255.255', /private/], ['192.168.1.1', /private/],
    ['100.64.0.1', /carrier-grade NAT/], ['100.127.255.255', /carrier-grade NAT/],
    ['127.0.0.1', /loopback/], ['127.8.9.10', /loopback/],
    ['169.254.169.254', /link-local/],
    ['192.0.0.8', /IETF/],
    ['192.0.2.1', /documentation/], ['198.51.100.7', /documentation/], ['203.0.113.9', /documentation/],
    ['192.88.99.1', /6to4 relay/],
    ['198.18.0.1', /benchmarking/], ['198.19.255.255', /benchmarking/],
    ['224.0.0.1', /multicast/], ['239.255.255.250', /multicast/],
    ['240.0.0.1', /reserved/], ['255.255.255.255', /reserved or broadcast/],
    // IPv6 special-purpose ranges
    ['::', /unspecified/], ['::1', /loopback/], ['[::1]', /loopback/],
    ['::7f00:1', /IPv4-compatible/], ['::8.8.8.8', /IPv4-compatible/],
    ['::ffff:127.0.0.1', /IPv4-mapped loopback/], ['::ffff:7f00:1', /IPv4-mapped loopback/],
    ['::ffff:10.0.0.1', /IPv4-mapped private/], ['::ffff:169.254.169.254', /IPv4-mapped link-local/],
    ['::ffff:0:7f00:1', /IPv4-translated/], ['::ffff:0:808:808', /IPv4-translated/],
    ['64:ff9b::7f00:1', /NAT64/], ['64:ff9b::808:808', /NAT64/], ['64:ff9b:1::1', /local NAT64/],
    ['100::1', /discard-only/],
    ['fc00::1', /unique-local/], ['fd12:3456::1', /unique-local/],
    ['fe80::1', /link-local/], ['fec0::1', /site-local/],
    ['ff02::1', /multicast/],
    ['2001::1', /Teredo/], ['2001:0:4136:e378:8000:63bf:3fff:fdd2', /Teredo/],
    ['2001:2::1', /benchmarking/], ['2001:20::1', /ORCHID/],
    ['2001:db8::1', /documentation/], ['3fff::1', /documentation/],
    ['2002:7f00:1::', /6to4/], ['2002:c0a8:101::1', /6to4/], ['2002:808:808::1', /6to4/], // refused whole, even a public embedded IPv4
    ['4000::1', /global unicast/], ['::2:1', /IPv4-compatible/], ['1::1', /global unicast/],
    ['api.example.com', /not an IP address/], ['', /not an IP address/],
  ])('refuses %s', (address, reason) => {
    expect(disallowedAddressReason(address)).toMatch(reason);
    expect(isDisallowedAddress(address)).toBe(true);
  });

  it.each([
    '8.8.8.8', '1.1.1.1', '172.32.0.1', '100.128.0.1', '192.0.3.1', '198.20.0.1', '223.255.255.255', '11.0.0.1',
    '::ffff:8.8.8.8', '::ffff:808:808', // IPv4-mapped public: the same host as 8.8.8.8
    '2001:4860:4860::8888', '2606:4700:4700::1111', '2a00:1450:4001:82b::200e', '[2001:4860:4860::8888]',
    '2001:200::1', // just past 2001::/23
  ])('allows the public address %s', (address) => {
    expect(disallowedAddressReason(address)).toBeUndefined();
  });
});

describe('isLocalHostName', () => {
  it.each([['localhost', true], ['LOCALHOST.', true], ['svc.localhost', true], ['localhost.example.com', false], ['example.com', false]])(
    '%s -> %s', (name, expected) => expect(isLocalHostName(name)).toBe(expected),
  );
});

const table: Record<string, Array<{ address: string; family: 4 | 6 }>> = {
  'public.test': [{ address: '8.8.8.8', family: 4 }, { address: '2001:4860:4860::8888', family: 6 }],
  'loopback.test': [{ address: '127.0.0.1', family: 4 }],
  'mixed.test': [{ address: '8.8.8.8', family: 4 }, { address: '10.0.0.7', family: 4 }],
  'v6-private.test': [{ address: '8.8.8.8', family: 4 }, { address: 'fd00::1', family: 6 }],
};
const resolver: HostResolver = async (hostname) => {
  const addresses = table[hostname];
  if (addresses === undefined) throw Object.assign(new Error(`no such name ${hostname}`), { code: 'ENOTFOUND' });
  return addresses;
};

describe('hostAddressProblem', () => {
  it('judges literals without resolving and names by every address they resolve to', async () => {
    const refuse: HostResolver = async () => { throw new Error('must not resolve'); };
    expect(await hostAddressProblem('[::ffff:0:7f00:1]', refuse)).toMatch(/IPv4-translated/);
    expect(await hostAddressProblem('8.8.8.8', refuse)).toBeUndefined();
    expect(await hostAddressProblem('localhost', refuse)).toMatch(/this machine/);
    expect(await hostAddressProblem('public.test', resolver)).toBeUndefined();
    expect(await hostAddressProblem('loopback.test', resolver)).toBe('loopback.test resolves to 127.0.0.1, loopback (127.0.0.0/8)');
    expect(await hostAddressProblem('mixed.test', resolver)).toMatch(/10\.0\.0\.7, private/);
    await expect(hostAddressProblem('unknown.test', resolver)).rejects.toMatchObject({ code: 'ENOTFOUND' });
  });
});

describe('checkedLookup', () => {
  const lookupWith = (allowPrivate: boolean, hostname: string, options: { all?: boolean; family?: number }) =>
    new Promise<{ error: NodeJS.ErrnoException | null; address: unknown; family?: number | undefined }>((done) => {
      checkedLookup(resolver, allowPrivate)(hostname, options, (error, address, family) => done({ error, address, family }));
    });

  it('answers in the form net.connect asked for when every address is allowed', async () => {
    expect(await lookupWith(false, 'public.test', { all: true })).toMatchObject({ error: null, address: table['public.test'] });
    expect(await lookupWith(false, 'public.test', {})).toMatchObject({ error: null, address: '8.8.8.8', family: 4 });
    expect(await lookupWith(false, 'public.test', { family: 6 })).toMatchObject({ error: null, address: '2001:4860:4860::8888', family: 6 });
  });

  it('refuses when any resolved address is disallowed, even one of another family than the socket picks', async () => {
    for (const hostname of ['loopback.test', 'mixed.test', 'v6-private.test']) {
      const { error } = await lookupWith(false, hostname, { all: true });
      expect(error).toBeInstanceOf(AddressRefusedError);
      expect(error?.code).toBe('ERR_UPSTREAM_ADDRESS_REFUSED');
    }
    expect((await lookupWith(false, 'v6-private.test', {})).error).toBeInstanceOf(AddressRefusedError);
  });

  it('lets private addresses through only when the model was allowed private', async () => {
    expect(await lookupWith(true, 'loopback.test', {})).toMatchObject({ error: null, address: '127.0.0.1', family: 4 });
  });

  it('passes resolution errors through as they are', async () => {
    expect((await lookupWith(false, 'unknown.test', {})).error?.code).toBe('ENOTFOUND');
  });
});
