import { createServer } from 'node:net';
import { encode } from 'gpt-tokenizer/encoding/cl100k_base';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { configV1, ledgerV1 } from '@gateway/contracts';
import { leakMarkers } from '@gateway/fake-upstream';
import { issueSecret } from '@gateway/secrets';
import {
  expectedCostMicros, expectedUsage, gatewayModel, startProxyWorld, stateOf, tenant, testPrices, trafficOf, waitFor, type ProxyWorld, type TestProxy,
} from './test-support/proxy-world.ts';

const acme = tenant('acme', { allowedGatewayModelSlugs: ['chat', 'dead', 'ghost'] });
const poor = tenant('poor');
const frozen = tenant('frozen', { status: configV1.OrganisationStatus.ORGANISATION_STATUS_SUSPENDED });
const sponsored = tenant('sponsored', { billingMode: configV1.BillingMode.BILLING_MODE_INTERNAL });
const tight = tenant('tight');
const creditMicros = 10_000_000n;
const upstreamCredential = 'sk-upstream-credential-123';

/** A port nothing listens on: bound once, then released. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** Prompt tokens the proxy estimates for one user message, computed here with the tokenizer (cl100k_base for a non-OpenAI upstream model name). */
function estimatedPromptTokens(content: string): number {
  return encode(content, { disallowedSpecial: new Set() }).length + 3 + 3;
}

function userMessage(content: string): Array<{ role: 'user'; content: string }> {
  return [{ role: 'user', content }];
}

let world: ProxyWorld;
let proxy: TestProxy;
let client: OpenAI;

beforeAll(async () => {
  const deadPort = await closedPort();
  world = await startProxyWorld((baseUrl) => stateOf([acme, poor, frozen, sponsored, tight], [
    gatewayModel('chat', baseUrl),
    gatewayModel('other', baseUrl),
    gatewayModel('dead', `http://127.0.0.1:${deadPort}/v1`),
  ]), { requiredApiKey: upstreamCredential });
  world.ledger.credit('acme', creditMicros);
  world.ledger.credit('poor', 1n);
  world.ledger.credit('sponsored', 0n);
  proxy = await world.startProxy();
  await waitFor(() => proxy.isReady(), 5000, 'first snapshot');
  client = world.client(acme.apiKey);
});
afterAll(async () => { await world?.close(); });

/** Counts of calls so far, to assert that a refused request added none. */
const traffic = () => trafficOf(world);

