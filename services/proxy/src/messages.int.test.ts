import Anthropic from '@anthropic-ai/sdk';
import { encode } from 'gpt-tokenizer/encoding/cl100k_base';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { configV1, ledgerV1 } from '@gateway/contracts';
import { countWords, fakePromptTokens, leakMarkers } from '@gateway/fake-upstream';
import { issueSecret } from '@gateway/secrets';
import {
  expectedCostMicros, gatewayModel, lastSettleOf, startProxyWorld, stateOf, tenant, testPrices, trafficOf, waitFor, type ProxyWorld, type TestProxy,
} from './test-support/proxy-world.ts';

const acme = tenant('acme', { allowedGatewayModelSlugs: ['chat', 'claude', 'vision', 'vision-claude'] });
const poor = tenant('poor', { allowedGatewayModelSlugs: ['chat', 'claude'] });
const frozen = tenant('frozen', { status: configV1.OrganisationStatus.ORGANISATION_STATUS_SUSPENDED });
const hasty = tenant('hasty', { rpmLimit: 1 });
/** May use 'chat' only. */
const narrow = tenant('narrow');
const upstreamCredential = 'sk-upstream-credential-123';
const creditMicros = 100_000_000n;

/** The two upstream kinds every chat model is served from: the model slug, and the id prefix its vendor gives tool calls. */
const upstreamKinds = [
  { slug: 'chat', kind: 'openai_compatible', vendorToolIdPrefix: leakMarkers.toolCallIdPrefix },
  { slug: 'claude', kind: 'anthropic', vendorToolIdPrefix: leakMarkers.toolUseIdPrefix },
] as const;

/** Tokens of a text as the proxy counts them for these models (cl100k_base: neither upstream name is an OpenAI o200k one). */
function tokens(text: string): number {
  return encode(text, { disallowedSpecial: new Set() }).length;
}

function words(count: number): string {
  return Array.from({ length: count }, (_, i) => `w${i + 1}`).join(' ');
}

/** The priced cost of some tokens at the test prices, µ₹, written out independently of the code under test. */
function cost(promptTokens: number, completionTokens: number): bigint {
  return expectedCostMicros(promptTokens, testPrices.inputPriceMicrosPerMtok) + expectedCostMicros(completionTokens, testPrices.outputPriceMicrosPerMtok);
}

/** Anthropic's `usage` of a billed usage at the test prices, with the gateway's cost fields. */
function expectedMessagesUsage(inputTokens: number, outputTokens: number) {
  const micros = cost(inputTokens, outputTokens);
  return {
    input_tokens: inputTokens, output_tokens: outputTokens, cache_creation_input_tokens: 0, cache_read_input_tokens: 0,
    cost_micros: String(micros), cost_inr: `${micros / 1_000_000n}.${String(micros % 1_000_000n).padStart(6, '0')}`,
  };
}

/** Every leak marker found in a text (expected: none). */
function leaksIn(text: string): string[] {
  return leakMarkers.all.filter((marker) => text.includes(marker));
}

function headerText(headers: Headers): string {
  return [...headers.entries()].map(([name, value]) => `${name}: ${value}`).join('\n');
}

let world: ProxyWorld;
let proxy: TestProxy;
/** The proxy's origin: Anthropic's clients add `/v1/messages` themselves. */
let origin: string;

beforeAll(async () => {
  world = await startProxyWorld((baseUrl) => stateOf([acme, poor, frozen, hasty, narrow], [
    gatewayModel('chat', baseUrl),
    gatewayModel('claude', baseUrl, { upstream: { providerKind: 'anthropic', baseUrl, model: 'claude-upstream-name', apiKey: upstreamCredential } }),
    gatewayModel('vision', baseUrl, { inputModalities: ['image'] }),
    gatewayModel('vision-claude', baseUrl, {
      inputModalities: ['image'], upstream: { providerKind: 'anthropic', baseUrl, model: 'claude-upstream-name', apiKey: upstreamCredential },
    }),
  ]), { requiredApiKey: upstreamCredential });
  world.ledger.credit('acme', creditMicros);
  world.ledger.credit('poor', 1n);
  world.ledger.credit('hasty', creditMicros);
  proxy = await world.startProxy();
  await waitFor(() => proxy.isReady(), 5000, 'first snapshot');
  origin = proxy.baseUrl.slice(0, -'/v1'.length);
});
afterAll(async () => { await world?.close(); });

/** The official client with the key as `x-api-key` (what Claude Code's ANTHROPIC_API_KEY sends) or as a Bearer token (ANTHROPIC_AUTH_TOKEN); retries off. */
function anthropicClient(key = acme.apiKey, sentAs: 'x-api-key' | 'bearer' = 'x-api-key'): Anthropic {
  return sentAs === 'x-api-key'
    ? new Anthropic({ baseURL: origin, apiKey: key, authToken: null, maxRetries: 0 })
    : new Anthropic({ baseURL: origin, apiKey: null, authToken: key, maxRetries: 0 });
}

