import { X509Certificate, randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { configV1, ledgerV1 } from '@gateway/contracts';
import { issueSecret } from '@gateway/secrets';
import { scrapeMetrics, serviceTlsEnv, sharedTestPki, sumSamples } from '@gateway/testkit';
import { createLogger } from '@gateway/logger';
import { createProxyApp } from './app.ts';
import { loadProxyConfig } from './config.ts';
import { startConfigPeer } from './test-support/config-peer.ts';
import { gatewayModel, startProxyWorld, stateOf, tenant, waitFor, type ProxyWorld, type TestProxy } from './test-support/proxy-world.ts';

const acme = tenant('acme', { allowedGatewayModelSlugs: ['chat', 'extra'] });
const hello = [{ role: 'user' as const, content: 'hi [[fake:reply_words=2]]' }];

let world: ProxyWorld;
beforeAll(async () => {
  world = await startProxyWorld((baseUrl) => stateOf([acme], [gatewayModel('chat', baseUrl)]), { heartbeatIntervalMs: 100 });
  world.ledger.credit('acme', 10_000_000n);
});
afterAll(async () => { await world?.close(); });

async function statusOf(promise: Promise<unknown>): Promise<number> {
  try {
    await promise;
    return 200;
  } catch (error) {
    if (error instanceof OpenAI.APIError) return error.status ?? 0;
    throw error;
  }
}

async function readyz(proxy: TestProxy): Promise<number> {
  return (await fetch(`http://127.0.0.1:${proxy.ports.http}/readyz`)).status;
}

/** Resolves once a proxy acknowledged a version (or later). */
function acked(proxy: TestProxy, version: bigint): Promise<void> {
  return waitFor(() => world.admin.acks.some((a) => a.proxyId === proxy.proxyId && a.error === '' && a.appliedVersion >= version), 5000, `ack of ${version}`);
}

const helloCount = () => world.admin.acks.filter((ack) => ack.appliedVersion === 0n && ack.error === '').length;

describe('readiness', () => {
  it('resolves while the admin is unreachable and stays not ready, answering 503', async () => {
    const unused = createServer();
    await new Promise<void>((resolve) => unused.listen(0, '127.0.0.1', resolve));
    const { port } = unused.address() as { port: number };
    await new Promise<void>((resolve) => unused.close(() => resolve()));

    const app = await createProxyApp(
      loadProxyConfig({ ...serviceTlsEnv(await sharedTestPki(), 'proxy'), PROXY_HTTP_PORT: '0', PROXY_METRICS_PORT: '0', ADMIN_GRPC_URL: `127.0.0.1:${port}`, LEDGER_GRPC_URL: world.ledger.address }),
      { logger: createLogger('proxy', 'silent') },
    );
    try {
      expect(app.isReady()).toBe(false);
      const base = `http://127.0.0.1:${app.ports.http}`;
      expect((await fetch(`${base}/healthz`)).status).toBe(200);
      expect(await (await fetch(`${base}/healthz`)).json()).toEqual({ status: 'ok' });
      expect((await fetch(`${base}/readyz`)).status).toBe(503);
      const inference = await fetch(`${base}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${acme.apiKey}` }, body: '{}' });
      expect(inference.status).toBe(503);
      expect(((await inference.json()) as { error: { code: string } }).error.code).toBe('service_unavailable');

      // Its metrics say so: no snapshot, not fresh, and a staleness that grows from the start until one arrives.
      const metricsUrl = `http://127.0.0.1:${app.ports.metrics}/metrics`;
      const samples = await scrapeMetrics(metricsUrl);
      expect(sumSamples(samples, 'gateway_proxy_config_fresh')).toBe(0);
      expect(sumSamples(samples, 'gateway_proxy_config_version')).toBe(0);
      // The certificates it loaded: its own as client (a proxy serves no gRPC) and the CA's, each at its notAfter.
      const pki = await sharedTestPki();
      const notAfterSeconds = (pem: string) => new X509Certificate(pem).validToDate.getTime() / 1000;
      expect(samples.filter((sample) => sample.name === 'gateway_tls_certificate_expiry_timestamp_seconds').map((sample) => [sample.labels.certificate, sample.value]))
        .toEqual([['client', notAfterSeconds(pki.identities.proxy.certPem)], ['ca', notAfterSeconds(pki.caPem)]]);
      const firstStaleness = sumSamples(samples, 'gateway_proxy_config_staleness_seconds');
      expect(firstStaleness).toBeGreaterThan(0);
      let staleness = firstStaleness;
      for (const deadline = Date.now() + 5000; staleness <= firstStaleness && Date.now() < deadline;) {
        await new Promise((resolve) => setTimeout(resolve, 10));
        staleness = sumSamples(await scrapeMetrics(metricsUrl), 'gateway_proxy_config_staleness_seconds');
      }
      expect(staleness).toBeGreaterThan(firstStaleness);
    } finally {
      await app.close();
    }
  });

  it('becomes ready when the first snapshot arrives, after a hello', async () => {
    world.admin.setSilent(true);
    const hellosBefore = helloCount();
    const proxy = await world.startProxy();
    await waitFor(() => helloCount() > hellosBefore, 5000, 'hello');
    expect(proxy.isReady()).toBe(false);
    expect(await readyz(proxy)).toBe(503);
    expect(await statusOf(world.client(acme.apiKey, proxy).models.list())).toBe(503);

    world.admin.setSilent(false);
    world.admin.disconnectAll(); // the proxy redials, says hello again and now gets its snapshot
    await waitFor(() => proxy.isReady(), 5000, 'ready');
    expect(await readyz(proxy)).toBe(200);
    expect(await statusOf(world.client(acme.apiKey, proxy).chat.completions.create({ model: 'chat', messages: hello }))).toBe(200);
  });
});

