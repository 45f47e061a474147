/**
 * The admin's half of the SSRF guard (docs/admin-api.md "Upstream base
 * URLs"): with private upstreams disallowed, a base URL whose literal is an IPv4-translated or
 * 6to4 form of an internal address, or whose host name resolves to one, is refused with 400;
 * models stored while private upstreams were allowed are re-checked when the admin starts, and
 * one that fails is left out of what proxies serve, logged with its slug, never its credential.
 * Host names resolve through a table injected as the admin's resolver (no network needed).
 */
import { randomBytes } from 'node:crypto';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { HostResolver } from '@gateway/address-policy';
import { createTestDatabase, testPostgresUrl, type TestDatabase } from '@gateway/testkit';
import { startAdminHarness, type AdminHarness } from './test-support/admin-harness.ts';
import { captureLogs } from './test-support/captured-logs.ts';
import { connectFakeProxy, type FakeProxy } from './test-support/fake-proxy.ts';

const serverUrl = testPostgresUrl();
const itPg = it.skipIf(!serverUrl);
const upstreamCredential = `sk-vendor-${randomBytes(8).toString('hex')}`;

/** What names resolve to; a test moves a name by editing this table. */
const dns = new Map<string, string[]>([
  ['rebound.example.test', ['127.0.0.1']],
  ['mixed.example.test', ['8.8.8.8', '10.1.2.3']],
  ['public.example.test', ['8.8.8.8']],
  ['moving.example.test', ['8.8.4.4']],
]);
const resolveHost: HostResolver = async (hostname) => {
  const addresses = dns.get(hostname);
  if (addresses === undefined) throw Object.assign(new Error(`no such name ${hostname}`), { code: 'ENOTFOUND' });
  return addresses.map((address) => ({ address, family: address.includes(':') ? 6 as const : 4 as const }));
};

function modelBody(slug: string, baseUrl: string) {
  return {
    slug, default_max_tokens: 16, max_context_tokens: 1024, input_price_micros_per_mtok: '1000000', output_price_micros_per_mtok: '2000000',
    upstream: { provider_kind: 'openai_compatible', base_url: baseUrl, model: 'vendor-model', api_key: upstreamCredential },
  };
}

const databases: TestDatabase[] = [];
const admins: AdminHarness[] = [];
const proxies: FakeProxy[] = [];

async function startAdmin(databaseUrl: string, allowPrivate: boolean, token: string | undefined, encryptionKey: string, logger = captureLogs().logger) {
  const admin = await startAdminHarness({
    databaseUrl, logger, resolveHost, encryptionKey, ...(token === undefined ? {} : { token }),
    env: { SNAPSHOT_ACK_TIMEOUT_MS: '2000', ADMIN_ALLOW_PRIVATE_UPSTREAMS: String(allowPrivate) },
  });
  admins.push(admin);
  return admin;
}

afterEach(async () => {
  for (const proxy of proxies.splice(0)) proxy.close();
  await Promise.all(admins.splice(0).map((admin) => admin.close()));
});
afterAll(async () => { await Promise.all(databases.map((database) => database.drop())); });

async function freshDatabase(): Promise<string> {
  const database = await createTestDatabase(serverUrl!);
  databases.push(database);
  return database.url;
}

