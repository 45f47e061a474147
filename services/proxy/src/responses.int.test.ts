import { encode } from 'gpt-tokenizer/encoding/cl100k_base';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ledgerV1 } from '@gateway/contracts';
import { fakePromptTokens, leakMarkers } from '@gateway/fake-upstream';
import {
  expectedCostMicros, gatewayModel, lastSettleOf, startProxyWorld, stateOf, tenant, testPrices, trafficOf, waitFor, type ProxyWorld, type TestProxy,
} from './test-support/proxy-world.ts';

const acme = tenant('acme', { allowedGatewayModelSlugs: ['chat', 'claude', 'vectors', 'vision'] });
const tight = tenant('tight');
const upstreamCredential = 'sk-upstream-credential-123';

/** Tokens of a text as the proxy counts them for these models (cl100k_base: the upstream names are not OpenAI's). */
function tokens(text: string): number {
  return encode(text, { disallowedSpecial: new Set() }).length;
}

/** The proxy's prompt estimate for messages of these texts: each text's tokens + 3, + 3 in all. */
function promptEstimate(...texts: string[]): number {
  return texts.reduce((sum, text) => sum + tokens(text) + 3, 3);
}

function words(count: number): string {
  return Array.from({ length: count }, (_, i) => `w${i + 1}`).join(' ');
}

/** The cost of a usage at the test prices, µ₹, written out independently of the code under test. */
function cost(promptTokens: number, completionTokens: number): bigint {
  return expectedCostMicros(promptTokens, testPrices.inputPriceMicrosPerMtok) + expectedCostMicros(completionTokens, testPrices.outputPriceMicrosPerMtok);
}

/** The `usage` of a Response for some tokens at the test prices, written out independently of the code under test. */
function expectedResponsesUsage(inputTokens: number, outputTokens: number) {
  const micros = cost(inputTokens, outputTokens);
  return {
    input_tokens: inputTokens, input_tokens_details: { cached_tokens: 0 },
    output_tokens: outputTokens, output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: inputTokens + outputTokens,
    cost_micros: String(micros), cost_inr: `${micros / 1_000_000n}.${String(micros % 1_000_000n).padStart(6, '0')}`,
  };
}

/** The cost a Response's usage shows, µ₹ (the gateway's field beside OpenAI's). */
function costShown(usage: OpenAI.Responses.ResponseUsage | undefined): string {
  return (usage as unknown as { cost_micros: string }).cost_micros;
}

/** Every leak marker found in a text (expected: none). */
function leaksIn(text: string): string[] {
  return leakMarkers.all.filter((marker) => text.includes(marker));
}

let world: ProxyWorld;
let proxy: TestProxy;
let client: OpenAI;

beforeAll(async () => {
  world = await startProxyWorld((baseUrl) => stateOf([acme, tight], [
    gatewayModel('chat', baseUrl),
    gatewayModel('claude', baseUrl, { upstream: { providerKind: 'anthropic', baseUrl, model: 'claude-upstream-name', apiKey: upstreamCredential } }),
    gatewayModel('vectors', baseUrl, { kind: 'embedding' }),
    gatewayModel('vision', baseUrl, { inputModalities: ['image'] }),
  ]), { requiredApiKey: upstreamCredential });
  world.ledger.credit('acme', 100_000_000n);
  proxy = await world.startProxy();
  await waitFor(() => proxy.isReady(), 5000, 'first snapshot');
  client = world.client(acme.apiKey);
});
afterAll(async () => { await world?.close(); });

/** Counts of calls so far, to assert that a refused request added none. */
const traffic = () => trafficOf(world);

/** The Settle of the last Reserve, once it has landed. */
const lastSettle = () => lastSettleOf(world);

