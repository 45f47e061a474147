/**
 * Tool-call ids through the whole gateway (docs/surfaces/tool-call-ids.md): ledger, admin and
 * two proxies as processes over real PostgreSQL, an OpenAI-compatible and an Anthropic model on
 * fake upstreams, the official `openai` client. The real admin derives the key from its
 * ADMIN_ENCRYPTION_KEY and sends it to both proxies, so a tool call answered by one proxy is
 * continued through the other: the client only ever sees `call_` ids without a vendor's prefix,
 * the upstream gets its own id back, no byte carries a leak marker, and the balance drops by
 * exactly the priced usage of every request. LangChain's `ChatOpenAI` assembles a streamed call
 * whose upstream repeats its id in every fragment (as vLLM does) into one whole call.
 */
import { randomBytes } from 'node:crypto';
import type { AIMessageChunk } from '@langchain/core/messages';
import { concat } from '@langchain/core/utils/stream';
import { ChatOpenAI } from '@langchain/openai';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { countWords, fakePromptTokens, leakMarkers, startFakeUpstream, type FakeUpstream } from '@gateway/fake-upstream';
import { testPostgresUrl } from '@gateway/testkit';
import { e2eCostMicros, e2ePrices, e2eUsage, startE2eGateway, type E2eGateway } from '../support/e2e-gateway.ts';

const serverUrl = testPostgresUrl();
const claudeSlug = 'e2e-claude-tools';
const question = 'Weather in Pune please [[fake:tool_call=get_weather]]';
const tools: OpenAI.ChatCompletionTool[] = [{
  type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { query: { type: 'string' } } } },
}];

