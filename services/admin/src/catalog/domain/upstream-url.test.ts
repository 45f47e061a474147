import { describe, expect, it } from 'vitest';
import type { HostResolver } from '@gateway/address-policy';
import { normaliseUpstreamUrl, resolvedHostProblem, upstreamUrlProblem } from './upstream-url.ts';

const strict = { allowPrivate: false };
const lenient = { allowPrivate: true };

describe('upstreamUrlProblem', () => {
  it.each([
    'https://api.openai.com/v1',
    'https://api.example.com',
    'https://8.8.8.8/v1',
    'https://[2001:4860:4860::8888]/v1',
    'https://172.32.0.1/', // just outside 172.16/12
  ])('accepts the public https URL %s', (url) => {
    expect(upstreamUrlProblem(url, strict)).toBeUndefined();
  });

  it.each([
    ['http://api.example.com/v1', /https/],
    ['ftp://api.example.com/', /https/],
    ['not a url', /absolute URL/],
    ['https://user:pass@api.example.com/', /credentials/],
    ['https://user@api.example.com/', /credentials/],
    ['https://api.example.com/v1?key=x', /query/],
    ['https://api.example.com/v1#frag', /fragment/],
    ['https://localhost/v1', /localhost/],
    ['https://LOCALHOST./v1', /localhost/],
    ['https://svc.localhost/v1', /localhost/],
    ['https://127.0.0.1/', /private/],
    ['https://127.8.9.10/', /private/],
    ['https://2130706433/', /private/], // 127.0.0.1 written as a number
    ['https://0x7f.1/', /private/],
    ['https://10.1.2.3/', /private/],
    ['https://172.16.0.1/', /private/],
    ['https://172.31.255.255/', /private/],
    ['https://192.168.1.1/', /private/],
    ['https://169.254.169.254/latest/meta-data', /private/],
    ['https://0.0.0.0/', /private/],
    ['https://[::1]/', /private/],
    ['https://[::]/', /private/],
    ['https://[fc00::1]/', /private/],
    ['https://[fd12:3456::1]/', /private/],
    ['https://[fe80::1]/', /private/],
    ['https://[::ffff:127.0.0.1]/', /private/], // IPv4-mapped loopback
    ['https://[::ffff:10.0.0.1]/', /private/],
    // Forms an older list let through.
    ['https://[::ffff:0:7f00:1]/', /private/], // IPv4-translated loopback
    ['https://[::ffff:0:a00:1]/v1', /private/], // IPv4-translated 10.0.0.1
    ['https://[2002:7f00:1::]/', /private/], // 6to4 embedding 127.0.0.1
    ['https://[2002:a9fe:a9fe::1]/', /private/], // 6to4 embedding 169.254.169.254
    ['https://[2001::1]/', /private/], // Teredo
    ['https://[64:ff9b::a9fe:a9fe]/', /private/], // NAT64 of the metadata address
    ['https://192.0.2.10/', /private/], // documentation
    ['https://198.18.0.1/', /private/], // benchmarking
    ['https://255.255.255.255/', /private/], // broadcast
    ['https://[2001:db8::1]/', /private/], // documentation
  ])('refuses %s', (url, reason) => {
    expect(upstreamUrlProblem(url, strict)).toMatch(reason);
  });

  it('allows http and local addresses only when private upstreams are allowed', () => {
    expect(upstreamUrlProblem('http://127.0.0.1:8788/v1', lenient)).toBeUndefined();
    expect(upstreamUrlProblem('http://localhost:8788/v1', lenient)).toBeUndefined();
    expect(upstreamUrlProblem('https://[::1]/v1', lenient)).toBeUndefined();
  });

  it('still refuses credentials and other schemes when private upstreams are allowed', () => {
    expect(upstreamUrlProblem('http://user:pw@127.0.0.1/', lenient)).toMatch(/credentials/);
    expect(upstreamUrlProblem('file:///etc/passwd', lenient)).toMatch(/https/);
  });
});

describe('normaliseUpstreamUrl', () => {
  it('lowercases the host, drops the default port and trailing slashes', () => {
    expect(normaliseUpstreamUrl('https://API.Example.com:443/v1/')).toBe('https://api.example.com/v1');
    expect(normaliseUpstreamUrl('https://api.example.com')).toBe('https://api.example.com');
  });

  it("keeps Azure's api-version query, dropping trailing slashes from the path before it", () => {
    expect(normaliseUpstreamUrl('https://R.openai.azure.com:443/openai/deployments/d/?api-version=2024-10-21'))
      .toBe('https://r.openai.azure.com/openai/deployments/d?api-version=2024-10-21');
  });
});

describe('upstreamUrlProblem with a provider kind', () => {
  it.each([
    'https://r.openai.azure.com/openai/deployments/d?api-version=2024-10-21',
    'https://r.openai.azure.com/openai/deployments/d?api-version=2025-04-01-preview',
  ])('lets azure_openai pin %s', (url) => {
    expect(upstreamUrlProblem(url, strict, { providerKind: 'azure_openai' })).toBeUndefined();
    expect(upstreamUrlProblem(url, strict, { providerKind: 'openai' })).toMatch(/query/);
    expect(upstreamUrlProblem(url, strict)).toMatch(/query/);
  });

  it.each([
    ['https://r.openai.azure.com/d?api-version=2024-10-21&key=sk-1', /only \?api-version/],
    ['https://r.openai.azure.com/d?key=sk-1', /only \?api-version/],
    ['https://r.openai.azure.com/d?', /only \?api-version/],
    ['https://r.openai.azure.com/d?api-version=2024-10-21#f', /fragment/],
    ['https://10.0.0.1/d?api-version=2024-10-21', /private/],
    ['http://r.openai.azure.com/d?api-version=2024-10-21', /https/],
  ])('still refuses %s for azure_openai', (url, problem) => {
    expect(upstreamUrlProblem(url, strict, { providerKind: 'azure_openai' })).toMatch(problem);
  });
});

describe('resolvedHostProblem', () => {
  const table: Record<string, string[]> = {
    'rebound.example.test': ['127.0.0.1'],
    'mixed.example.test': ['8.8.8.8', 'fd00::7'],
    'public.example.test': ['8.8.8.8', '2001:4860:4860::8888'],
  };
  const resolve: HostResolver = async (hostname) => {
    const addresses = table[hostname];
    if (addresses === undefined) throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
    return addresses.map((address) => ({ address, family: address.includes(':') ? 6 as const : 4 as const }));
  };

  it('names a host that resolves to an internal address, with the detail for the log', async () => {
    expect(await resolvedHostProblem('https://rebound.example.test/v1', strict, resolve)).toMatch(/resolves to 127\.0\.0\.1, loopback/);
    expect(await resolvedHostProblem('https://mixed.example.test/v1', strict, resolve)).toMatch(/fd00::7, unique-local/);
  });

  it('lets public names, unknown names, literals and everything under the lenient policy through', async () => {
    expect(await resolvedHostProblem('https://public.example.test/v1', strict, resolve)).toBeUndefined();
    expect(await resolvedHostProblem('https://unknown.example.test/v1', strict, resolve)).toBeUndefined();
    expect(await resolvedHostProblem('https://8.8.8.8/v1', strict, resolve)).toBeUndefined();
    expect(await resolvedHostProblem('https://rebound.example.test/v1', lenient, resolve)).toBeUndefined();
  });
});