describe('updates', () => {
  let proxy: TestProxy;
  beforeAll(async () => {
    proxy = await world.startProxy();
    await waitFor(() => proxy.isReady(), 5000, 'ready');
  });

  it('acknowledges every version it applies, heartbeats included', async () => {
    const version = world.admin.version();
    const acksOf = () => world.admin.acks.filter((ack) => ack.proxyId === proxy.proxyId && ack.appliedVersion === version).length;
    const before = acksOf();
    world.admin.heartbeat();
    await waitFor(() => acksOf() > before, 5000, 'heartbeat ack');
  });

  it('rotates a key as a hard cutover: once acked, the old secret is 401 and the new one works', async () => {
    const issued = issueSecret('apiKey');
    const version = world.admin.pushDelta({
      removedKeyHashes: [acme.key.keyHash],
      apiKeys: [{ keyHash: issued.hash, keyId: 'acme-key-2', projectId: 'acme-project' }],
    });
    await acked(proxy, version);
    expect(await statusOf(world.client(acme.apiKey, proxy).models.list())).toBe(401);
    expect(await statusOf(world.client(issued.secret, proxy).models.list())).toBe(200);
    acme.apiKey = issued.secret;
    acme.key = { keyHash: issued.hash, keyId: 'acme-key-2', projectId: 'acme-project' };
  });

  it('applies organisation, model and project changes from deltas', async () => {
    const client = () => world.client(acme.apiKey, proxy);
    let version = world.admin.pushDelta({ gatewayModels: [gatewayModel('extra', world.upstream.baseUrl)] });
    await acked(proxy, version);
    expect((await client().models.list()).data.map((m) => m.id)).toEqual(['chat', 'extra']);

    version = world.admin.pushDelta({ organisations: [{ ...acme.organisation, status: configV1.OrganisationStatus.ORGANISATION_STATUS_SUSPENDED }] });
    await acked(proxy, version);
    expect(await statusOf(client().models.list())).toBe(403);

    version = world.admin.pushDelta({ organisations: [acme.organisation], removedGatewayModelSlugs: ['extra'] });
    await acked(proxy, version);
    expect((await client().models.list()).data.map((m) => m.id)).toEqual(['chat']);

    version = world.admin.pushDelta({ projects: [{ ...acme.project, disabled: true }] });
    await acked(proxy, version);
    expect(await statusOf(client().models.list())).toBe(401);
    version = world.admin.pushDelta({ projects: [acme.project] });
    await acked(proxy, version);
    expect(await statusOf(client().models.list())).toBe(200);
  });

  it('refuses a delta that goes back in version with an error ack, and is resynced by a full snapshot', async () => {
    const current = world.admin.version();
    const acksBefore = world.admin.acks.length;
    world.admin.sendRaw({ version: current - 1n, full: false, removedKeyHashes: [acme.key.keyHash] });
    await waitFor(() => world.admin.acks.slice(acksBefore).some((a) => a.error !== ''), 5000, 'error ack');
    const errorAck = world.admin.acks.slice(acksBefore).find((a) => a.error !== '')!;
    expect(errorAck.appliedVersion).toBe(current);
    expect(await statusOf(world.client(acme.apiKey, proxy).models.list())).toBe(200);
  });
});

