/**
 * The proxy's streaming and error mapping end to end: ledger, admin and proxy as processes over
 * real PostgreSQL, driven by the official `openai` client. Money is read back through the
 * admin's balance and usage routes and asserted to the micro-rupee.
 */
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { countTextTokens } from '@gateway/proxy';
import { issueSecret } from '@gateway/secrets';
import { testPostgresUrl } from '@gateway/testkit';
import { e2eCostMicros, e2eUsage, startE2eGateway, type E2eGateway } from '../support/e2e-gateway.ts';

const serverUrl = testPostgresUrl();
const creditMicros = 10_000_000n;

/** Tokens as the proxy counts them for this model's upstream name (cl100k_base). */
function tokens(text: string): number {
  return countTextTokens(text, 'cl100k_base');
}

function words(count: number): string {
  return Array.from({ length: count }, (_, i) => `w${i + 1}`).join(' ');
}

describe.skipIf(!serverUrl)('proxy streaming end to end', () => {
  let gateway: E2eGateway;

  beforeAll(async () => {
    // Credit grants on (the default), returned after 200 ms without carves so a test can wait for held = 0.
    gateway = await startE2eGateway({ serverUrl: serverUrl!, creditMicros, proxyEnv: { PROXY_GRANT_IDLE_RETURN_MS: '200' } });
  }, 120_000);
  afterAll(async () => { await gateway?.close(); });

  async function usageRecords(organisationId = gateway.organisationId): Promise<Array<Record<string, any>>> {
    return (await gateway.admin('GET', `/organisations/${organisationId}/usage`)).data as Array<Record<string, any>>;
  }

  /**
   * The organisation's balance once it holds nothing: the proxy carves Reserves from a credit grant
   * and returns what the grant still holds after PROXY_GRANT_IDLE_RETURN_MS without carves.
   */
  async function balanceOnceNothingHeld(organisationId = gateway.organisationId): Promise<Record<string, any>> {
    const deadline = Date.now() + 15_000;
    for (;;) {
      const balance = await gateway.admin('GET', `/organisations/${organisationId}/balance`);
      if (balance.held_micros === '0' || Date.now() > deadline) return balance;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  async function waitForUsageCount(count: number): Promise<Array<Record<string, any>>> {
    const deadline = Date.now() + 15_000;
    for (;;) {
      const records = await usageRecords();
      if (records.length >= count || Date.now() > deadline) return records;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  it('streams through the official client with the slug in every chunk, and bills the usage to the micro-rupee', async () => {
    const stream = await gateway.client().chat.completions.create({
      model: gateway.modelSlug, messages: [{ role: 'user', content: 'Stream to me [[fake:reply_words=6]]' }],
      stream: true, stream_options: { include_usage: true },
    });
    const chunks: OpenAI.ChatCompletionChunk[] = [];
    for await (const chunk of stream) chunks.push(chunk);
    expect(chunks.map((c) => c.choices[0]?.delta.content ?? '').join('')).toBe(words(6));
    expect(chunks.every((c) => c.model === gateway.modelSlug)).toBe(true);
    // The fake counts 4 words + 3 for the prompt, 6 for the reply.
    expect(chunks.at(-1)!.usage).toEqual(e2eUsage(7, 6));

    const [record] = await waitForUsageCount(1);
    const costMicros = e2eCostMicros(7, 6);
    expect(record).toMatchObject({ model: gateway.modelSlug, input_tokens: 7, output_tokens: 6, cost_micros: costMicros.toString(), usage_source: 'upstream' });
    expect(await balanceOnceNothingHeld()).toMatchObject({
      credited_micros: creditMicros.toString(), held_micros: '0',
      debited_micros: costMicros.toString(), available_micros: (creditMicros - costMicros).toString(),
    });
  });

  it('settles the delivered tokens and releases the rest when the client aborts mid-stream', async () => {
    const before = await gateway.admin('GET', `/organisations/${gateway.organisationId}/balance`);
    const content = 'Tell me a long story [[fake:reply_words=40]] [[fake:chunk_delay_ms=150]]';
    const abort = new AbortController();
    const stream = await gateway.client().chat.completions.create(
      { model: gateway.modelSlug, messages: [{ role: 'user', content }], stream: true, max_tokens: 200 },
      { signal: abort.signal },
    );
    let received = '';
    let contentChunks = 0;
    await (async () => {
      for await (const chunk of stream) {
        const text = chunk.choices[0]?.delta.content ?? '';
        received += text;
        if (text !== '') contentChunks += 1;
        if (contentChunks === 3) abort.abort();
      }
    })().catch((error: unknown) => { if (!abort.signal.aborted) throw error; });
    expect(received).toBe(words(3));

    const records = await waitForUsageCount(2);
    const record = records[0]!;
    const promptTokens = tokens(content) + 6;
    // Delivered: at least what the client read, less than the whole reply (it was cut early).
    const deliveredWords = Array.from({ length: 37 }, (_, i) => i + 3).find((n) => tokens(words(n)) === record.output_tokens);
    expect(deliveredWords, `output_tokens ${record.output_tokens}`).toBeDefined();
    const costMicros = e2eCostMicros(promptTokens, record.output_tokens);
    expect(record).toMatchObject({ input_tokens: promptTokens, cost_micros: costMicros.toString(), debited_micros: costMicros.toString(), usage_source: 'gateway_estimate' });

    const after = await balanceOnceNothingHeld();
    expect(after).toMatchObject({
      held_micros: '0',
      debited_micros: (BigInt(before.debited_micros) + costMicros).toString(),
      available_micros: (BigInt(before.available_micros) - costMicros).toString(),
    });
    expect(BigInt(after.credited_micros)).toBe(BigInt(after.available_micros) + BigInt(after.held_micros) + BigInt(after.debited_micros));
  });

  it('maps each refusal to the official client error class with our code', async () => {
    const client = gateway.client();
    const message = [{ role: 'user' as const, content: 'hi' }];
    const unknownKey = gateway.client(0, issueSecret('apiKey').secret);
    const errors = {
      auth: await unknownKey.chat.completions.create({ model: gateway.modelSlug, messages: message, stream: true }).catch((e: unknown) => e),
      model: await client.chat.completions.create({ model: 'no-such-model', messages: message, stream: true }).catch((e: unknown) => e),
    };
    expect(errors.auth).toBeInstanceOf(OpenAI.AuthenticationError);
    expect(errors.model).toBeInstanceOf(OpenAI.NotFoundError);
    expect((errors.model as InstanceType<typeof OpenAI.NotFoundError>).code).toBe('model_not_found');

    // A second organisation with 1 µ₹: 402 before any upstream byte, then suspended: 403.
    const poor = await gateway.admin('POST', '/organisations', { name: 'Poor', allowed_gateway_models: [gateway.modelSlug] });
    await gateway.admin('POST', `/organisations/${poor.id}/credits`, { amount_micros: '1', reason: 'e2e tiny credit' }, { 'idempotency-key': 'e2e-poor' });
    const poorKey = (await gateway.admin('POST', `/organisations/${poor.id}/projects`, { name: 'poor' })).api_key as string;
    const upstreamRequests = gateway.upstream.requests.length;
    const broke = await gateway.client(0, poorKey).chat.completions.create({ model: gateway.modelSlug, messages: message, stream: true }).catch((e: unknown) => e);
    expect(broke).toBeInstanceOf(OpenAI.APIError);
    expect((broke as InstanceType<typeof OpenAI.APIError>).status).toBe(402);
    expect((broke as InstanceType<typeof OpenAI.APIError>).code).toBe('insufficient_balance');
    expect(gateway.upstream.requests.length).toBe(upstreamRequests);

    await gateway.admin('PATCH', `/organisations/${poor.id}`, { status: 'suspended' });
    const suspended = await gateway.client(0, poorKey).chat.completions.create({ model: gateway.modelSlug, messages: message }).catch((e: unknown) => e);
    expect(suspended).toBeInstanceOf(OpenAI.PermissionDeniedError);
    expect((suspended as InstanceType<typeof OpenAI.PermissionDeniedError>).code).toBe('organisation_suspended');
    expect(await gateway.admin('GET', `/organisations/${poor.id}/balance`)).toMatchObject({ available_micros: '1', held_micros: '0', debited_micros: '0' });
  });

  it('stops cleanly on SIGTERM', async () => {
    expect(await gateway.close()).toEqual([0, 0, 0]);
  });
});