async function rawPost(body: unknown, apiKey = acme.apiKey): Promise<{ status: number; headers: Headers; text: string }> {
  const response = await fetch(`${proxy.baseUrl}/responses`, {
    method: 'POST',
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: response.status, headers: response.headers, text: await response.text() };
}

/** The events of a raw SSE body: each frame's `event:` name and parsed `data:`. */
function sseEvents(text: string): Array<{ event: string; data: Record<string, any> }> {
  return text.split('\n\n').filter((frame) => frame !== '').map((frame) => {
    const [eventLine, dataLine, ...rest] = frame.split('\n');
    expect(rest).toEqual([]);
    expect(eventLine).toMatch(/^event: /);
    expect(dataLine).toMatch(/^data: /);
    return { event: eventLine!.slice('event: '.length), data: JSON.parse(dataLine!.slice('data: '.length)) as Record<string, any> };
  });
}

describe('a response', () => {
  it('answers a string input with instructions, reserves as chat does and settles the priced usage, equal to usage.cost_micros', async () => {
    await proxy.idle();
    const before = world.ledger.account('acme')!;
    const instructions = 'Answer in words.';
    const inputText = 'Hello responses [[fake:reply_words=7]]';
    const { data, response } = await client.responses
      .create({ model: 'chat', instructions, input: inputText, max_output_tokens: 50, temperature: 0.5, metadata: { ticket: 'T-1' } })
      .withResponse();
    await proxy.idle();

    // The fake counts words + 3 per message: (3 + 3) + (3 + 3) = 12 input tokens; the reply is 7 words.
    expect(data).toMatchObject({
      object: 'response', model: 'chat', status: 'completed', error: null, incomplete_details: null, instructions,
      max_output_tokens: 50, temperature: 0.5, metadata: { ticket: 'T-1' }, store: true, previous_response_id: null, tools: [], tool_choice: 'auto',
      output: [{ type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: words(7), annotations: [] }] }],
      usage: expectedResponsesUsage(12, 7),
    });
    expect(data.output_text).toBe(words(7));
    expect(data.id).toBe(`resp_${data.id.slice('resp_'.length)}`);
    expect(data.id).toMatch(/^resp_[0-9a-f-]{36}$/);
    expect(data.output[0]!.id).toMatch(/^msg_[0-9a-f]{32}_0$/);

    // The Reserve is chat's: the prompt estimate (system + user) and max_output_tokens, priced.
    const reserve = world.ledger.calls.reserve.at(-1)!;
    expect(reserve.amountMicros).toBe(cost(promptEstimate(instructions, inputText), 50));
    const settle = await lastSettle();
    expect(settle).toMatchObject({
      inputTokens: 12n, outputTokens: 7n, costMicros: cost(12, 7), usageSource: ledgerV1.UsageSource.USAGE_SOURCE_UPSTREAM,
      requestId: response.headers.get('x-request-id'),
    });
    expect(String(settle.costMicros)).toBe(costShown(data.usage));
    expect(world.ledger.account('acme')).toEqual({
      ...before, debitedMicros: before.debitedMicros + settle.costMicros, availableMicros: before.availableMicros - settle.costMicros,
    });

    // The upstream got chat: instructions as the system message, our max_tokens and params; metadata stays with us.
    expect(world.upstream.requests.at(-1)!.body).toEqual({
      model: 'chat-upstream-name', messages: [{ role: 'system', content: instructions }, { role: 'user', content: inputText }],
      max_tokens: 50, temperature: 0.5,
    });
  });
});

describe('a streamed response', () => {
  it('sends the typed events in order through client.responses.create({stream: true}), and settles what response.completed shows', async () => {
    await proxy.idle();
    const before = world.ledger.account('acme')!;
    const inputText = 'Stream please [[fake:reply_words=6]]';
    const stream = await client.responses.create({ model: 'chat', input: inputText, stream: true, max_output_tokens: 40 });
    const events: OpenAI.Responses.ResponseStreamEvent[] = [];
    for await (const event of stream) events.push(event);
    await proxy.idle();

    const types = events.map((event) => event.type);
    expect(types.slice(0, 5)).toEqual([
      'response.created', 'response.in_progress', 'response.output_item.added', 'response.content_part.added', 'response.output_text.delta',
    ]);
    expect(types.slice(-5)).toEqual([
      'response.output_text.delta', 'response.output_text.done', 'response.content_part.done', 'response.output_item.done', 'response.completed',
    ]);
    expect(events.map((event) => event.sequence_number)).toEqual(events.map((_, index) => index));
    const deltas = events.filter((event) => event.type === 'response.output_text.delta');
    expect(deltas.map((event) => event.delta).join('')).toBe(words(6));
    const itemId = (events[2] as OpenAI.Responses.ResponseOutputItemAddedEvent).item.id;
    expect(deltas.every((event) => event.item_id === itemId && event.output_index === 0 && event.content_index === 0)).toBe(true);
    const created = events[0] as OpenAI.Responses.ResponseCreatedEvent;
    expect(created.response).toMatchObject({ object: 'response', status: 'in_progress', model: 'chat', output: [], usage: null });
    const completed = events.at(-1) as OpenAI.Responses.ResponseCompletedEvent;
    expect(completed.response).toMatchObject({
      id: created.response.id, status: 'completed', model: 'chat', max_output_tokens: 40,
      output: [{ id: itemId, type: 'message', status: 'completed', content: [{ type: 'output_text', text: words(6) }] }],
      usage: expectedResponsesUsage(6, 6),
    });

    const settle = await lastSettle();
    expect(settle).toMatchObject({ inputTokens: 6n, outputTokens: 6n, costMicros: cost(6, 6), usageSource: ledgerV1.UsageSource.USAGE_SOURCE_UPSTREAM });
    expect(String(settle.costMicros)).toBe(costShown(completed.response.usage));
    expect(world.ledger.calls.reserve.at(-1)!.amountMicros).toBe(cost(promptEstimate(inputText), 40));
    expect(world.ledger.account('acme')).toEqual({
      ...before, debitedMicros: before.debitedMicros + settle.costMicros, availableMicros: before.availableMicros - settle.costMicros,
    });
  });

  it('works with the client\'s responses.stream helper: text deltas and the final response', async () => {
    const stream = client.responses.stream({ model: 'chat', input: [{ role: 'user', content: 'Helper [[fake:reply_words=4]]' }] });
    let text = '';
    stream.on('response.output_text.delta', (event) => { text += event.delta; });
    const final = await stream.finalResponse();
    expect(text).toBe(words(4));
    expect(final.output_text).toBe(words(4));
    // The fake counts 2 words + 3 of input.
    expect(final).toMatchObject({ status: 'completed', model: 'chat', usage: expectedResponsesUsage(5, 4) });
  });
});

