import { encode as encodeCl100k } from 'gpt-tokenizer/encoding/cl100k_base';
import { encode as encodeO200k } from 'gpt-tokenizer/encoding/o200k_base';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ledgerV1 } from '@gateway/contracts';
import {
  expectedCostMicros, expectedUsage, gatewayModel, lastSettleOf, startProxyWorld, stateOf, tenant, testPrices, trafficOf, waitFor, type ProxyWorld, type TestProxy,
} from './test-support/proxy-world.ts';
import { png, wav } from './test-support/media-fixtures.ts';

// Image and audio parts end to end (docs/surfaces/media.md): what reaches each kind of upstream,
// what the Reserve holds for them (each figure written out here from the providers' formulas),
// that the Settle is the upstream's usage, and the refusals that move no money.

const acme = tenant('acme', { allowedGatewayModelSlugs: ['vision', 'claude-vision', 'plain', 'mystery', 'listener'] });
const upstreamCredential = 'sk-upstream-credential-123';
const creditMicros = 1_000_000_000n;

const squareBase64 = png(1024, 1024).toString('base64');
const squareUrl = `data:image/png;base64,${squareBase64}`;
const megapixelBase64 = png(1000, 1000).toString('base64');
const catUrl = 'https://images.example/cat.png';

/** The µ₹ of a prompt and a completion at the test prices, each side rounded up. */
function cost(promptTokens: number, completionTokens: number): bigint {
  return expectedCostMicros(promptTokens, testPrices.inputPriceMicrosPerMtok) + expectedCostMicros(completionTokens, testPrices.outputPriceMicrosPerMtok);
}

/** Prompt tokens the proxy counts for one user message's text: its tokens + 3 for the message + 3 for the request. */
function textEstimate(text: string, encode: typeof encodeO200k): number {
  return encode(text, { disallowedSpecial: new Set() }).length + 3 + 3;
}

let world: ProxyWorld;
let proxy: TestProxy;
let client: OpenAI;

beforeAll(async () => {
  const big = { maxContextTokens: 200_000 };
  world = await startProxyWorld((baseUrl) => stateOf([acme], [
    gatewayModel('vision', baseUrl, { ...big, inputModalities: ['text', 'image', 'audio'], upstream: { providerKind: 'openai_compatible', baseUrl, model: 'gpt-4o', apiKey: upstreamCredential } }),
    gatewayModel('claude-vision', baseUrl, {
      ...big, inputModalities: ['text', 'image', 'audio'], upstream: { providerKind: 'anthropic', baseUrl, model: 'claude-sonnet-4-5', apiKey: upstreamCredential },
    }),
    gatewayModel('plain', baseUrl),
    // A family the gateway does not know, with a small context: its images are reserved at the largest bound.
    gatewayModel('mystery', baseUrl, { inputModalities: ['text', 'image'], upstream: { providerKind: 'vllm', baseUrl, model: 'mystery-vl-7b', apiKey: upstreamCredential } }),
    gatewayModel('listener', baseUrl, { ...big, inputModalities: ['text', 'audio'], upstream: { providerKind: 'openai', baseUrl, model: 'gpt-4o-audio-preview', apiKey: upstreamCredential } }),
  ]), { requiredApiKey: upstreamCredential });
  world.ledger.credit('acme', creditMicros);
  // These tests measure media counting to the token: the cache-scope marker that long prompts get
  // (prompt-caching.int.test.ts measures it) stays out of their figures.
  proxy = await world.startProxy({ PROXY_CACHE_SCOPE_MIN_PROMPT_TOKENS: '1000000' });
  await waitFor(() => proxy.isReady(), 5000, 'first snapshot');
  client = world.client(acme.apiKey);
});
afterAll(async () => { await world?.close(); });

/** Counts of calls so far, to assert that a refused request added none. */
const traffic = () => trafficOf(world);