describe('creating and changing a gateway model with private upstreams disallowed', () => {
  itPg.each([
    ['an IPv4-translated loopback literal', 'https://[::ffff:0:7f00:1]/v1'],
    ['a 6to4 literal embedding loopback', 'https://[2002:7f00:1::]/v1'],
    ['a host name that resolves to loopback', 'https://rebound.example.test/v1'],
    ['a host name with one private address among public ones', 'https://mixed.example.test/v1'],
  ])('refuses %s with 400 on create and on update', async (_, baseUrl) => {
    const admin = await startAdmin(await freshDatabase(), false, undefined, randomBytes(32).toString('base64'));
    const created = await admin.request('POST', '/admin/v1/gateway-models', modelBody('probe', baseUrl));
    expect(created.status, created.text).toBe(400);
    expect(created.json.error).toMatchObject({ code: 'invalid_request', param: 'upstream.base_url' });
    // The public message says what is wrong, not which address the name has.
    expect(created.text).not.toMatch(/127\.0\.0\.1|10\.1\.2\.3/);

    expect((await admin.request('POST', '/admin/v1/gateway-models', modelBody('fine', 'https://public.example.test/v1'))).status).toBe(201);
    const updated = await admin.request('PATCH', '/admin/v1/gateway-models/fine', { upstream: { base_url: baseUrl } });
    expect(updated.status, updated.text).toBe(400);
    expect((await admin.request('GET', '/admin/v1/gateway-models/fine')).json.upstream.base_url).toBe('https://public.example.test/v1');
  });

  itPg('accepts a name that does not resolve now (the proxy checks again when it connects)', async () => {
    const admin = await startAdmin(await freshDatabase(), false, undefined, randomBytes(32).toString('base64'));
    const created = await admin.request('POST', '/admin/v1/gateway-models', modelBody('later', 'https://not-yet.example.test/v1'));
    expect(created.status, created.text).toBe(201);
  });
});

describe('the re-check of stored models when the admin starts', () => {
  itPg('leaves out of the snapshot every model the current policy refuses, logs its slug, and serves it again once its URL is fixed', async () => {
    const databaseUrl = await freshDatabase();
    const encryptionKey = randomBytes(32).toString('base64');
    const lenient = await startAdmin(databaseUrl, true, undefined, encryptionKey);
    const token = lenient.token;
    for (const [slug, baseUrl] of [
      ['local', 'http://127.0.0.1:9/v1'],
      ['translated', 'https://[::ffff:0:7f00:1]/v1'],
      ['public', 'https://public.example.test/v1'],
      ['moving', 'https://moving.example.test/v1'],
    ] as const) {
      const created = await lenient.request('POST', '/admin/v1/gateway-models', modelBody(slug, baseUrl));
      expect(created.status, created.text).toBe(201);
    }
    const lenientProxy = connectFakeProxy(lenient.grpcTarget, 'proxy-lenient', { autoAck: true });
    proxies.push(lenientProxy);
    const lenientSnapshot = await lenientProxy.next((update) => update.full);
    expect(lenientSnapshot.gatewayModels.map((model) => [model.slug, model.allowPrivateNetwork]).sort())
      .toEqual([['local', true], ['moving', true], ['public', true], ['translated', true]]);
    lenientProxy.close();
    await lenient.close();

    // The setting turns false, and a name moves to a private address while the admin is down.
    dns.set('moving.example.test', ['10.9.8.7']);
    const logs = captureLogs();
    const strict = await startAdmin(databaseUrl, false, token, encryptionKey, logs.logger);
    const proxy = connectFakeProxy(strict.grpcTarget, 'proxy-strict', { autoAck: true });
    proxies.push(proxy);
    const snapshot = await proxy.next((update) => update.full);
    expect(snapshot.gatewayModels.map((model) => [model.slug, model.allowPrivateNetwork])).toEqual([['public', false]]);

    const errors = logs.text().split('\n').filter((line) => line.includes('"level":50'));
    for (const slug of ['local', 'translated', 'moving']) expect(errors.some((line) => line.includes(`"slug":"${slug}"`))).toBe(true);
    expect(errors.some((line) => line.includes('"slug":"public"'))).toBe(false);
    expect(logs.text()).not.toContain(upstreamCredential);
    // The admin API still lists the stored model: only proxies stop serving it.
    expect((await strict.request('GET', '/admin/v1/gateway-models/moving')).status).toBe(200);

    // A change that keeps the refused URL keeps it unserved (the delta removes it)...
    const repriced = await strict.request('PATCH', '/admin/v1/gateway-models/moving', { display_name: 'Moving' });
    expect(repriced.status, repriced.text).toBe(200);
    const removal = await proxy.next((update) => update.removedGatewayModelSlugs.includes('moving'));
    expect(removal.gatewayModels).toEqual([]);
    // ...and a new base URL that passes the check serves it again.
    const fixed = await strict.request('PATCH', '/admin/v1/gateway-models/moving', { upstream: { base_url: 'https://public.example.test/v2' } });
    expect(fixed.status, fixed.text).toBe(200);
    const served = await proxy.next((update) => update.gatewayModels.some((model) => model.slug === 'moving'));
    expect(served.gatewayModels.find((model) => model.slug === 'moving')).toMatchObject({ allowPrivateNetwork: false, upstream: { baseUrl: 'https://public.example.test/v2' } });
  });
});

