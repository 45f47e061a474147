/**
 * Tool-call ids behind both adapters (docs/surfaces/tool-call-ids.md): the client sees only the
 * gateway's `call_` ids, in completions and streams, never a vendor's; the ids it sends back
 * reach the upstream as the upstream made them, through any proxy of the same admin; an altered
 * id is a 400 naming its parameter before any money moves; and every answer is billed exactly.
 */
import { randomBytes } from 'node:crypto';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { leakMarkers } from '@gateway/fake-upstream';
import { createToolCallIdCodec } from './test-support/tool-call-id-codecs.ts';
import {
  expectedCostMicros, gatewayModel, startProxyWorld, stateOf, tenant, testPrices, waitFor, type ProxyWorld, type TestProxy, type TestTenant,
} from './test-support/proxy-world.ts';

const upstreamCredential = 'sk-upstream-credential-123';
const toolCallIdKey = randomBytes(32);
/** The admin's key, held here to read what the proxies sealed (the test's own codec, same key). */
const adminCodec = createToolCallIdCodec(toolCallIdKey);
const gatewayIdShape = /^call_[A-Za-z0-9_-]{212}$/;
const tools = [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { query: { type: 'string' } } } } }];
const question = 'Weather in Pune please [[fake:tool_call=get_weather]]';

/** The models of both adapters, by slug, with the vendor prefix of their tool-call ids. */
const adapters = [
  { slug: 'chat', vendorIdPrefix: leakMarkers.toolCallIdPrefix },
  { slug: 'claude', vendorIdPrefix: leakMarkers.toolUseIdPrefix },
] as const;

function worldState(organisation: TestTenant, key: Buffer | undefined) {
  return (baseUrl: string) => ({
    ...stateOf([organisation], [
      gatewayModel('chat', baseUrl),
      gatewayModel('claude', baseUrl, { upstream: { providerKind: 'anthropic', baseUrl, model: 'claude-upstream-name', apiKey: upstreamCredential } }),
    ]),
    ...(key === undefined ? {} : { toolCallIdKey: key }),
  });
}

/** One answer of a proxy as the client's socket got it. */
interface RawAnswer {
  status: number;
  /** Headers and body, as text: what the leak assertions read. */
  bytes: string;
  /** The JSON body, or the `data:` events of a stream. */
  json: any;
}

async function post(proxy: TestProxy, apiKey: string, body: Record<string, unknown>): Promise<RawAnswer> {
  const response = await fetch(`${proxy.baseUrl}/chat/completions`, {
    method: 'POST', headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' }, body: JSON.stringify(body),
  });
  const text = await response.text();
  const bytes = `${[...response.headers].map(([name, value]) => `${name}: ${value}`).join('\n')}\n\n${text}`;
  const json = body.stream === true && response.status === 200
    ? text.split('\n').filter((line) => line.startsWith('data: ') && line !== 'data: [DONE]').map((line) => JSON.parse(line.slice(6)) as unknown)
    : JSON.parse(text) as unknown;
  return { status: response.status, bytes, json };
}

function leaksIn(text: string): string[] {
  return leakMarkers.all.filter((marker) => text.includes(marker));
}

/** The tool call a client assembles from an answer: the id, name and arguments (a stream's fragments joined). */
function toolCallOf(answer: RawAnswer): { id: string; name: string; arguments: string; idsSeen: number } {
  if (!Array.isArray(answer.json)) {
    const call = answer.json.choices[0].message.tool_calls[0];
    return { id: call.id, name: call.function.name, arguments: call.function.arguments, idsSeen: 1 };
  }
  const fragments = answer.json.flatMap((chunk: any) => chunk.choices.flatMap((choice: any) => choice.delta.tool_calls ?? []));
  const ids: string[] = fragments.flatMap((fragment: any) => (fragment.id === undefined ? [] : [fragment.id as string]));
  return {
    id: ids[0] ?? '', name: fragments[0].function.name, idsSeen: ids.length,
    arguments: fragments.map((fragment: any) => fragment.function?.arguments ?? '').join(''),
  };
}

/** The usage an answer shows (a stream's last chunk). */
function usageOf(answer: RawAnswer): { prompt_tokens: number; completion_tokens: number; cost_micros: string } {
  return Array.isArray(answer.json) ? answer.json.at(-1).usage : answer.json.usage;
}

function costOf(usage: { prompt_tokens: number; completion_tokens: number }): bigint {
  return expectedCostMicros(usage.prompt_tokens, testPrices.inputPriceMicrosPerMtok) + expectedCostMicros(usage.completion_tokens, testPrices.outputPriceMicrosPerMtok);
}

