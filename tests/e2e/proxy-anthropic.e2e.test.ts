/**
 * An Anthropic-backed gateway model through the whole gateway: ledger, admin and proxy as
 * processes over real PostgreSQL; the model is created through the admin API with
 * `provider_kind: "anthropic"` and served by the fake upstream's `POST /v1/messages`; the
 * official `openai` client sees OpenAI shapes with the slug as `model`, none of the fake's leak
 * markers, and the balance drops by exactly the usage the fake reported, priced.
 */
import { randomBytes } from 'node:crypto';
import type OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { countWords, fakePromptTokens, leakMarkers, startFakeUpstream, type FakeUpstream } from '@gateway/fake-upstream';
import { testPostgresUrl } from '@gateway/testkit';
import { e2eCostMicros, e2ePrices, e2eUsage, startE2eGateway, type E2eGateway } from '../support/e2e-gateway.ts';

const serverUrl = testPostgresUrl();
const slug = 'e2e-claude';
const upstreamModel = 'claude-upstream-secret-model';
const system = 'Answer briefly.';

/** The input tokens the fake reports for one system prompt and one user message: words + 3 each. */
function fakeInputTokens(userText: string): number {
  return fakePromptTokens([{ role: 'user', content: userText }]) + countWords(system) + 3;
}

/** Every leak marker found in a text (expected: none). */
function leaksIn(text: string): string[] {
  return leakMarkers.all.filter((marker) => text.includes(marker));
}

function headerText(headers: Headers): string {
  return [...headers.entries()].map(([name, value]) => `${name}: ${value}`).join('\n');
}

