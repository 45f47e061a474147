import { randomBytes } from 'node:crypto';
import Anthropic from '@anthropic-ai/sdk';
import { encode } from 'gpt-tokenizer/encoding/cl100k_base';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fakePromptTokens } from '@gateway/fake-upstream';
import { cacheScopeMarker } from './test-support/cache-scopes.ts';
import {
  expectedCostMicros, gatewayModel, lastSettleOf, startProxyWorld, stateOf, tenant, testPrices, waitFor, type ProxyWorld, type TestProxy,
} from './test-support/proxy-world.ts';

// Prompt caching isolated per organisation (docs/decisions.md): two organisations send the same
// long prompt through the official clients. The fake upstream's caches are shared by every caller,
// as a real upstream account's are; only the gateway's per-organisation marker keeps them apart.

const acme = tenant('acme', { allowedGatewayModelSlugs: ['chat', 'claude'] });
const rival = tenant('rival', { allowedGatewayModelSlugs: ['chat', 'claude'] });
const upstreamCredential = 'sk-upstream-credential-123';
const cacheScopeKey = randomBytes(32);
/** The fake's clock for cache lifetimes: tests move it, never sleep. */
let nowMs = 1_800_000_000_000;

let world: ProxyWorld;
let proxy: TestProxy;
let origin: string;

beforeAll(async () => {
  world = await startProxyWorld((baseUrl) => ({
    ...stateOf([acme, rival], [
      gatewayModel('chat', baseUrl),
      gatewayModel('claude', baseUrl, { upstream: { providerKind: 'anthropic', baseUrl, model: 'claude-upstream-name', apiKey: upstreamCredential } }),
    ]),
    cacheScopeKey,
  }), { requiredApiKey: upstreamCredential, promptCache: { minTokens: 40, now: () => nowMs } });
  world.ledger.credit('acme', 100_000_000n);
  world.ledger.credit('rival', 100_000_000n);
  // Every prompt of this file is long enough to be marked.
  proxy = await world.startProxy({ PROXY_CACHE_SCOPE_MIN_PROMPT_TOKENS: '64' });
  await waitFor(() => proxy.isReady(), 5000, 'first snapshot');
  origin = proxy.baseUrl.slice(0, -'/v1'.length);
});
afterAll(async () => { await world?.close(); });

/** A long shared system prompt: the prefix both organisations send. */
const sharedSystem = Array.from({ length: 120 }, (_, i) => `rule${i}`).join(' ');

/** The cost of a billed usage at the test prices, µ₹ (every input class is priced as input until PRICING lands). */
function cost(promptTokens: number, completionTokens: number): bigint {
  return expectedCostMicros(promptTokens, testPrices.inputPriceMicrosPerMtok) + expectedCostMicros(completionTokens, testPrices.outputPriceMicrosPerMtok);
}

/** The JSON body of the upstream's last request. */
function lastUpstreamBody(): Record<string, any> {
  return world.upstream.requests.at(-1)!.body as Record<string, any>;
}

describe('an OpenAI-compatible upstream (automatic prefix caching)', () => {
  it('serves an organisation its own repeated prefix and never another organisation\'s, and bills every token', async () => {
    const ask = (apiKey: string, question: string) => world.client(apiKey).chat.completions.create({
      model: 'chat', messages: [{ role: 'system', content: sharedSystem }, { role: 'user', content: question }],
    });
    const first = await ask(acme.apiKey, 'What is rule 7?');
    expect(first.usage?.prompt_tokens_details).toBeUndefined();
    const upstreamSystem = lastUpstreamBody().messages[0].content as string;
    const acmeMarker = cacheScopeMarker(cacheScopeKey, 'acme');
    // The marker comes first, in front of the client's system text; the organisation id never leaves.
    expect(upstreamSystem).toBe(`${acmeMarker}\n\n${sharedSystem}`);
    expect(JSON.stringify(lastUpstreamBody())).not.toContain('acme');

    // Acme again: its system message (120 words + 3 of the marker + 3 per message) is read from the cache.
    const second = await ask(acme.apiKey, 'And rule 8?');
    expect(second.usage?.prompt_tokens_details).toEqual({ cached_tokens: 126 });
    const settle = await lastSettleOf(world);
    expect(second.usage).toMatchObject({ prompt_tokens: Number(settle.inputTokens), cost_micros: String(cost(Number(settle.inputTokens), Number(settle.outputTokens))) });
    expect(settle.costMicros).toBe(cost(Number(settle.inputTokens), Number(settle.outputTokens)));

    // Rival sends acme's very conversation: no hit, its prompt starts with its own marker.
    const rivalFirst = await ask(rival.apiKey, 'And rule 8?');
    expect(rivalFirst.usage?.prompt_tokens_details).toBeUndefined();
    expect(lastUpstreamBody().messages[0].content).toBe(`${cacheScopeMarker(cacheScopeKey, 'rival')}\n\n${sharedSystem}`);
    // Rival's own repeat hits its own prefix, streamed this time.
    const stream = await world.client(rival.apiKey).chat.completions.create({
      model: 'chat', stream: true, stream_options: { include_usage: true },
      messages: [{ role: 'system', content: sharedSystem }, { role: 'user', content: 'And rule 9?' }],
    });
    let usage: Record<string, unknown> | undefined;
    for await (const chunk of stream) if (chunk.usage) usage = chunk.usage as unknown as Record<string, unknown>;
    expect(usage?.prompt_tokens_details).toEqual({ cached_tokens: 126 });

    // What isolation costs: the marker's tokens on every cacheable request.
    const clientPrompt = fakePromptTokens([{ role: 'system', content: sharedSystem }, { role: 'user', content: 'And rule 8?' }]);
    const markerFakeTokens = (second.usage?.prompt_tokens ?? 0) - clientPrompt;
    const markerBpeTokens = encode(`${acmeMarker}\n\n`).length;
    expect(markerFakeTokens).toBe(3);
    console.log(`isolation cost per cacheable request: ${markerBpeTokens} cl100k tokens (${markerFakeTokens} in the fake's word count), `
      + `${expectedCostMicros(markerBpeTokens, testPrices.inputPriceMicrosPerMtok)} µ₹ at the test input price; `
      + `acme's repeat: ${second.usage?.prompt_tokens} prompt tokens, ${second.usage?.prompt_tokens_details?.cached_tokens} cached, cost ${second.usage && (second.usage as unknown as { cost_micros: string }).cost_micros} µ₹`);
  });

  it('forwards prompt_cache_key (Responses) only inside the organisation\'s own key', async () => {
    const ask = (apiKey: string, input: string) => world.client(apiKey).responses.create({
      model: 'chat', instructions: `${sharedSystem} responses`, input, prompt_cache_key: 'repo-1', store: false,
    });
    await ask(acme.apiKey, 'first');
    const sentKey = lastUpstreamBody().prompt_cache_key as string;
    expect(sentKey).toMatch(/^pck_[0-9a-f]{32}$/);
    const second = await ask(acme.apiKey, 'second');
    expect(lastUpstreamBody().prompt_cache_key).toBe(sentKey);
    expect(second.usage?.input_tokens_details).toEqual({ cached_tokens: 127 });
    const rivalAnswer = await ask(rival.apiKey, 'second');
    expect(lastUpstreamBody().prompt_cache_key).not.toBe(sentKey);
    expect(rivalAnswer.usage?.input_tokens_details).toEqual({ cached_tokens: 0 });
  });
});