/** The audit log's changes for one gateway model, oldest first. */
async function auditedChanges(admin: AdminHarness, slug: string): Promise<Array<{ action: string; changes: Record<string, unknown> }>> {
  const events = (await admin.request('GET', '/admin/v1/audit-events?limit=100')).json.data as Array<{ action: string; resource_id: string; changes: Record<string, unknown> }>;
  return events.filter((event) => event.resource_id === slug).map(({ action, changes }) => ({ action, changes }));
}

describe('a model explicitly allowed a private network (upstream.allow_private_network) while private upstreams are disallowed', () => {
  const privateUrl = 'http://10.1.2.3:8000/v1';
  const flagOf = (update: { gatewayModels: Array<{ slug: string; allowPrivateNetwork: boolean }> }, slug: string) =>
    update.gatewayModels.find((model) => model.slug === slug)?.allowPrivateNetwork;

  itPg('is accepted with a private http URL, returned with the flag, pushed with allowPrivateNetwork and audited; the same URL without the flag is refused', async () => {
    const admin = await startAdmin(await freshDatabase(), false, undefined, randomBytes(32).toString('base64'));
    const proxy = connectFakeProxy(admin.grpcTarget, 'proxy-flagged', { autoAck: true });
    proxies.push(proxy);
    await proxy.next((update) => update.full);

    const refused = await admin.request('POST', '/admin/v1/gateway-models', modelBody('unflagged', privateUrl));
    expect(refused.status, refused.text).toBe(400);
    expect(refused.json.error).toMatchObject({ code: 'invalid_request', param: 'upstream.base_url' });
    expect(refused.json.error.message).toContain('upstream.allow_private_network');
    expect((await admin.request('GET', '/admin/v1/gateway-models/unflagged')).status).toBe(404);

    const flaggedBody = modelBody('self-hosted', privateUrl);
    const created = await admin.request('POST', '/admin/v1/gateway-models', { ...flaggedBody, upstream: { ...flaggedBody.upstream, allow_private_network: true } });
    expect(created.status, created.text).toBe(201);
    expect(created.json.upstream).toEqual({
      provider_kind: 'openai_compatible', base_url: privateUrl, model: 'vendor-model', has_api_key: true, allow_private_network: true, priority: 0, weight: 1,
    });
    expect((await admin.request('GET', '/admin/v1/gateway-models/self-hosted')).json.upstream.allow_private_network).toBe(true);
    expect(flagOf(await proxy.next((update) => flagOf(update, 'self-hosted') !== undefined), 'self-hosted')).toBe(true);

    // A model without the flag is pushed with allowPrivateNetwork false beside it.
    expect((await admin.request('POST', '/admin/v1/gateway-models', modelBody('public', 'https://public.example.test/v1'))).status).toBe(201);
    expect(flagOf(await proxy.next((update) => flagOf(update, 'public') !== undefined), 'public')).toBe(false);
    const late = connectFakeProxy(admin.grpcTarget, 'proxy-late', { autoAck: true });
    proxies.push(late);
    const snapshot = await late.next((update) => update.full);
    expect(snapshot.gatewayModels.map((model) => [model.slug, model.allowPrivateNetwork])).toEqual([['public', false], ['self-hosted', true]]);

    // Turning the flag off while the stored URL needs it is refused and changes nothing.
    const turnedOff = await admin.request('PATCH', '/admin/v1/gateway-models/self-hosted', { upstream: { allow_private_network: false } });
    expect(turnedOff.status, turnedOff.text).toBe(400);
    expect(turnedOff.json.error).toMatchObject({ code: 'invalid_request', param: 'upstream.allow_private_network' });
    expect((await admin.request('GET', '/admin/v1/gateway-models/self-hosted')).json.upstream).toMatchObject({ base_url: privateUrl, allow_private_network: true });
    // A private URL for a model without the flag is refused on update too (the service judges it with the stored flag).
    const moved = await admin.request('PATCH', '/admin/v1/gateway-models/public', { upstream: { base_url: 'http://10.1.2.3:8001/v1' } });
    expect(moved.status, moved.text).toBe(400);
    expect(moved.json.error).toMatchObject({ code: 'invalid_request', param: 'upstream.base_url' });
    // ...and accepted with the flag set in the same request, also for a name that resolves to a private address.
    const flagged = await admin.request('PATCH', '/admin/v1/gateway-models/public', { upstream: { base_url: 'https://rebound.example.test/v1', allow_private_network: true } });
    expect(flagged.status, flagged.text).toBe(200);
    expect(flagged.json.upstream).toMatchObject({ base_url: 'https://rebound.example.test/v1', allow_private_network: true });
    // Turning it off with a public URL in the same request is accepted and pushed.
    const publicAgain = await admin.request('PATCH', '/admin/v1/gateway-models/self-hosted', {
      upstream: { base_url: 'https://public.example.test/v3', allow_private_network: false },
    });
    expect(publicAgain.status, publicAgain.text).toBe(200);
    expect(publicAgain.json.upstream).toMatchObject({ base_url: 'https://public.example.test/v3', allow_private_network: false });
    expect(flagOf(await proxy.next((update) => flagOf(update, 'self-hosted') === false), 'self-hosted')).toBe(false);

    expect(await auditedChanges(admin, 'self-hosted')).toEqual([
      { action: 'gateway_model.create', changes: expect.objectContaining({ 'upstream.allow_private_network': { before: null, after: true }, 'upstream.base_url': { before: null, after: privateUrl } }) },
      { action: 'gateway_model.update', changes: {
        'upstream.base_url': { before: privateUrl, after: 'https://public.example.test/v3' },
        'upstream.allow_private_network': { before: true, after: false },
      } },
    ]);
    expect((await auditedChanges(admin, 'public'))[1]!.changes).toMatchObject({ 'upstream.allow_private_network': { before: false, after: true } });
  });

  itPg('is judged with private addresses allowed by the start-time re-check, and a refused model is served again once flagged', async () => {
    const databaseUrl = await freshDatabase();
    const encryptionKey = randomBytes(32).toString('base64');
    const lenient = await startAdmin(databaseUrl, true, undefined, encryptionKey);
    const token = lenient.token;
    expect((await lenient.request('POST', '/admin/v1/gateway-models', modelBody('local', 'http://127.0.0.1:9/v1'))).status).toBe(201);
    const flaggedBody = modelBody('flagged', privateUrl);
    const flagged = await lenient.request('POST', '/admin/v1/gateway-models', { ...flaggedBody, upstream: { ...flaggedBody.upstream, allow_private_network: true } });
    expect(flagged.status, flagged.text).toBe(201);
    await lenient.close();

    const logs = captureLogs();
    const strict = await startAdmin(databaseUrl, false, token, encryptionKey, logs.logger);
    const proxy = connectFakeProxy(strict.grpcTarget, 'proxy-recheck', { autoAck: true });
    proxies.push(proxy);
    const snapshot = await proxy.next((update) => update.full);
    expect(snapshot.gatewayModels.map((model) => [model.slug, model.allowPrivateNetwork])).toEqual([['flagged', true]]);
    const errors = logs.text().split('\n').filter((line) => line.includes('"level":50'));
    expect(errors.some((line) => line.includes('"slug":"local"'))).toBe(true);
    expect(errors.some((line) => line.includes('"slug":"flagged"'))).toBe(false);

    // Setting the flag on the refused model serves it again, with the connect-time guard off for it alone.
    const allowed = await strict.request('PATCH', '/admin/v1/gateway-models/local', { upstream: { allow_private_network: true } });
    expect(allowed.status, allowed.text).toBe(200);
    const served = await proxy.next((update) => flagOf(update, 'local') !== undefined);
    expect(served.gatewayModels.find((model) => model.slug === 'local')).toMatchObject({ allowPrivateNetwork: true, upstream: { baseUrl: 'http://127.0.0.1:9/v1' } });
  });
});
