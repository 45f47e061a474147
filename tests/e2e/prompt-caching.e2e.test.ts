/**
 * Prompt caching kept to each organisation, through the whole gateway: ledger, admin and two
 * proxies as processes over real PostgreSQL, the admin deriving the cache scope key and pushing it
 * to both proxies (ConfigUpdate.cache_scope_key). Two organisations send the same long prompt with
 * the official clients (`openai`: the upstream's automatic cache; `@anthropic-ai/sdk`:
 * cache_control breakpoints). An organisation's repeat hits its cache from either proxy; the other
 * organisation's identical prompt never does. The ledger debits exactly what the answers priced.
 */
import { randomBytes } from 'node:crypto';
import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeUpstream, type FakeUpstream } from '@gateway/fake-upstream';
import { testPostgresUrl } from '@gateway/testkit';
import { e2eCostMicros, e2ePrices, startE2eGateway, type E2eGateway } from '../support/e2e-gateway.ts';

const serverUrl = testPostgresUrl();
const claudeSlug = 'e2e-caching-claude';
/** Over OpenAI's 1,024-token cache minimum (the fake's default), and the proxy's marking threshold. */
const longSystem = Array.from({ length: 1100 }, (_, i) => `r${i}`).join(' ');

describe.skipIf(!serverUrl)('prompt caching isolated per organisation, end to end', () => {
  let gateway: E2eGateway;
  let anthropicUpstream: FakeUpstream;
  let rivalKey: string;
  let rivalId: string;
  const anthropicCredential = `sk-ant-${randomBytes(12).toString('hex')}`;

  beforeAll(async () => {
    gateway = await startE2eGateway({ serverUrl: serverUrl!, proxies: 2 });
    anthropicUpstream = await startFakeUpstream({ requiredApiKey: anthropicCredential, name: 'anthropic', promptCache: { minTokens: 40 } });
    await gateway.admin('POST', '/gateway-models', {
      slug: claudeSlug, display_name: 'E2E Caching Claude', default_max_tokens: 64, max_context_tokens: 16384,
      input_price_micros_per_mtok: e2ePrices.inputPriceMicrosPerMtok.toString(),
      output_price_micros_per_mtok: e2ePrices.outputPriceMicrosPerMtok.toString(),
      upstream: { provider_kind: 'anthropic', base_url: anthropicUpstream.baseUrl, model: 'claude-upstream-secret-model', api_key: anthropicCredential },
    });
    await gateway.admin('PATCH', `/organisations/${gateway.organisationId}`, { allowed_gateway_models: [gateway.modelSlug, claudeSlug] });
    const rival = await gateway.admin('POST', '/organisations', { name: 'Rival', rpm_limit: 600, allowed_gateway_models: [gateway.modelSlug, claudeSlug] });
    rivalId = rival.id as string;
    await gateway.admin('POST', `/organisations/${rivalId}/credits`, { amount_micros: '10000000', reason: 'e2e opening credit' }, { 'idempotency-key': 'e2e-rival-credit' });
    rivalKey = (await gateway.admin('POST', `/organisations/${rivalId}/projects`, { name: 'rival' })).api_key as string;
  }, 120_000);

  afterAll(async () => {
    await gateway?.close();
    await anthropicUpstream?.close();
  });

  /** µ₹ an organisation has been debited so far, once nothing is held. */
  async function debited(organisationId: string): Promise<bigint> {
    return BigInt((await gateway.settledBalance(organisationId)).debited_micros as string);
  }

  it('openai: the automatic cache serves an organisation from either proxy, never the other organisation', async () => {
    const ask = (proxy: number, apiKey: string, question: string) => gateway.client(proxy, apiKey).chat.completions.create({
      model: gateway.modelSlug, messages: [{ role: 'system', content: longSystem }, { role: 'user', content: question }],
    });
    const before = await debited(gateway.organisationId);
    const first = await ask(0, gateway.apiKey, 'first');
    expect(first.usage?.prompt_tokens_details).toBeUndefined();
    // The other replica marks the organisation alike (the admin's key), so it meets the same cache.
    const second = await ask(1, gateway.apiKey, 'second');
    expect(second.usage?.prompt_tokens_details?.cached_tokens).toBe(1100 + 3 + 3);
    const rival = await ask(0, rivalKey, 'second');
    expect(rival.usage?.prompt_tokens_details).toBeUndefined();
    const costs = [first, second].map((answer) => BigInt((answer.usage as unknown as { cost_micros: string }).cost_micros));
    expect(costs[1]).toBe(e2eCostMicros(second.usage!.prompt_tokens, second.usage!.completion_tokens));
    expect(await debited(gateway.organisationId) - before).toBe(costs[0]! + costs[1]!);
    console.log(`e2e openai: acme repeat ${second.usage?.prompt_tokens} prompt tokens, ${second.usage?.prompt_tokens_details?.cached_tokens} cached, `
      + `${costs[1]} µ₹; rival's identical prompt: ${rival.usage?.prompt_tokens} prompt tokens, 0 cached`);
  });

  it('anthropic: cache_control breakpoints write once and read from either proxy, never across organisations', async () => {
    const client = (proxy: number, apiKey: string) => new Anthropic({ apiKey, baseURL: gateway.proxyBases[proxy]!.slice(0, -'/v1'.length), maxRetries: 0 });
    const ask = (proxy: number, apiKey: string, question: string) => client(proxy, apiKey).messages.create({
      model: claudeSlug, max_tokens: 20,
      system: [{ type: 'text', text: longSystem, cache_control: { type: 'ephemeral', ttl: '1h' } }],
      messages: [{ role: 'user', content: question }],
    });
    const before = await debited(rivalId);
    const written = await ask(0, gateway.apiKey, 'one');
    // The marker block (3 words + the system's 3) and the cached block (1,100 words), written for an hour.
    expect(written.usage).toMatchObject({ cache_creation_input_tokens: 1106, cache_read_input_tokens: 0, cache_creation: { ephemeral_1h_input_tokens: 1106 } });
    const read = await ask(1, gateway.apiKey, 'two');
    expect(read.usage).toMatchObject({ cache_creation_input_tokens: 0, cache_read_input_tokens: 1106 });
    const rival = await ask(1, rivalKey, 'two');
    expect(rival.usage).toMatchObject({ cache_creation_input_tokens: 1106, cache_read_input_tokens: 0 });
    // Every class billed (as input until per-class prices land): the ledger debits what the answer priced.
    const prompt = rival.usage.input_tokens + (rival.usage.cache_creation_input_tokens ?? 0) + (rival.usage.cache_read_input_tokens ?? 0);
    const rivalCost = BigInt((rival.usage as unknown as { cost_micros: string }).cost_micros);
    expect(rivalCost).toBe(e2eCostMicros(prompt, rival.usage.output_tokens));
    expect(await debited(rivalId) - before).toBe(rivalCost);
    // Neither organisation's id nor the admin's key reaches the upstream.
    expect(JSON.stringify(anthropicUpstream.requests.map((request) => request.body))).not.toContain(gateway.organisationId);
  });
});