/** A POST of a raw body, with the key as x-api-key (no anthropic-version: any or none is accepted). */
async function rawPost(body: unknown, path = '/v1/messages', headers: Record<string, string> = { 'x-api-key': acme.apiKey }): Promise<Response> {
  return fetch(`${origin}${path}`, {
    method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

/** The events of a raw SSE body; each frame's event name must be its data's `type`. */
function sseEvents(text: string): Array<Record<string, any>> {
  return text.split('\n\n').filter((frame) => frame !== '').map((frame) => {
    const lines = frame.split('\n');
    const data = JSON.parse(lines.find((line) => line.startsWith('data: '))!.slice('data: '.length)) as Record<string, any>;
    expect(lines[0]).toBe(`event: ${data.type}`);
    return data;
  });
}

/** Counts of calls so far, to assert that a refused request added none. */
const traffic = () => trafficOf(world);

/** The Settle of the last Reserve, once it has landed. */
const lastSettle = () => lastSettleOf(world);

/** The account once every Settle so far has landed (they run right after their responses). */
async function settledAccount() {
  await proxy.idle();
  return world.ledger.account('acme')!;
}

/** MONEY EXACT: the last Settle is the priced usage the client was shown, and the account dropped by exactly it. */
async function expectBilledExactly(before: { availableMicros: bigint; debitedMicros: bigint; creditedMicros: bigint }, shownCostMicros: string, expectedMicros: bigint) {
  const settle = await lastSettle();
  await proxy.idle();
  expect(settle.costMicros).toBe(expectedMicros);
  expect(BigInt(shownCostMicros)).toBe(settle.costMicros);
  expect(world.ledger.account('acme')).toEqual({
    creditedMicros: before.creditedMicros, heldMicros: 0n,
    availableMicros: before.availableMicros - expectedMicros, debitedMicros: before.debitedMicros + expectedMicros,
  });
}

const system = 'Be brief.';

describe('a message', () => {
  it('from an OpenAI-compatible model: the slug, an Anthropic message, the priced usage settled exactly (x-api-key)', async () => {
    const content = 'Hello gateway, please answer [[fake:reply_words=7]]';
    const before = await settledAccount();
    const { data, response } = await anthropicClient().messages.create({
      model: 'chat', max_tokens: 50, system, messages: [{ role: 'user', content }], stop_sequences: ['STOP'], metadata: { user_id: 'u-42' },
      ...({ temperature: 0.5 } as object),
    }).withResponse();

    // The fake counts words + 3 per message (system and user), and replies with 7 words.
    const inputTokens = fakePromptTokens([{ role: 'system', content: system }, { role: 'user', content }]);
    expect(data).toEqual({
      id: expect.stringMatching(/^msg_[0-9a-f]{32}$/), type: 'message', role: 'assistant', model: 'chat',
      content: [{ type: 'text', text: words(7) }], stop_reason: 'end_turn', stop_sequence: null,
      usage: expectedMessagesUsage(inputTokens, 7),
    });
    const reserve = world.ledger.calls.reserve.at(-1)!;
    const promptEstimate = tokens(system) + 3 + tokens(content) + 3 + 3;
    expect(reserve).toMatchObject({ organisationId: 'acme', amountMicros: cost(promptEstimate, 50), modelSlug: 'chat' });
    await expectBilledExactly(before, (data.usage as unknown as { cost_micros: string }).cost_micros, cost(inputTokens, 7));
    expect(await lastSettle()).toMatchObject({ inputTokens: BigInt(inputTokens), outputTokens: 7n, usageSource: ledgerV1.UsageSource.USAGE_SOURCE_UPSTREAM });

    // The upstream got chat completions in its own terms: its model name, our translation, its credential only.
    const seen = world.upstream.requests.at(-1)!;
    expect(seen.path).toBe('/v1/chat/completions');
    expect(seen.headers.authorization).toBe(`Bearer ${upstreamCredential}`);
    expect(seen.headers['x-api-key']).toBeUndefined();
    expect(seen.body).toEqual({
      model: 'chat-upstream-name', messages: [{ role: 'system', content: system }, { role: 'user', content }],
      max_tokens: 50, temperature: 0.5, stop: ['STOP'], user: 'u-42',
    });
    expect(leaksIn(JSON.stringify(data))).toEqual([]);
    expect(leaksIn(headerText(response.headers))).toEqual([]);
  });

  it('from an Anthropic-backed model: Messages in, Messages to the upstream, Messages out, settled exactly (Bearer)', async () => {
    const content = 'Hello claude [[fake:reply_words=4]]';
    const before = await settledAccount();
    const { data, response } = await anthropicClient(acme.apiKey, 'bearer').messages.create({
      model: 'claude', max_tokens: 40, system: [{ type: 'text', text: system, cache_control: { type: 'ephemeral' } }],
      messages: [{ role: 'user', content: [{ type: 'text', text: content }] }],
    }).withResponse();

    // The fake's Anthropic count: words + 3 per message, and the system's words + 3; the breakpoint
    // makes the request cacheable, so the organisation's cache-scope marker (3 words) leads the system prompt.
    const inputTokens = fakePromptTokens([{ role: 'user', content }]) + countWords(system) + 3 + 3;
    expect(data).toEqual({
      id: expect.stringMatching(/^msg_[0-9a-f]{32}$/), type: 'message', role: 'assistant', model: 'claude',
      content: [{ type: 'text', text: words(4) }], stop_reason: 'end_turn', stop_sequence: null,
      usage: expectedMessagesUsage(inputTokens, 4),
    });
    await expectBilledExactly(before, (data.usage as unknown as { cost_micros: string }).cost_micros, cost(inputTokens, 4));

    const seen = world.upstream.requests.at(-1)!;
    expect(seen.path).toBe('/v1/messages');
    expect(seen.headers['x-api-key']).toBe(upstreamCredential);
    expect(seen.headers['anthropic-version']).toBe('2023-06-01');
    expect(seen.headers.authorization).toBeUndefined();
    expect(seen.body).toEqual({
      model: 'claude-upstream-name', max_tokens: 40,
      system: [{ type: 'text', text: expect.stringMatching(/^\[cache scope [0-9a-f]{16}\]$/) }, { type: 'text', text: system, cache_control: { type: 'ephemeral' } }],
      messages: [{ role: 'user', content: [{ type: 'text', text: content }] }],
    });
    expect(leaksIn(JSON.stringify(data))).toEqual([]);
    expect(leaksIn(headerText(response.headers))).toEqual([]);
  });

  it('raw bytes of an answer carry no vendor string and the slug as model, whatever anthropic-version says', async () => {
    for (const { slug } of upstreamKinds) {
      for (const version of [undefined, '2023-06-01', '2099-01-01']) {
        const response = await rawPost(
          { model: slug, max_tokens: 20, messages: [{ role: 'user', content: 'hi [[fake:reply_words=2]]' }] },
          '/v1/messages',
          { 'x-api-key': acme.apiKey, ...(version === undefined ? {} : { 'anthropic-version': version }), 'anthropic-beta': 'prompt-caching-2024-07-31' },
        );
        const text = await response.text();
        expect(response.status, text).toBe(200);
        expect(response.headers.get('content-type')).toMatch(/^application\/json/);
        expect(JSON.parse(text)).toMatchObject({ model: slug, content: [{ type: 'text', text: 'w1 w2' }] });
        expect(leaksIn(text)).toEqual([]);
        expect(leaksIn(headerText(response.headers))).toEqual([]);
      }
    }
  });

  it('a reply longer than its Reserve covers is cut to it: stop_reason max_tokens, billed within the Reserve (BOUNDED_OVERRUN)', async () => {
    for (const { slug } of upstreamKinds) {
      const before = await settledAccount();
      const content = 'run away [[fake:reply_words=40]] [[fake:ignore_max_tokens]]';
      const data = await anthropicClient().messages.create({ model: slug, max_tokens: 10, messages: [{ role: 'user', content }] });
      expect(data.stop_reason).toBe('max_tokens');
      // Each "wN" is 2 tokens: the 10 reserved output tokens hold exactly 5 words.
      expect(data.content).toEqual([{ type: 'text', text: words(5) }]);
      const promptEstimate = tokens(content) + 3 + 3;
      expect(data.usage).toEqual(expectedMessagesUsage(promptEstimate, 10));
      await expectBilledExactly(before, (data.usage as unknown as { cost_micros: string }).cost_micros, cost(promptEstimate, 10));
      expect((await lastSettle()).costMicros <= world.ledger.calls.reserve.at(-1)!.amountMicros).toBe(true);
    }
  });
});

describe('a streamed message', () => {
  it('messages.stream on both upstream kinds: Anthropic events, the text, the billed usage in message_delta, settled exactly', async () => {
    for (const { slug } of upstreamKinds) {
      const before = await settledAccount();
      const content = `Stream please [[fake:reply_words=5]] ${slug}`;
      const stream = anthropicClient().messages.stream({ model: slug, max_tokens: 30, messages: [{ role: 'user', content }] });
      const events: Array<Record<string, any>> = [];
      for await (const event of stream) events.push(JSON.parse(JSON.stringify(event)) as Record<string, any>); // the SDK builds its message on the events
      const final = await stream.finalMessage();

      expect(events.map((event) => event.type)).toEqual([
        'message_start', 'content_block_start', ...Array.from({ length: 5 }, () => 'content_block_delta'), 'content_block_stop', 'message_delta', 'message_stop',
      ]);
      const promptEstimate = tokens(content) + 3 + 3;
      expect(events[0]!.message).toMatchObject({ id: expect.stringMatching(/^msg_[0-9a-f]{32}$/), model: slug, usage: { input_tokens: promptEstimate, output_tokens: 0 } });
      expect(final).toMatchObject({ model: slug, role: 'assistant', content: [{ type: 'text', text: words(5) }], stop_reason: 'end_turn' });
      const inputTokens = fakePromptTokens([{ role: 'user', content }]);
      const delta = events.find((event) => event.type === 'message_delta')!;
      expect(delta).toEqual({ type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: expectedMessagesUsage(inputTokens, 5) });
      expect(final.usage).toMatchObject({ input_tokens: inputTokens, output_tokens: 5 });
      await expectBilledExactly(before, delta.usage.cost_micros as string, cost(inputTokens, 5));
      expect(leaksIn(JSON.stringify(events))).toEqual([]);
    }
  });

  it('raw SSE of stream: true on both kinds: event names, block indexes, the slug, and no vendor string in bytes or headers', async () => {
    for (const { slug } of upstreamKinds) {
      const response = await rawPost({ model: slug, max_tokens: 30, stream: true, messages: [{ role: 'user', content: 'go [[fake:reply_words=3]]' }] });
      const text = await response.text();
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
      const events = sseEvents(text);
      expect(events[0]!.message.model).toBe(slug);
      expect(events.filter((event) => event.type === 'content_block_delta').map((event) => [event.index, event.delta.text]))
        .toEqual([[0, 'w1'], [0, ' w2'], [0, ' w3']]);
      expect(events.at(-1)).toEqual({ type: 'message_stop' });
      expect(leaksIn(text)).toEqual([]);
      expect(leaksIn(headerText(response.headers))).toEqual([]);
    }
  });

  it('a Claude-Code-shaped stream (cached system blocks, tools, thinking, context_management, the betas, ?beta=true) is served and settled exactly', async () => {
    const systemBlocks = [
      { type: 'text', text: "You are Claude Code, Anthropic's official CLI for Claude.", cache_control: { type: 'ephemeral' } },
      { type: 'text', text: 'You are an interactive CLI tool.', cache_control: { type: 'ephemeral' } },
    ];
    const systemText = systemBlocks.map((block) => block.text).join('\n\n');
    const tools = [{ name: 'Bash', description: 'Runs a command', input_schema: { type: 'object', properties: { command: { type: 'string' } }, required: ['command'] } }];
    for (const { slug } of upstreamKinds) {
      const before = await settledAccount();
      const content = `list the files [[fake:reply_words=3]] ${slug}`;
      const response = await rawPost({
        model: slug, max_tokens: 2048, stream: true, temperature: 1, system: systemBlocks, tools,
        messages: [{ role: 'user', content: [{ type: 'text', text: content, cache_control: { type: 'ephemeral' } }] }],
        metadata: { user_id: 'user_0123abcd_account__session_4567' },
        // What Claude Code 2.1.332 sends on every request: adaptive thinking (the model decides; one
        // that takes no thinking thinks none) and Anthropic's default effort.
        thinking: { type: 'adaptive', display: 'omitted' },
        output_config: { effort: 'high' },
        context_management: { edits: [{ type: 'clear_thinking_20251015', keep: 'all' }] },
      }, '/v1/messages?beta=true', {
        'x-api-key': acme.apiKey, 'anthropic-version': '2023-06-01',
        'anthropic-beta': 'claude-code-20250219,interleaved-thinking-2025-05-14,context-management-2025-06-27',
      });
      const text = await response.text();
      expect(response.status, text).toBe(200);
      const events = sseEvents(text);
      expect(events.filter((event) => event.type === 'content_block_delta').map((event) => event.delta.text as string).join('')).toBe(words(3));
      // The breakpoints make it cacheable, so the organisation's cache-scope marker leads the prompt: 3 words in
      // front of the system text on chat, and in the first tool's description on Anthropic (the fake bills no tools).
      const inputTokens = slug === 'chat'
        ? fakePromptTokens([{ role: 'system', content: systemText }, { role: 'user', content }]) + 3
        : fakePromptTokens([{ role: 'user', content }]) + countWords(systemText) + 3;
      const delta = events.find((event) => event.type === 'message_delta')!;
      expect(delta.usage, slug).toEqual(expectedMessagesUsage(inputTokens, 3));
      await expectBilledExactly(before, delta.usage.cost_micros as string, cost(inputTokens, 3));
      // Not forwarded to a model without reasoning controls: they ask for what it does anyway. Nor are the context edits.
      const seen = world.upstream.requests.at(-1)!.body as Record<string, unknown>;
      expect(seen).not.toHaveProperty('context_management');
      expect(seen).not.toHaveProperty('thinking');
      expect(seen).not.toHaveProperty('output_config');
      expect(leaksIn(text)).toEqual([]);
    }
  });

  it('the running-cost stop ends the stream with stop_reason max_tokens, billed within the Reserve (BOUNDED_OVERRUN)', async () => {
    for (const { slug } of upstreamKinds) {
      const before = await settledAccount();
      const content = 'run away [[fake:reply_words=40]] [[fake:ignore_max_tokens]]';
      const stream = anthropicClient().messages.stream({ model: slug, max_tokens: 10, messages: [{ role: 'user', content }] });
      const events: Array<Record<string, any>> = [];
      for await (const event of stream) events.push(JSON.parse(JSON.stringify(event)) as Record<string, any>); // the SDK builds its message on the events
      const final = await stream.finalMessage();
      expect(final.stop_reason).toBe('max_tokens');
      expect(final.content).toEqual([{ type: 'text', text: words(5) }]);
      const promptEstimate = tokens(content) + 3 + 3;
      const delta = events.find((event) => event.type === 'message_delta')!;
      expect(delta.usage).toEqual(expectedMessagesUsage(promptEstimate, 10));
      await expectBilledExactly(before, delta.usage.cost_micros as string, cost(promptEstimate, 10));
      expect((await lastSettle()).costMicros <= world.ledger.calls.reserve.at(-1)!.amountMicros).toBe(true);
    }
  });

  it('an upstream failure after the stream opened is an error event in Anthropic\'s shape; what was delivered is billed (NOTHING_FREE)', async () => {
    for (const { slug } of upstreamKinds) {
      const content = `[[fake:reply_words=8]] [[fake:error_after=3]] ${slug}`;
      const stream = anthropicClient().messages.stream({ model: slug, max_tokens: 30, messages: [{ role: 'user', content }] });
      let received = '';
      stream.on('text', (text) => { received += text; });
      const error = await stream.finalMessage().catch((e: unknown) => e);
      expect(error, slug).toBeInstanceOf(Anthropic.APIError);
      expect(received).toBe(words(3));
      const settle = await lastSettle();
      expect(settle).toMatchObject({ inputTokens: BigInt(tokens(content) + 6), outputTokens: BigInt(tokens(words(3))), usageSource: ledgerV1.UsageSource.USAGE_SOURCE_GATEWAY_ESTIMATE });

      const raw = await (await rawPost({ model: slug, max_tokens: 30, stream: true, messages: [{ role: 'user', content }] })).text();
      expect(sseEvents(raw).at(-1)).toEqual({ type: 'error', error: { type: 'api_error', message: expect.any(String) } });
      expect(leaksIn(raw)).toEqual([]);
    }
  });
});

describe('tools', () => {
  const tools = [{ name: 'lookup', description: 'Looks things up', input_schema: { type: 'object' as const, properties: { query: { type: 'string' } } } }];

  it('a tool round trip on both kinds: the client sees a gateway id and the input object; the upstream gets its own id back', async () => {
    for (const { slug, vendorToolIdPrefix } of upstreamKinds) {
      for (const streamed of [false, true]) {
        const client = anthropicClient();
        const ask = `find cats [[fake:tool_call=lookup]] ${slug}`;
        const params = { model: slug, max_tokens: 60, tools, messages: [{ role: 'user' as const, content: ask }] };
        const first = streamed ? await client.messages.stream(params).finalMessage() : await client.messages.create(params);
        const firstUpstream = world.upstream.requests.length; // the fake numbers its answers' ids by request
        const vendorId = `${vendorToolIdPrefix}${firstUpstream}`;
        expect(first.stop_reason, `${slug} streamed=${streamed}`).toBe('tool_use');
        expect(first.content).toEqual([{ type: 'tool_use', id: expect.any(String), name: 'lookup', input: { query: `find cats ${slug}` } }]);
        const toolUse = first.content[0] as Anthropic.ToolUseBlock;
        expect(toolUse.id).not.toContain('vendorsecret');
        expect(leaksIn(JSON.stringify(first))).toEqual([]);

        const second = await client.messages.create({
          model: slug, max_tokens: 60, tools,
          messages: [
            { role: 'user', content: ask },
            { role: 'assistant', content: first.content },
            { role: 'user', content: [{ type: 'tool_result', tool_use_id: toolUse.id, content: 'three cats' }, { type: 'text', text: '[[fake:reply_words=2]]' }] },
          ],
        });
        expect(second).toMatchObject({ stop_reason: 'end_turn', content: [{ type: 'text', text: 'w1 w2' }] });
        // The upstream refuses a tool result whose id matches no call of its own: it got its own id back, in its own API.
        const seen = world.upstream.requests.at(-1)!.body as Record<string, any>;
        if (slug === 'chat') {
          expect(seen.messages[1].tool_calls[0]).toEqual({ id: vendorId, type: 'function', function: { name: 'lookup', arguments: JSON.stringify({ query: `find cats ${slug}` }) } });
          expect(seen.messages[2]).toEqual({ role: 'tool', tool_call_id: vendorId, content: 'three cats' });
          expect(seen.messages[3]).toEqual({ role: 'user', content: '[[fake:reply_words=2]]' });
          expect(seen.tools).toEqual([{ type: 'function', function: { name: 'lookup', description: 'Looks things up', parameters: tools[0]!.input_schema } }]);
        } else {
          expect(seen.messages[1].content).toEqual([{ type: 'tool_use', id: vendorId, name: 'lookup', input: { query: `find cats ${slug}` } }]);
          expect(seen.messages[2].content[0]).toMatchObject({ type: 'tool_result', tool_use_id: vendorId, content: 'three cats' });
          expect(seen.tools).toEqual([{ name: 'lookup', description: 'Looks things up', input_schema: tools[0]!.input_schema }]);
        }
      }
    }
  });

  it('a tool_use block whose input is the string the gateway emits for non-object arguments can be echoed back: the upstream gets the arguments unchanged', async () => {
    const brokenArguments = '{"query": "cats", oops';
    const response = await rawPost({
      model: 'chat', max_tokens: 20, tools,
      messages: [
        { role: 'user', content: 'find cats' },
        { role: 'assistant', content: [{ type: 'tool_use', id: 'client_call_1', name: 'lookup', input: brokenArguments }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'client_call_1', content: 'bad input', is_error: true }, { type: 'text', text: '[[fake:reply_words=2]]' }] },
      ],
    });
    const text = await response.text();
    expect(response.status, text).toBe(200);
    expect(JSON.parse(text)).toMatchObject({ content: [{ type: 'text', text: 'w1 w2' }] });
    const seen = world.upstream.requests.at(-1)!.body as Record<string, any>;
    expect(seen.messages[1].tool_calls[0].function).toEqual({ name: 'lookup', arguments: brokenArguments });
  });

  it('raw bytes of a streamed tool call carry the gateway id only, in a tool_use block with input_json_delta pieces', async () => {
    for (const { slug } of upstreamKinds) {
      const response = await rawPost({ model: slug, max_tokens: 60, stream: true, tools, messages: [{ role: 'user', content: 'dogs [[fake:tool_call=lookup]]' }] });
      const text = await response.text();
      const events = sseEvents(text);
      const start = events.find((event) => event.type === 'content_block_start')!;
      expect(start).toMatchObject({ index: 0, content_block: { type: 'tool_use', name: 'lookup', input: {} } });
      const json = events.filter((event) => event.type === 'content_block_delta').map((event) => event.delta.partial_json as string).join('');
      expect(JSON.parse(json)).toEqual({ query: 'dogs' });
      expect(events.find((event) => event.type === 'message_delta')!.delta.stop_reason).toBe('tool_use');
      expect(leaksIn(text)).toEqual([]);
    }
  });
});

describe('images', () => {
  /** A 1×1 PNG. */
  const png = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';

  it('an image block reaches an OpenAI-compatible upstream as an image_url data URL, and an Anthropic one as an image block', async () => {
    const content: Anthropic.ContentBlockParam[] = [
      { type: 'image', source: { type: 'base64', media_type: 'image/png', data: png } },
      { type: 'text', text: 'what is it [[fake:reply_words=2]]' },
    ];
    for (const slug of ['vision', 'vision-claude']) {
      const message = await anthropicClient().messages.create({ model: slug, max_tokens: 20, messages: [{ role: 'user', content }] });
      expect(message.content, slug).toEqual([{ type: 'text', text: 'w1 w2' }]);
      const seen = world.upstream.requests.at(-1)!.body as Record<string, any>;
      // The last message: the image's worst-case estimate makes the prompt cacheable, so the
      // organisation's cache-scope marker may come first (docs/decisions.md).
      if (slug === 'vision') {
        expect(seen.messages.at(-1).content).toEqual([
          { type: 'image_url', image_url: { url: `data:image/png;base64,${png}` } }, { type: 'text', text: 'what is it [[fake:reply_words=2]]' },
        ]);
      } else {
        expect(seen.messages.at(-1).content).toEqual([
          { type: 'image', source: { type: 'base64', media_type: 'image/png', data: png } }, { type: 'text', text: 'what is it [[fake:reply_words=2]]' },
        ]);
      }
    }
  });

  it('a model that takes no images refuses one with a 400 in Anthropic\'s shape, before the Reserve', async () => {
    await proxy.idle();
    const before = traffic();
    const refused = await rawPost({ model: 'chat', max_tokens: 5, messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'base64', media_type: 'image/png', data: png } }] }] });
    expect(refused.status).toBe(400);
    expect(await refused.json()).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });
    expect(traffic()).toEqual(before);
  });
});

