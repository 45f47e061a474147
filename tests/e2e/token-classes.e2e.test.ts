/**
 * Price by token class end to end: ledger, admin and proxy as processes over real
 * PostgreSQL. Two gateway models are created through the admin API with a price sheet by class,
 * one on an Anthropic-kind upstream and one on an OpenAI-compatible one; the fake upstream
 * reports cache reads, cache writes (5-minute and 1-hour), audio and reasoning tokens in each
 * wire format's own usage fields (`[[fake:usage_classes=…]]`). Through the official `openai`
 * client, each response's usage shows the cost per class summing to `cost_micros`, and the
 * wallet and the usage records move by exactly those figures, to the µ₹.
 */
import { randomBytes } from 'node:crypto';
import type OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { countWords, fakePromptTokens, startFakeUpstream, type FakeUpstream } from '@gateway/fake-upstream';
import { testPostgresUrl } from '@gateway/testkit';
import { startE2eGateway, type E2eGateway } from '../support/e2e-gateway.ts';

const serverUrl = testPostgresUrl();

/** An Anthropic-like sheet, µ₹ per million tokens (odd, so every rounding shows): reads 0.1×, 5-minute writes 1.25×, 1-hour writes 2× input. */
const sheet = {
  input: 3_000_007n, cached_input: 300_001n, cache_write_5m: 3_750_009n, cache_write_1h: 6_000_014n, audio_input: 4_000_003n, output: 15_000_011n, reasoning: 20_000_017n,
} as const;

/** The admin API body of a model priced by `sheet`, reasoning priced apart. */
function pricedModel(slug: string, upstream: Record<string, unknown>): Record<string, unknown> {
  return {
    slug, default_max_tokens: 64, max_context_tokens: 8192, input_modalities: ['text'],
    input_price_micros_per_mtok: String(sheet.input), output_price_micros_per_mtok: String(sheet.output),
    cached_input_price_micros_per_mtok: String(sheet.cached_input), cache_write_5m_price_micros_per_mtok: String(sheet.cache_write_5m),
    cache_write_1h_price_micros_per_mtok: String(sheet.cache_write_1h), audio_input_price_micros_per_mtok: String(sheet.audio_input),
    reasoning_price_micros_per_mtok: String(sheet.reasoning),
    provider_input_cost_micros_per_mtok: '2000000', provider_cached_input_cost_micros_per_mtok: '200000',
    upstream,
  };
}

type SheetClass = keyof typeof sheet;

/**
 * The cost of some tokens by class, written out independently of the code under test: each side
 * (input classes, output classes) summed exactly, rounded up once; each class the growth of its
 * side's running sum rounded up, so the classes sum to the cost.
 */
function expectedByClass(tokens: Partial<Record<SheetClass, number>>): { total: bigint; byClass: Record<string, { tokens: number; cost_micros: string }> } {
  const byClass: Record<string, { tokens: number; cost_micros: string }> = {};
  let total = 0n;
  for (const side of [['input', 'cached_input', 'cache_write_5m', 'cache_write_1h', 'audio_input'], ['output', 'reasoning']] as const) {
    let exact = 0n;
    for (const tokenClass of side) {
      const count = tokens[tokenClass] ?? 0;
      if (count === 0) continue;
      const before = (exact + 999_999n) / 1_000_000n;
      exact += BigInt(count) * sheet[tokenClass];
      const cost = (exact + 999_999n) / 1_000_000n - before;
      byClass[tokenClass] = { tokens: count, cost_micros: String(cost) };
      total += cost;
    }
  }
  return { total, byClass };
}