describe('large snapshots', () => {
  it('takes a full snapshot over 4 MiB in one message (PROXY_CONFIG_MAX_MESSAGE_BYTES), and refuses it under a 4 MiB limit', async () => {
    // 60,000 keys of about 110 bytes each: a single ~6.5 MB message, over grpc-js's default 4 MiB.
    const state = stateOf([acme], [gatewayModel('chat', world.upstream.baseUrl)]);
    for (let i = 0; i < 60_000; i += 1) {
      state.apiKeys.push({ keyHash: randomBytes(32).toString('hex'), keyId: `bulk-key-${i}`, projectId: `${acme.project.id}` });
    }
    expect(configV1.ConfigUpdate.encode(configV1.ConfigUpdate.fromPartial({ version: 1n, full: true, ...state })).finish().length)
      .toBeGreaterThan(5 * 1024 * 1024);
    const bigAdmin = await startConfigPeer(state);
    const tlsEnv = serviceTlsEnv(await sharedTestPki(), 'proxy');
    const start = (env: Record<string, string>) => createProxyApp(
      loadProxyConfig({ ...tlsEnv, PROXY_HTTP_PORT: '0', PROXY_METRICS_PORT: '0', ADMIN_GRPC_URL: bigAdmin.address, LEDGER_GRPC_URL: world.ledger.address, ...env }),
      { logger: createLogger('proxy', 'silent') },
    );
    const roomy = await start({ PROXY_ID: 'roomy' });
    const cramped = await start({ PROXY_ID: 'cramped', PROXY_CONFIG_MAX_MESSAGE_BYTES: String(4 * 1024 * 1024) });
    try {
      await waitFor(() => roomy.isReady(), 20_000, 'roomy proxy ready');
      const models = await fetch(`http://127.0.0.1:${roomy.ports.http}/v1/models`, { headers: { authorization: `Bearer ${acme.apiKey}` } });
      expect(models.status).toBe(200);
      // The cramped proxy's stream fails on the message and redials; the peer answers each hello with the snapshot again.
      await waitFor(() => bigAdmin.acks.filter((ack) => ack.proxyId === 'cramped' && ack.appliedVersion === 0n).length >= 2, 20_000, 'a redial');
      expect(cramped.isReady()).toBe(false);
      expect(bigAdmin.acks.some((ack) => ack.proxyId === 'cramped' && ack.appliedVersion > 0n)).toBe(false);
    } finally {
      await Promise.all([roomy.close(), cramped.close()]);
      await bigAdmin.close();
    }
  }, 60_000);
});

describe('staleness', () => {
  it('stops serving once the admin is silent for PROXY_CONFIG_STALENESS_MS, and resumes on a new full snapshot', async () => {
    const proxy = await world.startProxy({ PROXY_CONFIG_STALENESS_MS: '400' });
    await waitFor(() => proxy.isReady(), 5000, 'ready');
    const client = world.client(acme.apiKey, proxy);
    expect(await statusOf(client.chat.completions.create({ model: 'chat', messages: hello }))).toBe(200);

    world.admin.setSilent(true);
    await waitFor(() => !proxy.isReady(), 5000, 'stale');
    expect(await readyz(proxy)).toBe(503);
    const before = world.ledger.calls.reserve.length;
    const error = await client.chat.completions.create({ model: 'chat', messages: hello }).catch((e: unknown) => e);
    expect((error as InstanceType<typeof OpenAI.APIError>).status).toBe(503);
    expect((error as InstanceType<typeof OpenAI.APIError>).code).toBe('service_unavailable');
    expect(world.ledger.calls.reserve.length).toBe(before);

    // Heartbeats alone cannot revive it: it asks (by a redial's hello or an error ack) for a full snapshot.
    const fullsBefore = world.admin.fullSnapshotsSent();
    world.admin.setSilent(false);
    await waitFor(() => proxy.isReady(), 5000, 'resynced');
    expect(world.admin.fullSnapshotsSent()).toBeGreaterThan(fullsBefore);
    expect(await statusOf(client.chat.completions.create({ model: 'chat', messages: hello }))).toBe(200);
  });

  it('keeps serving across a dropped stream that reconnects within the staleness bound', async () => {
    const proxy = await world.startProxy();
    await waitFor(() => proxy.isReady(), 5000, 'ready');
    const hellosBefore = helloCount();
    world.admin.disconnectAll();
    expect(proxy.isReady()).toBe(true);
    await waitFor(() => helloCount() > hellosBefore, 5000, 'reconnect hello');
    await waitFor(() => world.admin.openStreams() >= 1);
    expect(await statusOf(world.client(acme.apiKey, proxy).models.list())).toBe(200);
  });
});

describe('graceful shutdown', () => {
  it('stops being ready at once, lets the in-flight request finish and settle, then refuses connections', async () => {
    const proxy = await world.startProxy();
    await waitFor(() => proxy.isReady(), 5000, 'ready');
    const settlesBefore = world.ledger.calls.settle.length;
    const inFlight = world.client(acme.apiKey, proxy).chat.completions
      .create({ model: 'chat', messages: [{ role: 'user', content: 'slow [[fake:delay_ms=300]] [[fake:reply_words=3]]' }] });
    await waitFor(() => world.upstream.requests.some((r) => JSON.stringify(r.body).includes('slow')), 5000, 'upstream call');

    const closed = proxy.close();
    expect(proxy.isReady()).toBe(false);
    const completion = await inFlight;
    expect(completion.choices[0]!.message.content).toBe('w1 w2 w3');
    await closed;
    expect(world.ledger.calls.settle.length).toBe(settlesBefore + 1);
    expect(world.ledger.calls.settle.at(-1)!.usageSource).toBe(ledgerV1.UsageSource.USAGE_SOURCE_UPSTREAM);
    await expect(fetch(`http://127.0.0.1:${proxy.ports.http}/healthz`)).rejects.toThrow();
  });
});