describe('count_tokens', () => {
  it('answers the gateway estimate of the translated request, after the key and model checks, and moves no money', async () => {
    await proxy.idle();
    const before = traffic();
    const content = 'How many tokens is this?';
    const counted = await anthropicClient().messages.countTokens({ model: 'claude', system, messages: [{ role: 'user', content }] });
    expect(counted).toEqual({ input_tokens: tokens(system) + 3 + tokens(content) + 3 + 3 });
    // Claude Code adds ?beta=true to its calls.
    const beta = await rawPost({ model: 'chat', messages: [{ role: 'user', content }] }, '/v1/messages/count_tokens?beta=true');
    expect(await beta.json()).toEqual({ input_tokens: tokens(content) + 3 + 3 });
    expect(traffic()).toEqual(before);
    await expect(anthropicClient().messages.countTokens({ model: 'nope', messages: [{ role: 'user', content }] })).rejects.toBeInstanceOf(Anthropic.NotFoundError);
  });
});

describe('refusals in Anthropic\'s error shape, before any money moves', () => {
  /** The JSON body and status of a raw refusal. */
  async function refusedRaw(body: unknown, headers?: Record<string, string>): Promise<{ status: number; body: Record<string, any> }> {
    const response = await rawPost(body, '/v1/messages', headers);
    return { status: response.status, body: await response.json() as Record<string, any> };
  }

  it('401 AuthenticationError for a missing, unknown or malformed key; the missing-key message names x-api-key', async () => {
    await proxy.idle();
    const before = traffic();
    const missing = await refusedRaw({ model: 'chat', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] }, {});
    expect(missing).toEqual({ status: 401, body: { type: 'error', error: { type: 'authentication_error', message: expect.stringContaining('x-api-key') } } });
    for (const key of [issueSecret('apiKey').secret, `${acme.apiKey.slice(0, -1)}${acme.apiKey.at(-1) === 'A' ? 'B' : 'A'}`]) {
      for (const sentAs of ['x-api-key', 'bearer'] as const) {
        const error = await anthropicClient(key, sentAs).messages.create({ model: 'chat', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] }).catch((e: unknown) => e);
        expect(error, sentAs).toBeInstanceOf(Anthropic.AuthenticationError);
        expect((error as InstanceType<typeof Anthropic.AuthenticationError>).error).toEqual({ type: 'error', error: { type: 'authentication_error', message: 'Invalid API key.' } });
      }
    }
    expect(traffic()).toEqual(before);
  });

  it('403 PermissionDeniedError for a suspended organisation', async () => {
    const before = traffic();
    const error = await anthropicClient(frozen.apiKey).messages.create({ model: 'chat', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Anthropic.PermissionDeniedError);
    expect((error as InstanceType<typeof Anthropic.APIError>).error).toEqual({ type: 'error', error: { type: 'permission_error', message: 'The organisation is suspended.' } });
    expect(traffic()).toEqual(before);
  });

  it('404 NotFoundError for a model that does not exist or is not allowed', async () => {
    const before = traffic();
    for (const [key, model] of [[acme.apiKey, 'no-such-model'], [narrow.apiKey, 'claude']] as const) {
      const error = await anthropicClient(key).messages.create({ model, max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] }).catch((e: unknown) => e);
      expect(error, model).toBeInstanceOf(Anthropic.NotFoundError);
      expect((error as InstanceType<typeof Anthropic.APIError>).error).toMatchObject({ type: 'error', error: { type: 'not_found_error' } });
    }
    expect(traffic()).toEqual(before);
  });

  it('400 BadRequestError for a missing max_tokens and every field the gateway cannot honour, naming it', async () => {
    const before = traffic();
    const error = await anthropicClient().messages.create({ model: 'chat', messages: [{ role: 'user', content: 'hi' }] } as unknown as Anthropic.MessageCreateParamsNonStreaming)
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Anthropic.BadRequestError);
    expect((error as InstanceType<typeof Anthropic.APIError>).error).toEqual({ type: 'error', error: { type: 'invalid_request_error', message: 'max_tokens: Field required' } });

    const hi = [{ role: 'user', content: 'hi' }];
    const cases: Array<[unknown, string]> = [
      [{ model: 'chat', max_tokens: 5, messages: hi, top_k: 3 }, 'top_k'],
      [{ model: 'chat', max_tokens: 5, messages: hi, tools: [{ type: 'web_search_20250305', name: 'web_search' }] }, "tools.0.type: server tools ('web_search_20250305')"],
      [{ model: 'chat', max_tokens: 5, messages: [{ role: 'user', content: [{ type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'x' } }] }] }, 'messages.0.content.0.type'],
      [{ model: 'chat', max_tokens: 5, messages: [{ role: 'user', content: [{ type: 'text', text: 'x' }, { type: 'image', source: { type: 'base64', media_type: 'image/tiff', data: 'x' } }] }] }, 'messages.0.content.1.source.media_type'],
      [{ model: 'chat', max_tokens: 5, messages: hi, mcp_servers: [{ type: 'url', url: 'https://mcp.example', name: 'x' }] }, 'mcp_servers'],
      [{ model: 'chat', max_tokens: 5, messages: hi, temperature: 1.5 }, 'temperature'],
      [{ model: 'chat', max_tokens: -1, messages: hi }, 'max_tokens'],
      ['{"model":', 'JSON'],
    ];
    for (const [body, named] of cases) {
      const refused = await refusedRaw(body);
      expect(refused.status, named).toBe(400);
      expect(refused.body).toEqual({ type: 'error', error: { type: 'invalid_request_error', message: expect.stringContaining(named) } });
    }
    expect(traffic()).toEqual(before);
  });

  it('400 naming messages.i.content.j, before the Reserve, for what both upstream APIs refuse: text before a tool_result, and empty user text', async () => {
    await proxy.idle();
    const before = traffic();
    const call = { role: 'assistant', content: [{ type: 'tool_use', id: 'client_call_1', name: 'lookup', input: { query: 'cats' } }] };
    const result = { type: 'tool_result', tool_use_id: 'client_call_1', content: 'three cats' };
    for (const slug of ['chat', 'claude']) {
      const cases: Array<[unknown[], string]> = [
        [[{ role: 'user', content: 'find cats' }, call, { role: 'user', content: [{ type: 'text', text: 'here:' }, result] }], 'messages.2.content.1: tool_result blocks must come first'],
        [[{ role: 'user', content: 'find cats' }, call, {
          role: 'user', content: [{ type: 'image', source: { type: 'url', url: 'https://example.com/cat.png' } }, result],
        }], 'messages.2.content.1: tool_result blocks must come first'],
        [[{ role: 'user', content: '' }], 'messages.0.content: text content must not be empty'],
        [[{ role: 'user', content: [{ type: 'text', text: '' }] }], 'messages.0.content.0: text content must not be empty'],
      ];
      for (const [messages, named] of cases) {
        const refused = await refusedRaw({ model: slug, max_tokens: 5, tools: [{ name: 'lookup', input_schema: { type: 'object' } }], messages });
        expect(refused, `${slug}: ${named}`).toEqual({ status: 400, body: { type: 'error', error: { type: 'invalid_request_error', message: expect.stringContaining(named) } } });
      }
    }
    expect(traffic()).toEqual(before);
  });

  it('a refusal raised on the internal request names the Messages field, not the internal chat param, before the Reserve', async () => {
    const tools = [{ name: 'lookup', input_schema: { type: 'object' } }];
    const first = await anthropicClient().messages.create({ model: 'chat', max_tokens: 60, tools: tools as Anthropic.Tool[], messages: [{ role: 'user', content: 'find [[fake:tool_call=lookup]]' }] });
    const issued = first.content[0] as Anthropic.ToolUseBlock;
    const altered = `${issued.id.slice(0, 120)}${issued.id[120] === 'x' ? 'y' : 'x'}${issued.id.slice(121)}`;
    /** A round trip with a system prompt and a text before the call, so the internal indexes differ from the client's. */
    const roundTrip = (toolUseId: string, toolResultId: string) => [
      { role: 'user', content: 'find [[fake:tool_call=lookup]]' },
      { role: 'assistant', content: [{ type: 'text', text: 'Looking.' }, { type: 'tool_use', id: toolUseId, name: 'lookup', input: issued.input }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: toolResultId, content: 'found' }, { type: 'text', text: 'thanks' }] },
    ];
    const png = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';
    await proxy.idle();
    const before = traffic();
    const cases: Array<[string, unknown[], string]> = [
      ['chat', roundTrip(issued.id, altered), 'messages.2.content.0.tool_use_id'],
      ['chat', roundTrip(altered, issued.id), 'messages.1.content.1.id'],
      ['chat', [{ role: 'user', content: 'hi' }, { role: 'assistant', content: 'hello' }, {
        role: 'user', content: [{ type: 'text', text: 'what is it' }, { type: 'image', source: { type: 'base64', media_type: 'image/png', data: png } }],
      }], 'messages.2.content.1'],
      // An Anthropic-backed model takes tool arguments only as JSON: the adapter refuses the gateway's string input of broken ones.
      ['claude', [{ role: 'user', content: 'go' }, { role: 'assistant', content: [{ type: 'tool_use', id: 'client_call_1', name: 'lookup', input: '{"query": oops' }] }, {
        role: 'user', content: [{ type: 'tool_result', tool_use_id: 'client_call_1', content: 'bad input' }],
      }], 'messages.1.content.0.input'],
    ];
    for (const [model, messages, named] of cases) {
      const refused = await refusedRaw({ model, max_tokens: 20, system, tools, messages });
      expect(refused.status, named).toBe(400);
      expect(refused.body.error.type).toBe('invalid_request_error');
      expect(refused.body.error.message, named).toMatch(new RegExp(`(^|\\W)${named.replaceAll('.', '\\.')}($|\\W)`));
      expect(refused.body.error.message).not.toMatch(/messages\[/);
    }
    expect(traffic()).toEqual(before);
  });

  it('402 APIError with billing_error when the Reserve does not fit (NO_OVERSPEND): the upstream never hears of it', async () => {
    const before = traffic();
    const error = await anthropicClient(poor.apiKey).messages.create({ model: 'claude', max_tokens: 50, messages: [{ role: 'user', content: 'hi' }] }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Anthropic.APIError);
    expect((error as InstanceType<typeof Anthropic.APIError>).status).toBe(402);
    expect((error as InstanceType<typeof Anthropic.APIError>).error).toMatchObject({ type: 'error', error: { type: 'billing_error' } });
    expect(traffic()).toEqual({ ...before, reserve: before.reserve + 1 });
    expect(world.ledger.account('poor')).toEqual({ creditedMicros: 1n, availableMicros: 1n, heldMicros: 0n, debitedMicros: 0n });
  });

  it('429 RateLimitError with retry-after once the organisation\'s pool is used (count_tokens counts too)', async () => {
    const client = anthropicClient(hasty.apiKey);
    await client.messages.countTokens({ model: 'chat', messages: [{ role: 'user', content: 'hi' }] });
    const before = traffic();
    const error = await client.messages.create({ model: 'chat', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Anthropic.RateLimitError);
    const limited = error as InstanceType<typeof Anthropic.RateLimitError>;
    expect(limited.error).toEqual({ type: 'error', error: { type: 'rate_limit_error', message: 'Rate limit exceeded' } });
    expect(Number(limited.headers?.get('retry-after'))).toBeGreaterThan(0);
    expect(traffic()).toEqual(before);
  });

  it('a failed upstream call is a 5xx in Anthropic\'s shape with none of the vendor\'s text, settled at zero', async () => {
    for (const { slug } of upstreamKinds) {
      const response = await rawPost({ model: slug, max_tokens: 5, messages: [{ role: 'user', content: '[[fake:status=503]]' }] });
      const text = await response.text();
      expect(response.status).toBe(502);
      expect(JSON.parse(text)).toEqual({ type: 'error', error: { type: 'api_error', message: expect.any(String) } });
      expect(leaksIn(text)).toEqual([]);
      expect(await lastSettle()).toMatchObject({ inputTokens: 0n, outputTokens: 0n, costMicros: 0n });
    }
  });
});
