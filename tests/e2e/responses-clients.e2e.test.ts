/**
 * The Responses API (`POST /v1/responses`) through the whole gateway (ledger, admin and proxy as
 * processes over real PostgreSQL, the fake upstream behind) with the clients that call it: the
 * official `openai` client, the Vercel AI SDK's default provider model (`createOpenAI(...)(slug)`
 * calls /v1/responses; `.chat(slug)` calls chat completions) and LangChain's `ChatOpenAI`
 * (default, and `useResponsesApi: true`). Each answer is what the fake said, and the balance drops
 * by exactly the usage the fake reported, priced.
 */
import { createOpenAI } from '@ai-sdk/openai';
import { ChatOpenAI } from '@langchain/openai';
import { generateText, jsonSchema, stepCountIs, streamText, tool, type ModelMessage } from 'ai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fakePromptTokens } from '@gateway/fake-upstream';
import { testPostgresUrl } from '@gateway/testkit';
import { e2eCostMicros, startE2eGateway, type E2eGateway } from '../support/e2e-gateway.ts';

const serverUrl = testPostgresUrl();

function words(count: number): string {
  return Array.from({ length: count }, (_, i) => `w${i + 1}`).join(' ');
}

/** The input tokens the fake reports for a conversation: words + 3 per message. */
function inputTokensOf(...texts: string[]): number {
  return fakePromptTokens(texts.map((content) => ({ role: 'user', content })));
}

/** The `lookup` tool the tool-loop tests give the AI SDK: it records each input in `calls` and answers 42. */
function lookupTool(calls: unknown[]) {
  return {
    lookup: tool({
      description: 'Looks a query up',
      inputSchema: jsonSchema<{ query: string }>({ type: 'object', properties: { query: { type: 'string' } }, required: ['query'] }),
      execute: async (input) => { calls.push(input); return { answer: 42 }; },
    }),
  };
}