/** The conversation that hands the tool's result back, with the ids as the client got them. */
function roundTrip(call: { id: string; name: string; arguments: string }, resultId = call.id, callId = call.id) {
  return [
    { role: 'user', content: question },
    { role: 'assistant', content: null, tool_calls: [{ id: callId, type: 'function', function: { name: call.name, arguments: call.arguments } }] },
    { role: 'tool', tool_call_id: resultId, content: 'Sunny, 31 degrees' },
  ];
}

/** The tool-call ids (assistant's call, tool result) the upstream received in its last request, in its own API's terms. */
function idsTheUpstreamGot(world: ProxyWorld): { call: string; result: string } {
  const { path, body } = world.upstream.requests.at(-1)! as { path: string; body: any };
  if (path === '/v1/messages') {
    return { call: body.messages[1].content[0].id, result: body.messages[2].content[0].tool_use_id };
  }
  return { call: body.messages[1].tool_calls[0].id, result: body.messages[2].tool_call_id };
}

describe('with the admin\'s key', () => {
  const acme = tenant('acme', { allowedGatewayModelSlugs: ['chat', 'claude'] });
  let world: ProxyWorld;
  let first: TestProxy;
  let second: TestProxy;

  beforeAll(async () => {
    world = await startProxyWorld(worldState(acme, toolCallIdKey), { requiredApiKey: upstreamCredential });
    world.ledger.credit('acme', 100_000_000n);
    first = await world.startProxy();
    second = await world.startProxy();
    await waitFor(() => first.isReady() && second.isReady(), 5000, 'first snapshots');
  });
  afterAll(async () => { await world?.close(); });

  /** Counts of calls so far, to assert that a refused request added none. */
  function traffic() {
    return { upstream: world.upstream.requests.length, reserve: world.ledger.calls.reserve.length, settle: world.ledger.calls.settle.length };
  }

  for (const { slug, vendorIdPrefix } of adapters) {
    for (const stream of [false, true]) {
      it(`${slug}, ${stream ? 'streaming' : 'non-streaming'}: the client sees the gateway's id only, the upstream gets its own back through the other proxy, billed exactly`, async () => {
        const before = world.ledger.account('acme')!;
        const streamFields = stream ? { stream: true, stream_options: { include_usage: true } } : {};

        const asked = await post(first, acme.apiKey, { model: slug, messages: [{ role: 'user', content: question }], tools, max_tokens: 40, ...streamFields });
        expect(asked.status).toBe(200);
        const call = toolCallOf(asked);
        expect(call.id).toMatch(gatewayIdShape);
        expect(call.idsSeen).toBe(1);
        expect(call).toMatchObject({ name: 'get_weather', arguments: '{"query":"Weather in Pune please"}' });
        // The id is the vendor's, sealed: the upstream named this call with its own prefix.
        const vendorId = adminCodec.reveal(call.id)!;
        expect(vendorId.startsWith(vendorIdPrefix)).toBe(true);
        expect(leaksIn(asked.bytes)).toEqual([]);

        // The tool's result goes back through the other replica: it opens the first one's id.
        const answered = await post(second, acme.apiKey, { model: slug, messages: roundTrip(call), tools, max_tokens: 40, ...streamFields });
        expect(answered.status).toBe(200);
        expect(idsTheUpstreamGot(world)).toEqual({ call: vendorId, result: vendorId });
        expect(leaksIn(answered.bytes)).toEqual([]);
        const text = Array.isArray(answered.json)
          ? answered.json.map((chunk: any) => chunk.choices[0]?.delta.content ?? '').join('')
          : answered.json.choices[0].message.content;
        expect(text).toMatch(/^Hello from the demo upstream!/);

        // Money: each answer settled at exactly its priced usage; the account dropped by their sum.
        await Promise.all([first.idle(), second.idle()]);
        const usages = [usageOf(asked), usageOf(answered)];
        // The tool call's arguments, 34 characters, come in 8-character pieces: 5 output tokens.
        expect(usages[0]!.completion_tokens).toBe(5);
        const settles = world.ledger.calls.settle.slice(-2);
        expect(settles.map((settle) => [Number(settle.inputTokens), Number(settle.outputTokens), settle.costMicros]))
          .toEqual(usages.map((usage) => [usage.prompt_tokens, usage.completion_tokens, costOf(usage)]));
        expect(usages.map((usage) => usage.cost_micros)).toEqual(usages.map((usage) => String(costOf(usage))));
        const spent = costOf(usages[0]!) + costOf(usages[1]!);
        expect(world.ledger.account('acme')).toEqual({
          creditedMicros: before.creditedMicros, heldMicros: 0n,
          debitedMicros: before.debitedMicros + spent, availableMicros: before.availableMicros - spent,
        });
      });
    }
  }

  it('a stream whose upstream repeats the id in every fragment (as vLLM does) shows one gateway id for the call, which the official client assembles whole', async () => {
    const before = world.ledger.account('acme')!;
    const repeating = `${question} [[fake:repeat_tool_id]]`;
    const body: OpenAI.ChatCompletionCreateParamsStreaming = {
      model: 'chat', messages: [{ role: 'user', content: repeating }], tools: tools as OpenAI.ChatCompletionTool[], max_tokens: 40, stream: true, stream_options: { include_usage: true },
    };
    const raw = await post(first, acme.apiKey, { ...body });
    expect(raw.status).toBe(200);
    const ids: string[] = raw.json.flatMap((chunk: any) => chunk.choices.flatMap((choice: any) => (choice.delta.tool_calls ?? []).map((fragment: any) => fragment.id)));
    // The opening fragment and each of the 5 arguments pieces carry the id, all the same one.
    expect(ids).toHaveLength(6);
    expect(new Set(ids).size).toBe(1);
    expect(ids[0]).toMatch(gatewayIdShape);
    expect(adminCodec.reveal(ids[0]!)!.startsWith(leakMarkers.toolCallIdPrefix)).toBe(true);
    expect(leaksIn(raw.bytes)).toEqual([]);

    // The official client's stream helper merges the fragments into one whole, parseable call.
    const client = new OpenAI({ apiKey: acme.apiKey, baseURL: second.baseUrl, maxRetries: 0 });
    const completion = await client.chat.completions.stream(body).finalChatCompletion();
    const calls = completion.choices[0]!.message.tool_calls!;
    expect(calls).toHaveLength(1);
    const call = calls[0]! as OpenAI.ChatCompletionMessageFunctionToolCall;
    expect(call.id).toMatch(gatewayIdShape);
    expect(call.function).toEqual({ name: 'get_weather', arguments: '{"query":"Weather in Pune please"}' });
    expect(JSON.parse(call.function.arguments)).toEqual({ query: 'Weather in Pune please' });

    // Money: both streams settled at the priced usage they showed.
    await Promise.all([first.idle(), second.idle()]);
    const usages = [usageOf(raw), completion.usage!];
    const settles = world.ledger.calls.settle.slice(-2);
    expect(settles.map((settle) => [Number(settle.inputTokens), Number(settle.outputTokens), settle.costMicros]).sort())
      .toEqual(usages.map((usage) => [usage.prompt_tokens, usage.completion_tokens, costOf(usage)]).sort());
    const spent = costOf(usages[0]!) + costOf(usages[1]!);
    expect(world.ledger.account('acme')).toMatchObject({ heldMicros: 0n, debitedMicros: before.debitedMicros + spent });
  });

  it('refuses an altered id with a 400 naming the parameter, before any Reserve or upstream call', async () => {
    const asked = await post(first, acme.apiKey, { model: 'claude', messages: [{ role: 'user', content: question }], tools });
    await first.idle();
    const call = toolCallOf(asked);
    const altered = `${call.id.slice(0, 120)}${call.id[120] === 'x' ? 'y' : 'x'}${call.id.slice(121)}`;
    const foreignKey = createToolCallIdCodec(randomBytes(32)).conceal(adminCodec.reveal(call.id)!);
    const cases = [
      { messages: roundTrip(call, altered), param: 'messages[2].tool_call_id' },
      { messages: roundTrip(call, call.id, altered), param: 'messages[1].tool_calls[0].id' },
      // Issued under another key, as every id issued before an ADMIN_ENCRYPTION_KEY rotation.
      { messages: roundTrip(call, foreignKey, foreignKey), param: 'messages[1].tool_calls[0].id' },
    ];
    for (const { messages, param } of cases) {
      for (const stream of [false, true]) {
        const before = traffic();
        const refused = await post(second, acme.apiKey, { model: 'claude', messages, tools, stream });
        expect(refused.status).toBe(400);
        expect(refused.json).toEqual({
          error: {
            type: 'invalid_request_error', code: 'invalid_request', param,
            message: `Invalid ${param}: it is not a tool-call id this gateway issued, or it was altered or issued under an earlier key. Send back each id exactly as the gateway returned it.`,
          },
        });
        await second.idle();
        expect(traffic()).toEqual(before);
      }
    }
  });

  it('refuses a tool result that answers no call of the assistant message before it with a 400, before any Reserve or upstream call', async () => {
    const asked = await post(first, acme.apiKey, { model: 'chat', messages: [{ role: 'user', content: question }], tools });
    await first.idle();
    const call = toolCallOf(asked);
    const cases = [
      // Two ids the client made up that do not match: the upstream's own rule, checked here.
      roundTrip({ ...call, id: 'call_one' }, 'call_two'),
      // The gateway's id cut short by some middleware: no longer the gateway's shape, so it is
      // not mapped, and it answers nothing.
      roundTrip(call, call.id.slice(0, 200)),
    ];
    for (const { slug } of adapters) {
      for (const messages of cases) {
        for (const stream of [false, true]) {
          const before = traffic();
          const refused = await post(second, acme.apiKey, { model: slug, messages, tools, stream });
          expect(refused.status).toBe(400);
          expect(refused.json).toEqual({
            error: {
              type: 'invalid_request_error', code: 'invalid_request', param: 'messages[2].tool_call_id',
              message: 'Invalid messages[2].tool_call_id: it matches no tool_calls id of the preceding assistant message. '
                + 'Each tool message answers one of the tool calls of the assistant message before it, with that call\'s id exactly.',
            },
          });
          await second.idle();
          expect(traffic()).toEqual(before);
        }
      }
    }
  });

  it('passes an id the gateway did not issue to the upstream unchanged (a conversation the client built)', async () => {
    for (const { slug } of adapters) {
      const own = { id: 'call_abc123', name: 'get_weather', arguments: '{"query":"Pune"}' };
      const answered = await post(first, acme.apiKey, { model: slug, messages: roundTrip(own), tools });
      expect(answered.status).toBe(200);
      expect(idsTheUpstreamGot(world)).toEqual({ call: 'call_abc123', result: 'call_abc123' });
    }
    await first.idle();
  });

  it('never writes the key to a log', () => {
    const logs = [...first.logs, ...second.logs].join('');
    for (const encoding of ['hex', 'base64', 'base64url'] as const) expect(logs).not.toContain(toolCallIdKey.toString(encoding));
    // How pino prints the key's bytes: a Buffer as {"type":"Buffer","data":[…]}, a Uint8Array as {"0":…,"1":…}.
    expect(logs).not.toContain(toolCallIdKey.join(','));
    expect(logs).not.toContain(JSON.stringify(new Uint8Array(toolCallIdKey)).slice(1, -1));
    expect(logs).not.toContain('sent no tool-call id key');
  });
});

