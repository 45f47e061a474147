/**
 * The spine end to end: ledger, admin and proxy as three processes over real PostgreSQL, driven
 * by the official `openai` client against a fake upstream. Money is asserted to the micro-rupee.
 */
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { leakMarkers } from '@gateway/fake-upstream';
import { issueSecret } from '@gateway/secrets';
import { testPostgresUrl } from '@gateway/testkit';
import { e2eCostMicros, e2ePrices, startE2eGateway, type E2eGateway } from '../support/e2e-gateway.ts';

const serverUrl = testPostgresUrl();
const creditMicros = 10_000_000n; // ₹10

describe.skipIf(!serverUrl)('the spine end to end', () => {
  let gateway: E2eGateway;
  let proxyBase = '';
  let apiKey = '';
  let organisationId = '';
  let modelSlug = '';
  const admin = (method: string, path: string, body?: unknown, headers?: Record<string, string>) => gateway.admin(method, path, body, headers);

  beforeAll(async () => {
    gateway = await startE2eGateway({ serverUrl: serverUrl!, creditMicros });
    ({ apiKey, organisationId, modelSlug } = gateway);
    proxyBase = gateway.proxyBases[0]!;
    // A second model that exists but that the organisation may not use.
    await admin('POST', '/gateway-models', {
      slug: 'not-for-this-org', default_max_tokens: 64, max_context_tokens: 4096,
      input_price_micros_per_mtok: e2ePrices.inputPriceMicrosPerMtok.toString(),
      output_price_micros_per_mtok: e2ePrices.outputPriceMicrosPerMtok.toString(),
      upstream: { provider_kind: 'openai_compatible', base_url: gateway.upstream.baseUrl, model: 'other-upstream-model', api_key: gateway.upstreamCredential },
    });
  }, 90_000);

  afterAll(async () => {
    await gateway?.close();
  });

  it('serves a completion and debits exactly the priced usage', async () => {
    const client = new OpenAI({ apiKey, baseURL: proxyBase, maxRetries: 0 });
    const completion = await client.chat.completions.create({
      model: modelSlug,
      messages: [{ role: 'user', content: 'Say hello to the gateway [[fake:reply_words=7]]' }],
    });

    expect(completion.model).toBe(modelSlug);
    expect(completion.choices[0]!.message.content).toBe('w1 w2 w3 w4 w5 w6 w7');
    const usage = completion.usage!;
    expect(usage.completion_tokens).toBe(7);

    // The upstream saw its own model name and our credential, never the customer's key.
    const seen = gateway.upstream.requests.at(-1)!;
    expect((seen.body as { model: string }).model).toBe('upstream-secret-model');
    expect(seen.headers.authorization).toBe(`Bearer ${gateway.upstreamCredential}`);

    const expectedCostMicros = e2eCostMicros(usage.prompt_tokens, usage.completion_tokens);
    const balance = await gateway.settledBalance();
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
      model: modelSlug, input_tokens: usage.prompt_tokens, output_tokens: 7,
      cost_micros: expectedCostMicros.toString(), usage_source: 'upstream',
    });
  });

  it('conceals the upstream: no vendor name, header or text reaches the client', async () => {
    const response = await fetch(`${proxyBase}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: modelSlug, messages: [{ role: 'user', content: 'hi' }] }),
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
    await expect(unknownButWellFormed.chat.completions.create({ model: modelSlug, messages: [{ role: 'user', content: 'hi' }] }))
      .rejects.toBeInstanceOf(OpenAI.AuthenticationError);
    const malformed = new OpenAI({ apiKey: 'sk-not-ours', baseURL: proxyBase, maxRetries: 0 });
    await expect(malformed.models.list()).rejects.toBeInstanceOf(OpenAI.AuthenticationError);
  });

  it('refuses a model the organisation may not use, and lists only allowed models', async () => {
    const client = new OpenAI({ apiKey, baseURL: proxyBase, maxRetries: 0 });
    const requestsBefore = gateway.upstream.requests.length;
    const balanceBefore = await gateway.settledBalance(); // the earlier tests' Settles have landed
    await expect(client.chat.completions.create({ model: 'not-for-this-org', messages: [{ role: 'user', content: 'hi' }] }))
      .rejects.toBeInstanceOf(OpenAI.NotFoundError);
    expect(gateway.upstream.requests.length).toBe(requestsBefore);
    expect(await admin('GET', `/organisations/${organisationId}/balance`)).toEqual(balanceBefore);

    const models = await client.models.list();
    expect(models.data.map((m) => m.id)).toEqual([modelSlug]);
    expect(JSON.stringify(models.data)).not.toContain('upstream');
  });

  it('keeps secrets out of every log line', () => {
    const logs = gateway.services.map((s) => s.output()).join('\n');
    expect(logs).not.toContain(apiKey);
    expect(logs).not.toContain(gateway.adminToken);
    expect(logs).not.toContain(gateway.upstreamCredential);
  });

  it('stops every service cleanly on SIGTERM, proxy first', async () => {
    expect(await gateway.close()).toEqual([0, 0, 0]);
  });
});
