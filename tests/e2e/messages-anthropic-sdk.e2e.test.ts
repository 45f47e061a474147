/**
 * Anthropic's Messages API through the whole gateway: ledger, admin and proxy as processes
 * over real PostgreSQL, and the official `@anthropic-ai/sdk` pointed at the proxy as Claude Code
 * is (base URL without /v1, the gateway key as x-api-key or as a Bearer token). One
 * OpenAI-compatible model (the gateway's e2e model) and one Anthropic-backed model created through
 * the admin API; `create` and `stream` on each answer in Anthropic's shapes with the slug as
 * `model`, none of the fake's leak markers, and the balance drops by exactly the priced usage the
 * answers showed.
 */
import { randomBytes } from 'node:crypto';
import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { countWords, fakePromptTokens, leakMarkers, startFakeUpstream, type FakeUpstream } from '@gateway/fake-upstream';
import { testPostgresUrl } from '@gateway/testkit';
import { e2eCostMicros, e2ePrices, startE2eGateway, type E2eGateway } from '../support/e2e-gateway.ts';

const serverUrl = testPostgresUrl();
const claudeSlug = 'e2e-messages-claude';
const system = 'Answer briefly.';

/** Every leak marker found in a text (expected: none). */
function leaksIn(text: string): string[] {
  return leakMarkers.all.filter((marker) => text.includes(marker));
}

/** Anthropic's `usage` as the gateway shows it for some tokens at the e2e prices. */
function messagesUsage(inputTokens: number, outputTokens: number) {
  const micros = e2eCostMicros(inputTokens, outputTokens);
  return {
    input_tokens: inputTokens, output_tokens: outputTokens, cache_creation_input_tokens: 0, cache_read_input_tokens: 0,
    cost_micros: String(micros), cost_inr: `${micros / 1_000_000n}.${String(micros % 1_000_000n).padStart(6, '0')}`,
  };
}

