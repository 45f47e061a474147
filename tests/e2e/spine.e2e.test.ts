/**
 * The spine end to end: ledger, admin and proxy as three processes over real PostgreSQL, driven
 * by the official `openai` client against a fake upstream. Money is asserted to the micro-rupee.
 */
import { randomBytes } from 'node:crypto';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { leakMarkers, startFakeUpstream, type FakeUpstream } from '@gateway/fake-upstream';
import { issueSecret } from '@gateway/secrets';
import { createTestDatabase, testPostgresUrl, type TestDatabase } from '@gateway/testkit';
import { freePort, startService, waitUntilReady, type ServiceProcess } from '../support/service-processes.ts';

const serverUrl = testPostgresUrl();
const adminToken = issueSecret('adminToken').secret;
const upstreamCredential = `sk-vendor-${randomBytes(8).toString('hex')}`;
const inputPriceMicrosPerMtok = 2_000_000n; // ₹2 per million input tokens
const outputPriceMicrosPerMtok = 5_000_000n; // ₹5 per million output tokens
const creditMicros = 10_000_000n; // ₹10

describe.skipIf(!serverUrl)('the spine end to end', () => {
  let database: TestDatabase;
  let upstream: FakeUpstream;
  const services: ServiceProcess[] = [];
  let adminBase = '';
  let proxyBase = '';
  let apiKey = '';
  let organisationId = '';

  async function admin(method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
    const response = await fetch(`${adminBase}${path}`, {
      method,
      headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json', ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const json = await response.json() as Record<string, any>;
    if (response.status >= 300) throw new Error(`${method} ${path} -> ${response.status}: ${JSON.stringify(json)}`);
    return json;
  }

  beforeAll(async () => {
    database = await createTestDatabase(serverUrl!);
    upstream = await startFakeUpstream({ requiredApiKey: upstreamCredential });
    const [ledgerGrpc, ledgerHttp, adminHttp, adminGrpc, proxyHttp] = await Promise.all(Array.from({ length: 5 }, freePort));
    const common = { DATABASE_URL: database.url, LOG_LEVEL: 'info', BIND_HOST: '127.0.0.1' };

    const ledger = startService('ledger', { ...common, LEDGER_GRPC_PORT: String(ledgerGrpc), LEDGER_HTTP_PORT: String(ledgerHttp) });
    services.push(ledger);
    await waitUntilReady(ledger, `http://127.0.0.1:${ledgerHttp}/readyz`);

    const adminService = startService('admin', {
      ...common,
      ADMIN_HTTP_PORT: String(adminHttp), ADMIN_GRPC_PORT: String(adminGrpc),
      LEDGER_GRPC_URL: `127.0.0.1:${ledgerGrpc}`,
      ADMIN_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
      ADMIN_BOOTSTRAP_TOKEN: adminToken,
      ADMIN_ALLOW_PRIVATE_UPSTREAMS: 'true',
    });
    services.push(adminService);
    await waitUntilReady(adminService, `http://127.0.0.1:${adminHttp}/readyz`);

    const proxy = startService('proxy', {
      LOG_LEVEL: 'info', BIND_HOST: '127.0.0.1',
      PROXY_HTTP_PORT: String(proxyHttp),
      ADMIN_GRPC_URL: `127.0.0.1:${adminGrpc}`, LEDGER_GRPC_URL: `127.0.0.1:${ledgerGrpc}`,
    });
    services.push(proxy);
    await waitUntilReady(proxy, `http://127.0.0.1:${proxyHttp}/readyz`);

    adminBase = `http://127.0.0.1:${adminHttp}/admin/v1`;
    proxyBase = `http://127.0.0.1:${proxyHttp}/v1`;

    const model = {
      default_max_tokens: 64, max_context_tokens: 4096,
      input_price_micros_per_mtok: inputPriceMicrosPerMtok.toString(),
      output_price_micros_per_mtok: outputPriceMicrosPerMtok.toString(),
      provider_input_cost_micros_per_mtok: '1000000', provider_output_cost_micros_per_mtok: '3000000',
    };
    await admin('POST', '/gateway-models', {
      ...model, slug: 'acme-chat', display_name: 'Acme Chat',
      upstream: { provider_kind: 'openai_compatible', base_url: upstream.baseUrl, model: 'upstream-secret-model', api_key: upstreamCredential },
    });
    await admin('POST', '/gateway-models', {
      ...model, slug: 'not-for-acme',
      upstream: { provider_kind: 'openai_compatible', base_url: upstream.baseUrl, model: 'other-upstream-model', api_key: upstreamCredential },
    });
    const organisation = await admin('POST', '/organisations', { name: 'Acme', allowed_gateway_models: ['acme-chat'] });
    organisationId = organisation.id;
    await admin('POST', `/organisations/${organisationId}/credits`, { amount_micros: creditMicros.toString(), reason: 'e2e opening credit' }, { 'idempotency-key': 'e2e-credit-1' });
    const project = await admin('POST', `/organisations/${organisationId}/projects`, { name: 'e2e' });
    apiKey = project.api_key;
  }, 90_000);

  afterAll(async () => {
    // Proxy first, as in production: its reservations resolve while the ledger still runs.
    for (const service of [...services].reverse()) await service.stop();
    await upstream?.close();
    await database?.drop();
  });

  it('serves a completion and debits exactly the priced usage', async () => {
    const client = new OpenAI({ apiKey, baseURL: proxyBase, maxRetries: 0 });
    const completion = await client.chat.completions.create({
      model: 'acme-chat',
      messages: [{ role: 'user', content: 'Say hello to the gateway [[fake:reply_words=7]]' }],
    });

    expect(completion.model).toBe('acme-chat');
    expect(completion.choices[0]!.message.content).toBe('w1 w2 w3 w4 w5 w6 w7');
    const usage = completion.usage!;
    expect(usage.completion_tokens).toBe(7);

    // The upstream saw its own model name and our credential, never the customer's key.
    const seen = upstream.requests.at(-1)!;
    expect((seen.body as { model: string }).model).toBe('upstream-secret-model');
    expect(seen.headers.authorization).toBe(`Bearer ${upstreamCredential}`);

    const expectedCostMicros =
      ceilDiv(BigInt(usage.prompt_tokens) * inputPriceMicrosPerMtok, 1_000_000n) +
      ceilDiv(BigInt(usage.completion_tokens) * outputPriceMicrosPerMtok, 1_000_000n);
    const balance = await admin('GET', `/organisations/${organisationId}/balance`);
    expect(balance).toMatchObject({
      currency: 'INR',
      credited_micros: creditMicros.toString(),
      held_micros: '0',
      debited_micros: expectedCostMicros.toString(),
      available_micros: (creditMicros - expectedCostMicros).toString(),
    });

    const usageList = await admin('GET', `/organisations/${organisationId}/usage`);
    expect(usageList.data).toHaveLength(1);
    expect(usageList.data[0]).toMatchObject({
      model: 'acme-chat', input_tokens: usage.prompt_tokens, output_tokens: 7,
      cost_micros: expectedCostMicros.toString(), usage_source: 'upstream',
    });
  });

  it('conceals the upstream: no vendor name, header or text reaches the client', async () => {
    const response = await fetch(`${proxyBase}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'acme-chat', messages: [{ role: 'user', content: 'hi' }] }),
    });
    const text = await response.text();
    const headers = JSON.stringify([...response.headers]);
    expect(response.status).toBe(200);
    for (const marker of leakMarkers.all) {
      expect(text, marker).not.toContain(marker);
      expect(headers, marker).not.toContain(marker);
    }
    expect(text).not.toContain('upstream-secret-model');
  });

  it('refuses an unknown key with 401 AuthenticationError', async () => {
    const unknownButWellFormed = new OpenAI({ apiKey: issueSecret('apiKey').secret, baseURL: proxyBase, maxRetries: 0 });
    await expect(unknownButWellFormed.chat.completions.create({ model: 'acme-chat', messages: [{ role: 'user', content: 'hi' }] }))
      .rejects.toBeInstanceOf(OpenAI.AuthenticationError);
    const malformed = new OpenAI({ apiKey: 'sk-not-ours', baseURL: proxyBase, maxRetries: 0 });
    await expect(malformed.models.list()).rejects.toBeInstanceOf(OpenAI.AuthenticationError);
  });

  it('refuses a model the organisation may not use, and lists only allowed models', async () => {
    const client = new OpenAI({ apiKey, baseURL: proxyBase, maxRetries: 0 });
    const requestsBefore = upstream.requests.length;
    const balanceBefore = await admin('GET', `/organisations/${organisationId}/balance`);
    await expect(client.chat.completions.create({ model: 'not-for-acme', messages: [{ role: 'user', content: 'hi' }] }))
      .rejects.toBeInstanceOf(OpenAI.NotFoundError);
    expect(upstream.requests.length).toBe(requestsBefore);
    expect(await admin('GET', `/organisations/${organisationId}/balance`)).toEqual(balanceBefore);

    const models = await client.models.list();
    expect(models.data.map((m) => m.id)).toEqual(['acme-chat']);
    expect(JSON.stringify(models.data)).not.toContain('upstream');
  });

  it('keeps secrets out of every log line', () => {
    const logs = services.map((s) => s.output()).join('\n');
    expect(logs).not.toContain(apiKey);
    expect(logs).not.toContain(adminToken);
    expect(logs).not.toContain(upstreamCredential);
  });

  it('stops every service cleanly on SIGTERM, proxy first', async () => {
    const exitCodes: Array<number | null> = [];
    for (const service of [...services].reverse()) exitCodes.push(await service.stop());
    expect(exitCodes).toEqual([0, 0, 0]);
  });
});

function ceilDiv(numerator: bigint, denominator: bigint): bigint {
  return (numerator + denominator - 1n) / denominator;
}