describe.skipIf(!serverUrl)('price by token class end to end', () => {
  let gateway: E2eGateway;
  let anthropic: FakeUpstream;
  const anthropicCredential = `sk-ant-${randomBytes(12).toString('hex')}`;

  beforeAll(async () => {
    gateway = await startE2eGateway({ serverUrl: serverUrl! });
    anthropic = await startFakeUpstream({ requiredApiKey: anthropicCredential, name: 'anthropic' });
    await gateway.admin('POST', '/gateway-models', pricedModel('classes-claude', {
      provider_kind: 'anthropic', base_url: anthropic.baseUrl, model: 'claude-upstream', api_key: anthropicCredential, allow_private_network: true,
    }));
    await gateway.admin('POST', '/gateway-models', {
      ...pricedModel('classes-openai', {
        provider_kind: 'openai_compatible', base_url: gateway.upstream.baseUrl, model: 'gpt-upstream', api_key: gateway.upstreamCredential, allow_private_network: true,
      }),
      input_modalities: ['text', 'audio'],
    });
    // Returns once the proxy acknowledged the version that lets the organisation use the models.
    await gateway.admin('PATCH', `/organisations/${gateway.organisationId}`, { allowed_gateway_models: [gateway.modelSlug, 'classes-claude', 'classes-openai'] });
  }, 120_000);

  afterAll(async () => {
    await gateway?.close();
    await anthropic?.close();
  });

  async function settledBalance(): Promise<{ available: bigint; debited: bigint; held: bigint }> {
    const body = await gateway.settledBalance();
    return { available: BigInt(body.available_micros), debited: BigInt(body.debited_micros), held: BigInt(body.held_micros) };
  }

  it('shows the cost per class in each response and bills exactly their sum to the wallet and the usage records', async () => {
    const before = await settledBalance();
    const client = gateway.client();
    const printed: Record<string, unknown> = {};

    // Anthropic upstream, non-streaming: 40 prompt tokens read from the cache, 10 written for 5 minutes, 5 for an hour; 4 words + 6 thinking tokens (Anthropic counts thinking as output).
    const claudeText = `${'word '.repeat(60)}[[fake:reply_words=4]] [[fake:usage_classes=cached:40,write5m:10,write1h:5,reasoning:6]]`;
    const claude = await client.chat.completions.create({ model: 'classes-claude', messages: [{ role: 'user', content: claudeText }], max_tokens: 32 });
    const claudePrompt = fakePromptTokens([{ role: 'user', content: claudeText }]);
    const claudeExpected = expectedByClass({ input: claudePrompt - 55, cached_input: 40, cache_write_5m: 10, cache_write_1h: 5, output: 10 });
    expect(claude.usage).toMatchObject({
      prompt_tokens: claudePrompt, completion_tokens: 10, cost_micros: String(claudeExpected.total), cost_by_class: claudeExpected.byClass,
    });
    printed.claude = claude.usage;

    // OpenAI-compatible upstream, streaming: 30 cached and 3 audio prompt tokens, 5 words + 7 reasoning tokens priced apart.
    const openAiText = `${'word '.repeat(50)}[[fake:reply_words=5]] [[fake:usage_classes=cached:30,audio:3,reasoning:7]]`;
    const stream = await client.chat.completions.create({
      model: 'classes-openai', messages: [{ role: 'user', content: openAiText }], stream: true, stream_options: { include_usage: true },
    });
    const chunks: OpenAI.ChatCompletionChunk[] = [];
    for await (const chunk of stream) chunks.push(chunk);
    const openAiPrompt = fakePromptTokens([{ role: 'user', content: openAiText }]);
    const openAiExpected = expectedByClass({ input: openAiPrompt - 33, cached_input: 30, audio_input: 3, output: 5, reasoning: 7 });
    expect(chunks.at(-1)!.usage).toMatchObject({
      prompt_tokens: openAiPrompt, completion_tokens: 12, cost_micros: String(openAiExpected.total), cost_by_class: openAiExpected.byClass,
    });
    printed.openai = chunks.at(-1)!.usage;
    expect(countWords(chunks.map((chunk) => chunk.choices[0]?.delta.content ?? '').join(''))).toBe(5);

    // The money: the wallet moved by exactly the two costs, and the usage records carry them.
    const after = await settledBalance();
    expect(after.held).toBe(0n);
    expect(before.available - after.available).toBe(claudeExpected.total + openAiExpected.total);
    expect(after.debited - before.debited).toBe(claudeExpected.total + openAiExpected.total);
    const records = await Promise.all(['classes-claude', 'classes-openai'].map(async (slug) => (
      (await gateway.admin('GET', `/organisations/${gateway.organisationId}/usage?model=${slug}`)).data as Array<Record<string, unknown>>)[0]!));
    expect(records.map((record) => [record.input_tokens, record.output_tokens, record.cost_micros, record.debited_micros])).toEqual([
      [claudePrompt, 10, String(claudeExpected.total), String(claudeExpected.total)],
      [openAiPrompt, 12, String(openAiExpected.total), String(openAiExpected.total)],
    ]);
    // Provider cost (recorded, never billed): input 2 ₹/Mtok, cached 0.2, the cache writes and audio at the input cost they default to, output 0.
    // Claude: 10 × 2 + 40 × 0.2 + 15 × 2 = 58 µ₹; OpenAI: 22 × 2 + 30 × 0.2 + 3 × 2 = 56 µ₹.
    expect(records.map((record) => record.provider_cost_micros)).toEqual(['58', '56']);
    // The usage API itemises each record by class as its Settle did: the same tokens and µ₹ the response showed.
    const withoutProvider = (byClass: Record<string, { tokens: number; cost_micros: string }>) => Object.fromEntries(
      Object.entries(byClass).map(([tokenClass, figures]) => [tokenClass, { tokens: figures.tokens, cost_micros: figures.cost_micros }]));
    expect(records.map((record) => withoutProvider(record.cost_by_class as Record<string, { tokens: number; cost_micros: string }>)))
      .toEqual([claudeExpected.byClass, openAiExpected.byClass]);
    expect(records[0]!.cost_by_class).toMatchObject({ cached_input: { provider_cost_micros: '8' }, cache_write_1h: { provider_cost_micros: '10' } });
    // The CSV export carries the same per class.
    const csv = await (await fetch(`${gateway.adminBase}/organisations/${gateway.organisationId}/usage/export?model=classes-claude`, {
      headers: { authorization: `Bearer ${gateway.adminToken}` },
    })).text();
    const [header, line] = csv.trim().split('\r\n').length > 1 ? csv.trim().split('\r\n') : csv.trim().split('\n');
    const cells = Object.fromEntries(header!.split(',').map((name, index) => [name, line!.split(',')[index]]));
    expect(cells).toMatchObject({ cached_input_tokens: '40', cached_input_cost_micros: claudeExpected.byClass.cached_input!.cost_micros, reasoning_tokens: '0' });
    printed.records = records.map((record) => ({ model: record.model, cost_micros: record.cost_micros, provider_cost_micros: record.provider_cost_micros }));
    printed.walletDebitedMicros = String(after.debited - before.debited);
    console.log(`token classes e2e: ${JSON.stringify(printed)}`);
  }, 60_000);

  it('sums the records\' classes in the usage summary and platform analytics, to the µ₹, counting records without classes apart', async () => {
    type Figures = { tokens: number; cost_micros: string; provider_cost_micros: string };
    const summary = (await gateway.admin('GET', `/organisations/${gateway.organisationId}/usage/summary`)).data as Array<Record<string, any>>;
    const margin = await gateway.admin('GET', '/analytics/margin?group_by=model');
    for (const slug of ['classes-claude', 'classes-openai']) {
      const records = (await gateway.admin('GET', `/organisations/${gateway.organisationId}/usage?model=${slug}&limit=500`)).data as Array<Record<string, any>>;
      // Written out from the records, apart from the ledger's roll-up: per class, ordered by name.
      const sums = new Map<string, { tokens: number; cost: bigint; provider: bigint }>();
      for (const record of records) {
        for (const [name, figures] of Object.entries((record.cost_by_class ?? {}) as Record<string, Figures>)) {
          const sum = sums.get(name) ?? { tokens: 0, cost: 0n, provider: 0n };
          sum.tokens += figures.tokens;
          sum.cost += BigInt(figures.cost_micros);
          sum.provider += BigInt(figures.provider_cost_micros);
          sums.set(name, sum);
        }
      }
      const names = [...sums.keys()].sort();
      expect(names.length).toBeGreaterThan(1);
      const rows = summary.filter((row) => row.model === slug);
      const rolledUp = new Map<string, { tokens: number; cost: bigint; provider: bigint }>();
      for (const row of rows) {
        for (const entry of row.token_classes as Array<{ class: string } & Figures>) {
          const sum = rolledUp.get(entry.class) ?? { tokens: 0, cost: 0n, provider: 0n };
          sum.tokens += entry.tokens;
          sum.cost += BigInt(entry.cost_micros);
          sum.provider += BigInt(entry.provider_cost_micros);
          rolledUp.set(entry.class, sum);
        }
      }
      expect([...rolledUp.entries()].sort(([a], [b]) => (a < b ? -1 : 1))).toEqual(names.map((name) => [name, sums.get(name)]));
      expect(rows.reduce((count, row) => count + (row.unclassified_requests as number), 0)).toBe(records.filter((record) => record.cost_by_class === undefined).length);
      const modelRow = [...margin.data, ...margin.internal.data].find((row: Record<string, any>) => row.key === slug) as Record<string, any>;
      expect(modelRow.token_classes).toEqual(names.map((name) => ({
        class: name, tokens: sums.get(name)!.tokens, customer_price_micros: String(sums.get(name)!.cost), provider_cost_micros: String(sums.get(name)!.provider),
      })));
    }
  }, 60_000);
});