describe.skipIf(!serverUrl)('tool-call ids end to end', () => {
  let gateway: E2eGateway;
  let anthropic: FakeUpstream;
  const anthropicCredential = `sk-ant-${randomBytes(12).toString('hex')}`;
  /** Every response the clients got, status line, headers and body as bytes arrived. */
  const wire: string[] = [];

  /** An official client of one proxy whose fetch keeps a copy of every response's bytes. */
  function recordingClient(proxy: number): OpenAI {
    return new OpenAI({
      apiKey: gateway.apiKey, baseURL: gateway.proxyBases[proxy]!, maxRetries: 0,
      fetch: async (input, init) => {
        const response = await fetch(input, init);
        const copy = response.clone();
        wire.push(`${copy.status}\n${[...copy.headers].map(([name, value]) => `${name}: ${value}`).join('\n')}\n\n${await copy.text()}`);
        return response;
      },
    });
  }

  beforeAll(async () => {
    gateway = await startE2eGateway({ serverUrl: serverUrl!, proxies: 2 });
    anthropic = await startFakeUpstream({ requiredApiKey: anthropicCredential, name: 'anthropic' });
    await gateway.admin('POST', '/gateway-models', {
      slug: claudeSlug, display_name: 'E2E Claude tools', default_max_tokens: 64, max_context_tokens: 8192,
      input_price_micros_per_mtok: e2ePrices.inputPriceMicrosPerMtok.toString(),
      output_price_micros_per_mtok: e2ePrices.outputPriceMicrosPerMtok.toString(),
      upstream: { provider_kind: 'anthropic', base_url: anthropic.baseUrl, model: 'claude-upstream-secret-model', api_key: anthropicCredential },
    });
    // Returns once both proxies acknowledged the version that lets the organisation use the model.
    await gateway.admin('PATCH', `/organisations/${gateway.organisationId}`, { allowed_gateway_models: [gateway.modelSlug, claudeSlug] });
  }, 120_000);

  afterAll(async () => {
    await gateway?.close();
    await anthropic?.close();
  });

  /** The available balance once nothing is held, µ₹. */
  async function available(): Promise<bigint> {
    const balance = await gateway.settledBalance();
    expect(balance.held_micros).toBe('0');
    return BigInt(balance.available_micros);
  }

  /** What the upstream of a model got last: its own tool-call ids and the usage the fake reports for it. */
  function lastUpstreamCall(upstream: FakeUpstream): { ids: { call: string; result: string } | undefined; promptTokens: number } {
    const { path, body } = upstream.requests.at(-1)! as { path: string; body: any };
    const promptTokens = fakePromptTokens(body.messages);
    if (body.messages.length < 3) return { ids: undefined, promptTokens };
    return {
      promptTokens,
      ids: path === '/v1/messages'
        ? { call: body.messages[1].content[0].id, result: body.messages[2].content[0].tool_use_id }
        : { call: body.messages[1].tool_calls[0].id, result: body.messages[2].tool_call_id },
    };
  }

  /** One request through the official client, streamed or not, as the client assembles it. */
  async function ask(client: OpenAI, model: string, messages: OpenAI.ChatCompletionMessageParam[], stream: boolean) {
    if (!stream) {
      const completion = await client.chat.completions.create({ model, messages, tools, max_tokens: 40 });
      const message = completion.choices[0]!.message;
      return { toolCalls: message.tool_calls ?? [], content: message.content, usage: completion.usage!, idsSeen: message.tool_calls?.length ?? 0 };
    }
    const chunks = await client.chat.completions.create({ model, messages, tools, max_tokens: 40, stream: true, stream_options: { include_usage: true } });
    const calls: Array<{ id: string; type: 'function'; function: { name: string; arguments: string } }> = [];
    let content = '';
    let usage: OpenAI.CompletionUsage | undefined;
    let idsSeen = 0;
    for await (const chunk of chunks) {
      usage = chunk.usage ?? usage;
      for (const choice of chunk.choices) {
        content += choice.delta.content ?? '';
        for (const fragment of choice.delta.tool_calls ?? []) {
          if (fragment.id !== undefined) idsSeen += 1;
          calls[fragment.index] ??= { id: '', type: 'function', function: { name: '', arguments: '' } };
          const call = calls[fragment.index]!;
          call.id = fragment.id ?? call.id;
          call.function.name += fragment.function?.name ?? '';
          call.function.arguments += fragment.function?.arguments ?? '';
        }
      }
    }
    return { toolCalls: calls, content: content || null, usage: usage!, idsSeen };
  }

  for (const stream of [false, true]) {
    it(`round-trips a tool call across the two proxies, ${stream ? 'streaming' : 'non-streaming'}, behind both adapters`, async () => {
      const before = await available();
      let spent = 0n;
      for (const [model, upstream, vendorPrefix] of [
        [gateway.modelSlug, gateway.upstream, leakMarkers.toolCallIdPrefix],
        [claudeSlug, anthropic, leakMarkers.toolUseIdPrefix],
      ] as const) {
        const asked = await ask(recordingClient(0), model, [{ role: 'user', content: question }], stream);
        const askedUpstream = lastUpstreamCall(upstream);
        expect(asked.toolCalls).toHaveLength(1);
        expect(asked.idsSeen).toBe(1);
        const call = asked.toolCalls[0]! as OpenAI.ChatCompletionMessageFunctionToolCall;
        expect(call.id).toMatch(/^call_[A-Za-z0-9_-]{212}$/);
        expect(call.id).not.toContain('vendorsecret');
        expect(call.function).toEqual({ name: 'get_weather', arguments: '{"query":"Weather in Pune please"}' });
        // The fake counts prompt words + 3 per message, and streams the 34-character arguments in 8-character pieces.
        expect(asked.usage).toEqual(e2eUsage(askedUpstream.promptTokens, 5));

        const answered = await ask(recordingClient(1), model, [
          { role: 'user', content: question },
          { role: 'assistant', content: null, tool_calls: [call] },
          { role: 'tool', tool_call_id: call.id, content: 'Sunny, 31 degrees' },
        ], stream);
        const answeredUpstream = lastUpstreamCall(upstream);
        // The other proxy opened the id: the upstream got back the id it made, in both places.
        expect(answeredUpstream.ids!.call.startsWith(vendorPrefix)).toBe(true);
        expect(answeredUpstream.ids!.result).toBe(answeredUpstream.ids!.call);
        expect(answered.toolCalls).toEqual([]);
        expect(answered.content).toMatch(/^Hello from the demo upstream!/);
        expect(answered.usage).toEqual(e2eUsage(answeredUpstream.promptTokens, countWords(answered.content!)));

        spent += e2eCostMicros(askedUpstream.promptTokens, 5) + e2eCostMicros(answeredUpstream.promptTokens, countWords(answered.content!));
      }
      // Every byte the clients received, headers included: no marker of either vendor.
      expect(wire.length).toBeGreaterThanOrEqual(4);
      expect(leakMarkers.all.filter((marker) => wire.some((bytes) => bytes.includes(marker)))).toEqual([]);
      // Money: the balance dropped by exactly the priced usage of the four requests.
      expect(before - await available()).toBe(spent);
      // The admin sent its key: no proxy fell back to a key of its own.
      for (const service of gateway.services) expect(service.output()).not.toContain('sent no tool-call id key');
    }, 60_000);
  }

  it('LangChain\'s ChatOpenAI, streaming, assembles one whole call when the upstream repeats the id in every fragment (as vLLM does)', async () => {
    const before = await available();
    const repeating = `${question} [[fake:repeat_tool_id]]`;
    const model = new ChatOpenAI({
      model: gateway.modelSlug, apiKey: gateway.apiKey, configuration: { baseURL: gateway.proxyBases[0]! }, maxRetries: 0, maxTokens: 40, streaming: true,
    }).bindTools(tools);
    let merged: AIMessageChunk | undefined;
    let fragmentIds = 0;
    for await (const chunk of await model.stream(repeating)) {
      fragmentIds += (chunk.tool_call_chunks ?? []).filter((fragment) => fragment.id !== undefined).length;
      merged = merged === undefined ? chunk : concat(merged, chunk);
    }
    // Six fragments carried the id (the opening one and five arguments pieces); LangChain merges
    // fragments only when index and id agree, so one call comes out only if every id is the same.
    expect(fragmentIds).toBe(6);
    expect(merged!.invalid_tool_calls ?? []).toEqual([]);
    expect(merged!.tool_calls).toEqual([
      { type: 'tool_call', id: expect.stringMatching(/^call_[A-Za-z0-9_-]{212}$/), name: 'get_weather', args: { query: 'Weather in Pune please' } },
    ]);
    const { promptTokens } = lastUpstreamCall(gateway.upstream);
    expect(merged!.usage_metadata).toMatchObject({ input_tokens: promptTokens, output_tokens: 5 });
    expect(before - await available()).toBe(e2eCostMicros(promptTokens, 5));
  }, 60_000);
});
