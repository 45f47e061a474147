/**
 * Reasoning end to end: ledger, admin and proxy as processes over real PostgreSQL, two reasoning
 * models created through the admin API (an OpenAI-compatible one that takes reasoning_effort, an
 * Anthropic one that takes thinking), and the official clients as released: `openai` (chat
 * reasoning_effort, reasoning_content returned, in a stream too) and `@anthropic-ai/sdk` (thinking
 * with a budget, streamed thinking, a second turn sending the thinking block back with its
 * signature, which the fake upstream verifies). Reasoning tokens are output: the balance drops by
 * exactly the priced usage the answers showed, to the µ₹.
 */
import { randomBytes } from 'node:crypto';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fakeThinkingSignature, leakMarkers, startFakeUpstream, type FakeUpstream } from '@gateway/fake-upstream';
import { testPostgresUrl } from '@gateway/testkit';
import { e2eCostMicros, e2ePrices, startE2eGateway, type E2eGateway } from '../support/e2e-gateway.ts';

const serverUrl = testPostgresUrl();
const chatSlug = 'e2e-reasoning-chat';
const claudeSlug = 'e2e-reasoning-claude';

/** Every leak marker found in a text (expected: none). */
function leaksIn(text: string): string[] {
  return leakMarkers.all.filter((marker) => text.includes(marker));
}

