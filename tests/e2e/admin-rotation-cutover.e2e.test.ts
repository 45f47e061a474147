/**
 * Key rotation is a hard cutover, end to end: ledger, admin and two proxies as processes over
 * real PostgreSQL, a fake upstream, and a separate process hammering both proxies with the old
 * key while the rotate call runs. Zero requests with the old key that started after the call
 * returned may succeed, and the new key must work on every proxy at that very moment.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeUpstream, type FakeUpstream } from '@gateway/fake-upstream';
import { issueSecret } from '@gateway/secrets';
import { createTestDatabase, testPostgresUrl, type TestDatabase } from '@gateway/testkit';
import type { HammerRecord } from '../support/admin-rotation-hammer.ts';
import { freePort, startService, waitUntilReady, type ServiceProcess } from '../support/service-processes.ts';

const serverUrl = testPostgresUrl();
const adminToken = issueSecret('adminToken').secret;
const nowMs = () => performance.timeOrigin + performance.now();

describe.skipIf(!serverUrl)('key rotation cutover across proxies', () => {
  let database: TestDatabase;
  let upstream: FakeUpstream;
  const services: ServiceProcess[] = [];
  let adminBase = '';
  const proxyBases: string[] = [];

  async function admin(method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
    const response = await fetch(`${adminBase}${path}`, {
      method,
      headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json', ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const json = await response.json() as Record<string, any>;
    if (response.status >= 300) throw new Error(`${method} ${path} -> ${response.status}: ${JSON.stringify(json)}`);
    return { json, headers: response.headers };
  }

  beforeAll(async () => {
    database = await createTestDatabase(serverUrl!);
    upstream = await startFakeUpstream();
    const [ledgerGrpc, ledgerHttp, adminHttp, adminGrpc, proxyA, proxyB] = await Promise.all(Array.from({ length: 6 }, freePort));
    const common = { DATABASE_URL: database.url, LOG_LEVEL: 'warn', BIND_HOST: '127.0.0.1' };
    const ledger = startService('ledger', { ...common, LEDGER_GRPC_PORT: String(ledgerGrpc), LEDGER_HTTP_PORT: String(ledgerHttp) });
    services.push(ledger);
    await waitUntilReady(ledger, `http://127.0.0.1:${ledgerHttp}/readyz`);
    const adminService = startService('admin', {
      ...common,
      ADMIN_HTTP_PORT: String(adminHttp), ADMIN_GRPC_PORT: String(adminGrpc), LEDGER_GRPC_URL: `127.0.0.1:${ledgerGrpc}`,
      ADMIN_ENCRYPTION_KEY: randomBytes(32).toString('base64'), ADMIN_BOOTSTRAP_TOKEN: adminToken, ADMIN_ALLOW_PRIVATE_UPSTREAMS: 'true',
    });
    services.push(adminService);
    await waitUntilReady(adminService, `http://127.0.0.1:${adminHttp}/readyz`);
    for (const [index, port] of [proxyA, proxyB].entries()) {
      const proxy = startService('proxy', {
        LOG_LEVEL: 'warn', BIND_HOST: '127.0.0.1', PROXY_HTTP_PORT: String(port), PROXY_ID: `cutover-proxy-${index}`,
        ADMIN_GRPC_URL: `127.0.0.1:${adminGrpc}`, LEDGER_GRPC_URL: `127.0.0.1:${ledgerGrpc}`,
      });
      services.push(proxy);
      await waitUntilReady(proxy, `http://127.0.0.1:${port}/readyz`);
      proxyBases.push(`http://127.0.0.1:${port}/v1`);
    }
    adminBase = `http://127.0.0.1:${adminHttp}/admin/v1`;
  }, 90_000);

  afterAll(async () => {
    for (const service of [...services].reverse()) await service.stop();
    await upstream?.close();
    await database?.drop();
  });

  it('refuses the old key on every proxy from the moment the rotate call returns, and accepts the new one there', async () => {
    await admin('POST', '/gateway-models', {
      slug: 'cutover-chat', default_max_tokens: 16, max_context_tokens: 4096,
      input_price_micros_per_mtok: '1000000', output_price_micros_per_mtok: '2000000',
      upstream: { provider_kind: 'openai_compatible', base_url: upstream.baseUrl, model: 'vendor-cutover' },
    });
    const organisation = (await admin('POST', '/organisations', { name: 'Cutover', rpm_limit: 1_000_000, allowed_gateway_models: ['cutover-chat'] })).json;
    await admin('POST', `/organisations/${organisation.id}/credits`, { amount_micros: '1000000000', reason: 'cutover test' }, { 'idempotency-key': 'cutover' });
    const created = (await admin('POST', `/organisations/${organisation.id}/projects`, { name: 'hammered' })).json;
    const oldKey: string = created.api_key;

    const hammer = spawn(process.execPath, [fileURLToPath(new URL('../support/admin-rotation-hammer.ts', import.meta.url))], {
      env: { PATH: process.env.PATH ?? '', PROXY_URLS: proxyBases.join(','), API_KEY: oldKey, MODEL: 'cutover-chat', CONCURRENCY: '2', MAX_DURATION_MS: '60000' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let hammerOutput = '';
    hammer.stdout.on('data', (chunk: Buffer) => { hammerOutput += chunk.toString(); });
    hammer.stderr.on('data', (chunk: Buffer) => { hammerOutput += chunk.toString(); });
    const hammerExited = new Promise<number | null>((resolve) => hammer.once('exit', resolve));
    try {
      // Let the old key succeed under load on both proxies first.
      const warmDeadline = Date.now() + 20_000;
      while (!hammerOutput.includes('hammer started') && Date.now() < warmDeadline) await new Promise((resolve) => setTimeout(resolve, 50));
      await new Promise((resolve) => setTimeout(resolve, 700));

      const rotation = await admin('POST', `/projects/${created.project.id}/api-key-rotations`);
      const returnedAtMs = nowMs();
      expect(rotation.headers.get('x-config-propagation')).toBeNull();
      const newKey: string = rotation.json.api_key;

      // Right now: the new key works and the old one is refused, on every proxy.
      const outcomes = await Promise.all(proxyBases.map(async (baseURL) => {
        const fresh = await new OpenAI({ apiKey: newKey, baseURL, maxRetries: 0 }).chat.completions.create({
          model: 'cutover-chat', messages: [{ role: 'user', content: 'new key [[fake:reply_words=3]]' }],
        });
        const stale = await new OpenAI({ apiKey: oldKey, baseURL, maxRetries: 0 }).chat.completions.create({
          model: 'cutover-chat', messages: [{ role: 'user', content: 'old key' }],
        }).then(() => 'accepted', (error: unknown) => error);
        return { model: fresh.model, stale };
      }));
      for (const outcome of outcomes) {
        expect(outcome.model).toBe('cutover-chat');
        expect(outcome.stale).toBeInstanceOf(OpenAI.AuthenticationError);
      }
      await new Promise((resolve) => setTimeout(resolve, 700));
      hammer.kill('SIGTERM');
      expect(await hammerExited).toBe(0);

      const records = hammerOutput.split('\n').filter((line) => line.startsWith('{')).map((line) => JSON.parse(line) as HammerRecord);
      const before = records.filter((record) => record.endedAtMs < returnedAtMs);
      const after = records.filter((record) => record.startedAtMs > returnedAtMs);
      // The hammer really used the old key successfully on both proxies before the rotation...
      for (const proxy of proxyBases) expect(before.filter((record) => record.proxy === proxy && record.status === 200).length, proxy).toBeGreaterThan(0);
      // ...and kept going afterwards on both, with not one success.
      for (const proxy of proxyBases) expect(after.filter((record) => record.proxy === proxy).length, proxy).toBeGreaterThan(0);
      expect(after.filter((record) => record.status === 200)).toEqual([]);
      expect(new Set(after.map((record) => record.status))).toEqual(new Set([401]));
    } finally {
      if (hammer.exitCode === null) hammer.kill('SIGKILL');
    }
  }, 90_000);
});