describe('tools', () => {
  const weather: OpenAI.Responses.FunctionTool = {
    type: 'function', name: 'get_weather', description: 'The weather of a city', strict: true,
    parameters: { type: 'object', properties: { query: { type: 'string' } }, required: ['query'], additionalProperties: false },
  };

  it('round-trips a function call: function_call out, function_call + function_call_output back, the upstream gets its own id', async () => {
    const ask = 'Weather in Pune? [[fake:tool_call=get_weather]]';
    const first = await client.responses.create({ model: 'chat', input: ask, tools: [weather], tool_choice: 'auto', parallel_tool_calls: false });
    expect(first.status).toBe('completed');
    expect(first.output).toHaveLength(1);
    const call = first.output[0] as OpenAI.Responses.ResponseFunctionToolCall;
    expect(call).toMatchObject({ type: 'function_call', status: 'completed', name: 'get_weather', arguments: JSON.stringify({ query: 'Weather in Pune?' }) });
    expect(call.id).toMatch(/^fc_[0-9a-f]{32}_0$/);
    // The call_id is the gateway's, not the vendor's (domain/tool-call-ids.ts).
    expect(call.call_id).toMatch(/^call_/);
    expect(leaksIn(call.call_id)).toEqual([]);
    expect(first.tools).toEqual([weather]);
    expect(first.parallel_tool_calls).toBe(false);
    // The upstream got chat tools, tool_choice and parallel_tool_calls.
    const firstSeen = world.upstream.requests.at(-1)!.body as Record<string, unknown>;
    expect(firstSeen).toMatchObject({
      tools: [{ type: 'function', function: { name: 'get_weather', description: weather.description, parameters: weather.parameters, strict: true } }],
      tool_choice: 'auto', parallel_tool_calls: false,
    });
    // The fake numbers its requests: its tool-call id is its own, with its request number.
    const vendorId = `${leakMarkers.toolCallIdPrefix}${world.upstream.requests.length}`;

    const second = await client.responses.create({
      model: 'chat', tools: [weather],
      input: [
        { role: 'user', content: ask },
        { type: 'function_call', call_id: call.call_id, name: call.name, arguments: call.arguments },
        { type: 'function_call_output', call_id: call.call_id, output: '{"celsius": 31}' },
      ],
    });
    expect(second.status).toBe('completed');
    expect(second.output_text).toContain('Hello from the demo upstream!');
    // The upstream's own id came back to it (the fake refuses a tool result matching no call of its own).
    const secondSeen = world.upstream.requests.at(-1)!.body as { messages: Array<Record<string, unknown>> };
    expect(secondSeen.messages).toEqual([
      { role: 'user', content: ask },
      { role: 'assistant', content: null, tool_calls: [{ id: vendorId, type: 'function', function: { name: 'get_weather', arguments: call.arguments } }] },
      { role: 'tool', tool_call_id: vendorId, content: '{"celsius": 31}' },
    ]);
  });

  it('round-trips a function call on an Anthropic-backed model: tool_use and tool_result blocks upstream, with its own id', async () => {
    const ask = 'Claude weather? [[fake:tool_call=get_weather]]';
    const first = await client.responses.create({ model: 'claude', input: ask, tools: [weather] });
    const call = first.output[0] as OpenAI.Responses.ResponseFunctionToolCall;
    expect(call).toMatchObject({ type: 'function_call', name: 'get_weather', arguments: JSON.stringify({ query: 'Claude weather?' }) });
    expect(leaksIn(call.call_id)).toEqual([]);
    const vendorId = `${leakMarkers.toolUseIdPrefix}${world.upstream.requests.length}`;
    const second = await client.responses.create({
      model: 'claude', tools: [weather],
      input: [
        { role: 'user', content: ask },
        { type: 'function_call', call_id: call.call_id, name: call.name, arguments: call.arguments },
        { type: 'function_call_output', call_id: call.call_id, output: 'sunny' },
      ],
    });
    expect(second.output_text).toContain('Hello from the demo upstream!');
    expect((world.upstream.requests.at(-1)!.body as { messages: unknown[] }).messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: ask }] },
      { role: 'assistant', content: [{ type: 'tool_use', id: vendorId, name: 'get_weather', input: { query: 'Claude weather?' } }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: vendorId, content: 'sunny' }] },
    ]);
  });

  it('names the function_call whose arguments an Anthropic-backed model cannot take, before any Reserve', async () => {
    await proxy.idle();
    const before = traffic();
    const { status, text } = await rawPost({
      model: 'claude', input: [
        { role: 'user', content: 'hi' },
        { type: 'function_call', call_id: 'call_x', name: 'f', arguments: '{}' },
        { type: 'function_call', call_id: 'call_y', name: 'f', arguments: 'not json' },
      ],
    });
    expect(status).toBe(400);
    expect(JSON.parse(text)).toMatchObject({ error: { code: 'invalid_request', param: 'input[2].arguments' } });
    expect(traffic()).toEqual(before);
  });

  it('streams a function call as output_item.added, function_call_arguments.delta … .done, output_item.done', async () => {
    const stream = client.responses.stream({ model: 'chat', input: 'Stream a call [[fake:tool_call=get_weather]]', tools: [weather] });
    const types: string[] = [];
    let argumentsText = '';
    stream.on('event', (event) => { types.push(event.type); });
    stream.on('response.function_call_arguments.delta', (event) => { argumentsText += event.delta; });
    const final = await stream.finalResponse();
    const expectedArguments = JSON.stringify({ query: 'Stream a call' });
    expect(argumentsText).toBe(expectedArguments);
    expect(types[2]).toBe('response.output_item.added');
    expect(types.slice(-3)).toEqual(['response.function_call_arguments.done', 'response.output_item.done', 'response.completed']);
    expect(types).not.toContain('response.output_text.delta');
    expect(final.output).toEqual([expect.objectContaining({ type: 'function_call', name: 'get_weather', arguments: expectedArguments, status: 'completed' })]);
    expect(final.output[0]!.id).toMatch(/^fc_[0-9a-f]{32}_0$/);
  });

  it('sends text.format json_schema upstream as response_format and echoes it', async () => {
    const format = {
      type: 'json_schema' as const, name: 'city', strict: true, description: 'A city',
      schema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'], additionalProperties: false },
    };
    const data = await client.responses.create({ model: 'chat', input: 'A city please [[fake:reply_words=2]]', text: { format } });
    expect(data.text).toEqual({ format });
    expect((world.upstream.requests.at(-1)!.body as Record<string, unknown>).response_format).toEqual({
      type: 'json_schema', json_schema: { name: 'city', schema: format.schema, strict: true, description: 'A city' },
    });
  });

  it('a streamed request reserves its text.format schema\'s tokens as prompt (upstreams bill it; NO_OVERSPEND): exactly that much more than without it', async () => {
    const properties = Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`field_${i}`, { type: 'string', description: `The value number ${i}` }]));
    const schema = { type: 'object', properties, required: Object.keys(properties), additionalProperties: false };
    const inputText = 'Fill the form [[fake:reply_words=3]]';
    const streamed = async (body: Record<string, unknown>) => {
      const { status, text } = await rawPost({ model: 'chat', input: inputText, max_output_tokens: 20, stream: true, ...body });
      expect(status).toBe(200);
      expect(sseEvents(text).at(-1)!.event).toBe('response.completed');
      return { reserve: world.ledger.calls.reserve.at(-1)!.amountMicros, settle: await lastSettle() };
    };
    const without = await streamed({});
    const withSchema = await streamed({ text: { format: { type: 'json_schema', name: 'form', schema, strict: true } } });
    // Past PROXY_CACHE_SCOPE_MIN_PROMPT_TOKENS (512) an upstream may cache the prompt, so it starts with the
    // organisation's cache-scope marker (a system message of its own here), which the Reserve counts too (+2 for its separator).
    const marker = (world.upstream.requests.at(-1)!.body as { messages: Array<{ content: string }> }).messages[0]!.content;
    expect(marker).toMatch(/^\[cache scope [0-9a-f]{16}\]$/);
    const markerTokens = tokens(marker) + 2;

    // The chat form's response_format, as the estimate stringifies it (json_schema's fields under json_schema).
    const schemaTokens = tokens(JSON.stringify({ type: 'json_schema', json_schema: { name: 'form', schema, strict: true } }));
    expect(schemaTokens).toBeGreaterThan(400);
    expect(without.reserve).toBe(cost(promptEstimate(inputText), 20));
    expect(withSchema.reserve).toBe(cost(promptEstimate(inputText) + schemaTokens + markerTokens, 20));
    expect(withSchema.reserve - without.reserve).toBe(
      expectedCostMicros(promptEstimate(inputText) + schemaTokens + markerTokens, testPrices.inputPriceMicrosPerMtok)
        - expectedCostMicros(promptEstimate(inputText), testPrices.inputPriceMicrosPerMtok),
    );
    // The fake bills words + 3 per message (not the schema), so the Settle is its usage, within the Reserve.
    const upstreamInput = fakePromptTokens([{ role: 'system', content: marker }, { role: 'user', content: inputText }]);
    expect(withSchema.settle).toMatchObject({ inputTokens: BigInt(upstreamInput), outputTokens: 3n, costMicros: cost(upstreamInput, 3), usageSource: ledgerV1.UsageSource.USAGE_SOURCE_UPSTREAM });
    expect(withSchema.settle.costMicros <= withSchema.reserve).toBe(true);
  });
});