describe.skipIf(!serverUrl)('reasoning end to end with openai and @anthropic-ai/sdk', () => {
  let gateway: E2eGateway;
  let anthropicUpstream: FakeUpstream;
  const anthropicCredential = `sk-ant-${randomBytes(12).toString('hex')}`;
  const prices = {
    input_price_micros_per_mtok: e2ePrices.inputPriceMicrosPerMtok.toString(),
    output_price_micros_per_mtok: e2ePrices.outputPriceMicrosPerMtok.toString(),
  };

  beforeAll(async () => {
    gateway = await startE2eGateway({ serverUrl: serverUrl! });
    anthropicUpstream = await startFakeUpstream({ requiredApiKey: anthropicCredential, name: 'anthropic' });
    await gateway.admin('POST', '/gateway-models', {
      slug: chatSlug, default_max_tokens: 64, max_context_tokens: 8192, ...prices,
      reasoning_efforts: ['low', 'medium', 'high'], returns_reasoning: true,
      upstream: { provider_kind: 'openai_compatible', base_url: gateway.upstream.baseUrl, model: 'upstream-secret-reasoner', api_key: gateway.upstreamCredential },
    });
    await gateway.admin('POST', '/gateway-models', {
      slug: claudeSlug, default_max_tokens: 64, max_context_tokens: 16384, ...prices,
      reasoning_efforts: ['low', 'medium', 'high', 'max'], thinking_modes: ['enabled', 'adaptive'], max_thinking_budget_tokens: 8192, returns_reasoning: true,
      upstream: { provider_kind: 'anthropic', base_url: anthropicUpstream.baseUrl, model: 'claude-upstream-secret-model', api_key: anthropicCredential },
    });
    // Returns once the proxy acknowledged the version that lets the organisation use the models.
    await gateway.admin('PATCH', `/organisations/${gateway.organisationId}`, { allowed_gateway_models: [gateway.modelSlug, chatSlug, claudeSlug] });
  }, 120_000);

  afterAll(async () => {
    await gateway?.close();
    await anthropicUpstream?.close();
  });

  async function settledBalance(): Promise<{ available: bigint; held: bigint; debited: bigint }> {
    const body = await gateway.settledBalance();
    return { available: BigInt(body.available_micros), held: BigInt(body.held_micros), debited: BigInt(body.debited_micros) };
  }

  function anthropicClient(): Anthropic {
    return new Anthropic({ baseURL: gateway.proxyBases[0]!.slice(0, -'/v1'.length), apiKey: gateway.apiKey, authToken: null, maxRetries: 0 });
  }

  it('chat reasoning_effort: forwarded, reasoning_content and reasoning_tokens returned (and streamed), billed as output to the µ₹; refused for a model without it', async () => {
    const openai: OpenAI = gateway.client();
    const before = await settledBalance();
    const completion = await openai.chat.completions.create({
      model: chatSlug, reasoning_effort: 'low', messages: [{ role: 'user', content: 'Think, then say three words [[fake:reply_words=3]]' }],
    });
    const message = completion.choices[0]!.message as typeof completion.choices[0]['message'] & { reasoning_content?: string };
    expect(message.content).toBe('w1 w2 w3');
    expect(message.reasoning_content).toBe('r1 r2 r3 r4');
    // The fake reasons 4 words at "low": output = 3 words + 4 reasoning tokens.
    expect(completion.usage).toMatchObject({ completion_tokens: 7, completion_tokens_details: { reasoning_tokens: 4 } });
    const promptTokens = completion.usage!.prompt_tokens;
    expect((completion.usage as unknown as { cost_micros: string }).cost_micros).toBe(String(e2eCostMicros(promptTokens, 7)));
    expect(gateway.upstream.requests.at(-1)!.body).toMatchObject({ model: 'upstream-secret-reasoner', reasoning_effort: 'low' });

    const stream = await openai.chat.completions.create({
      model: chatSlug, reasoning_effort: 'medium', stream: true, stream_options: { include_usage: true },
      messages: [{ role: 'user', content: 'Stream two words [[fake:reply_words=2]]' }],
    });
    let reasoning = '';
    let content = '';
    let usage: Record<string, any> | undefined;
    for await (const chunk of stream) {
      const delta = chunk.choices[0]?.delta as { content?: string; reasoning_content?: string } | undefined;
      reasoning += delta?.reasoning_content ?? '';
      content += delta?.content ?? '';
      if (chunk.usage) usage = chunk.usage as unknown as Record<string, any>;
      expect(leaksIn(JSON.stringify(chunk))).toEqual([]);
    }
    expect(reasoning).toBe('r1 r2 r3 r4 r5 r6 r7 r8');
    expect(content).toBe('w1 w2');
    expect(usage).toMatchObject({ completion_tokens: 10, completion_tokens_details: { reasoning_tokens: 8 }, cost_micros: String(e2eCostMicros(usage!.prompt_tokens as number, 10)) });

    const after = await settledBalance();
    const expectedMicros = e2eCostMicros(promptTokens, 7) + e2eCostMicros(usage!.prompt_tokens as number, 10);
    console.log(`chat reasoning: billed ${expectedMicros} µ₹ for prompt ${promptTokens}+${usage!.prompt_tokens as number}, output 7+10 (4+8 reasoning)`);
    expect(after.held).toBe(0n);
    expect(before.available - after.available).toBe(expectedMicros);

    // A model that takes no effort: a 400 naming the field, before any Reserve or upstream call.
    const calls = gateway.upstream.requests.length;
    const refused = await openai.chat.completions.create({
      model: gateway.modelSlug, reasoning_effort: 'high', messages: [{ role: 'user', content: 'hi' }],
    }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(OpenAI.BadRequestError);
    expect((refused as InstanceType<typeof OpenAI.BadRequestError>).param).toBe('reasoning_effort');
    expect(gateway.upstream.requests.length).toBe(calls);
    expect((await settledBalance()).available).toBe(after.available);
  }, 60_000);

  it('Messages thinking: a signed thinking block first (signature sealed), streamed as thinking_delta and signature_delta, sent back on turn 2 and verified by the upstream; billed to the µ₹', async () => {
    const anthropic = anthropicClient();
    const before = await settledBalance();
    const question = 'Think first, then say four words [[fake:reply_words=4]]';
    const first = await anthropic.messages.create({
      model: claudeSlug, max_tokens: 4096, thinking: { type: 'enabled', budget_tokens: 2048 },
      messages: [{ role: 'user', content: question }],
    });
    // budget 2048 → the fake thinks 4 words; output = 4 thinking + 4 text.
    expect(first.content).toEqual([
      { type: 'thinking', thinking: 'r1 r2 r3 r4', signature: expect.stringMatching(/^gwr1_[A-Za-z0-9_-]+$/) },
      { type: 'text', text: 'w1 w2 w3 w4' },
    ]);
    const thinkingBlock = first.content[0] as Anthropic.ThinkingBlock;
    // The client never sees the upstream's own signature, only the gateway's sealed one.
    expect(thinkingBlock.signature).not.toContain(fakeThinkingSignature('r1 r2 r3 r4'));
    expect(first.usage.output_tokens).toBe(8);
    expect(anthropicUpstream.requests.at(-1)!.body).toMatchObject({ thinking: { type: 'enabled', budget_tokens: 2048 }, max_tokens: 4096 });
    let expectedMicros = e2eCostMicros(first.usage.input_tokens, 8);
    expect((first.usage as unknown as { cost_micros: string }).cost_micros).toBe(String(e2eCostMicros(first.usage.input_tokens, 8)));

    // Turn 2: the thinking block goes back first in its turn, and reaches the upstream with its own signature.
    const second = await anthropic.messages.create({
      model: claudeSlug, max_tokens: 4096, thinking: { type: 'enabled', budget_tokens: 1024 }, output_config: { effort: 'low' },
      messages: [
        { role: 'user', content: question },
        { role: 'assistant', content: first.content },
        { role: 'user', content: 'And two more [[fake:reply_words=2]]' },
      ],
    } as Anthropic.MessageCreateParamsNonStreaming);
    expect(second.content.map((block) => block.type)).toEqual(['thinking', 'text']);
    const sent = anthropicUpstream.requests.at(-1)!.body as { messages: Array<{ content: unknown }>; output_config: unknown };
    expect(sent.messages[1]!.content).toEqual([
      { type: 'thinking', thinking: 'r1 r2 r3 r4', signature: fakeThinkingSignature('r1 r2 r3 r4') },
      { type: 'text', text: 'w1 w2 w3 w4' },
    ]);
    expect(sent.output_config).toEqual({ effort: 'low' });
    expect(second.usage.output_tokens).toBe(3 + 2);
    expectedMicros += e2eCostMicros(second.usage.input_tokens, 5);

    // A tampered signature is refused by the gateway (400), before the Reserve and the upstream.
    const calls = anthropicUpstream.requests.length;
    const tampered = await anthropic.messages.create({
      model: claudeSlug, max_tokens: 4096, thinking: { type: 'enabled', budget_tokens: 1024 },
      messages: [
        { role: 'user', content: question },
        { role: 'assistant', content: [{ type: 'thinking', thinking: 'r1 r2 r3 r4', signature: `${thinkingBlock.signature.slice(0, -4)}AAAA` }, { type: 'text', text: 'w1' }] },
        { role: 'user', content: 'again' },
      ],
    }).catch((error: unknown) => error);
    expect(tampered).toBeInstanceOf(Anthropic.BadRequestError);
    // A budget not below max_tokens is Anthropic's own 400, here before the Reserve.
    const tooLarge = await anthropic.messages.create({
      model: claudeSlug, max_tokens: 2048, thinking: { type: 'enabled', budget_tokens: 4096 }, messages: [{ role: 'user', content: 'hi' }],
    }).catch((error: unknown) => error);
    expect(tooLarge).toBeInstanceOf(Anthropic.BadRequestError);
    expect(String((tooLarge as Error).message)).toContain('thinking.budget_tokens');
    expect(anthropicUpstream.requests.length).toBe(calls);

    // Streamed: thinking_delta per word, then the sealed signature, then the text.
    const stream = anthropic.messages.stream({
      model: claudeSlug, max_tokens: 4096, thinking: { type: 'adaptive' } as unknown as Anthropic.ThinkingConfigParam,
      messages: [{ role: 'user', content: 'Stream two words [[fake:reply_words=2]]' }],
    });
    const events: Array<Record<string, any>> = [];
    for await (const event of stream) events.push(JSON.parse(JSON.stringify(event)) as Record<string, any>);
    const final = await stream.finalMessage();
    expect(final.content).toEqual([
      { type: 'thinking', thinking: 'r1 r2 r3 r4 r5 r6', signature: expect.stringMatching(/^gwr1_/) },
      { type: 'text', text: 'w1 w2' },
    ]);
    expect(events.filter((event) => event.type === 'content_block_delta').map((event) => event.delta.type)).toEqual([
      ...Array(6).fill('thinking_delta'), 'signature_delta', 'text_delta', 'text_delta',
    ]);
    expect(leaksIn(JSON.stringify(events))).toEqual([]);
    const streamUsage = events.find((event) => event.type === 'message_delta')!.usage as { input_tokens: number; output_tokens: number; cost_micros: string };
    expect(streamUsage.output_tokens).toBe(8);
    expect(streamUsage.cost_micros).toBe(String(e2eCostMicros(streamUsage.input_tokens, 8)));
    expectedMicros += e2eCostMicros(streamUsage.input_tokens, 8);

    const after = await settledBalance();
    console.log(`messages thinking: billed ${expectedMicros} µ₹ (output 8 + 5 + 8 tokens, thinking included)`);
    expect(after.held).toBe(0n);
    expect(before.available - after.available).toBe(expectedMicros);
    expect(after.debited - before.debited).toBe(expectedMicros);
  }, 60_000);
  it('Messages tool loop with redacted thinking: the redacted block comes first with its data sealed, goes back before the tool_use and tool_result, and the upstream takes it; billed to the µ₹', async () => {
    const anthropic = anthropicClient();
    const before = await settledBalance();
    const tools: Anthropic.Tool[] = [{ name: 'lookup', description: 'Looks a thing up', input_schema: { type: 'object', properties: { query: { type: 'string' } } } }];
    const question = 'Find it [[fake:tool_call=lookup]] [[fake:redacted_thinking]]';
    const first = await anthropic.messages.create({
      model: claudeSlug, max_tokens: 4096, thinking: { type: 'enabled', budget_tokens: 1024 }, tools, messages: [{ role: 'user', content: question }],
    });
    expect(first.content.map((block) => block.type)).toEqual(['redacted_thinking', 'tool_use']);
    const redacted = first.content[0] as Anthropic.RedactedThinkingBlock;
    expect(redacted.data).toMatch(/^gwr1_/);
    const toolUse = first.content[1] as Anthropic.ToolUseBlock;
    expect(first.stop_reason).toBe('tool_use');
    let expectedMicros = e2eCostMicros(first.usage.input_tokens, first.usage.output_tokens);

    const second = await anthropic.messages.create({
      model: claudeSlug, max_tokens: 4096, thinking: { type: 'enabled', budget_tokens: 1024 }, tools,
      messages: [
        { role: 'user', content: question },
        { role: 'assistant', content: first.content },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: toolUse.id, content: 'found' }] },
      ],
    });
    // The answer to the tool's result: this turn's thinking, then the fake's text.
    expect(second.content.map((block) => block.type)).toEqual(['thinking', 'text']);
    expect(second.stop_reason).toBe('end_turn');
    const sent = anthropicUpstream.requests.at(-1)!.body as { messages: Array<{ content: Array<Record<string, unknown>> }> };
    expect(sent.messages[1]!.content.map((block) => block.type)).toEqual(['redacted_thinking', 'tool_use']);
    expect(String(sent.messages[1]!.content[0]!.data)).not.toMatch(/^gwr1_/);
    expect(String(sent.messages[1]!.content[1]!.id)).toMatch(new RegExp(`^${leakMarkers.toolUseIdPrefix}`));
    expectedMicros += e2eCostMicros(second.usage.input_tokens, second.usage.output_tokens);

    const after = await settledBalance();
    console.log(`messages redacted thinking tool loop: billed ${expectedMicros} µ₹`);
    expect(after.held).toBe(0n);
    expect(before.available - after.available).toBe(expectedMicros);
  }, 60_000);

  it('Messages on an OpenAI-compatible reasoner: output_config.effort becomes reasoning_effort, its reasoning a thinking block (text omitted when display says so), billed to the µ₹', async () => {
    const anthropic = anthropicClient();
    const before = await settledBalance();
    const shown = await anthropic.messages.create({
      model: chatSlug, max_tokens: 256, output_config: { effort: 'low' }, messages: [{ role: 'user', content: 'Say two words [[fake:reply_words=2]]' }],
    } as Anthropic.MessageCreateParamsNonStreaming);
    expect(shown.content).toEqual([{ type: 'thinking', thinking: 'r1 r2 r3 r4', signature: '' }, { type: 'text', text: 'w1 w2' }]);
    expect(gateway.upstream.requests.at(-1)!.body).toMatchObject({ reasoning_effort: 'low' });
    expect(shown.usage.output_tokens).toBe(6);
    const omitted = await anthropic.messages.create({
      model: chatSlug, max_tokens: 256, output_config: { effort: 'low' }, thinking: { type: 'adaptive', display: 'omitted' },
      messages: [{ role: 'user', content: 'Say two words [[fake:reply_words=2]]' }],
    } as unknown as Anthropic.MessageCreateParamsNonStreaming);
    expect(omitted.content).toEqual([{ type: 'thinking', thinking: '', signature: '' }, { type: 'text', text: 'w1 w2' }]);
    // Omitted text is still reasoning the upstream produced: billed as output.
    expect(omitted.usage.output_tokens).toBe(6);
    const expectedMicros = e2eCostMicros(shown.usage.input_tokens, 6) + e2eCostMicros(omitted.usage.input_tokens, 6);
    const after = await settledBalance();
    expect(before.available - after.available).toBe(expectedMicros);
  }, 60_000);

  it('Responses reasoning: a reasoning item with its summary first; store: false with include encrypted_content round-trips the sealed reasoning to the upstream on the next turn; billed to the µ₹', async () => {
    const openai: OpenAI = gateway.client();
    const before = await settledBalance();

    // An OpenAI-compatible reasoner: effort forwarded, reasoning_content as the summary.
    const summarised = await openai.responses.create({
      model: chatSlug, reasoning: { effort: 'low', summary: 'auto' }, input: 'Think, then say three words [[fake:reply_words=3]]',
    });
    expect(summarised.output.map((item) => item.type)).toEqual(['reasoning', 'message']);
    expect(summarised.output[0]).toMatchObject({ type: 'reasoning', summary: [{ type: 'summary_text', text: 'r1 r2 r3 r4' }] });
    expect(summarised.output_text).toBe('w1 w2 w3');
    expect(summarised.reasoning).toEqual({ effort: 'low', summary: 'auto' });
    expect(summarised.usage).toMatchObject({ output_tokens: 7, output_tokens_details: { reasoning_tokens: 4 } });
    expect(gateway.upstream.requests.at(-1)!.body).toMatchObject({ reasoning_effort: 'low' });
    let expectedMicros = e2eCostMicros(summarised.usage!.input_tokens, 7);

    // Codex's shape against an Anthropic reasoner: effort (adaptive thinking on), summary auto,
    // store false, the reasoning's encrypted content included, then sent back as input.
    const question = 'Think, then say two words [[fake:reply_words=2]]';
    const first = await openai.responses.create({
      model: claudeSlug, store: false, reasoning: { effort: 'low', summary: 'auto' }, include: ['reasoning.encrypted_content'], input: question,
    });
    expect(first.output.map((item) => item.type)).toEqual(['reasoning', 'message']);
    const reasoningItem = first.output[0] as OpenAI.Responses.ResponseReasoningItem;
    expect(reasoningItem.summary).toEqual([{ type: 'summary_text', text: 'r1 r2 r3 r4 r5 r6' }]);
    expect(reasoningItem.encrypted_content).toMatch(/^gwr1_[A-Za-z0-9_-]+$/);
    expect(leaksIn(JSON.stringify(first))).toEqual([]);
    expect(anthropicUpstream.requests.at(-1)!.body).toMatchObject({ thinking: { type: 'adaptive' }, output_config: { effort: 'low' } });
    expect(first.usage).toMatchObject({ output_tokens: 8, output_tokens_details: { reasoning_tokens: 0 } });
    expectedMicros += e2eCostMicros(first.usage!.input_tokens, 8);

    const second = await openai.responses.create({
      model: claudeSlug, store: false, reasoning: { effort: 'low', summary: 'auto' }, include: ['reasoning.encrypted_content'],
      input: [
        { role: 'user', content: question },
        ...(first.output as OpenAI.Responses.ResponseInputItem[]),
        { role: 'user', content: 'Once more [[fake:reply_words=1]]' },
      ],
    });
    expect(second.output_text).toBe('w1');
    const sent = anthropicUpstream.requests.at(-1)!.body as { messages: Array<{ role: string; content: unknown }> };
    expect(sent.messages[1]).toEqual({
      role: 'assistant',
      content: [{ type: 'thinking', thinking: 'r1 r2 r3 r4 r5 r6', signature: fakeThinkingSignature('r1 r2 r3 r4 r5 r6') }, { type: 'text', text: 'w1 w2' }],
    });
    expectedMicros += e2eCostMicros(second.usage!.input_tokens, second.usage!.output_tokens);

    // Forged encrypted content: a 400 naming it, before the Reserve and the upstream.
    const calls = anthropicUpstream.requests.length;
    const forged = await openai.responses.create({
      model: claudeSlug, store: false, input: [
        { role: 'user', content: question },
        { ...reasoningItem, encrypted_content: `${reasoningItem.encrypted_content!.slice(0, -4)}AAAA` } as OpenAI.Responses.ResponseInputItem,
        { role: 'assistant', content: 'w1 w2' },
        { role: 'user', content: 'again' },
      ],
    }).catch((error: unknown) => error);
    expect(forged).toBeInstanceOf(OpenAI.BadRequestError);
    expect((forged as InstanceType<typeof OpenAI.BadRequestError>).param).toBe('input[1].encrypted_content');
    expect(anthropicUpstream.requests.length).toBe(calls);

    // Streamed: the reasoning item's summary as reasoning_summary_text deltas, then the message.
    const stream = await openai.responses.create({
      model: chatSlug, stream: true, reasoning: { effort: 'medium', summary: 'auto' }, input: 'Stream one word [[fake:reply_words=1]]',
    });
    const types: string[] = [];
    let summary = '';
    let completed: OpenAI.Responses.Response | undefined;
    for await (const event of stream) {
      types.push(event.type);
      if (event.type === 'response.reasoning_summary_text.delta') summary += event.delta;
      if (event.type === 'response.completed') completed = event.response;
    }
    expect(summary).toBe('r1 r2 r3 r4 r5 r6 r7 r8');
    expect(types.indexOf('response.reasoning_summary_text.done')).toBeLessThan(types.indexOf('response.output_text.delta'));
    expect(completed!.output.map((item) => item.type)).toEqual(['reasoning', 'message']);
    expect(completed!.usage).toMatchObject({ output_tokens: 9, output_tokens_details: { reasoning_tokens: 8 } });
    expectedMicros += e2eCostMicros(completed!.usage!.input_tokens, 9);

    const after = await settledBalance();
    console.log(`responses reasoning: billed ${expectedMicros} µ₹ over four answers`);
    expect(after.held).toBe(0n);
    expect(before.available - after.available).toBe(expectedMicros);
  }, 60_000);
});