describe('an Anthropic upstream (cache_control breakpoints)', () => {
  const anthropic = (apiKey: string) => new Anthropic({ apiKey, baseURL: origin, maxRetries: 0 });
  const system = [{ type: 'text' as const, text: sharedSystem, cache_control: { type: 'ephemeral' as const } }];
  const tools = [{ name: 'look', description: 'Look a rule up.', input_schema: { type: 'object' as const, properties: {} } }];

  it('forwards the breakpoints, reports writes and reads in Anthropic\'s fields, and never lets another organisation read them', async () => {
    const first = await anthropic(acme.apiKey).messages.create({ model: 'claude', max_tokens: 50, system, tools, messages: [{ role: 'user', content: 'rule 1?' }] });
    const sent = lastUpstreamBody();
    // The marker leads the prefix: Anthropic's starts with the tools, so it opens the first tool's description.
    expect(sent.tools[0].description).toBe(`${cacheScopeMarker(cacheScopeKey, 'acme')}\n\nLook a rule up.`);
    expect(sent.system).toEqual([{ type: 'text', text: sharedSystem, cache_control: { type: 'ephemeral' } }]);
    // 120 words + the system prompt's 3, written for 5 minutes.
    expect(first.usage).toMatchObject({
      cache_creation_input_tokens: 123, cache_read_input_tokens: 0, cache_creation: { ephemeral_5m_input_tokens: 123, ephemeral_1h_input_tokens: 0 },
    });

    const stream = anthropic(acme.apiKey).messages.stream({ model: 'claude', max_tokens: 50, system, tools, messages: [{ role: 'user', content: 'rule 2?' }] });
    const second = await stream.finalMessage();
    expect(second.usage).toMatchObject({ cache_creation_input_tokens: 0, cache_read_input_tokens: 123 });
    const settle = await lastSettleOf(world);
    // Every input class is billed (as input until the per-class prices land): input_tokens is the uncached rest.
    expect(Number(settle.inputTokens)).toBe(second.usage.input_tokens + 123);
    expect(settle.costMicros).toBe(cost(Number(settle.inputTokens), second.usage.output_tokens));

    const rivalAnswer = await anthropic(rival.apiKey).messages.create({ model: 'claude', max_tokens: 50, system, tools, messages: [{ role: 'user', content: 'rule 2?' }] });
    expect(rivalAnswer.usage).toMatchObject({ cache_read_input_tokens: 0, cache_creation_input_tokens: 123 });
    expect(lastUpstreamBody().tools[0].description).toBe(`${cacheScopeMarker(cacheScopeKey, 'rival')}\n\nLook a rule up.`);

    // Six minutes on, acme's 5-minute entry has lapsed: written again, nothing read.
    nowMs += 6 * 60_000;
    const later = await anthropic(acme.apiKey).messages.create({ model: 'claude', max_tokens: 50, system, tools, messages: [{ role: 'user', content: 'rule 3?' }] });
    expect(later.usage).toMatchObject({ cache_read_input_tokens: 0, cache_creation_input_tokens: 123 });
  });

  it('refuses a fifth breakpoint before any Reserve, naming it', async () => {
    const reserves = world.ledger.calls.reserve.length;
    const five = Array.from({ length: 5 }, (_, i) => ({ type: 'text' as const, text: `part ${i}`, cache_control: { type: 'ephemeral' as const } }));
    const refused = await anthropic(acme.apiKey).messages.create({ model: 'claude', max_tokens: 50, system: five, messages: [{ role: 'user', content: 'hi' }] })
      .catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(Anthropic.BadRequestError);
    expect((refused as InstanceType<typeof Anthropic.BadRequestError>).message).toContain('system.4.cache_control: A maximum of 4 blocks with cache_control may be provided.');
    expect(world.ledger.calls.reserve.length).toBe(reserves);
  });
});