describe('images', () => {
  it('an input_image reaches the upstream as an image_url part; a model without images refuses it naming the part, before any Reserve', async () => {
    const content = [
      { type: 'input_text' as const, text: 'What is this? [[fake:reply_words=2]]' },
      { type: 'input_image' as const, image_url: 'https://images.example.com/cat.png', detail: 'low' as const },
    ];
    const data = await client.responses.create({ model: 'vision', input: [{ role: 'user', content }] });
    expect(data.output_text).toBe(words(2));
    // After the organisation's cache-scope marker: the image's worst-case estimate makes the prompt long enough to be cached.
    expect((world.upstream.requests.at(-1)!.body as { messages: unknown[] }).messages.at(-1)).toEqual({
      role: 'user', content: [{ type: 'text', text: content[0]!.text }, { type: 'image_url', image_url: { url: content[1]!.image_url, detail: 'low' } }],
    });

    await proxy.idle();
    const before = traffic();
    const { status, text } = await rawPost({ model: 'chat', input: [{ role: 'user', content }] });
    expect(status).toBe(400);
    const { error } = JSON.parse(text) as { error: { param: string; message: string } };
    expect(error.param).toBe('input[0].content[1]');
    expect(error.message).toContain('input[0].content[1]');
    expect(error.message).not.toContain('messages');
    expect(traffic()).toEqual(before);
  });
});

