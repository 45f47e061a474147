/**
 * POST /v1/embeddings through a real proxy, its ledger and config peers and the fake upstream,
 * with the official `openai` client (`embeddings.create`) and raw fetch for the bytes: the money
 * to the micro-rupee, float and base64 vectors, every refusal before the Reserve, failures, and
 * concealment of everything the upstream leaks.
 */
import { encode } from 'gpt-tokenizer/encoding/cl100k_base';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ledgerV1 } from '@gateway/contracts';
import { countWords, leakMarkers } from '@gateway/fake-upstream';
import {
  expectedCostMicros, gatewayModel, startProxyWorld, stateOf, tenant, testPrices, trafficOf, waitFor, type ProxyWorld, type TestProxy,
} from './test-support/proxy-world.ts';

/** An embedding model is priced by its input tokens only. */
const embeddingPrices = { outputPriceMicrosPerMtok: 0n, providerOutputCostMicrosPerMtok: 0n };
const acme = tenant('acme', { allowedGatewayModelSlugs: ['embed', 'chat', 'embed-anthropic', 'embed-small', 'embed-openai', 'embed-exact'] });
const poor = tenant('poor', { allowedGatewayModelSlugs: ['embed'] });
const creditMicros = 10_000_000n;

let world: ProxyWorld;
let proxy: TestProxy;
let client: OpenAI;

beforeAll(async () => {
  world = await startProxyWorld((baseUrl) => stateOf([acme, poor], [
    gatewayModel('embed', baseUrl, { kind: 'embedding', maxContextTokens: 8192, ...embeddingPrices }),
    gatewayModel('embed-small', baseUrl, { kind: 'embedding', maxContextTokens: 16, ...embeddingPrices }),
    // An OpenAI model name: the gateway's count is exact, the Reserve has no margin.
    gatewayModel('embed-exact', baseUrl, {
      kind: 'embedding', maxContextTokens: 8192, ...embeddingPrices,
      upstream: { providerKind: 'openai_compatible', baseUrl, model: 'text-embedding-3-small', apiKey: 'sk-upstream-credential-123' },
    }),
    // An OpenAI upstream is asked for base64 (the fake answers it as OpenAI does).
    gatewayModel('embed-openai', baseUrl, {
      kind: 'embedding', maxContextTokens: 8192, ...embeddingPrices,
      upstream: { providerKind: 'openai', baseUrl, model: 'embed-openai-upstream-name', apiKey: 'sk-upstream-credential-123' },
    }),
    gatewayModel('chat', baseUrl),
    // The admin refuses this one (an Anthropic upstream has no embeddings API); a proxy must refuse it too.
    gatewayModel('embed-anthropic', baseUrl, {
      kind: 'embedding', ...embeddingPrices,
      upstream: { providerKind: 'anthropic', baseUrl, model: 'claude-embed', apiKey: 'sk-upstream-credential-123' },
    }),
  ]));
  world.ledger.credit('acme', creditMicros);
  world.ledger.credit('poor', 1n);
  proxy = await world.startProxy();
  await waitFor(() => proxy.isReady(), 5000, 'first snapshot');
  client = world.client(acme.apiKey);
});
afterAll(async () => { await world?.close(); });

/** The gateway's count of some texts (cl100k_base: the upstream model name is not an OpenAI one). */
function gatewayTokens(texts: readonly string[]): number {
  return texts.reduce((sum, text) => sum + encode(text, { disallowedSpecial: new Set() }).length, 0);
}

/**
 * The tokens an embeddings Reserve is sized on for a model outside OpenAI's (the fake's names
 * are): a quarter more than the count, rounded up, plus 2 per input. Written out independently.
 */
function withMargin(counted: number, inputs: number): number {
  return Math.ceil((counted * 5) / 4) + 2 * inputs;
}

/** The fake's count of some texts: words. */
function upstreamTokens(texts: readonly string[]): number {
  return texts.reduce((sum, text) => sum + countWords(text), 0);
}

/** Counts of calls so far, to assert that a refused request added none. */
const traffic = () => trafficOf(world);