describe.skipIf(!serverUrl)('Responses API clients end to end', () => {
  let gateway: E2eGateway;

  beforeAll(async () => {
    gateway = await startE2eGateway({ serverUrl: serverUrl! });
  }, 120_000);
  afterAll(async () => { await gateway?.close(); });

  /** The organisation's available balance once nothing is held (settles land just after responses), µ₹. */
  async function available(): Promise<bigint> {
    const balance = await gateway.settledBalance();
    expect(balance.held_micros).toBe('0');
    return BigInt(balance.available_micros as string);
  }

  /** The usage and cost of each upstream call since `from`, as the fake counted them (input: words + 3 per message; output: the reply's words). */
  function upstreamCostSince(from: number, replyWords: (index: number) => number): bigint {
    return gateway.upstream.requests.slice(from).reduce((sum, request, index) => {
      const messages = (request.body as { messages: Array<{ role?: unknown; content?: unknown }> }).messages;
      return sum + e2eCostMicros(fakePromptTokens(messages), replyWords(index));
    }, 0n);
  }

  it('the official client: responses.create, streamed and not', async () => {
    const before = await available();
    const client = gateway.client();
    const plainText = 'Say five words [[fake:reply_words=5]]';
    const plain = await client.responses.create({ model: gateway.modelSlug, instructions: 'Be brief.', input: plainText, max_output_tokens: 32 });
    expect(plain).toMatchObject({ object: 'response', status: 'completed', model: gateway.modelSlug, output_text: words(5), store: true });
    const plainInput = inputTokensOf('Be brief.', plainText);
    expect(plain.usage).toMatchObject({ input_tokens: plainInput, output_tokens: 5, cost_micros: String(e2eCostMicros(plainInput, 5)) });

    const streamText = 'Stream three words [[fake:reply_words=3]]';
    const stream = await client.responses.create({ model: gateway.modelSlug, input: streamText, stream: true });
    let delivered = '';
    let completed: unknown;
    for await (const event of stream) {
      if (event.type === 'response.output_text.delta') delivered += event.delta;
      if (event.type === 'response.completed') completed = event.response;
    }
    expect(delivered).toBe(words(3));
    const streamInput = inputTokensOf(streamText);
    expect(completed).toMatchObject({ status: 'completed', usage: { input_tokens: streamInput, output_tokens: 3, cost_micros: String(e2eCostMicros(streamInput, 3)) } });

    expect(before - await available()).toBe(e2eCostMicros(plainInput, 5) + e2eCostMicros(streamInput, 3));
  });

  it('the Vercel AI SDK\'s default provider model (Responses) with generateText and streamText, and .chat() (chat completions)', async () => {
    const before = await available();
    const openai = createOpenAI({ baseURL: gateway.proxyBases[0]!, apiKey: gateway.apiKey });
    const from = gateway.upstream.requests.length;

    const generatedText = 'Generate four [[fake:reply_words=4]]';
    const generated = await generateText({ model: openai(gateway.modelSlug), prompt: generatedText, maxRetries: 0 });
    expect(generated.text).toBe(words(4));
    expect(generated.usage).toMatchObject({ inputTokens: inputTokensOf(generatedText), outputTokens: 4 });
    expect(generated.response.id).toMatch(/^resp_/);

    const streamedText = 'Stream six [[fake:reply_words=6]]';
    const streamed = streamText({ model: openai(gateway.modelSlug), prompt: streamedText, maxRetries: 0 });
    let text = '';
    for await (const piece of streamed.textStream) text += piece;
    expect(text).toBe(words(6));
    expect(await streamed.usage).toMatchObject({ inputTokens: inputTokensOf(streamedText), outputTokens: 6 });

    const chatText = 'Chat two [[fake:reply_words=2]]';
    const chat = await generateText({ model: openai.chat(gateway.modelSlug), prompt: chatText, maxRetries: 0 });
    expect(chat.text).toBe(words(2));
    expect(chat.response.id).toMatch(/^chatcmpl-/);

    const expected = e2eCostMicros(inputTokensOf(generatedText), 4) + e2eCostMicros(inputTokensOf(streamedText), 6) + e2eCostMicros(inputTokensOf(chatText), 2);
    expect(upstreamCostSince(from, (index) => [4, 6, 2][index]!)).toBe(expected);
    expect(before - await available()).toBe(expected);
  });

  it('the Vercel AI SDK\'s default provider model runs a tool loop: function_call out, function_call_output back, a text answer', async () => {
    const before = await available();
    const openai = createOpenAI({ baseURL: gateway.proxyBases[0]!, apiKey: gateway.apiKey });
    const from = gateway.upstream.requests.length;
    const calls: unknown[] = [];
    const result = await generateText({
      model: openai(gateway.modelSlug),
      prompt: 'Look it up [[fake:tool_call=lookup]]',
      tools: lookupTool(calls),
      stopWhen: stepCountIs(3),
      maxRetries: 0,
    });
    expect(calls).toEqual([{ query: 'Look it up' }]);
    expect(result.steps).toHaveLength(2);
    expect(result.text).toContain('Hello from the demo upstream!');
    // The second upstream request carried the upstream's own call and the tool's result.
    const second = gateway.upstream.requests.at(-1)!.body as { messages: Array<Record<string, unknown>> };
    expect(second.messages.map((message) => message.role)).toEqual(['user', 'assistant', 'tool']);

    const stepWords = result.steps.map((step) => step.usage.outputTokens!);
    const expected = upstreamCostSince(from, (index) => stepWords[index]!);
    expect(result.steps.reduce((sum, step) => sum + e2eCostMicros(step.usage.inputTokens!, step.usage.outputTokens!), 0n)).toBe(expected);
    expect(before - await available()).toBe(expected);
  });

  // By default (store) the same loop refers to the stored text: responses-stateful.e2e.test.ts.
  it('the Vercel AI SDK\'s tool loop whose model writes text before its call, with store: false: the text comes back in full', async () => {
    const before = await available();
    const openai = createOpenAI({ baseURL: gateway.proxyBases[0]!, apiKey: gateway.apiKey });
    const prompt = 'Look it up [[fake:tool_call=lookup]] [[fake:tool_text=4]]';
    // The fake's call: 4 words of text, then the arguments {"query":"Look it up"} in 8-character pieces.
    const firstStepOutput = 4 + Math.ceil(JSON.stringify({ query: 'Look it up' }).length / 8);
    const calls: unknown[] = [];
    const served = gateway.upstream.requests.length;
    const result = await generateText({
      model: openai(gateway.modelSlug), prompt, tools: lookupTool(calls), stopWhen: stepCountIs(3), providerOptions: { openai: { store: false } }, maxRetries: 0,
    });
    expect(calls).toHaveLength(1);
    expect(result.steps).toHaveLength(2);
    expect(result.steps[0]!.text).toBe(words(4));
    expect(result.steps[0]!.usage.outputTokens).toBe(firstStepOutput);
    expect(result.text).toContain('Hello from the demo upstream!');
    // The second upstream request carried the step's text in full beside the upstream's own call, then the tool's result.
    const second = gateway.upstream.requests.at(-1)!.body as { messages: Array<Record<string, unknown>> };
    expect(second.messages.map((message) => message.role)).toEqual(['user', 'assistant', 'tool']);
    expect(second.messages[1]).toMatchObject({ content: words(4), tool_calls: [{ function: { name: 'lookup' } }] });

    const stepWords = result.steps.map((step) => step.usage.outputTokens!);
    const loopCost = upstreamCostSince(served, (index) => stepWords[index]!);
    expect(result.steps.reduce((sum, step) => sum + e2eCostMicros(step.usage.inputTokens!, step.usage.outputTokens!), 0n)).toBe(loopCost);
    expect(before - await available()).toBe(loopCost);
  });

  // By default (store) the same turn refers to the stored answer: responses-stateful.e2e.test.ts.
  it('the Vercel AI SDK\'s multi-turn conversation with store: false: the earlier answer is sent in full', async () => {
    const before = await available();
    const openai = createOpenAI({ baseURL: gateway.proxyBases[0]!, apiKey: gateway.apiKey });
    const firstText = 'First turn [[fake:reply_words=2]]';
    const first = await generateText({ model: openai(gateway.modelSlug), prompt: firstText, maxRetries: 0 });
    const secondText = 'Second turn [[fake:reply_words=3]]';
    const messages: ModelMessage[] = [{ role: 'user', content: firstText }, ...first.response.messages, { role: 'user', content: secondText }];

    const from = gateway.upstream.requests.length;
    const second = await generateText({ model: openai(gateway.modelSlug), messages, providerOptions: { openai: { store: false } }, maxRetries: 0 });
    expect(second.text).toBe(words(3));
    expect((gateway.upstream.requests.at(-1)!.body as { messages: unknown[] }).messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: firstText }] }, { role: 'assistant', content: words(2) },
      { role: 'user', content: [{ type: 'text', text: secondText }] },
    ]);
    const expected = e2eCostMicros(inputTokensOf(firstText), 2) + upstreamCostSince(from, () => 3);
    expect(before - await available()).toBe(expected);
  });

  it('LangChain\'s ChatOpenAI, by default (chat completions) and with useResponsesApi', async () => {
    const before = await available();
    const from = gateway.upstream.requests.length;
    const common = { model: gateway.modelSlug, apiKey: gateway.apiKey, configuration: { baseURL: gateway.proxyBases[0]! }, maxRetries: 0 };

    const chatText = 'LangChain chat [[fake:reply_words=3]]';
    const viaChat = await new ChatOpenAI(common).invoke(chatText);
    expect(viaChat.content).toBe(words(3));
    expect(viaChat.usage_metadata).toMatchObject({ input_tokens: inputTokensOf(chatText), output_tokens: 3 });

    const responsesText = 'LangChain responses [[fake:reply_words=4]]';
    const viaResponses = await new ChatOpenAI({ ...common, useResponsesApi: true }).invoke(responsesText);
    const text = typeof viaResponses.content === 'string'
      ? viaResponses.content
      : viaResponses.content.map((part) => ('text' in part ? part.text : '')).join('');
    expect(text).toBe(words(4));
    expect(viaResponses.usage_metadata).toMatchObject({ input_tokens: inputTokensOf(responsesText), output_tokens: 4 });
    expect(viaResponses.response_metadata).toMatchObject({ id: expect.stringMatching(/^resp_/), model: gateway.modelSlug });

    const streamedText = 'LangChain stream [[fake:reply_words=5]]';
    let streamed = '';
    for await (const chunk of await new ChatOpenAI({ ...common, useResponsesApi: true, streaming: true }).stream(streamedText)) {
      streamed += typeof chunk.content === 'string' ? chunk.content : chunk.content.map((part) => ('text' in part ? part.text : '')).join('');
    }
    expect(streamed).toBe(words(5));

    const expected = e2eCostMicros(inputTokensOf(chatText), 3) + e2eCostMicros(inputTokensOf(responsesText), 4) + e2eCostMicros(inputTokensOf(streamedText), 5);
    expect(upstreamCostSince(from, (index) => [3, 4, 5][index]!)).toBe(expected);
    expect(before - await available()).toBe(expected);
  });
});
