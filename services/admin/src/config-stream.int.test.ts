/**
 * The config stream (docs/config-stream.md) over real PostgreSQL and a real grpc-js client:
 * full snapshot on hello, acks, wait-for-ack on changes, the pending header after the timeout,
 * heartbeats, resend on an error ack, and versions that keep growing across restarts.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { configV1 } from '@gateway/contracts';
import { hashSecret } from '@gateway/secrets';
import { openDatabase } from '@gateway/db';
import { createTestDatabase, testPostgresUrl, type TestDatabase } from '@gateway/testkit';
import { prepareAdminSchema } from './admin-schema.ts';
import { bumpConfigVersion, createConfigSnapshotSource, currentConfigVersion } from './catalog/domain/config-snapshot.ts';
import { createCredentialCipher } from './common/domain/credential-cipher.ts';
import { startAdminHarness, type AdminHarness } from './test-support/admin-harness.ts';
import { captureLogs, type CapturedLogs } from './test-support/captured-logs.ts';
import { connectFakeProxy, type FakeProxy } from './test-support/fake-proxy.ts';

const serverUrl = testPostgresUrl();
const itPg = it.skipIf(!serverUrl);
const ackTimeoutMs = 400;
const upstreamCredential = `sk-vendor-${randomBytes(8).toString('hex')}`;

const testDatabases: TestDatabase[] = [];
let admin: AdminHarness;
let logs: CapturedLogs;
const proxies: FakeProxy[] = [];

function connect(proxyId: string, options: { autoAck: boolean; ackDelayMs?: number }, target = admin.grpcTarget): FakeProxy {
  const proxy = connectFakeProxy(target, proxyId, options);
  proxies.push(proxy);
  return proxy;
}

beforeAll(async () => {
  if (!serverUrl) return;
  const database = await createTestDatabase(serverUrl);
  testDatabases.push(database);
  logs = captureLogs();
  admin = await startAdminHarness({
    databaseUrl: database.url,
    logger: logs.logger,
    env: { SNAPSHOT_ACK_TIMEOUT_MS: String(ackTimeoutMs), ADMIN_HEARTBEAT_INTERVAL_MS: '100', ADMIN_ALLOW_PRIVATE_UPSTREAMS: 'true' },
  });
});

afterEach(() => {
  // A proxy left connected would make every later change wait for its acks.
  for (const proxy of proxies.splice(0)) proxy.close();
});

afterAll(async () => {
  await admin?.close();
  await Promise.all(testDatabases.map((database) => database.drop()));
});

describe('the config stream', () => {
  itPg('answers a hello with a full snapshot of everything proxies serve, credential decrypted', async () => {
    const model = await admin.request('POST', '/admin/v1/gateway-models', {
      slug: 'stream-model', display_name: 'Stream', default_max_tokens: 32, max_context_tokens: 2048,
      input_price_micros_per_mtok: '1250000', output_price_micros_per_mtok: '3000001', provider_output_cost_micros_per_mtok: '7',
      cached_input_price_micros_per_mtok: '125000', cache_write_1h_price_micros_per_mtok: '2500000', reasoning_price_micros_per_mtok: '4000000',
      upstream: { provider_kind: 'openai_compatible', base_url: 'http://127.0.0.1:9/v1', model: 'vendor-m', api_key: upstreamCredential },
    });
    expect(model.status, model.text).toBe(201);
    const organisation = (await admin.request('POST', '/admin/v1/organisations', {
      name: 'Streamed', billing_mode: 'internal', rpm_limit: 77, allowed_gateway_models: ['stream-model'],
    })).json;
    const created = (await admin.request('POST', `/admin/v1/organisations/${organisation.id}/projects`, { name: 'p' })).json;

    const proxy = connect('proxy-snapshot', { autoAck: true });
    const snapshot = await proxy.next((update) => update.full);
    expect(snapshot.version).toBeGreaterThan(1n);
    expect(snapshot.producedAtMs).toBeGreaterThan(0n);
    expect(snapshot.organisations).toContainEqual({
      id: organisation.id, status: configV1.OrganisationStatus.ORGANISATION_STATUS_ACTIVE,
      billingMode: configV1.BillingMode.BILLING_MODE_INTERNAL, rpmLimit: 77, allowedGatewayModelSlugs: ['stream-model'], modelAliases: {},
      responseRetentionS: undefined, responseStoreDisabled: false,
    });
    // The stored-Responses key (32 bytes, derived) and the platform's retention (30 days by default) come with every full snapshot.
    expect(snapshot.responseStoreKey).toHaveLength(32);
    expect(snapshot.responseRetentionS).toBe(2_592_000n);
    expect(snapshot.projects).toContainEqual({ id: created.project.id, organisationId: organisation.id, disabled: false });
    expect(snapshot.apiKeys).toContainEqual({ keyHash: hashSecret(created.api_key), keyId: created.project.api_key.id, projectId: created.project.id });
    expect(JSON.stringify(snapshot, (_key, value) => (typeof value === 'bigint' ? value.toString() : value))).not.toContain(created.api_key);
    const streamed = snapshot.gatewayModels.find((candidate) => candidate.slug === 'stream-model')!;
    expect(streamed).toEqual({
      slug: 'stream-model', displayName: 'Stream', defaultMaxTokens: 32, maxContextTokens: 2048,
      inputPriceMicrosPerMtok: 1_250_000n, outputPriceMicrosPerMtok: 3_000_001n,
      providerInputCostMicrosPerMtok: 0n, providerOutputCostMicrosPerMtok: 7n,
      // The price sheet by token class: what was set, the other input classes at the input price, reasoning cost absent (as output).
      cachedInputPriceMicrosPerMtok: 125_000n, cacheWrite5mPriceMicrosPerMtok: 1_250_000n, cacheWrite1hPriceMicrosPerMtok: 2_500_000n,
      reasoningPriceMicrosPerMtok: 4_000_000n, audioInputPriceMicrosPerMtok: 1_250_000n, imageInputPriceMicrosPerMtok: 1_250_000n,
      providerCachedInputCostMicrosPerMtok: 0n, providerCacheWrite5mCostMicrosPerMtok: 0n, providerCacheWrite1hCostMicrosPerMtok: 0n,
      providerAudioInputCostMicrosPerMtok: 0n, providerImageInputCostMicrosPerMtok: 0n,
      upstream: { providerKind: 'openai_compatible', baseUrl: 'http://127.0.0.1:9/v1', model: 'vendor-m', apiKey: upstreamCredential },
      createdAtS: BigInt(Math.floor(Date.parse(model.json.created_at) / 1000)),
      allowPrivateNetwork: true, // this admin runs with ADMIN_ALLOW_PRIVATE_UPSTREAMS=true
      kind: 'chat', inputModalities: [], // text only ("text" is implied on the wire)
      reasoningEfforts: [], thinkingModes: [], maxThinkingBudgetTokens: 0, returnsReasoning: false,
      // The complete deployment list: the model's own upstream alone, as "primary", with its provider costs.
      deployments: [{
        name: 'primary', upstream: { providerKind: 'openai_compatible', baseUrl: 'http://127.0.0.1:9/v1', model: 'vendor-m', apiKey: upstreamCredential },
        allowPrivateNetwork: true, priority: 0, weight: 1,
        providerInputCostMicrosPerMtok: 0n, providerOutputCostMicrosPerMtok: 7n, providerCachedInputCostMicrosPerMtok: 0n,
        providerCacheWrite5mCostMicrosPerMtok: 0n, providerCacheWrite1hCostMicrosPerMtok: 0n, providerReasoningCostMicrosPerMtok: undefined,
        providerAudioInputCostMicrosPerMtok: 0n, providerImageInputCostMicrosPerMtok: 0n,
      }],
    });
    expect(logs.text()).not.toContain(upstreamCredential);
  });

  itPg('returns a new project only after the connected proxy acknowledged the version holding its key', async () => {
    const organisation = (await admin.request('POST', '/admin/v1/organisations', { name: 'Cutover' })).json;
    // A proxy that takes a while to apply each update before acknowledging it.
    const proxy = connect('proxy-slow', { autoAck: true, ackDelayMs: 150 });
    await proxy.next((update) => update.full);

    const response = await admin.request('POST', `/admin/v1/organisations/${organisation.id}/projects`, { name: 'hot' });
    expect(response.status, response.text).toBe(201);
    expect(response.headers.get('x-config-propagation')).toBeNull();
    const keyHash = hashSecret(response.json.api_key);
    const holding = proxy.updates.find((update) => update.apiKeys.some((key) => key.keyHash === keyHash));
    expect(holding).toBeDefined();
    expect(proxy.acknowledgedVersions.some((version) => version >= holding!.version)).toBe(true);
  });

  itPg('answers a suspension only after the proxy holds the suspended status', async () => {
    const organisation = (await admin.request('POST', '/admin/v1/organisations', { name: 'To suspend' })).json;
    const proxy = connect('proxy-suspend', { autoAck: true, ackDelayMs: 150 });
    await proxy.next((update) => update.full);
    const response = await admin.request('PATCH', `/admin/v1/organisations/${organisation.id}`, { status: 'suspended' });
    expect(response.status).toBe(200);
    expect(response.headers.get('x-config-propagation')).toBeNull();
    const suspended = proxy.updates.find((update) => update.organisations.some(
      (candidate) => candidate.id === organisation.id && candidate.status === configV1.OrganisationStatus.ORGANISATION_STATUS_SUSPENDED,
    ));
    expect(suspended).toBeDefined();
    expect(proxy.acknowledgedVersions.some((version) => version >= suspended!.version)).toBe(true);
  });

  itPg('returns after the timeout with x-config-propagation: pending when a proxy stays silent', async () => {
    const organisation = (await admin.request('POST', '/admin/v1/organisations', { name: 'Silent' })).json;
    const proxy = connect('proxy-silent', { autoAck: false });
    await proxy.next((update) => update.full);
    const response = await admin.request('POST', `/admin/v1/organisations/${organisation.id}/projects`, { name: 'pending' });
    expect(response.status, response.text).toBe(201);
    expect(response.headers.get('x-config-propagation')).toBe('pending');
    expect(response.json.api_key).toMatch(/^gwsk_/);
    // The change was committed and sent all the same.
    await proxy.next((update) => update.apiKeys.some((key) => key.keyHash === hashSecret(response.json.api_key)));
    expect(logs.text()).toMatch(/"pendingProxyIds":\["proxy-silent"\]/);
  });

  itPg('sends heartbeats: the held version, no changes, the admin clock', async () => {
    const proxy = connect('proxy-heartbeat', { autoAck: true });
    const snapshot = await proxy.next((update) => update.full);
    const heartbeat = await proxy.next((update) => !update.full);
    expect(heartbeat).toMatchObject({
      version: snapshot.version, full: false, organisations: [], projects: [], apiKeys: [], gatewayModels: [],
      removedOrganisationIds: [], removedProjectIds: [], removedKeyHashes: [], removedGatewayModelSlugs: [],
    });
    expect(heartbeat.producedAtMs).toBeGreaterThanOrEqual(snapshot.producedAtMs);
  });

  itPg('resends a full snapshot when a proxy reports it could not apply an update', async () => {
    const proxy = connect('proxy-error', { autoAck: false });
    const snapshot = await proxy.next((update) => update.full);
    proxy.ack(0n, 'could not parse upstream of model x');
    const resent = await proxy.next((update) => update.full && update !== snapshot);
    expect(resent.version).toBe(snapshot.version);
    expect(resent.gatewayModels).toEqual(snapshot.gatewayModels);
    expect(logs.text()).toContain('proxy-error');
  });

  itPg('keeps versions increasing across an admin restart on the same database', async () => {
    const database = await createTestDatabase(serverUrl!);
    testDatabases.push(database);
    const token = admin.token;
    const encryptionKey = randomBytes(32).toString('base64');
    const first = await startAdminHarness({ databaseUrl: database.url, token, encryptionKey, env: { SNAPSHOT_ACK_TIMEOUT_MS: String(ackTimeoutMs) } });
    let versionBeforeRestart: bigint;
    try {
      const organisation = (await first.request('POST', '/admin/v1/organisations', { name: 'Restart' })).json;
      await first.request('POST', `/admin/v1/organisations/${organisation.id}/projects`, { name: 'p' });
      const proxy = connect('proxy-restart-1', { autoAck: true }, first.grpcTarget);
      versionBeforeRestart = (await proxy.next((update) => update.full)).version;
      expect(versionBeforeRestart).toBeGreaterThanOrEqual(3n);
    } finally {
      await first.close();
    }

    const second = await startAdminHarness({ databaseUrl: database.url, token, encryptionKey, env: { SNAPSHOT_ACK_TIMEOUT_MS: String(ackTimeoutMs) } });
    try {
      const proxy = connect('proxy-restart-2', { autoAck: true }, second.grpcTarget);
      const afterRestart = await proxy.next((update) => update.full);
      expect(afterRestart.version).toBe(versionBeforeRestart);
      const created = await second.request('POST', '/admin/v1/organisations', { name: 'After restart' });
      expect(created.status).toBe(201);
      const next = await proxy.next((update) => update.organisations.some((candidate) => candidate.id === created.json.id));
      expect(next).toMatchObject({ version: versionBeforeRestart + 1n, full: false });
    } finally {
      await second.close();
    }
  });
  itPg('sends a key rotation to several proxies as one delta: the old hash removed, the new one added, nothing else', async () => {
    const organisation = (await admin.request('POST', '/admin/v1/organisations', { name: 'Rotating' })).json;
    const created = (await admin.request('POST', `/admin/v1/organisations/${organisation.id}/projects`, { name: 'rot' })).json;
    const fleet = ['proxy-a', 'proxy-b', 'proxy-c'].map((id, index) => connect(id, { autoAck: true, ackDelayMs: 40 * index }));
    await Promise.all(fleet.map((proxy) => proxy.next((update) => update.full)));

    const rotated = await admin.request('POST', `/admin/v1/projects/${created.project.id}/api-key-rotations`);
    expect(rotated.status, rotated.text).toBe(201);
    expect(rotated.headers.get('x-config-propagation')).toBeNull();
    const oldHash = hashSecret(created.api_key);
    const newHash = hashSecret(rotated.json.api_key);
    for (const proxy of fleet) {
      const delta = proxy.updates.find((update) => update.removedKeyHashes.includes(oldHash))!;
      expect(delta).toMatchObject({
        full: false, organisations: [], projects: [], gatewayModels: [], removedKeyHashes: [oldHash],
        apiKeys: [{ keyHash: newHash, keyId: rotated.json.project.api_key.id, projectId: created.project.id }],
      });
      // Acknowledged before the call returned.
      expect(proxy.acknowledgedVersions).toContain(delta.version);
      // The old key as a retired one, for the request log's 401 (never to authenticate): its project and when.
      expect(delta.retiredApiKeys.map(({ keyHash, projectId }) => ({ keyHash, projectId }))).toEqual([{ keyHash: oldHash, projectId: created.project.id }]);
      expect(Math.abs(Number(delta.retiredApiKeys[0]!.retiredAtMs) - Date.now())).toBeLessThan(60_000);
    }
    // A proxy that connects now gets it in its full snapshot too.
    const late = connect('proxy-late', { autoAck: true });
    const full = await late.next((update) => update.full);
    expect(full.retiredApiKeys.map((key) => key.keyHash)).toContain(oldHash);
    expect(full.apiKeys.map((key) => key.keyHash)).not.toContain(oldHash);
  });

  itPg('answers a proxy that reconnects (a proxy restart) with a full snapshot holding the latest changes', async () => {
    const first = connect('proxy-restarting', { autoAck: true });
    await first.next((update) => update.full);
    first.close();
    const organisation = (await admin.request('POST', '/admin/v1/organisations', { name: 'While away' })).json;
    const second = connect('proxy-restarting', { autoAck: true });
    const snapshot = await second.next((update) => update.full);
    expect(snapshot.organisations.map((candidate) => candidate.id)).toContain(organisation.id);
  });

  itPg('disconnects a proxy that does not acknowledge a change in time, so it resyncs', async () => {
    const organisation = (await admin.request('POST', '/admin/v1/organisations', { name: 'Laggard' })).json;
    const proxy = connect('proxy-laggard', { autoAck: false });
    const snapshot = await proxy.next((update) => update.full);
    proxy.ack(snapshot.version);
    const response = await admin.request('PATCH', `/admin/v1/organisations/${organisation.id}`, { rpm_limit: 5 });
    expect(response.headers.get('x-config-propagation')).toBe('pending');
    expect((await proxy.ended).code).toBe(14); // UNAVAILABLE: reconnect and resync
  });
});

describe('the change log', () => {
  itPg('builds deltas from it, and answers a stream behind what was pruned with "full needed"', async () => {
    const database = await createTestDatabase(serverUrl!);
    testDatabases.push(database);
    const db = await openDatabase({ url: database.url, schema: 'admin', poolSize: 2 });
    try {
      await prepareAdminSchema(db);
      const source = createConfigSnapshotSource(db, createCredentialCipher(randomBytes(32).toString('base64')));
      const before = await currentConfigVersion(db);
      expect(await source.deltaSince(before - 1n)).toBe('full_needed'); // older than the log itself
      const version = await db.transaction((tx) => bumpConfigVersion(tx, [{ kind: 'organisation', ref: 'org_000000000000000000000abc' }]));
      expect(await source.deltaSince(before)).toMatchObject({ version, organisations: [], removedOrganisationIds: ['org_000000000000000000000abc'] });
      expect(await source.deltaSince(version)).toMatchObject({ version, removedOrganisationIds: [] });
      expect(await source.prune(0)).toBe(1);
      expect(await source.deltaSince(before)).toBe('full_needed');
      expect(await source.deltaSince(version)).toMatchObject({ version });
    } finally {
      await db.close();
    }
  });
});

describe('the config stream with a small message limit', () => {
  itPg('splits a large snapshot into parts of one version, and only the last part\'s ack completes it', async () => {
    const database = await createTestDatabase(serverUrl!);
    testDatabases.push(database);
    const small = await startAdminHarness({ databaseUrl: database.url, maxConfigUpdateBytes: 150, env: { SNAPSHOT_ACK_TIMEOUT_MS: '3000' } });
    try {
      const organisation = (await small.request('POST', '/admin/v1/organisations', { name: 'Many projects' })).json;
      const keys: string[] = [];
      for (let index = 0; index < 30; index += 1) {
        keys.push((await small.request('POST', `/admin/v1/organisations/${organisation.id}/projects`, { name: `p${index}` })).json.api_key);
      }
      const proxy = connect('proxy-parts', { autoAck: false }, small.grpcTarget);
      const first = await proxy.next((update) => update.full);
      const partsOf = (version: bigint) => proxy.updates.filter((update) => update.version === version);
      // Keys come last, so every part has arrived once the last key has.
      const expectedHashes = new Set(keys.map(hashSecret));
      await vi.waitFor(() => expect(new Set(partsOf(first.version).flatMap((part) => part.apiKeys.map((key) => key.keyHash)))).toEqual(expectedHashes));
      const parts = partsOf(first.version);
      expect(parts.length).toBeGreaterThan(1);
      expect(parts.slice(1).every((part) => !part.full)).toBe(true);
      // Keys come last: the first part (which replaces everything) holds the organisations.
      expect(parts[0]!.organisations.map((candidate) => candidate.id)).toEqual([organisation.id]);

      for (const _part of parts) proxy.ack(first.version);

      // A rotation is three entries (the old hash removed, the old key as a retired one for the
      // request log, the new key added): three parts here, the key last. Acknowledging all three
      // completes the version: the call returns acknowledged.
      const projectId = (await small.request('GET', `/admin/v1/organisations/${organisation.id}/projects?limit=1`)).json.data[0].id;
      const rotate = async (after: bigint) => {
        const pendingCall = small.request('POST', `/admin/v1/projects/${projectId}/api-key-rotations`);
        const delta = await proxy.next((update) => update.version > after && update.removedKeyHashes.length > 0);
        await vi.waitFor(() => expect(partsOf(delta.version).some((part) => part.apiKeys.length > 0)).toBe(true));
        expect(partsOf(delta.version).length).toBe(3);
        return { pendingCall, delta };
      };
      const acknowledged = await rotate(first.version);
      for (let part = 0; part < 3; part += 1) proxy.ack(acknowledged.delta.version);
      const response = await acknowledged.pendingCall;
      expect(response.status).toBe(201);
      expect(response.headers.get('x-config-propagation')).toBeNull();

      // Even claiming the new version, the ack of the first part completes nothing: the call
      // waits out SNAPSHOT_ACK_TIMEOUT_MS, answers pending, and the proxy is disconnected.
      const unfinished = await rotate(acknowledged.delta.version);
      proxy.ack(unfinished.delta.version);
      const pending = await unfinished.pendingCall;
      expect(pending.status).toBe(201);
      expect(pending.headers.get('x-config-propagation')).toBe('pending');
      expect((await proxy.ended).code).toBe(14);
    } finally {
      await small.close();
    }
  });
});