describe('an Anthropic-backed model', () => {
  it('serves a response and a stream through the Messages API adapter, and bills the reported usage exactly', async () => {
    await proxy.idle();
    const before = world.ledger.account('acme')!;
    const instructions = 'Be brief.';
    const inputText = 'Claude please [[fake:reply_words=5]]';
    const data = await client.responses.create({ model: 'claude', instructions, input: inputText, max_output_tokens: 30 });
    await proxy.idle();
    // Anthropic's input tokens: the user text's 3 words + 3 and the system's 2 words + 3.
    expect(data).toMatchObject({ model: 'claude', status: 'completed', output_text: words(5), usage: expectedResponsesUsage(11, 5) });
    const seen = world.upstream.requests.at(-1)!;
    expect(seen.path).toBe('/v1/messages');
    expect(seen.body).toMatchObject({ model: 'claude-upstream-name', system: instructions, max_tokens: 30, messages: [{ role: 'user', content: [{ type: 'text', text: inputText }] }] });
    const settled = await lastSettle();
    expect(settled).toMatchObject({ inputTokens: 11n, outputTokens: 5n, costMicros: cost(11, 5) });

    const stream = client.responses.stream({ model: 'claude', instructions, input: 'Stream claude [[fake:reply_words=3]]' });
    const final = await stream.finalResponse();
    await proxy.idle();
    expect(final).toMatchObject({ model: 'claude', status: 'completed', output_text: words(3), usage: expectedResponsesUsage(11, 3) });
    const streamSettle = await lastSettle();
    expect(streamSettle).toMatchObject({ inputTokens: 11n, outputTokens: 3n, costMicros: cost(11, 3) });
    expect(world.ledger.account('acme')!.debitedMicros).toBe(before.debitedMicros + cost(11, 5) + cost(11, 3));
  });

  it('names text.format when the model cannot honour a JSON schema, before any Reserve', async () => {
    await proxy.idle();
    const before = traffic();
    const error = await client.responses.create({
      model: 'claude', input: 'hi', text: { format: { type: 'json_schema', name: 'x', schema: { type: 'object' } } },
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect((error as InstanceType<typeof OpenAI.BadRequestError>).param).toBe('text.format');
    expect((error as InstanceType<typeof OpenAI.BadRequestError>).message).not.toContain('response_format');
    expect(traffic()).toEqual(before);
  });
});

describe('the running-cost stop (BOUNDED_OVERRUN)', () => {
  it('ends a runaway stream with response.incomplete, reason max_output_tokens, billed within the Reserve', async () => {
    await proxy.idle();
    const before = world.ledger.account('acme')!;
    const inputText = 'run away [[fake:reply_words=2000]] [[fake:ignore_max_tokens]]';
    const { status, text } = await rawPost({ model: 'chat', input: inputText, max_output_tokens: 10, stream: true });
    expect(status).toBe(200);
    const events = sseEvents(text);
    const last = events.at(-1)!;
    expect(last.event).toBe('response.incomplete');
    expect(last.data.response).toMatchObject({ status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' } });
    const delivered = events.filter((e) => e.event === 'response.output_text.delta').map((e) => e.data.delta as string).join('');
    // Each "wN" is 2 tokens: 10 tokens of room hold exactly 5 words.
    expect(delivered).toBe(words(5));
    expect(last.data.response.output).toEqual([expect.objectContaining({ type: 'message', status: 'incomplete', content: [expect.objectContaining({ text: words(5) })] })]);
    const promptTokens = promptEstimate(inputText);
    const reserve = world.ledger.calls.reserve.at(-1)!;
    expect(reserve.amountMicros).toBe(cost(promptTokens, 10));
    const settle = await lastSettle();
    expect(settle).toMatchObject({ inputTokens: BigInt(promptTokens), outputTokens: 10n, costMicros: cost(promptTokens, 10), usageSource: ledgerV1.UsageSource.USAGE_SOURCE_GATEWAY_ESTIMATE });
    expect(settle.costMicros <= reserve.amountMicros).toBe(true);
    expect(last.data.response.usage).toEqual(expectedResponsesUsage(promptTokens, 10));
    await proxy.idle();
    expect(world.ledger.account('acme')).toMatchObject({ heldMicros: 0n, debitedMicros: before.debitedMicros + settle.costMicros });
  });

  it('cuts a runaway non-streaming reply at the Reserve: status incomplete, max_output_tokens', async () => {
    const inputText = 'run away [[fake:reply_words=40]] [[fake:ignore_max_tokens]]';
    const data = await client.responses.create({ model: 'chat', input: inputText, max_output_tokens: 10 });
    expect(data).toMatchObject({ status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' }, output_text: words(5) });
    const settle = await lastSettle();
    expect(settle).toMatchObject({ outputTokens: 10n, costMicros: cost(promptEstimate(inputText), 10) });
    expect(costShown(data.usage)).toBe(String(settle.costMicros));
  });

  it('an upstream length finish is incomplete too', async () => {
    const data = await client.responses.create({ model: 'chat', input: 'long [[fake:reply_words=30]]', max_output_tokens: 4 });
    expect(data).toMatchObject({ status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' }, output_text: words(4) });
  });
});

describe('an upstream failure mid-stream', () => {
  it('ends the stream with one error event in the gateway\'s words (the client raises it) and settles what was delivered (NOTHING_FREE)', async () => {
    const inputText = 'fail soon [[fake:reply_words=10]] [[fake:error_after=3]]';
    const { status, text } = await rawPost({ model: 'chat', input: inputText, stream: true });
    expect(status).toBe(200);
    const events = sseEvents(text);
    expect(events.at(-1)).toEqual({
      event: 'error',
      data: { type: 'error', sequence_number: events.length - 1, code: 'upstream_error', message: expect.any(String), param: null },
    });
    expect(events.map((e) => e.event)).not.toContain('response.completed');
    expect(leaksIn(text)).toEqual([]);
    const delivered = events.filter((e) => e.event === 'response.output_text.delta').map((e) => e.data.delta as string).join('');
    expect(delivered).toBe(words(3));
    const settle = await lastSettle();
    expect(settle).toMatchObject({ inputTokens: BigInt(promptEstimate(inputText)), outputTokens: BigInt(tokens(words(3))), costMicros: cost(promptEstimate(inputText), tokens(words(3))) });

    const error = await (async () => {
      for await (const _event of await client.responses.create({ model: 'chat', input: inputText, stream: true })) { /* drained */ }
    })().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.APIError);
  });
});

describe('refusals before any money moves', () => {
  it('400 naming the Responses param, in OpenAI\'s error shape, with no Reserve and no upstream call', async () => {
    await proxy.idle();
    const before = traffic();
    const text = (t: string) => ({ type: 'input_text', text: t });
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ input: 'hi' }, 'model'],
      [{ model: 'chat' }, 'input'],
      [{ model: 'chat', input: [] }, 'input'],
      // Not an id this gateway gives: read as absent, like an unknown one (responses-store.int.test.ts has the rest).
      [{ model: 'chat', input: 'hi', previous_response_id: 'resp_123' }, 'previous_response_id'],
      [{ model: 'chat', input: 'hi', previous_response_id: 7 }, 'previous_response_id'],
      [{ model: 'chat', input: 'hi', store: 'yes' }, 'store'],
      [{ model: 'chat', input: 'hi', conversation: 'conv_123' }, 'conversation'],
      [{ model: 'chat', input: 'hi', background: true }, 'background'],
      [{ model: 'chat', input: 'hi', prompt: { id: 'pmpt_1' } }, 'prompt'],
      [{ model: 'chat', input: 'hi', context_management: [{ type: 'compaction' }] }, 'context_management'],
      [{ model: 'chat', input: 'hi', include: ['reasoning.encrypted_content', 'message.output_text.logprobs'] }, 'include[1]'],
      [{ model: 'chat', input: 'hi', top_logprobs: 3 }, 'top_logprobs'],
      [{ model: 'chat', input: 'hi', reasoning: { effort: 'high' } }, 'reasoning.effort'],
      [{ model: 'chat', input: 'hi', text: { verbosity: 'low' } }, 'text.verbosity'],
      [{ model: 'chat', input: 'hi', tools: [{ type: 'web_search' }] }, 'tools[0].type'],
      [{ model: 'chat', input: 'hi', tools: [{ type: 'function', name: 'ok' }, { type: 'file_search', vector_store_ids: ['vs_1'] }] }, 'tools[1].type'],
      [{ model: 'chat', input: 'hi', tools: [{ type: 'function', name: '' }] }, 'tools[0].name'],
      [{ model: 'chat', input: 'hi', tool_choice: { type: 'web_search_preview' } }, 'tool_choice'],
      [{ model: 'chat', input: 'hi', text: { format: { type: 'json_schema', name: 'x', schema: 'not an object' } } }, 'text.format.schema'],
      [{ model: 'chat', input: 'hi', text: { format: { type: 'xml' } } }, 'text.format.type'],
      [{ model: 'chat', input: 'hi', max_output_tokens: 0 }, 'max_output_tokens'],
      [{ model: 'chat', input: 'hi', temperature: 3 }, 'temperature'],
      [{ model: 'chat', input: 'hi', metadata: { n: 1 } }, 'metadata.n'],
      [{ model: 'chat', input: [{ role: 'user', content: [text('a'), text('b'), { type: 'input_text', text: 7 }] }] }, 'input[0].content[2].text'],
      [{ model: 'chat', input: [{ role: 'user', content: 'a' }, { role: 'robot', content: 'b' }] }, 'input[1].role'],
      [{ model: 'chat', input: [{ role: 'user', content: [{ type: 'input_image', file_id: 'file-1', detail: 'auto' }] }] }, 'input[0].content[0].file_id'],
      [{ model: 'chat', input: [{ role: 'user', content: [{ type: 'input_file', file_data: 'x', filename: 'a.pdf' }] }] }, 'input[0].content[0]'],
      [{ model: 'chat', input: [{ role: 'user', content: [{ type: 'output_text', text: 'x' }] }] }, 'input[0].content[0].type'],
      [{ model: 'chat', input: [{ role: 'user', content: 'a' }, { type: 'item_reference', id: 'msg_1' }] }, 'input[1]'],
      [{ model: 'chat', input: [{ role: 'user', content: 'a' }, { id: 'msg_1' }] }, 'input[1]'],
      [{ model: 'chat', input: [{ type: 'web_search_call', id: 'ws_1', status: 'completed' }] }, 'input[0].type'],
      [{ model: 'chat', input: [{ type: 'function_call', call_id: 'c1', name: 'f' }] }, 'input[0].arguments'],
      [{ model: 'chat', input: [{ type: 'function_call_output', output: 'x' }] }, 'input[0].call_id'],
      [{ model: 'chat', input: [{ role: 'user', content: 'a' }, { type: 'function_call_output', call_id: 'c1', output: [{ type: 'input_image', image_url: 'https://x/y.png' }] }] }, 'input[1].output[0]'],
      [{ model: 'chat', input: [{ role: 'user', content: [{ type: 'input_image', image_url: 'https://x/y.png', detail: 'extreme' }] }] }, 'input[0].content[0].detail'],
      // Caught by the chat form's own validation, named in the Responses request's terms.
      [{ model: 'chat', input: [{ role: 'assistant', content: [] }] }, 'input[0].content'],
      // The estimate: a prompt that alone fills the model's context (4096 tokens).
      [{ model: 'chat', input: 'word '.repeat(5000) }, 'input'],
      [{ model: 'vectors', input: 'hi' }, 'model'],
    ];
    for (const [body, param] of cases) {
      const { status, text: answer } = await rawPost(body);
      const error = (JSON.parse(answer) as { error: { type: string; code: string; param: string; message: string } }).error;
      expect({ status, param: error.param, code: error.code, type: error.type }, JSON.stringify(body).slice(0, 200))
        .toEqual({ status: 400, param, code: 'invalid_request', type: 'invalid_request_error' });
      expect(error.message, param).not.toMatch(/messages|response_format|max_tokens/);
    }
    expect(traffic()).toEqual(before);
  });

  it('stores by default (absent or null store, as OpenAI does) and not with store: false, and says which', async () => {
    for (const [store, stored] of [[undefined, true], [null, true], [false, false]] as const) {
      const data = await client.responses.create({ model: 'chat', input: 'hi [[fake:reply_words=1]]', ...(store === undefined ? {} : { store }) });
      expect(data.status).toBe('completed');
      expect((data as unknown as { store: boolean }).store).toBe(stored);
    }
  });

  it('404 for a stored response the organisation does not have (with its key; none needed for cancel, which nothing can be)', async () => {
    await proxy.idle();
    const before = traffic();
    for (const [method, path] of [['GET', '/responses/resp_1'], ['DELETE', '/responses/resp_1'], ['GET', '/responses/resp_1/input_items']] as const) {
      const response = await fetch(`${proxy.baseUrl}${path}`, { method, headers: { authorization: `Bearer ${acme.apiKey}` } });
      expect(response.status, `${method} ${path}`).toBe(404);
      const { error } = await response.json() as { error: { code: string; message: string } };
      expect(error).toMatchObject({ code: 'not_found', message: "Response with id 'resp_1' not found." });
    }
    const cancel = await fetch(`${proxy.baseUrl}/responses/resp_1/cancel`, { method: 'POST' });
    expect(cancel.status).toBe(404);
    expect((await cancel.json() as { error: { message: string } }).error.message).toContain('nothing to cancel');
    const error = await client.responses.retrieve('resp_1').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.NotFoundError);
    expect(traffic()).toEqual(before);
  });

  it('the key check and the RPM pool come first: 401 for an unknown key, nothing read or held', async () => {
    const before = traffic();
    const { status } = await rawPost({ model: 'chat', input: 'hi' }, 'gwsk_not_a_key');
    expect(status).toBe(401);
    expect(traffic()).toEqual(before);
  });
});

describe('concealment, byte for byte', () => {
  it('no leak marker in the raw body, the raw SSE text or the headers, and the slug as model everywhere', async () => {
    const plain = await rawPost({ model: 'chat', input: 'Conceal [[fake:reply_words=3]]' });
    const streamed = await rawPost({ model: 'chat', input: 'Conceal stream [[fake:reply_words=3]]', stream: true });
    const anthropicStreamed = await rawPost({ model: 'claude', input: 'Conceal claude [[fake:reply_words=3]]', stream: true });
    // Tool calls, streamed and not, on both kinds: the vendor's tool-call ids stay behind.
    const tools = [{ type: 'function', name: 'lookup' }];
    const toolAnswers = await Promise.all(['chat', 'claude'].flatMap((model) => [false, true].map((stream) =>
      rawPost({ model, input: 'Conceal a call [[fake:tool_call=lookup]]', tools, stream }))));
    for (const answer of [plain, streamed, anthropicStreamed, ...toolAnswers]) {
      expect(answer.status).toBe(200);
      expect(leaksIn(answer.text)).toEqual([]);
      expect(leaksIn([...answer.headers.entries()].map(([name, value]) => `${name}: ${value}`).join('\n'))).toEqual([]);
      expect(answer.text).not.toContain('upstream-name');
    }
    expect(plain.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(JSON.parse(plain.text)).toMatchObject({ model: 'chat' });
    expect(streamed.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    for (const answer of [streamed, anthropicStreamed]) {
      const events = sseEvents(answer.text);
      const models = events.filter((e) => e.data.response !== undefined).map((e) => e.data.response.model as string);
      expect(models.length).toBe(3); // created, in_progress, completed
      expect(new Set(models)).toEqual(new Set([answer === streamed ? 'chat' : 'claude']));
      expect(events.map((e) => e.data.type)).toEqual(events.map((e) => e.event));
    }
  });
});