async function rawPost(body: unknown): Promise<{ status: number; error: { code: string; param: string | null; message: string } }> {
  const response = await fetch(`${proxy.baseUrl}/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${acme.apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: response.status, error: ((await response.json()) as { error: { code: string; param: string | null; message: string } }).error };
}

/** The Settle of the last Reserve, once it has landed. */
const lastSettle = () => lastSettleOf(world);

describe('an OpenAI-compatible upstream', () => {
  it('gets an image data URL unchanged; the Reserve holds its 765 tokens, and the Settle is the upstream usage', async () => {
    const before = world.ledger.account('acme')!;
    const text = 'What is in this picture? [[fake:reply_words=3]]';
    const messages: OpenAI.ChatCompletionMessageParam[] = [{
      role: 'user', content: [{ type: 'text', text }, { type: 'image_url', image_url: { url: squareUrl, detail: 'high' } }],
    }];
    const data = await client.chat.completions.create({ model: 'vision', messages, max_tokens: 20 });
    await proxy.idle();

    expect(world.upstream.requests.at(-1)!.body).toEqual({ model: 'gpt-4o', messages, max_tokens: 20 });
    // gpt-4o, high detail, 1024×1024: scaled to 768×768, 4 tiles × 170 + 85 = 765 (OpenAI's own example).
    expect(world.ledger.calls.reserve.at(-1)!.amountMicros).toBe(cost(textEstimate(text, encodeO200k) + 765, 20));
    // The fake bills 6 words + 3 for the message + 85 for the image, and 3 words of reply.
    expect(data.usage).toEqual(expectedUsage(94, 3));
    expect(await lastSettle()).toMatchObject({
      inputTokens: 94n, outputTokens: 3n, costMicros: cost(94, 3), usageSource: ledgerV1.UsageSource.USAGE_SOURCE_UPSTREAM,
    });
    expect(world.ledger.account('acme')).toEqual({
      creditedMicros: before.creditedMicros, heldMicros: 0n,
      debitedMicros: before.debitedMicros + cost(94, 3), availableMicros: before.availableMicros - cost(94, 3),
    });
  });

  it('gets an image URL unchanged; its size unknown, the Reserve holds the most a high-detail image can take', async () => {
    const text = 'Describe [[fake:reply_words=2]]';
    const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: [{ type: 'image_url', image_url: { url: catUrl } }, { type: 'text', text }] }];
    const data = await client.chat.completions.create({ model: 'vision', messages, max_tokens: 10 });
    await proxy.idle();
    expect(world.upstream.requests.at(-1)!.body).toEqual({ model: 'gpt-4o', messages, max_tokens: 10 });
    // detail auto may be high: 768×2048 is the largest image after OpenAI's resizes, 8 tiles × 170 + 85 = 1445.
    expect(world.ledger.calls.reserve.at(-1)!.amountMicros).toBe(cost(textEstimate(text, encodeO200k) + 1445, 10));
    expect(data.usage).toEqual(expectedUsage(2 + 3 + 85, 2));
    expect(await lastSettle()).toMatchObject({ inputTokens: 90n, outputTokens: 2n, costMicros: cost(90, 2) });
  });

  it('streams a reply to an image with the Reserve holding the image and the Settle the usage', async () => {
    const text = 'Stream about it [[fake:reply_words=5]]';
    const stream = await client.chat.completions.create({
      model: 'vision', max_tokens: 30, stream: true, stream_options: { include_usage: true },
      messages: [{ role: 'user', content: [{ type: 'text', text }, { type: 'image_url', image_url: { url: squareUrl, detail: 'low' } }] }],
    });
    const chunks: OpenAI.ChatCompletionChunk[] = [];
    for await (const chunk of stream) chunks.push(chunk);
    expect(chunks.map((chunk) => chunk.choices[0]?.delta.content ?? '').join('')).toBe('w1 w2 w3 w4 w5');
    expect(chunks.at(-1)!.usage).toEqual(expectedUsage(4 + 3 + 85, 5));
    const seen = world.upstream.requests.at(-1)!.body as { messages: unknown; stream: boolean };
    expect(seen.stream).toBe(true);
    expect(seen.messages).toEqual([{ role: 'user', content: [{ type: 'text', text }, { type: 'image_url', image_url: { url: squareUrl, detail: 'low' } }] }]);
    // Low detail is 85 tokens whatever the size.
    expect(world.ledger.calls.reserve.at(-1)!.amountMicros).toBe(cost(textEstimate(text, encodeO200k) + 85, 30));
    expect(await lastSettle()).toMatchObject({ inputTokens: 92n, outputTokens: 5n, costMicros: cost(92, 5), usageSource: ledgerV1.UsageSource.USAGE_SOURCE_UPSTREAM });
  });

  it('gets audio unchanged, reserved from the WAV duration at OpenAI\'s 10 tokens a second', async () => {
    const text = 'Transcribe [[fake:reply_words=2]]';
    const clip = wav(2).toString('base64');
    const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: [{ type: 'text', text }, { type: 'input_audio', input_audio: { data: clip, format: 'wav' } }] }];
    await client.chat.completions.create({ model: 'listener', messages, max_tokens: 10 });
    await proxy.idle();
    expect(world.upstream.requests.at(-1)!.body).toEqual({ model: 'gpt-4o-audio-preview', messages, max_completion_tokens: 10 });
    // 64,044 bytes at 32,000 bytes a second (the 44-byte header counted as sound): 2.0014 s → 21 tokens.
    expect(world.ledger.calls.reserve.at(-1)!.amountMicros).toBe(cost(textEstimate(text, encodeO200k) + 21, 10));
    expect(await lastSettle()).toMatchObject({ inputTokens: 5n, outputTokens: 2n });
  });

  it('reserves an unknown family at the largest bound, without refusing it for the context that bound would fill', async () => {
    const text = 'What is this? [[fake:reply_words=1]]';
    const data = await client.chat.completions.create({
      model: 'mystery', messages: [{ role: 'user', content: [{ type: 'text', text }, { type: 'image_url', image_url: { url: catUrl } }] }],
    });
    await proxy.idle();
    // The model's context is 4096 tokens; the bound (gpt-4o-mini's 8 tiles: 2833 + 8 × 5667 = 48,169) is only held, not
    // counted against it, so max_tokens stays the model default of 64.
    expect((world.upstream.requests.at(-1)!.body as { max_tokens: number }).max_tokens).toBe(64);
    expect(world.ledger.calls.reserve.at(-1)!.amountMicros).toBe(cost(textEstimate(text, encodeCl100k) + 48_169, 64));
    expect(data.usage).toEqual(expectedUsage(4 + 3 + 85, 1));
  });
});

describe('an Anthropic upstream', () => {
  it('gets images as image blocks in order with the text: a data URL as base64, a URL as a url source', async () => {
    const text = 'Compare these two [[fake:reply_words=4]]';
    const data = await client.chat.completions.create({
      model: 'claude-vision', max_tokens: 16,
      messages: [{
        role: 'user',
        content: [
          { type: 'text', text }, { type: 'image_url', image_url: { url: `data:image/png;base64,${megapixelBase64}` } },
          { type: 'image_url', image_url: { url: catUrl } }, { type: 'text', text: ' Which is darker?' },
        ],
      }],
    });
    await proxy.idle();
    const seen = world.upstream.requests.at(-1)!;
    expect(seen.path).toBe('/v1/messages');
    expect((seen.body as { messages: unknown }).messages).toEqual([{
      role: 'user',
      content: [
        { type: 'text', text },
        { type: 'image', source: { type: 'base64', media_type: 'image/png', data: megapixelBase64 } },
        { type: 'image', source: { type: 'url', url: catUrl } },
        { type: 'text', text: ' Which is darker?' },
      ],
    }]);
    // 1000×1000 ≈ 1334 tokens (Anthropic's example); the URL's size is unknown: 1600 + 112 for 28-px patch rounding + 1.
    const promptEstimate = textEstimate(text, encodeCl100k) + encodeCl100k(' Which is darker?').length + 1334 + 1713;
    expect(world.ledger.calls.reserve.at(-1)!.amountMicros).toBe(cost(promptEstimate, 16));
    // The fake bills 7 words + 3 + 2 × 85.
    expect(data.usage).toEqual(expectedUsage(7 + 3 + 170, 4));
    expect(await lastSettle()).toMatchObject({ inputTokens: 180n, outputTokens: 4n, costMicros: cost(180, 4) });
  });

  it('refuses audio with a 400 naming the part, before any money moves', async () => {
    const before = traffic();
    const audio = await rawPost({
      model: 'claude-vision', messages: [{ role: 'user', content: [{ type: 'text', text: 'hear' }, { type: 'input_audio', input_audio: { data: wav(1).toString('base64'), format: 'wav' } }] }],
    });
    expect(audio).toMatchObject({ status: 400, error: { code: 'invalid_request', param: 'messages[0].content[1]' } });
    expect(audio.error.message).toContain('does not accept audio');
    expect(traffic()).toEqual(before);
  });
});

describe('count_tokens on the Messages surface', () => {
  async function messagesPost(path: string, body: unknown): Promise<{ status: number; json: Record<string, any> }> {
    const response = await fetch(`${proxy.baseUrl.replace(/\/v1$/, '')}${path}`, {
      method: 'POST', headers: { 'x-api-key': acme.apiKey, 'content-type': 'application/json' }, body: JSON.stringify(body),
    });
    return { status: response.status, json: await response.json() as Record<string, any> };
  }
  const text = 'Describe it. [[fake:reply_words=2]]';
  const withImage = (model: string) => ({
    model, messages: [{ role: 'user', content: [{ type: 'text', text }, { type: 'image', source: { type: 'base64', media_type: 'image/png', data: megapixelBase64 } }] }],
  });

  it('counts an image as the Reserve does, at its family\'s formula, not the largest bound of every family', async () => {
    // count_tokens passed no counter, so an image counted at the largest bound of any family.
    const counted = await messagesPost('/v1/messages/count_tokens', withImage('claude-vision'));
    // 1000×1000 on claude-sonnet-4-5: 1334 tokens (Anthropic's example).
    expect(counted).toEqual({ status: 200, json: { input_tokens: textEstimate(text, encodeCl100k) + 1334 } });
    const created = await messagesPost('/v1/messages', { ...withImage('claude-vision'), max_tokens: 16 });
    expect(created.status).toBe(200);
    await proxy.idle();
    expect(world.ledger.calls.reserve.at(-1)!.amountMicros).toBe(cost(counted.json.input_tokens as number, 16));
  });

  it('refuses an image for a text-only model with the 400 of the Messages route, naming the Messages field', async () => {
    const before = traffic();
    const counted = await messagesPost('/v1/messages/count_tokens', withImage('plain'));
    expect(counted).toEqual({
      status: 400,
      json: { type: 'error', error: { type: 'invalid_request_error', message: expect.stringMatching(/^The model 'plain' does not accept images \(messages\.0\.content\.1\)/) } },
    });
    const created = await messagesPost('/v1/messages', { ...withImage('plain'), max_tokens: 16 });
    expect(created).toEqual(counted);
    expect(traffic()).toEqual(before);
  });
});

describe('the same media limits for every provider kind (concealment)', () => {
  /** The status and the exact bytes of a refusal's body. */
  async function refusalBytes(body: unknown): Promise<{ status: number; text: string }> {
    const response = await fetch(`${proxy.baseUrl}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${acme.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return { status: response.status, text: await response.text() };
  }

  it('refuses a 101st image and an image over 5 MiB of base64 byte for byte alike on an OpenAI-compatible and an Anthropic slug, moving no money', async () => {
    // only Anthropic-backed slugs refused these, so 101 image URLs told the vendor.
    const before = traffic();
    const oversized = `data:image/jpeg;base64,${'A'.repeat(5 * 1024 * 1024 + 4)}`;
    const cases: Array<[unknown[], number, string]> = [
      [[{ role: 'user', content: Array.from({ length: 101 }, () => ({ type: 'image_url', image_url: { url: catUrl } })) }], 400, 'messages[0].content[100]'],
      [[{ role: 'user', content: [{ type: 'text', text: 'see' }, { type: 'image_url', image_url: { url: oversized } }] }], 413, 'messages[0].content[1]'],
    ];
    for (const [messages, status, param] of cases) {
      const openAiKind = await refusalBytes({ model: 'vision', messages });
      const anthropicKind = await refusalBytes({ model: 'claude-vision', messages });
      expect(openAiKind.status, param).toBe(status);
      expect(JSON.parse(openAiKind.text).error.param, param).toBe(param);
      expect(anthropicKind).toEqual(openAiKind);
    }
    expect(traffic()).toEqual(before);
  });

  it('accepts 100 image URLs and an image of exactly 5 MiB of base64 on an Anthropic slug', async () => {
    const content = [{ type: 'text' as const, text: 'count them [[fake:reply_words=1]]' }, ...Array.from({ length: 99 }, () => ({ type: 'image_url' as const, image_url: { url: catUrl } }))];
    // A real PNG padded with zeros to 3.75 MiB: exactly 5 MiB of base64.
    const square = png(1024, 1024);
    const fiveMiB = `data:image/png;base64,${Buffer.concat([square, Buffer.alloc((5 * 1024 * 1024 * 3) / 4 - square.length)]).toString('base64')}`;
    content.push({ type: 'image_url', image_url: { url: fiveMiB } });
    const data = await client.chat.completions.create({ model: 'claude-vision', messages: [{ role: 'user', content }], max_tokens: 5 });
    await proxy.idle();
    expect(data.choices[0]!.message.content).toBeTruthy();
    expect(((world.upstream.requests.at(-1)!.body as { messages: Array<{ content: unknown[] }> }).messages[0]!.content).length).toBe(101);
  });
});