async function rawPost(path: string, body: unknown, apiKey = acme.apiKey): Promise<Response> {
  return fetch(`${proxy.baseUrl}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

/** The float32 values of a base64 vector, decoded here independently of the code under test. */
function decodeFloat32(text: string): number[] {
  const bytes = Buffer.from(text, 'base64');
  return Array.from({ length: bytes.length / 4 }, (_, index) => bytes.readFloatLE(index * 4));
}

/** Every leak marker found in a text (expected: none). */
function leaksIn(text: string): string[] {
  return leakMarkers.all.filter((marker) => text.includes(marker));
}

describe('embeddings: the money', () => {
  it("reserves the priced gateway count with its margin, settles the priced upstream usage, and the account drops by exactly usage.cost_micros", async () => {
    // Punctuation makes many tokens of few words: the gateway counts more than the fake (words), so the Settle is visibly the upstream's.
    const texts = ['Embeddings: tokenised, hyphen-heavy (text)!!', 'the quick brown fox'];
    await proxy.idle();
    const before = world.ledger.account('acme')!;
    const { data, response } = await client.embeddings.create({ model: 'embed', input: texts, encoding_format: 'float' }).withResponse();
    await proxy.idle(); // the Settle runs right after the response

    const counted = gatewayTokens(texts);
    const reported = upstreamTokens(texts);
    expect(counted).toBeGreaterThan(reported);
    const reserve = world.ledger.calls.reserve.at(-1)!;
    expect(reserve).toMatchObject({
      organisationId: 'acme', projectId: 'acme-project', amountMicros: expectedCostMicros(withMargin(counted, 2), testPrices.inputPriceMicrosPerMtok), modelSlug: 'embed',
    });
    const costMicros = expectedCostMicros(reported, testPrices.inputPriceMicrosPerMtok);
    expect(world.ledger.calls.settle.at(-1)).toEqual({
      reservationId: reserve.reservationId, inputTokens: BigInt(reported), outputTokens: 0n, costMicros,
      providerCostMicros: expectedCostMicros(reported, testPrices.providerInputCostMicrosPerMtok), modelSlug: 'embed',
      usageSource: ledgerV1.UsageSource.USAGE_SOURCE_UPSTREAM, requestId: response.headers.get('x-request-id')!, overrunOutputTokens: 0n, tokenClasses: [],
      deployment: 'primary', failedAttempts: [],
    });
    expect(data.usage).toEqual({
      prompt_tokens: reported, total_tokens: reported, cost_micros: String(costMicros),
      cost_inr: `0.${String(costMicros).padStart(6, '0')}`,
    });
    expect(world.ledger.account('acme')).toEqual({
      creditedMicros: before.creditedMicros, heldMicros: 0n,
      debitedMicros: before.debitedMicros + costMicros, availableMicros: before.availableMicros - costMicros,
    });
    expect(data.model).toBe('embed');
    expect(data.data.map((item) => [item.object, item.index, item.embedding.length])).toEqual([['embedding', 0, 8], ['embedding', 1, 8]]);

    // The upstream got its own model name and the input as given, and was asked for floats (its default).
    expect(world.upstream.requests.at(-1)!.body).toEqual({ model: 'embed-upstream-name', input: texts });
  });

  it("reserves an OpenAI model's count exactly: cl100k_base is its tokenizer, nothing is added per input", async () => {
    const texts = ['Embeddings: tokenised, hyphen-heavy (text)!!', 'the quick brown fox', 'third'];
    await client.embeddings.create({ model: 'embed-exact', input: texts, encoding_format: 'float' });
    await proxy.idle();
    expect(world.ledger.calls.reserve.at(-1)).toMatchObject({
      modelSlug: 'embed-exact', amountMicros: expectedCostMicros(gatewayTokens(texts), testPrices.inputPriceMicrosPerMtok),
    });
    expect(world.ledger.calls.settle.at(-1)).toMatchObject({ inputTokens: BigInt(upstreamTokens(texts)), usageSource: ledgerV1.UsageSource.USAGE_SOURCE_UPSTREAM });
  });

  it("settles the gateway's count (GATEWAY_ESTIMATE) when the upstream reports no usage", async () => {
    const texts = ['No usage here [[fake:no_usage]]', 'second input'];
    const data = await client.embeddings.create({ model: 'embed', input: texts, encoding_format: 'float' });
    await proxy.idle();
    const counted = gatewayTokens(texts);
    const costMicros = expectedCostMicros(counted, testPrices.inputPriceMicrosPerMtok);
    expect(world.ledger.calls.settle.at(-1)).toMatchObject({
      inputTokens: BigInt(counted), outputTokens: 0n, costMicros, usageSource: ledgerV1.UsageSource.USAGE_SOURCE_GATEWAY_ESTIMATE,
    });
    expect(data.usage).toMatchObject({ prompt_tokens: counted, total_tokens: counted, cost_micros: String(costMicros) });
  });

  it('counts token arrays by their length, and forwards them, dimensions and user as given', async () => {
    const input = [[101, 102, 103], [7, 8]];
    const data = await client.embeddings.create({ model: 'embed', input, dimensions: 16, user: 'end-user-7', encoding_format: 'float' });
    await proxy.idle();
    expect(world.ledger.calls.reserve.at(-1)!.amountMicros).toBe(expectedCostMicros(withMargin(5, 2), testPrices.inputPriceMicrosPerMtok));
    expect(world.ledger.calls.settle.at(-1)).toMatchObject({ inputTokens: 5n, usageSource: ledgerV1.UsageSource.USAGE_SOURCE_UPSTREAM });
    expect(data.data.map((item) => item.embedding.length)).toEqual([16, 16]);
    expect(world.upstream.requests.at(-1)!.body).toEqual({ model: 'embed-upstream-name', input, dimensions: 16, user: 'end-user-7' });
  });

  it('answers 502 to an upstream 5xx, settles zero usage (it may have reached the provider), and leaks nothing', async () => {
    await proxy.idle();
    const before = world.ledger.account('acme')!;
    const settles = world.ledger.calls.settle.length;
    const response = await rawPost('/embeddings', { model: 'embed', input: ['fail please [[fake:status=503]]'] });
    const text = await response.text();
    expect(response.status).toBe(502);
    expect(JSON.parse(text).error).toMatchObject({ code: 'upstream_error', type: 'api_error' });
    expect(leaksIn(text)).toEqual([]);
    await proxy.idle();
    expect(world.ledger.calls.settle.slice(settles)).toMatchObject([{
      inputTokens: 0n, outputTokens: 0n, costMicros: 0n, usageSource: ledgerV1.UsageSource.USAGE_SOURCE_GATEWAY_ESTIMATE,
    }]);
    expect(world.ledger.account('acme')).toEqual(before);

    const error = await client.embeddings.create({ model: 'embed', input: 'fail [[fake:status=500]]' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.InternalServerError);
    expect((error as InstanceType<typeof OpenAI.APIError>).status).toBe(502);
  });

  it('402 when the Reserve does not fit, and the upstream never hears of it', async () => {
    await proxy.idle();
    const before = traffic();
    const error = await world.client(poor.apiKey).embeddings.create({ model: 'embed', input: 'a text of several tokens to embed' }).catch((e: unknown) => e);
    expect((error as InstanceType<typeof OpenAI.APIError>).status).toBe(402);
    expect(traffic()).toEqual({ ...before, reserve: before.reserve + 1 });
  });
});

describe('embeddings: formats', () => {
  it('base64 (the official client\'s default, decoded by it) and raw base64 are the float vector as float32', async () => {
    const input = ['same text for every format'];
    const floats = await client.embeddings.create({ model: 'embed', input, encoding_format: 'float' });
    const vector = floats.data[0]!.embedding;
    expect(vector.every((value) => typeof value === 'number')).toBe(true);

    // Without encoding_format the client asks for base64 and decodes it into numbers itself.
    const byDefault = await client.embeddings.create({ model: 'embed', input });
    expect((world.upstream.requests.at(-1)!.body as Record<string, unknown>).encoding_format).toBeUndefined();
    expect(byDefault.data[0]!.embedding).toEqual(vector.map((value) => Math.fround(value)));

    const response = await rawPost('/embeddings', { model: 'embed', input, encoding_format: 'base64' });
    const body = await response.json() as { data: Array<{ embedding: unknown }> };
    expect(typeof body.data[0]!.embedding).toBe('string');
    expect(decodeFloat32(body.data[0]!.embedding as string)).toEqual(vector.map((value) => Math.fround(value)));
    // Whatever the client asked for, the upstream was asked for floats.
    expect(world.upstream.requests.at(-1)!.body).toEqual({ model: 'embed-upstream-name', input });
  });
});

describe('embeddings: an upstream asked for base64, and batches sized to the read limit', () => {
  it('asks an OpenAI upstream for base64 and answers a float client and a base64 client the same float32 vector', async () => {
    const input = ['one text, two providers'];
    const viaFloats = await client.embeddings.create({ model: 'embed', input, encoding_format: 'float' });
    const expected = viaFloats.data[0]!.embedding.map((value) => Math.fround(value));

    const floats = await client.embeddings.create({ model: 'embed-openai', input, encoding_format: 'float' });
    expect(world.upstream.requests.at(-1)!.body).toEqual({ model: 'embed-openai-upstream-name', input, encoding_format: 'base64' });
    expect(floats.data[0]!.embedding).toEqual(expected);

    const response = await rawPost('/embeddings', { model: 'embed-openai', input, encoding_format: 'base64' });
    const body = await response.json() as { data: Array<{ embedding: string }> };
    expect(decodeFloat32(body.data[0]!.embedding)).toEqual(expected);
  });

  it.each<[string, string, number, number]>([
    // (16 MiB − 16 KiB) / (vector + 256 B): base64 of 3072 float32 is 16,384 B; floats are bounded at 25 B a component.
    ['base64 (OpenAI)', 'embed-openai', 3072, 1007],
    ['floats (any compatible server)', 'embed', 3072, 217],
  ])('refuses a batch whose answer in %s cannot fit the read limit, naming input and the most, before any Reserve', async (_name, model, dimensions, most) => {
    await proxy.idle();
    const before = traffic();
    const response = await rawPost('/embeddings', { model, input: Array.from({ length: most + 1 }, () => 'x'), dimensions });
    const answer = await response.json() as { error: { code: string; param: string; message: string } };
    expect(response.status).toBe(400);
    expect(answer.error).toMatchObject({ code: 'invalid_request', param: 'input' });
    expect(answer.error.message).toContain(`at most ${most} inputs`);
    expect(traffic()).toEqual(before);
  });

  it('serves the largest batch allowed at 3072 dimensions through the read limit, and settles the upstream usage', async () => {
    await proxy.idle();
    const before = world.ledger.account('acme')!;
    const input = Array.from({ length: 1007 }, (_, index) => `text ${index}`);
    const response = await rawPost('/embeddings', { model: 'embed-openai', input, dimensions: 3072, encoding_format: 'base64' });
    expect(response.status).toBe(200);
    const body = await response.json() as { data: Array<{ index: number; embedding: string }> };
    await proxy.idle();
    expect(body.data).toHaveLength(1007);
    expect(body.data.every((item, index) => item.index === index && Buffer.from(item.embedding, 'base64').length === 3072 * 4)).toBe(true);
    const reported = upstreamTokens(input);
    const costMicros = expectedCostMicros(reported, testPrices.inputPriceMicrosPerMtok);
    expect(world.ledger.calls.settle.at(-1)).toMatchObject({
      inputTokens: BigInt(reported), costMicros, usageSource: ledgerV1.UsageSource.USAGE_SOURCE_UPSTREAM,
    });
    expect(world.ledger.account('acme')!.debitedMicros).toBe(before.debitedMicros + costMicros);
  });
});

describe('embeddings: refusals before any money moves', () => {
  it.each<[string, unknown, string]>([
    ['no input', { model: 'embed' }, 'input'],
    ['an empty text', { model: 'embed', input: '' }, 'input'],
    ['an empty batch', { model: 'embed', input: [] }, 'input'],
    ['an empty text in a batch', { model: 'embed', input: ['a', ''] }, 'input[1]'],
    ['a batch mixing texts and token arrays', { model: 'embed', input: ['a', [1, 2]] }, 'input[1]'],
    ['a token id that is not one', { model: 'embed', input: [[1, -2]] }, 'input[0][1]'],
    ['more than 2048 inputs', { model: 'embed', input: Array.from({ length: 2049 }, () => 'a') }, 'input'],
    ["an input over the model's context", { model: 'embed-small', input: ['short', 'one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen'] }, 'input[1]'],
    ["a single input over the model's context", { model: 'embed-small', input: Array.from({ length: 17 }, (_, index) => index) }, 'input'],
    ['more than 300,000 tokens in all', { model: 'embed', input: Array.from({ length: 2048 }, () => Array.from({ length: 147 }, () => 1)) }, 'input'],
    ['dimensions of zero', { model: 'embed', input: 'x', dimensions: 0 }, 'dimensions'],
    ['an unknown encoding_format', { model: 'embed', input: 'x', encoding_format: 'int8' }, 'encoding_format'],
    ['no model', { input: 'x' }, 'model'],
    ['a chat model', { model: 'chat', input: 'x' }, 'model'],
    ['a model whose provider has no embeddings API', { model: 'embed-anthropic', input: 'x' }, 'model'],
  ])('400 for %s, naming the param, with no Reserve and no upstream call', async (_name, body, param) => {
    await proxy.idle();
    const before = traffic();
    const response = await rawPost('/embeddings', body);
    const answer = await response.json() as { error: { code: string; param: string; type: string } };
    expect(response.status).toBe(400);
    expect(answer.error).toMatchObject({ code: 'invalid_request', param, type: 'invalid_request_error' });
    expect(traffic()).toEqual(before);
  });

  it('refuses a chat model on /v1/embeddings and an embedding model on /v1/chat/completions, each naming the endpoint to use', async () => {
    const before = traffic();
    const onEmbeddings = await client.embeddings.create({ model: 'chat', input: 'x' }).catch((e: unknown) => e);
    expect(onEmbeddings).toBeInstanceOf(OpenAI.BadRequestError);
    expect((onEmbeddings as InstanceType<typeof OpenAI.BadRequestError>).message).toContain('/v1/chat/completions');
    const onChat = await client.chat.completions.create({ model: 'embed', messages: [{ role: 'user', content: 'hi' }] }).catch((e: unknown) => e);
    expect(onChat).toBeInstanceOf(OpenAI.BadRequestError);
    expect((onChat as InstanceType<typeof OpenAI.BadRequestError>).param).toBe('model');
    expect((onChat as InstanceType<typeof OpenAI.BadRequestError>).message).toContain('/v1/embeddings');
    expect(traffic()).toEqual(before);
  });

  it('404 for a model that does not exist, as for chat', async () => {
    const error = await client.embeddings.create({ model: 'no-such-embedder', input: 'x' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.NotFoundError);
  });
});

describe('embeddings: concealment', () => {
  it('sends nothing of the upstream: not a leak marker in the bytes or headers, the slug as model, only the allowlisted fields', async () => {
    const response = await rawPost('/embeddings', { model: 'embed', input: ['conceal me', 'and me'], encoding_format: 'float' });
    const text = await response.text();
    const headers = [...response.headers.entries()].map(([name, value]) => `${name}: ${value}`).join('\n');
    expect(response.status).toBe(200);
    expect(leaksIn(text)).toEqual([]);
    expect(leaksIn(headers)).toEqual([]);
    const body = JSON.parse(text) as Record<string, unknown> & { data: Array<Record<string, unknown>>; usage: Record<string, unknown> };
    expect(Object.keys(body).sort()).toEqual(['data', 'model', 'object', 'usage']);
    expect(body.model).toBe('embed');
    for (const item of body.data) expect(Object.keys(item).sort()).toEqual(['embedding', 'index', 'object']);
    expect(Object.keys(body.usage).sort()).toEqual(['cost_inr', 'cost_micros', 'prompt_tokens', 'total_tokens']);
  });
});