async function rawPost(body: unknown, apiKey = acme.apiKey, target: TestProxy = proxy): Promise<Response> {
  return fetch(`${target.baseUrl}/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

describe('a completion', () => {
  it('answers with the slug, reserves the estimate and settles the reported usage to the micro-rupee', async () => {
    const content = 'Hello gateway, please answer [[fake:reply_words=7]]';
    const before = world.ledger.account('acme')!;
    const { data, response } = await client.chat.completions
      .create({ model: 'chat', messages: userMessage(content), max_tokens: 50, temperature: 0.5, seed: 7 })
      .withResponse();
    await proxy.idle(); // the Settle runs right after the response

    expect(data.model).toBe('chat');
    expect(data.object).toBe('chat.completion');
    expect(data.choices[0]!.message.content).toBe('w1 w2 w3 w4 w5 w6 w7');
    expect(data.choices[0]!.finish_reason).toBe('stop');
    // The fake counts 5 words + 3 for the message; the reply is 7 words.
    // Its cost, in µ₹ and rupees, is the Settle's below: 71 µ₹.
    expect(data.usage).toEqual({
      prompt_tokens: 8, completion_tokens: 7, total_tokens: 15, completion_tokens_details: { reasoning_tokens: 0 }, cost_micros: '71', cost_inr: '0.000071',
    });

    const requestId = response.headers.get('x-request-id')!;
    const reserve = world.ledger.calls.reserve.at(-1)!;
    const promptEstimate = estimatedPromptTokens(content);
    const reserveMicros = expectedCostMicros(promptEstimate, testPrices.inputPriceMicrosPerMtok) + expectedCostMicros(50, testPrices.outputPriceMicrosPerMtok);
    expect(reserve).toMatchObject({
      organisationId: 'acme', projectId: 'acme-project', billingMode: ledgerV1.BillingMode.BILLING_MODE_COMMERCIAL,
      amountMicros: reserveMicros, ttlMs: 600_000n, modelSlug: 'chat',
    });
    expect(reserve.reservationId).toMatch(/^res_[0-9a-f-]{36}$/);

    const costMicros = expectedCostMicros(8, testPrices.inputPriceMicrosPerMtok) + expectedCostMicros(7, testPrices.outputPriceMicrosPerMtok);
    const providerCostMicros = expectedCostMicros(8, testPrices.providerInputCostMicrosPerMtok) + expectedCostMicros(7, testPrices.providerOutputCostMicrosPerMtok);
    expect(costMicros).toBe(71n); // 8 × 2.500001 = 20.000008 → 21, 7 × 7.000003 = 49.000021 → 50: each side rounded up
    expect(world.ledger.calls.settle.at(-1)).toEqual({
      reservationId: reserve.reservationId, inputTokens: 8n, outputTokens: 7n, costMicros, providerCostMicros,
      modelSlug: 'chat', usageSource: ledgerV1.UsageSource.USAGE_SOURCE_UPSTREAM, requestId, overrunOutputTokens: 0n, tokenClasses: [],
      // The model's own upstream answered (the config sends no other deployment): no failed attempt.
      deployment: 'primary', failedAttempts: [],
    });
    expect(world.ledger.account('acme')).toEqual({
      creditedMicros: before.creditedMicros, heldMicros: 0n,
      debitedMicros: before.debitedMicros + costMicros, availableMicros: before.availableMicros - costMicros,
    });

    // The upstream saw its own model name, our max_tokens, the forwarded params and our credential only.
    const seen = world.upstream.requests.at(-1)!;
    expect(seen.headers.authorization).toBe(`Bearer ${upstreamCredential}`);
    expect(seen.body).toEqual({
      model: 'chat-upstream-name', messages: [{ role: 'user', content }], max_tokens: 50, temperature: 0.5, seed: 7,
    });
  });

  it('falls back to the model default max_tokens and to the gateway estimate when the upstream reports no usage', async () => {
    const content = 'No usage this time [[fake:reply_words=5]] [[fake:no_usage]]';
    const data = await client.chat.completions.create({ model: 'chat', messages: userMessage(content) });
    await proxy.idle();

    const promptTokens = estimatedPromptTokens(content);
    const completionTokens = encode('w1 w2 w3 w4 w5').length;
    expect(data.usage).toEqual(expectedUsage(promptTokens, completionTokens));
    expect((world.upstream.requests.at(-1)!.body as { max_tokens: number }).max_tokens).toBe(64);
    expect(world.ledger.calls.reserve.at(-1)!.amountMicros).toBe(
      expectedCostMicros(promptTokens, testPrices.inputPriceMicrosPerMtok) + expectedCostMicros(64, testPrices.outputPriceMicrosPerMtok),
    );
    expect(world.ledger.calls.settle.at(-1)).toMatchObject({
      inputTokens: BigInt(promptTokens), outputTokens: BigInt(completionTokens),
      costMicros: expectedCostMicros(promptTokens, testPrices.inputPriceMicrosPerMtok) + expectedCostMicros(completionTokens, testPrices.outputPriceMicrosPerMtok),
      usageSource: ledgerV1.UsageSource.USAGE_SOURCE_GATEWAY_ESTIMATE,
    });
  });

  it('records usage but holds and debits nothing for an internal-billing organisation', async () => {
    await world.client(sponsored.apiKey, proxy).chat.completions.create({ model: 'chat', messages: userMessage('hi [[fake:reply_words=3]]') });
    await proxy.idle();
    expect(world.ledger.calls.reserve.at(-1)).toMatchObject({ organisationId: 'sponsored', billingMode: ledgerV1.BillingMode.BILLING_MODE_INTERNAL });
    expect(world.ledger.calls.settle.at(-1)!.costMicros).toBe(expectedCostMicros(5, testPrices.inputPriceMicrosPerMtok) + expectedCostMicros(3, testPrices.outputPriceMicrosPerMtok));
    expect(world.ledger.account('sponsored')).toEqual({ creditedMicros: 0n, availableMicros: 0n, heldMicros: 0n, debitedMicros: 0n });
  });
});

describe('refusals before any money moves', () => {
  it('401 for an unknown, a malformed or a missing key, with no ledger or upstream traffic', async () => {
    await proxy.idle(); // earlier tests' Settles, which run after their responses
    const before = traffic();
    const unknown = world.client(issueSecret('apiKey').secret);
    await expect(unknown.chat.completions.create({ model: 'chat', messages: userMessage('hi') })).rejects.toBeInstanceOf(OpenAI.AuthenticationError);
    const lastChar = acme.apiKey.at(-1) === 'A' ? 'B' : 'A';
    const malformed = world.client(`${acme.apiKey.slice(0, -1)}${lastChar}`);
    const error = await malformed.models.list().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.AuthenticationError);
    expect((error as InstanceType<typeof OpenAI.AuthenticationError>).code).toBe('invalid_api_key');
    const missing = await fetch(`${proxy.baseUrl}/chat/completions`, { method: 'POST', body: '{}' });
    expect(missing.status).toBe(401);
    expect(traffic()).toEqual(before);
  });

  it('403 organisation_suspended for a key of a suspended organisation', async () => {
    const error = await world.client(frozen.apiKey).chat.completions.create({ model: 'chat', messages: userMessage('hi') }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.PermissionDeniedError);
    expect((error as InstanceType<typeof OpenAI.PermissionDeniedError>).code).toBe('organisation_suspended');
  });

  it('404 model_not_found alike for a model that is not allowed, not configured, or allowed but missing', async () => {
    const before = traffic();
    const messages: Array<{ model: string; body: unknown }> = [];
    for (const model of ['other', 'no-such-model', 'ghost']) {
      const error = await client.chat.completions.create({ model, messages: userMessage('hi') }).catch((e: unknown) => e);
      expect(error, model).toBeInstanceOf(OpenAI.NotFoundError);
      const notFound = error as InstanceType<typeof OpenAI.NotFoundError>;
      messages.push({ model, body: { code: notFound.code, param: notFound.param, message: notFound.message.replace(model, 'X') } });
    }
    expect(messages[0]!.body).toEqual(messages[1]!.body);
    expect(messages[1]!.body).toEqual(messages[2]!.body);
    expect(traffic()).toEqual(before);
  });

  it('402 insufficient_balance when the Reserve does not fit, and the upstream never hears of it', async () => {
    const before = traffic();
    const error = await world.client(poor.apiKey).chat.completions.create({ model: 'chat', messages: userMessage('hi') }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect((error as InstanceType<typeof OpenAI.APIError>).status).toBe(402);
    expect((error as InstanceType<typeof OpenAI.APIError>).code).toBe('insufficient_balance');
    expect(traffic()).toEqual({ ...before, reserve: before.reserve + 1 });
    expect(world.ledger.account('poor')).toEqual({ creditedMicros: 1n, availableMicros: 1n, heldMicros: 0n, debitedMicros: 0n });
  });

  it('400 for bad bodies, naming the param, with no ledger or upstream traffic', async () => {
    const before = traffic();
    const cases: Array<[unknown, number, string, string | null]> = [
      [{ messages: userMessage('hi') }, 400, 'invalid_request', 'model'],
      [{ model: 'chat', messages: [] }, 400, 'invalid_request', 'messages'],
      [{ model: 'chat', messages: [{ role: 'wizard', content: 'hi' }] }, 400, 'invalid_request', 'messages[0].role'],
      [{ model: 'chat', messages: [{ role: 'user', content: 42 }] }, 400, 'invalid_request', 'messages[0].content'],
      [{ model: 'chat', messages: userMessage('hi'), max_tokens: 0 }, 400, 'invalid_request', 'max_tokens'],
      [{ model: 'chat', messages: userMessage('hi'), max_tokens: 1.5 }, 400, 'invalid_request', 'max_tokens'],
      [{ model: 'chat', messages: userMessage('hi'), n: 2 }, 400, 'invalid_request', 'n'],
      [{ model: 'chat', messages: userMessage('hi'), temperature: 'hot' }, 400, 'invalid_request', 'temperature'],
      [{ model: 'chat', messages: Array.from({ length: 2049 }, () => ({ role: 'user', content: 'x' })) }, 400, 'invalid_request', 'messages'],
      ['{"model": "chat", "messages": [', 400, 'invalid_json', null],
      ['[1, 2]', 400, 'invalid_request', null],
      [{ model: 'chat', messages: userMessage('x'.repeat(16_800_000)) }, 413, 'request_too_large', null], // over PROXY_MAX_BODY_BYTES' 16 MiB
    ];
    for (const [body, status, code, param] of cases) {
      const response = await rawPost(body);
      const label = typeof body === 'string' ? body : JSON.stringify(body).slice(0, 80);
      expect(response.status, label).toBe(status);
      const json = await response.json() as { error: { code: string; param: string | null; type: string; message: string } };
      expect(json.error.code, label).toBe(code);
      expect(json.error.param, label).toBe(param);
      expect(json.error.type, label).toBe('invalid_request_error');
    }
    expect(traffic()).toEqual(before);
  });

  it('refuses a prompt that fills the context window by itself, before reserving', async () => {
    const before = traffic();
    const response = await rawPost({ model: 'chat', messages: userMessage('lorem ipsum dolor '.repeat(2000)) });
    expect(response.status).toBe(400);
    expect(((await response.json()) as { error: { param: string } }).error.param).toBe('messages');
    expect(traffic()).toEqual(before);
  });
});

describe('upstream failures', () => {
  it('maps an upstream HTTP error to 502 upstream_error and settles zero usage', async () => {
    const before = world.ledger.account('acme')!;
    const error = await client.chat.completions.create({ model: 'chat', messages: userMessage('[[fake:status=503]]') }).catch((e: unknown) => e);
    await proxy.idle(); // the Settle or Release is queued in the outbox, not awaited by the 502/504
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect((error as InstanceType<typeof OpenAI.APIError>).status).toBe(502);
    expect((error as InstanceType<typeof OpenAI.APIError>).code).toBe('upstream_error');
    expect(world.ledger.calls.settle.at(-1)).toMatchObject({
      reservationId: world.ledger.calls.reserve.at(-1)!.reservationId,
      inputTokens: 0n, outputTokens: 0n, costMicros: 0n, providerCostMicros: 0n, usageSource: ledgerV1.UsageSource.USAGE_SOURCE_GATEWAY_ESTIMATE,
    });
    expect(world.ledger.account('acme')).toEqual(before);
  });

  it('maps an upstream that never answers to 504 upstream_timeout and settles zero usage', async () => {
    const impatient = await world.startProxy({ UPSTREAM_FIRST_BYTE_TIMEOUT_MS: '300' });
    await waitFor(() => impatient.isReady());
    const before = world.ledger.account('acme')!;
    const error = await world.client(acme.apiKey, impatient).chat.completions.create({ model: 'chat', messages: userMessage('[[fake:hang]]') }).catch((e: unknown) => e);
    await impatient.idle(); // the Settle or Release is queued in the outbox, not awaited by the 502/504
    expect((error as InstanceType<typeof OpenAI.APIError>).status).toBe(504);
    expect((error as InstanceType<typeof OpenAI.APIError>).code).toBe('upstream_timeout');
    expect(world.ledger.calls.settle.at(-1)).toMatchObject({ costMicros: 0n, usageSource: ledgerV1.UsageSource.USAGE_SOURCE_GATEWAY_ESTIMATE });
    expect(world.ledger.account('acme')).toEqual(before);
  });

  it('releases the Reserve instead of settling when the upstream cannot be reached at all', async () => {
    const before = traffic();
    const balance = world.ledger.account('acme')!;
    const error = await client.chat.completions.create({ model: 'dead', messages: userMessage('hi') }).catch((e: unknown) => e);
    await proxy.idle(); // the Settle or Release is queued in the outbox, not awaited by the 502/504
    expect((error as InstanceType<typeof OpenAI.APIError>).status).toBe(502);
    const reservationId = world.ledger.calls.reserve.at(-1)!.reservationId;
    expect(world.ledger.calls.release.at(-1)).toEqual({ reservationId, reason: 'upstream_unreachable', failedAttempts: [], modelSlug: '' });
    expect(traffic()).toEqual({ ...before, reserve: before.reserve + 1, release: before.release + 1 });
    expect(world.ledger.reservationState(reservationId)).toBe('released');
    expect(world.ledger.account('acme')).toEqual(balance);
  });

  it('conceals the upstream on success and on error: no vendor string in any body or header', async () => {
    const responses = [
      await rawPost({ model: 'chat', messages: userMessage('hello') }),
      await rawPost({ model: 'chat', messages: userMessage('[[fake:status=500]]') }),
      await rawPost({ model: 'chat', messages: userMessage('[[fake:status=429]]') }),
      await rawPost({ model: 'chat', messages: userMessage('[[fake:status=401]]') }),
    ];
    expect(responses.map((r) => r.status)).toEqual([200, 502, 502, 502]);
    for (const response of responses) {
      const text = await response.text();
      const headers = JSON.stringify([...response.headers]);
      for (const marker of [...leakMarkers.all, 'chat-upstream-name', upstreamCredential]) {
        expect(text, marker).not.toContain(marker);
        expect(headers, marker).not.toContain(marker);
      }
      expect([...response.headers.keys()].sort()).toEqual(expect.arrayContaining(['content-type', 'x-request-id']));
      for (const name of response.headers.keys()) {
        expect(['connection', 'content-length', 'content-type', 'date', 'keep-alive', 'x-request-id',
          'x-ratelimit-limit-requests', 'x-ratelimit-remaining-requests', 'x-ratelimit-reset-requests']).toContain(name);
      }
    }
  });
});

describe('settle and release resilience', () => {
  it('retries a failed settle and still debits exactly once', async () => {
    await proxy.idle(); // earlier tests' background Settles must not take the injected failures
    const before = world.ledger.account('acme')!;
    world.ledger.failNext('settle', 2);
    const data = await client.chat.completions.create({ model: 'chat', messages: userMessage('retry me [[fake:reply_words=4]]') });
    await proxy.idle();
    const reservationId = world.ledger.calls.reserve.at(-1)!.reservationId;
    const attempts = world.ledger.calls.settle.filter((s) => s.reservationId === reservationId);
    expect(attempts).toHaveLength(3);
    const costMicros = expectedCostMicros(data.usage!.prompt_tokens, testPrices.inputPriceMicrosPerMtok) + expectedCostMicros(4, testPrices.outputPriceMicrosPerMtok);
    expect(world.ledger.account('acme')).toMatchObject({ debitedMicros: before.debitedMicros + costMicros, heldMicros: 0n });
  });

  it('returns the completion at once and keeps sending its settle, past the old three attempts, until the ledger answers', async () => {
    world.ledger.failNext('settle', 8);
    const data = await client.chat.completions.create({ model: 'chat', messages: userMessage('[[fake:reply_words=2]]') });
    expect(data.choices[0]!.message.content).toBe('w1 w2');
    await proxy.idle();
    const reservationId = world.ledger.calls.reserve.at(-1)!.reservationId;
    expect(world.ledger.reservationState(reservationId)).toBe('settled');
    expect(world.ledger.calls.settle.filter((s) => s.reservationId === reservationId)).toHaveLength(9);
    expect(proxy.logs.filter((line) => line.includes('the outbox sends it again') && line.includes(reservationId))).toHaveLength(8);
  });

  it('does not refuse the next request for a hold whose Settle is still in flight (it waits for it and tries again)', async () => {
    // Room for one Reserve, and for a second only once the first Settle has returned its unused hold.
    const content = 'one at a time [[fake:reply_words=2]]';
    const promptTokens = estimatedPromptTokens(content);
    const reserveMicros = expectedCostMicros(promptTokens, testPrices.inputPriceMicrosPerMtok) + expectedCostMicros(10, testPrices.outputPriceMicrosPerMtok);
    const costMicros = expectedCostMicros(8, testPrices.inputPriceMicrosPerMtok) + expectedCostMicros(2, testPrices.outputPriceMicrosPerMtok);
    const credited = reserveMicros + costMicros + 1n;
    expect(credited).toBeLessThan(2n * reserveMicros);
    world.ledger.credit('tight', credited);
    const tightClient = world.client(tight.apiKey);

    world.ledger.delayNext('settle', 300); // the first request's Settle lands well after its response
    const first = await tightClient.chat.completions.create({ model: 'chat', messages: userMessage(content), max_tokens: 10 });
    expect(world.ledger.account('tight')!.heldMicros).toBe(reserveMicros); // answered, not yet settled
    const second = await tightClient.chat.completions.create({ model: 'chat', messages: userMessage(content), max_tokens: 10 });
    await proxy.idle();

    expect([first.usage, second.usage]).toEqual([
      expectedUsage(8, 2), expectedUsage(8, 2),
    ]);
    const reserves = world.ledger.calls.reserve.filter((r) => r.organisationId === 'tight');
    // The second request's Reserve was refused once, then held under the same id after the Settle.
    expect(reserves.map((r) => r.reservationId)).toEqual([reserves[0]!.reservationId, reserves[1]!.reservationId, reserves[1]!.reservationId]);
    expect(world.ledger.account('tight')).toEqual({
      creditedMicros: credited, heldMicros: 0n, debitedMicros: 2n * costMicros, availableMicros: credited - 2n * costMicros,
    });
  });

  it('answers 402 as before when the Settles in flight do not make room', async () => {
    // Still the tight organisation: after two debits it cannot hold a Reserve of 10^6 output tokens' worth.
    world.ledger.delayNext('settle', 100);
    const small = await world.client(tight.apiKey).chat.completions.create({ model: 'chat', messages: userMessage('[[fake:reply_words=1]]'), max_tokens: 1 })
      .catch((e: unknown) => e);
    const refused = await world.client(tight.apiKey).chat.completions.create({ model: 'chat', messages: userMessage('hi'), max_tokens: 4000 })
      .catch((e: unknown) => e);
    expect((refused as InstanceType<typeof OpenAI.APIError>).status).toBe(402);
    expect((refused as InstanceType<typeof OpenAI.APIError>).code).toBe('insufficient_balance');
    await proxy.idle();
    expect(world.ledger.account('tight')!.heldMicros).toBe(0n);
    expect(small).not.toBeInstanceOf(Error);
  });

  it('answers a 402 no returning hold could lift at once: it neither waits for the organisation\'s Settles in flight nor tries again (NO_OVERSPEND)', async () => {
    // The tight organisation, topped up for one small request: a Reserve of 4,000 output tokens'
    // worth exceeds available + held whatever the Settle in flight returns, so it is not liftable.
    world.ledger.credit('tight', 1_000n);
    world.ledger.delayNext('settle', 3000);
    await world.client(tight.apiKey).chat.completions.create({ model: 'chat', messages: userMessage('[[fake:reply_words=1]]'), max_tokens: 1 });
    const settlesAnswered = world.ledger.answers.settle.length;
    const reservesBefore = world.ledger.calls.reserve.length;
    const refused = await world.client(tight.apiKey).chat.completions.create({ model: 'chat', messages: userMessage('hi'), max_tokens: 4000 })
      .catch((e: unknown) => e);
    expect((refused as InstanceType<typeof OpenAI.APIError>).status).toBe(402);
    expect((refused as InstanceType<typeof OpenAI.APIError>).code).toBe('insufficient_balance');
    // Answered while the unrelated Settle was still in flight, after one Reserve.
    expect(world.ledger.answers.settle.length).toBe(settlesAnswered);
    expect(world.ledger.calls.reserve.length).toBe(reservesBefore + 1);
    expect(world.ledger.answers.reserve.at(-1)).toMatchObject({ liftable: false, grantsRecalled: 0 });
    await proxy.idle();
    expect(world.ledger.answers.settle.length).toBe(settlesAnswered + 1);
    expect(world.ledger.account('tight')!.heldMicros).toBe(0n);
  });

  it('answers 503 when the ledger cannot take the Reserve, reaches no upstream, and releases in case it was held', async () => {
    const before = traffic();
    world.ledger.failNext('reserve', 1);
    const error = await client.chat.completions.create({ model: 'chat', messages: userMessage('hi') }).catch((e: unknown) => e);
    expect((error as InstanceType<typeof OpenAI.APIError>).status).toBe(503);
    expect((error as InstanceType<typeof OpenAI.APIError>).code).toBe('service_unavailable');
    await waitFor(() => world.ledger.calls.release.length === before.release + 1);
    expect(world.ledger.calls.release.at(-1)).toMatchObject({ reservationId: world.ledger.calls.reserve.at(-1)!.reservationId, reason: 'reserve_outcome_unknown' });
    expect(world.upstream.requests.length).toBe(before.upstream);
  });
});

describe('models and routes', () => {
  it('lists the allowed models that exist, sorted, with nothing upstream in them', async () => {
    const chatCapabilities = { kind: 'chat', endpoints: ['/v1/chat/completions', '/v1/responses', '/v1/messages'], input_modalities: ['text'] };
    const list = await client.models.list();
    expect(list.data).toEqual([
      { id: 'chat', object: 'model', created: 1_700_000_000, owned_by: 'gateway', capabilities: chatCapabilities },
      { id: 'dead', object: 'model', created: 1_700_000_000, owned_by: 'gateway', capabilities: chatCapabilities },
    ]);
    expect(await client.models.retrieve('chat')).toMatchObject({ id: 'chat', object: 'model' });
    await expect(client.models.retrieve('other')).rejects.toBeInstanceOf(OpenAI.NotFoundError);
  });

  it('answers unknown routes and wrong methods with an OpenAI-shaped 404', async () => {
    for (const [method, path] of [['GET', '/v1/embeddings'], ['GET', '/v1/chat/completions'], ['DELETE', '/v1/models']]) {
      const response = await fetch(`http://127.0.0.1:${proxy.ports.http}${path}`, { method, headers: { authorization: `Bearer ${acme.apiKey}` } });
      expect(response.status, `${method} ${path}`).toBe(404);
      expect(((await response.json()) as { error: { code: string } }).error.code).toBe('not_found');
    }
  });

  it('answers the legacy completions endpoint with a 404 that names the endpoints to use, moving nothing', async () => {
    const before = traffic();
    for (const authorization of [`Bearer ${acme.apiKey}`, undefined]) {
      const response = await fetch(`${proxy.baseUrl}/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(authorization === undefined ? {} : { authorization }) },
        body: JSON.stringify({ model: 'chat', prompt: 'Once upon a time' }),
      });
      expect(response.status).toBe(404);
      const body = (await response.json()) as { error: { code: string; type: string; message: string } };
      expect(body.error).toMatchObject({ code: 'not_found', type: 'invalid_request_error' });
      expect(body.error.message).toContain('POST /v1/chat/completions');
      expect(body.error.message).toContain('POST /v1/responses');
    }
    await expect(client.completions.create({ model: 'chat', prompt: 'Once upon a time' })).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    expect(traffic()).toEqual(before);
  });

  it('is done with a request once its Settle is queued: the log line is written at the response while the Settle still waits for the ledger', async () => {
    world.ledger.delayNext('settle', 3_000);
    const settlesAnswered = world.ledger.answers.settle.length;
    const response = await fetch(`${proxy.baseUrl}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${acme.apiKey}`, 'content-type': 'application/json', 'x-request-id': 'client-req-queued-settle' },
      body: JSON.stringify({ model: 'chat', messages: userMessage('[[fake:reply_words=3]]') }),
    });
    expect(response.status).toBe(200);
    const shownCost = ((await response.json()) as { usage: { cost_micros: string } }).usage.cost_micros;
    await waitFor(() => proxy.logs.some((line) => line.includes('"requestId":"client-req-queued-settle"')));
    // The request's work is over (its line is out) and its Settle is still unanswered.
    expect(world.ledger.answers.settle.length).toBe(settlesAnswered);
    const line = JSON.parse(proxy.logs.find((entry) => entry.includes('"requestId":"client-req-queued-settle"'))!) as Record<string, unknown>;
    expect(line).toMatchObject({ msg: 'request', status: 200, costMicros: shownCost });
    await proxy.idle();
    expect(world.ledger.answers.settle.length).toBe(settlesAnswered + 1);
    expect(world.ledger.calls.settle.at(-1)).toMatchObject({ requestId: 'client-req-queued-settle', costMicros: BigInt(shownCost) });
  });

  it('echoes a sane x-request-id and logs one line per request with money as strings, never a secret', async () => {
    const response = await fetch(`${proxy.baseUrl}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${acme.apiKey}`, 'content-type': 'application/json', 'x-request-id': 'client-req-42' },
      body: JSON.stringify({ model: 'chat', messages: userMessage('[[fake:reply_words=1]]') }),
    });
    expect(response.status).toBe(200);
    await proxy.idle();
    expect(response.headers.get('x-request-id')).toBe('client-req-42');
    // The reservation id is ours even when the client names the request.
    expect(world.ledger.calls.reserve.at(-1)!.reservationId).not.toContain('client-req-42');
    expect(world.ledger.calls.settle.at(-1)!.requestId).toBe('client-req-42');
    await waitFor(() => proxy.logs.some((line) => line.includes('"requestId":"client-req-42"')));
    const lines = proxy.logs.filter((line) => line.includes('"requestId":"client-req-42"')).map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({
      msg: 'request', status: 200, organisationId: 'acme', projectId: 'acme-project', model: 'chat',
      reservedMicros: world.ledger.calls.reserve.at(-1)!.amountMicros.toString(),
      costMicros: world.ledger.calls.settle.at(-1)!.costMicros.toString(),
    });
    const allLogs = world.proxies.flatMap((p) => p.logs).join('\n');
    for (const secret of [acme.apiKey, poor.apiKey, frozen.apiKey, upstreamCredential]) expect(allLogs).not.toContain(secret);
  });
});