describe('with an older admin that sends no key', () => {
  const legacy = tenant('legacy', { allowedGatewayModelSlugs: ['chat', 'claude'] });
  let world: ProxyWorld;

  beforeAll(async () => {
    world = await startProxyWorld(worldState(legacy, undefined), { requiredApiKey: upstreamCredential });
    world.ledger.credit('legacy', 100_000_000n);
    await world.startProxy();
    await world.startProxy();
    await waitFor(() => world.proxies.every((proxy) => proxy.isReady()), 5000, 'first snapshots');
  });
  afterAll(async () => { await world?.close(); });

  it('each proxy seals with a key of its own: its ids go back through it, are refused by another, and it warns once', async () => {
    const [first, second] = world.proxies as [TestProxy, TestProxy];
    const asked = await post(first, legacy.apiKey, { model: 'chat', messages: [{ role: 'user', content: question }], tools });
    const again = await post(first, legacy.apiKey, { model: 'chat', messages: [{ role: 'user', content: question }], tools });
    const call = toolCallOf(asked);
    expect(call.id).toMatch(gatewayIdShape);
    expect(toolCallOf(again).id).toMatch(gatewayIdShape);
    expect(leaksIn(asked.bytes)).toEqual([]);

    expect((await post(first, legacy.apiKey, { model: 'chat', messages: roundTrip(call), tools })).status).toBe(200);
    const reserves = world.ledger.calls.reserve.length;
    const refused = await post(second, legacy.apiKey, { model: 'chat', messages: roundTrip(call), tools });
    expect(refused.status).toBe(400);
    expect(refused.json.error.param).toBe('messages[1].tool_calls[0].id');
    expect(world.ledger.calls.reserve.length).toBe(reserves);

    await Promise.all(world.proxies.map((proxy) => proxy.idle()));
    const warnings = first.logs.filter((line) => line.includes('sent no tool-call id key'));
    expect(warnings).toHaveLength(1);
    expect(JSON.parse(warnings[0]!)).toMatchObject({ level: 40 });
  });
});