describe.skipIf(!serverUrl)('the Messages API end to end with @anthropic-ai/sdk', () => {
  let gateway: E2eGateway;
  let anthropicUpstream: FakeUpstream;
  const anthropicCredential = `sk-ant-${randomBytes(12).toString('hex')}`;

  beforeAll(async () => {
    gateway = await startE2eGateway({ serverUrl: serverUrl! });
    anthropicUpstream = await startFakeUpstream({ requiredApiKey: anthropicCredential, name: 'anthropic' });
    await gateway.admin('POST', '/gateway-models', {
      slug: claudeSlug, display_name: 'E2E Messages Claude', default_max_tokens: 64, max_context_tokens: 8192,
      input_price_micros_per_mtok: e2ePrices.inputPriceMicrosPerMtok.toString(),
      output_price_micros_per_mtok: e2ePrices.outputPriceMicrosPerMtok.toString(),
      upstream: { provider_kind: 'anthropic', base_url: anthropicUpstream.baseUrl, model: 'claude-upstream-secret-model', api_key: anthropicCredential },
    });
    // Returns once the proxy acknowledged the version that lets the organisation use the model.
    await gateway.admin('PATCH', `/organisations/${gateway.organisationId}`, { allowed_gateway_models: [gateway.modelSlug, claudeSlug] });
  }, 120_000);

  afterAll(async () => {
    await gateway?.close();
    await anthropicUpstream?.close();
  });

  /** The balance once no Reserve is held any more (a Settle lands just after its response), µ₹. */
  async function settledBalance(): Promise<{ available: bigint; held: bigint; debited: bigint }> {
    const body = await gateway.settledBalance();
    return { available: BigInt(body.available_micros), held: BigInt(body.held_micros), debited: BigInt(body.debited_micros) };
  }

  /** The official client as Claude Code configures it: ANTHROPIC_BASE_URL is the origin, the key as x-api-key or Bearer. */
  function client(sentAs: 'x-api-key' | 'bearer'): Anthropic {
    const baseURL = gateway.proxyBases[0]!.slice(0, -'/v1'.length);
    return sentAs === 'x-api-key'
      ? new Anthropic({ baseURL, apiKey: gateway.apiKey, authToken: null, maxRetries: 0 })
      : new Anthropic({ baseURL, apiKey: null, authToken: gateway.apiKey, maxRetries: 0 });
  }

  it('create and stream on an OpenAI-compatible and an Anthropic model: Anthropic shapes, no leaks, the balance dropped by exactly the priced usage', async () => {
    const before = await settledBalance();
    expect(before.held).toBe(0n);
    let shownMicros = 0n;
    let expectedMicros = 0n;

    for (const [slug, sentAs] of [[gateway.modelSlug, 'x-api-key'], [claudeSlug, 'bearer']] as const) {
      const anthropic = client(sentAs);
      // The fakes count words + 3 per message; the OpenAI-compatible one sees the system prompt as a message too.
      const inputTokensOf = (text: string) => fakePromptTokens([{ role: 'user', content: text }]) + countWords(system) + 3;

      const askText = `Say five words [[fake:reply_words=5]] ${slug}`;
      const { data: message, response } = await anthropic.messages.create({
        model: slug, max_tokens: 32, system, messages: [{ role: 'user', content: askText }],
      }).withResponse();
      expect(message).toEqual({
        id: expect.stringMatching(/^msg_[0-9a-f]{32}$/), type: 'message', role: 'assistant', model: slug,
        content: [{ type: 'text', text: 'w1 w2 w3 w4 w5' }], stop_reason: 'end_turn', stop_sequence: null,
        usage: messagesUsage(inputTokensOf(askText), 5),
      });
      expect(leaksIn(JSON.stringify(message))).toEqual([]);
      expect(leaksIn([...response.headers.entries()].join('\n'))).toEqual([]);
      shownMicros += BigInt((message.usage as unknown as { cost_micros: string }).cost_micros);
      expectedMicros += e2eCostMicros(inputTokensOf(askText), 5);

      const streamText = `Stream three words [[fake:reply_words=3]] ${slug}`;
      const stream = anthropic.messages.stream({ model: slug, max_tokens: 32, system, messages: [{ role: 'user', content: streamText }] });
      const events: Array<Record<string, any>> = [];
      for await (const event of stream) events.push(JSON.parse(JSON.stringify(event)) as Record<string, any>);
      const final = await stream.finalMessage();
      expect(final).toMatchObject({ model: slug, content: [{ type: 'text', text: 'w1 w2 w3' }], stop_reason: 'end_turn' });
      expect(events.map((event) => event.type)).toEqual([
        'message_start', 'content_block_start', 'content_block_delta', 'content_block_delta', 'content_block_delta', 'content_block_stop', 'message_delta', 'message_stop',
      ]);
      const delta = events.find((event) => event.type === 'message_delta')!;
      expect(delta.usage).toEqual(messagesUsage(inputTokensOf(streamText), 3));
      expect(leaksIn(JSON.stringify(events))).toEqual([]);
      shownMicros += BigInt(delta.usage.cost_micros as string);
      expectedMicros += e2eCostMicros(inputTokensOf(streamText), 3);
    }

    // The Anthropic-backed model's upstream got Anthropic's API with its own credential.
    const call = anthropicUpstream.requests.at(-1)!;
    expect(call.path).toBe('/v1/messages');
    expect(call.headers['x-api-key']).toBe(anthropicCredential);
    expect(call.body).toMatchObject({ model: 'claude-upstream-secret-model', system, stream: true });

    // Money: exactly the four priced usages the answers showed, to the micro-rupee.
    expect(shownMicros).toBe(expectedMicros);
    const after = await settledBalance();
    expect(after.held).toBe(0n);
    expect(before.available - after.available).toBe(expectedMicros);
    expect(after.debited - before.debited).toBe(expectedMicros);
  }, 60_000);
});