describe('refusals before any money moves', () => {
  it('400 for a modality the model does not take, naming the part and saying so', async () => {
    const before = traffic();
    const image = await rawPost({ model: 'plain', messages: [{ role: 'user', content: [{ type: 'text', text: 'see' }, { type: 'image_url', image_url: { url: catUrl } }] }] });
    expect(image).toMatchObject({ status: 400, error: { code: 'invalid_request', param: 'messages[0].content[1]' } });
    expect(image.error.message).toContain("The model 'plain' does not accept images");
    const audio = await rawPost({ model: 'mystery', messages: [{ role: 'user', content: [{ type: 'input_audio', input_audio: { data: 'UklGRg==', format: 'wav' } }] }] });
    expect(audio).toMatchObject({ status: 400, error: { code: 'invalid_request', param: 'messages[0].content[0]' } });
    expect(audio.error.message).toContain("The model 'mystery' does not accept audio");
    expect(traffic()).toEqual(before);
  });

  it('400 for media outside user messages, a scheme other than http(s), bad base64 or too many parts; 413 for a body over the limit', async () => {
    const before = traffic();
    const cases: Array<[unknown[], number, string, string | null]> = [
      [[{ role: 'system', content: [{ type: 'image_url', image_url: { url: catUrl } }] }, { role: 'user', content: 'hi' }], 400, 'invalid_request', 'messages[0].content[0]'],
      [[{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'file:///etc/passwd' } }] }], 400, 'invalid_request', 'messages[0].content[0]'],
      [[{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'data:image/svg+xml;base64,PHN2Zz4=' } }] }], 400, 'invalid_request', 'messages[0].content[0]'],
      [[{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'data:image/png;base64,not base64!' } }] }], 400, 'invalid_request', 'messages[0].content[0]'],
      [[{ role: 'user', content: Array.from({ length: 101 }, () => ({ type: 'image_url', image_url: { url: catUrl } })) }], 400, 'invalid_request', 'messages[0].content[100]'],
      [[{ role: 'user', content: [{ type: 'input_audio', input_audio: { data: 'A'.repeat(16 * 1024 * 1024), format: 'mp3' } }] }], 413, 'request_too_large', null],
    ];
    for (const [messages, status, code, param] of cases) {
      const refused = await rawPost({ model: 'vision', messages });
      const label = JSON.stringify(messages).slice(0, 100);
      expect(refused.status, label).toBe(status);
      expect(refused.error.code, label).toBe(code);
      expect(refused.error.param, label).toBe(param);
    }
    expect(traffic()).toEqual(before);
  });
});