describe.skipIf(!serverUrl)('an anthropic gateway model end to end', () => {
  let gateway: E2eGateway;
  let anthropic: FakeUpstream;
  const anthropicCredential = `sk-ant-${randomBytes(12).toString('hex')}`;

  beforeAll(async () => {
    gateway = await startE2eGateway({ serverUrl: serverUrl! });
    anthropic = await startFakeUpstream({ requiredApiKey: anthropicCredential, name: 'anthropic' });
    const created = await gateway.admin('POST', '/gateway-models', {
      slug, display_name: 'E2E Claude', default_max_tokens: 64, max_context_tokens: 8192,
      input_price_micros_per_mtok: e2ePrices.inputPriceMicrosPerMtok.toString(),
      output_price_micros_per_mtok: e2ePrices.outputPriceMicrosPerMtok.toString(),
      upstream: { provider_kind: 'anthropic', base_url: anthropic.baseUrl, model: upstreamModel, api_key: anthropicCredential },
    });
    expect(created.upstream).toEqual({ provider_kind: 'anthropic', base_url: anthropic.baseUrl, model: upstreamModel, has_api_key: true, allow_private_network: false, priority: 0, weight: 1 });
    // Returns once the proxy acknowledged the version that lets the organisation use the model.
    await gateway.admin('PATCH', `/organisations/${gateway.organisationId}`, { allowed_gateway_models: [gateway.modelSlug, slug] });
  }, 120_000);

  afterAll(async () => {
    await gateway?.close();
    await anthropic?.close();
  });

  /** The balance once no Reserve is held any more (a settle lands just after the response), as µ₹. */
  async function settledBalance(): Promise<{ available: bigint; held: bigint; debited: bigint }> {
    const body = await gateway.settledBalance();
    return { available: BigInt(body.available_micros), held: BigInt(body.held_micros), debited: BigInt(body.debited_micros) };
  }

  it('answers a completion and a stream in OpenAI shapes, leaks nothing, and bills exactly the reported usage', async () => {
    const before = await settledBalance();
    expect(before.held).toBe(0n);
    const client = gateway.client();

    // Non-streaming.
    const askText = 'Say five words [[fake:reply_words=5]]';
    const { data: completion, response } = await client.chat.completions.create({
      model: slug, messages: [{ role: 'system', content: system }, { role: 'user', content: askText }], max_tokens: 32,
    }).withResponse();
    const completionUsage = { prompt_tokens: fakeInputTokens(askText), completion_tokens: 5 };
    expect(completion).toEqual({
      id: expect.stringMatching(/^chatcmpl-[0-9a-f-]{36}$/), object: 'chat.completion', created: expect.any(Number), model: slug,
      choices: [{ index: 0, message: { role: 'assistant', content: 'w1 w2 w3 w4 w5', refusal: null }, finish_reason: 'stop', logprobs: null }],
      usage: e2eUsage(completionUsage.prompt_tokens, completionUsage.completion_tokens),
    });
    expect(leaksIn(JSON.stringify(completion))).toEqual([]);
    expect(leaksIn(headerText(response.headers))).toEqual([]);

    // The upstream got Anthropic's Messages API, with the credential in x-api-key.
    const call = anthropic.requests.at(-1)!;
    expect(call.path).toBe('/v1/messages');
    expect(call.headers['x-api-key']).toBe(anthropicCredential);
    expect(call.headers['anthropic-version']).toBe('2023-06-01');
    expect(call.body).toMatchObject({ model: upstreamModel, system, max_tokens: 32 });

    // Streaming, with the usage chunk.
    const streamText = 'Stream three words [[fake:reply_words=3]]';
    const { data: stream, response: streamResponse } = await client.chat.completions.create({
      model: slug, messages: [{ role: 'system', content: system }, { role: 'user', content: streamText }],
      stream: true, stream_options: { include_usage: true },
    }).withResponse();
    const chunks: OpenAI.ChatCompletionChunk[] = [];
    for await (const chunk of stream) chunks.push(chunk);
    const streamUsage = { prompt_tokens: fakeInputTokens(streamText), completion_tokens: 3 };
    expect(streamResponse.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(chunks.length).toBeGreaterThan(2);
    expect(new Set(chunks.map((chunk) => chunk.id)).size).toBe(1);
    expect(chunks[0]!.id).toMatch(/^chatcmpl-[0-9a-f-]{36}$/);
    expect(chunks.every((chunk) => chunk.object === 'chat.completion.chunk' && chunk.model === slug)).toBe(true);
    expect(chunks.map((chunk) => chunk.choices[0]?.delta.content ?? '').join('')).toBe('w1 w2 w3');
    expect(chunks.flatMap((chunk) => chunk.choices.map((choice) => choice.finish_reason)).filter((reason) => reason !== null)).toEqual(['stop']);
    expect(chunks.at(-1)).toMatchObject({
      choices: [], usage: e2eUsage(streamUsage.prompt_tokens, streamUsage.completion_tokens),
    });
    expect(leaksIn(JSON.stringify(chunks))).toEqual([]);
    expect(leaksIn(headerText(streamResponse.headers))).toEqual([]);
    expect(anthropic.requests.at(-1)!.body).toMatchObject({ model: upstreamModel, stream: true });

    // Money: exactly the two priced usages, to the micro-rupee.
    const expectedMicros = e2eCostMicros(completionUsage.prompt_tokens, completionUsage.completion_tokens)
      + e2eCostMicros(streamUsage.prompt_tokens, streamUsage.completion_tokens);
    const after = await settledBalance();
    expect(after.held).toBe(0n);
    expect(before.available - after.available).toBe(expectedMicros);
    expect(after.debited - before.debited).toBe(expectedMicros);
    const records = (await gateway.admin('GET', `/organisations/${gateway.organisationId}/usage?model=${slug}`)).data as Array<Record<string, unknown>>;
    expect(records.map((record) => [record.input_tokens, record.output_tokens, record.usage_source]).sort()).toEqual([
      [completionUsage.prompt_tokens, completionUsage.completion_tokens, 'upstream'],
      [streamUsage.prompt_tokens, streamUsage.completion_tokens, 'upstream'],
    ].sort());
  }, 60_000);
});
