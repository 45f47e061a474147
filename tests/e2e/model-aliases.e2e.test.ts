/**
 * Model aliases through the whole gateway (docs/model-aliases.md): ledger, admin and proxy as
 * processes over real PostgreSQL. A platform alias and an organisation's override are set through
 * the admin API (each call returns once the proxy acknowledged it); the official `openai` client
 * (chat completions, Responses) and `@anthropic-ai/sdk` (Messages) then call with an agent's
 * built-in names. Each answer shows the slug as `model`, each usage record is the slug's at its
 * prices, and the balance drops by exactly their sum, to the µ₹. A name that is neither slug nor
 * alias is the same 404 as before.
 */
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { countWords, fakePromptTokens } from '@gateway/fake-upstream';
import { testPostgresUrl } from '@gateway/testkit';
import { e2eCostMicros, e2ePrices, startE2eGateway, type E2eGateway } from '../support/e2e-gateway.ts';

const serverUrl = testPostgresUrl();
/** A second chat model the organisation's override points at, priced like the first (the e2e prices). */
const overrideSlug = 'e2e-alias-override';

describe.skipIf(!serverUrl)('model aliases end to end with the official clients', () => {
  let gateway: E2eGateway;

  beforeAll(async () => {
    gateway = await startE2eGateway({ serverUrl: serverUrl! });
    await gateway.admin('POST', '/gateway-models', {
      slug: overrideSlug, display_name: 'E2E alias override', default_max_tokens: 64, max_context_tokens: 8192,
      input_price_micros_per_mtok: e2ePrices.inputPriceMicrosPerMtok.toString(),
      output_price_micros_per_mtok: e2ePrices.outputPriceMicrosPerMtok.toString(),
      upstream: { provider_kind: 'openai_compatible', base_url: gateway.upstream.baseUrl, model: 'upstream-override-model', api_key: gateway.upstreamCredential },
    });
    await gateway.admin('PATCH', `/organisations/${gateway.organisationId}`, { allowed_gateway_models: [gateway.modelSlug, overrideSlug] });
    // Platform-wide: Codex's and Claude Code's default names reach the e2e model.
    await gateway.admin('PUT', '/model-aliases/gpt-6.2-sol', { gateway_model: gateway.modelSlug });
    await gateway.admin('PUT', '/model-aliases/claude-opus-5-5', { gateway_model: gateway.modelSlug });
    await gateway.admin('PUT', '/model-aliases/claude-haiku-5-5', { gateway_model: gateway.modelSlug });
    // The organisation's own: its haiku goes to the other model.
    await gateway.admin('PUT', `/organisations/${gateway.organisationId}/model-aliases/claude-haiku-5-5`, { gateway_model: overrideSlug });
  }, 120_000);

  afterAll(async () => { await gateway?.close(); });

  /** The organisation's usage records, newest first (the first page: this test makes few). */
  async function usageRecords(): Promise<Array<Record<string, any>>> {
    const usage = await gateway.admin('GET', `/organisations/${gateway.organisationId}/usage`);
    return usage.data as Array<Record<string, any>>;
  }

  it('openai (chat, Responses) and @anthropic-ai/sdk (Messages) reach the slug through aliases, billed as the slug to the µ₹', async () => {
    const before = await gateway.settledBalance();
    const recordsBefore = (await usageRecords()).length;
    const openai = gateway.client();
    const anthropic = new Anthropic({ baseURL: gateway.proxyBases[0]!.slice(0, -'/v1'.length), apiKey: gateway.apiKey, authToken: null, maxRetries: 0 });
    const expected: Array<{ slug: string; input: number; output: number }> = [];

    const chatText = 'Say four words [[fake:reply_words=4]]';
    const chat = await openai.chat.completions.create({ model: 'gpt-6.2-sol', messages: [{ role: 'user', content: chatText }] });
    expect(chat.model).toBe(gateway.modelSlug);
    expect(chat.choices[0]!.message.content).toBe('w1 w2 w3 w4');
    expected.push({ slug: gateway.modelSlug, input: chat.usage!.prompt_tokens, output: 4 });
    expect(chat.usage!.prompt_tokens).toBe(fakePromptTokens([{ role: 'user', content: chatText }]));

    const response = await openai.responses.create({ model: 'gpt-6.2-sol', input: 'Say two words [[fake:reply_words=2]]', store: false });
    expect(response.model).toBe(gateway.modelSlug);
    expect(response.output_text).toBe('w1 w2');
    expected.push({ slug: gateway.modelSlug, input: response.usage!.input_tokens, output: 2 });

    const messageText = 'Say three words [[fake:reply_words=3]]';
    const message = await anthropic.messages.create({ model: 'claude-opus-5-5', max_tokens: 32, messages: [{ role: 'user', content: messageText }] });
    expect(message.model).toBe(gateway.modelSlug);
    expect(message.content).toEqual([{ type: 'text', text: 'w1 w2 w3' }]);
    expect(message.usage.input_tokens).toBe(fakePromptTokens([{ role: 'user', content: messageText }]));
    expected.push({ slug: gateway.modelSlug, input: message.usage.input_tokens, output: 3 });

    // The organisation's override wins over the platform alias of the same name.
    const streamText = 'Stream five words [[fake:reply_words=5]]';
    const stream = anthropic.messages.stream({ model: 'claude-haiku-5-5', max_tokens: 32, messages: [{ role: 'user', content: streamText }] });
    const final = await stream.finalMessage();
    expect(final.model).toBe(overrideSlug);
    expect(final.content).toEqual([{ type: 'text', text: 'w1 w2 w3 w4 w5' }]);
    expected.push({ slug: overrideSlug, input: final.usage.input_tokens, output: countWords('w1 w2 w3 w4 w5') });
    expect(gateway.upstream.requests.at(-1)!.body).toMatchObject({ model: 'upstream-override-model' });

    // A name that is neither slug nor alias: the same 404 as ever, in each client's error class.
    const unknown = await openai.chat.completions.create({ model: 'gpt-0-nothing', messages: [{ role: 'user', content: 'hi' }] }).catch((error: unknown) => error);
    expect(unknown).toBeInstanceOf(OpenAI.NotFoundError);
    expect((unknown as InstanceType<typeof OpenAI.NotFoundError>).error).toEqual({
      message: "The model 'gpt-0-nothing' does not exist or you do not have access to it.", type: 'invalid_request_error', param: 'model', code: 'model_not_found',
    });
    const unknownMessage = await anthropic.messages.create({ model: 'claude-nothing', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] }).catch((error: unknown) => error);
    expect(unknownMessage).toBeInstanceOf(Anthropic.NotFoundError);

    // /v1/models lists slugs only.
    const listed: string[] = [];
    for await (const model of openai.models.list()) listed.push(model.id);
    expect(listed.sort()).toEqual([gateway.modelSlug, overrideSlug].sort());

    // Money: one usage record per call, under the slug, each the e2e prices of its tokens; the balance down by their sum.
    const after = await gateway.settledBalance();
    const all = await usageRecords();
    const records = all.slice(0, all.length - recordsBefore); // newest first: the ones this test made
    const expectedMicros = expected.map(({ input, output }) => e2eCostMicros(input, output));
    expect(records.map((record) => [record.model, record.input_tokens, record.output_tokens, record.cost_micros]).sort())
      .toEqual(expected.map(({ slug, input, output }, index) => [slug, input, output, expectedMicros[index]!.toString()]).sort());
    const total = expectedMicros.reduce((sum, micros) => sum + micros, 0n);
    expect(after.held_micros).toBe('0');
    expect(BigInt(before.available_micros as string) - BigInt(after.available_micros as string)).toBe(total);
    expect(BigInt(after.debited_micros as string) - BigInt(before.debited_micros as string)).toBe(total);
    process.stdout.write(`model-aliases e2e: ${expected.length} calls through aliases, charged ${total} µ₹ (${expectedMicros.join(' + ')})\n`);
  }, 60_000);
});
