import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { encode } from 'gpt-tokenizer/encoding/cl100k_base';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ledgerV1 } from '@gateway/contracts';
import { leakMarkers } from '@gateway/fake-upstream';
import {
  expectedCostMicros, expectedUsage, gatewayModel, lastSettleOf, startProxyWorld, stateOf, tenant, testPrices, waitFor, type ProxyWorld, type TestProxy,
} from './test-support/proxy-world.ts';

const acme = tenant('acme', { allowedGatewayModelSlugs: ['chat', 'claude', 'greedy'] });
const capped = tenant('capped');
const upstreamCredential = 'sk-upstream-credential-123';

/** Tokens of a text as the proxy counts them for these models (cl100k_base). */
function tokens(text: string): number {
  return encode(text, { disallowedSpecial: new Set() }).length;
}

/** Prompt tokens the proxy estimates for one user message. */
function promptEstimate(content: string): number {
  return tokens(content) + 3 + 3;
}

function words(count: number): string {
  return Array.from({ length: count }, (_, i) => `w${i + 1}`).join(' ');
}

function cost(promptTokens: number, completionTokens: number): bigint {
  return expectedCostMicros(promptTokens, testPrices.inputPriceMicrosPerMtok) + expectedCostMicros(completionTokens, testPrices.outputPriceMicrosPerMtok);
}

let world: ProxyWorld;
let proxy: TestProxy;
let client: OpenAI;
/** An OpenAI-compatible upstream that streams three words and reports far more prompt tokens than any estimate (a prompt it bills beyond what the gateway counts). */
let greedyUpstream: Server;
const greedyPromptTokens = 100_000;

beforeAll(async () => {
  greedyUpstream = createServer((_req, res) => {
    const chunk = (delta: object, finish: string | null) => `data: ${JSON.stringify({ choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.end(chunk({ role: 'assistant', content: 'one' }, null) + chunk({ content: ' two' }, null) + chunk({ content: ' three' }, 'stop')
      + `data: ${JSON.stringify({ choices: [], usage: { prompt_tokens: greedyPromptTokens, completion_tokens: 3 } })}\n\ndata: [DONE]\n\n`);
  });
  await new Promise<void>((resolve) => { greedyUpstream.listen(0, '127.0.0.1', resolve); });
  const greedyUrl = `http://127.0.0.1:${(greedyUpstream.address() as AddressInfo).port}/v1`;
  world = await startProxyWorld((baseUrl) => stateOf([acme, capped], [
    gatewayModel('greedy', greedyUrl),
    gatewayModel('chat', baseUrl),
    gatewayModel('claude', baseUrl, {
      upstream: { providerKind: 'anthropic', baseUrl, model: 'claude-upstream-name', apiKey: upstreamCredential },
    }),
  ]), { requiredApiKey: upstreamCredential });
  world.ledger.credit('acme', 100_000_000n);
  world.ledger.credit('capped', 100_000_000n);
  proxy = await world.startProxy({ PROXY_CHECKPOINT_INTERVAL_MS: '40' });
  await waitFor(() => proxy.isReady(), 5000, 'first snapshot');
  client = world.client(acme.apiKey);
});
afterAll(async () => {
  await world?.close();
  await new Promise((resolve) => { greedyUpstream?.close(resolve); });
});

/** The Settle of the last Reserve, once it has landed. */
const lastSettle = () => lastSettleOf(world);

async function rawStream(body: Record<string, unknown>): Promise<{ status: number; headers: Headers; text: string }> {
  const response = await fetch(`${proxy.baseUrl}/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${acme.apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ stream: true, ...body }),
  });
  return { status: response.status, headers: response.headers, text: await response.text() };
}

describe('streaming through the official client', () => {
  it('holds a completed stream to its Reserve when the upstream reports more usage than it covers: billed the estimate, the rest provider cost (BOUNDED_OVERRUN)', async () => {
    const before = world.ledger.account('acme')!;
    const content = 'Count me';
    const stream = await client.chat.completions.create({
      model: 'greedy', messages: [{ role: 'user', content }], stream: true, max_tokens: 16, stream_options: { include_usage: true },
    });
    const chunks: OpenAI.ChatCompletionChunk[] = [];
    for await (const chunk of stream) chunks.push(chunk);
    expect(chunks.map((c) => c.choices[0]?.delta.content ?? '').join('')).toBe('one two three');

    const reserve = world.ledger.calls.reserve.at(-1)!;
    const settle = await lastSettle();
    const billedPrompt = promptEstimate(content);
    const billedCompletion = tokens('one two three');
    expect(settle).toMatchObject({
      inputTokens: BigInt(billedPrompt), outputTokens: BigInt(billedCompletion), costMicros: cost(billedPrompt, billedCompletion),
      usageSource: ledgerV1.UsageSource.USAGE_SOURCE_GATEWAY_ESTIMATE, overrunOutputTokens: 0n,
      // The provider is paid for what it counted.
      providerCostMicros: expectedCostMicros(greedyPromptTokens, testPrices.providerInputCostMicrosPerMtok) + expectedCostMicros(3, testPrices.providerOutputCostMicrosPerMtok),
    });
    expect(settle.costMicros <= reserve.amountMicros).toBe(true);
    expect(chunks.at(-1)!.usage).toEqual(expectedUsage(billedPrompt, billedCompletion));
    expect(world.ledger.account('acme')).toMatchObject({ heldMicros: 0n, debitedMicros: before.debitedMicros + settle.costMicros });
  });

  it('relays chunk by chunk with the slug as model, asks the upstream for usage, and settles it to the micro-rupee', async () => {
    const before = world.ledger.account('acme')!;
    const content = 'Stream please [[fake:reply_words=6]]';
    const stream = await client.chat.completions.create({ model: 'chat', messages: [{ role: 'user', content }], stream: true, max_tokens: 40 });
    const chunks: OpenAI.ChatCompletionChunk[] = [];
    for await (const chunk of stream) chunks.push(chunk);

    expect(chunks.map((c) => c.choices[0]?.delta.content ?? '').join('')).toBe(words(6));
    expect(chunks.every((c) => c.model === 'chat' && c.object === 'chat.completion.chunk')).toBe(true);
    expect(new Set(chunks.map((c) => c.id)).size).toBe(1);
    expect(chunks[0]!.id).toMatch(/^chatcmpl-[0-9a-f-]{36}$/);
    expect(chunks.at(-1)!.choices[0]!.finish_reason).toBe('stop');
    // The client did not ask for usage: no usage chunk reaches it, though the upstream was asked.
    expect(chunks.some((c) => c.usage)).toBe(false);
    expect(world.upstream.requests.at(-1)!.body).toMatchObject({ model: 'chat-upstream-name', stream: true, stream_options: { include_usage: true }, max_tokens: 40 });

    const settle = await lastSettle();
    // The fake reports prompt = 3 words + 3, completion = 6.
    expect(settle).toMatchObject({ inputTokens: 6n, outputTokens: 6n, costMicros: cost(6, 6), usageSource: ledgerV1.UsageSource.USAGE_SOURCE_UPSTREAM });
    expect(world.ledger.calls.reserve.at(-1)!.amountMicros).toBe(cost(promptEstimate(content), 40));
    expect(world.ledger.account('acme')).toEqual({ ...before, availableMicros: before.availableMicros - cost(6, 6), debitedMicros: before.debitedMicros + cost(6, 6) });
  });

  it('passes the usage chunk on when the client asks, with what was billed, and estimates when the upstream sends none', async () => {
    const stream = await client.chat.completions.create({
      model: 'chat', messages: [{ role: 'user', content: '[[fake:reply_words=3]]' }], stream: true, stream_options: { include_usage: true },
    });
    const chunks: OpenAI.ChatCompletionChunk[] = [];
    for await (const chunk of stream) chunks.push(chunk);
    expect(chunks.at(-1)).toMatchObject({ choices: [], usage: expectedUsage(4, 3) });
    expect(chunks.slice(0, -1).every((c) => c.usage === null)).toBe(true);

    const content = 'quiet upstream [[fake:reply_words=4]] [[fake:no_usage]]';
    const quiet = await client.chat.completions.create({ model: 'chat', messages: [{ role: 'user', content }], stream: true, stream_options: { include_usage: true } });
    const quietChunks: OpenAI.ChatCompletionChunk[] = [];
    for await (const chunk of quiet) quietChunks.push(chunk);
    const promptTokens = promptEstimate(content);
    const completionTokens = tokens(words(4));
    expect(quietChunks.at(-1)!.usage).toEqual(expectedUsage(promptTokens, completionTokens));
    expect(await lastSettle()).toMatchObject({
      inputTokens: BigInt(promptTokens), outputTokens: BigInt(completionTokens), costMicros: cost(promptTokens, completionTokens),
      usageSource: ledgerV1.UsageSource.USAGE_SOURCE_GATEWAY_ESTIMATE,
    });
  });

  it('stops a runaway upstream when the next chunk would pass the Reserve (BOUNDED_OVERRUN): length, [DONE], settled within the Reserve', async () => {
    const before = world.ledger.account('acme')!;
    const content = 'run away [[fake:reply_words=40]] [[fake:ignore_max_tokens]]';
    const { status, text } = await rawStream({ model: 'chat', messages: [{ role: 'user', content }], max_tokens: 10 });
    expect(status).toBe(200);
    const frames = text.split('\n\n').filter((f) => f !== '').map((f) => f.slice('data: '.length));
    expect(frames.at(-1)).toBe('[DONE]');
    const chunks = frames.slice(0, -1).map((f) => JSON.parse(f) as OpenAI.ChatCompletionChunk);
    const delivered = chunks.map((c) => c.choices[0]?.delta.content ?? '').join('');
    expect(chunks.at(-1)!.choices[0]!.finish_reason).toBe('length');
    // Each "wN" is 2 tokens: 10 tokens of room hold exactly 5 words; the 6th would pass the Reserve.
    expect(delivered).toBe(words(5));
    const reserve = world.ledger.calls.reserve.at(-1)!;
    const promptTokens = promptEstimate(content);
    expect(reserve.amountMicros).toBe(cost(promptTokens, 10));
    const settle = await lastSettle();
    expect(settle).toMatchObject({ inputTokens: BigInt(promptTokens), outputTokens: 10n, costMicros: cost(promptTokens, 10), usageSource: ledgerV1.UsageSource.USAGE_SOURCE_GATEWAY_ESTIMATE });
    expect(settle.costMicros <= reserve.amountMicros).toBe(true);
    expect(world.ledger.account('acme')).toMatchObject({ heldMicros: 0n, debitedMicros: before.debitedMicros + settle.costMicros });
  });

  it('NOTHING_FREE: settles the delivered tokens and releases the rest when the client aborts mid-stream', async () => {
    const before = world.ledger.account('acme')!;
    const abort = new AbortController();
    const content = 'slow [[fake:reply_words=30]] [[fake:chunk_delay_ms=60]]';
    const stream = await client.chat.completions.create(
      { model: 'chat', messages: [{ role: 'user', content }], stream: true, max_tokens: 100 },
      { signal: abort.signal },
    );
    let received = '';
    let contentChunks = 0;
    // The client ends the iteration on its own abort (with or without an AbortError, by version).
    await (async () => {
      for await (const chunk of stream) {
        received += chunk.choices[0]?.delta.content ?? '';
        if (chunk.choices[0]?.delta.content) contentChunks += 1;
        if (contentChunks === 3) abort.abort();
      }
    })().catch((error: unknown) => { if (!abort.signal.aborted) throw error; });
    expect(received).toBe(words(3));

    const settle = await lastSettle();
    const promptTokens = promptEstimate(content);
    // The proxy may have written a chunk or two more than the client read before it noticed the hang-up.
    const deliveredWords = Array.from({ length: 27 }, (_, i) => i + 3).find((n) => tokens(words(n)) === Number(settle.outputTokens));
    expect(deliveredWords, `settled ${settle.outputTokens} tokens`).toBeDefined();
    expect(settle).toMatchObject({ inputTokens: BigInt(promptTokens), costMicros: cost(promptTokens, Number(settle.outputTokens)), usageSource: ledgerV1.UsageSource.USAGE_SOURCE_GATEWAY_ESTIMATE });
    expect(world.ledger.account('acme')).toEqual({
      ...before, heldMicros: 0n, availableMicros: before.availableMicros - settle.costMicros, debitedMicros: before.debitedMicros + settle.costMicros,
    });
    await waitFor(() => proxy.logs.some((line) => line.includes('"streamOutcome":"client_closed"')), 5000, 'log line');
  });

  it('NOTHING_FREE: ends with an OpenAI error event when the upstream fails mid-stream, and settles what was delivered', async () => {
    for (const directive of ['[[fake:fail_after=3]]', '[[fake:error_after=3]]']) {
      const content = `[[fake:reply_words=8]] ${directive}`;
      const stream = await client.chat.completions.create({ model: 'chat', messages: [{ role: 'user', content }], stream: true });
      let received = '';
      const error = await (async () => {
        for await (const chunk of stream) received += chunk.choices[0]?.delta.content ?? '';
      })().catch((e: unknown) => e);
      expect(error, directive).toBeInstanceOf(OpenAI.APIError);
      expect((error as InstanceType<typeof OpenAI.APIError>).code).toBe('upstream_error');
      expect(received).toBe(words(3));
      const settle = await lastSettle();
      const promptTokens = promptEstimate(content);
      expect(settle).toMatchObject({ inputTokens: BigInt(promptTokens), outputTokens: BigInt(tokens(words(3))), costMicros: cost(promptTokens, tokens(words(3))) });
    }
    expect(world.ledger.account('acme')!.heldMicros).toBe(0n);
  });

  it('answers an ordinary 502 and settles zero when the upstream fails before the first byte', async () => {
    const error = await client.chat.completions.create({ model: 'chat', messages: [{ role: 'user', content: '[[fake:status=500]]' }], stream: true }).catch((e: unknown) => e);
    expect((error as InstanceType<typeof OpenAI.APIError>).status).toBe(502);
    expect(await lastSettle()).toMatchObject({ inputTokens: 0n, outputTokens: 0n, costMicros: 0n });
  });

  it('conceals the upstream byte for byte in a stream: no vendor string in any frame or header', async () => {
    const cases = [
      await rawStream({ model: 'chat', messages: [{ role: 'user', content: '[[fake:reply_words=3]]' }], stream_options: { include_usage: true } }),
      await rawStream({ model: 'chat', messages: [{ role: 'user', content: '[[fake:reply_words=5]] [[fake:error_after=2]]' }] }),
      await rawStream({ model: 'claude', messages: [{ role: 'user', content: '[[fake:reply_words=3]]' }] }),
      await rawStream({ model: 'claude', messages: [{ role: 'user', content: '[[fake:reply_words=5]] [[fake:error_after=2]]' }] }),
      await rawStream({ model: 'chat', messages: [{ role: 'user', content: '[[fake:status=429]]' }] }),
    ];
    expect(cases.map((c) => c.status)).toEqual([200, 200, 200, 200, 502]);
    for (const { headers, text } of cases) {
      const headerText = JSON.stringify([...headers]);
      for (const marker of [...leakMarkers.all, 'chat-upstream-name', 'claude-upstream-name', upstreamCredential]) {
        expect(text, marker).not.toContain(marker);
        expect(headerText, marker).not.toContain(marker);
      }
      for (const name of headers.keys()) {
        expect(['cache-control', 'connection', 'content-length', 'content-type', 'date', 'keep-alive', 'transfer-encoding', 'x-request-id',
          'x-ratelimit-limit-requests', 'x-ratelimit-remaining-requests', 'x-ratelimit-reset-requests']).toContain(name);
      }
    }
    expect(cases[0]!.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
  });
});

describe('EXPIRY: checkpoints of long streams', () => {
  it('records running totals with increasing sequence and pushes the deadline out', async () => {
    const content = '[[fake:reply_words=12]] [[fake:chunk_delay_ms=25]]';
    const requestId = `stream-checkpoint-${Date.now()}`;
    const stream = await client.chat.completions.create({ model: 'chat', messages: [{ role: 'user', content }], stream: true }, { headers: { 'x-request-id': requestId } });
    for await (const _chunk of stream) { /* drain */ }
    const reservationId = world.ledger.calls.reserve.at(-1)!.reservationId;
    expect((await lastSettle()).requestId).toBe(requestId);
    const checkpoints = world.ledger.calls.checkpoint.filter((c) => c.reservationId === reservationId);
    expect(checkpoints.length).toBeGreaterThan(0);
    checkpoints.forEach((checkpoint, index) => {
      // The request id rides on every checkpoint: an expiry's usage record carries it if the proxy dies.
      expect(checkpoint.requestId).toBe(requestId);
      expect(checkpoint.sequence).toBe(BigInt(index + 1));
      expect(checkpoint.extendTtlMs).toBe(15_000n); // the stream lease (PROXY_STREAM_LEASE_MS), not RESERVE_TTL_MS
      expect(checkpoint.inputTokens).toBe(BigInt(promptEstimate(content)));
      expect(checkpoint.costMicros).toBe(cost(promptEstimate(content), Number(checkpoint.outputTokens)));
      if (index > 0) expect(checkpoint.outputTokens >= checkpoints[index - 1]!.outputTokens).toBe(true);
    });
    expect(checkpoints.at(-1)!.outputTokens > 0n).toBe(true);
  });
});

describe('the Anthropic adapter', () => {
  it('translates a completion both ways and bills the upstream usage', async () => {
    const data = await client.chat.completions.create({
      model: 'claude', max_tokens: 3, temperature: 0.5, stop: 'END',
      messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'hello [[fake:reply_words=5]]' }],
    });
    expect(data).toMatchObject({ model: 'claude', choices: [{ message: { role: 'assistant', content: 'w1 w2 w3' }, finish_reason: 'length' }] });
    // The fake counts "hello" + directive = 2 words + 3, and the system text 2 words + 3.
    expect(data.usage).toEqual(expectedUsage(10, 3));
    const seen = world.upstream.requests.at(-1)!;
    expect(seen.path).toBe('/v1/messages');
    expect(seen.headers['x-api-key']).toBe(upstreamCredential);
    expect(seen.headers.authorization).toBeUndefined();
    expect(seen.headers['anthropic-version']).toBe('2023-06-01');
    expect(seen.body).toEqual({
      model: 'claude-upstream-name', max_tokens: 3, system: 'Be brief.', temperature: 0.5, stop_sequences: ['END'],
      messages: [{ role: 'user', content: [{ type: 'text', text: 'hello [[fake:reply_words=5]]' }] }],
    });
    expect(await lastSettle()).toMatchObject({ inputTokens: 10n, outputTokens: 3n, costMicros: cost(10, 3), usageSource: ledgerV1.UsageSource.USAGE_SOURCE_UPSTREAM });
  });

  it('streams an Anthropic answer as OpenAI chunks with usage', async () => {
    const stream = await client.chat.completions.create({
      model: 'claude', messages: [{ role: 'user', content: '[[fake:reply_words=4]]' }], stream: true, stream_options: { include_usage: true },
    });
    const chunks: OpenAI.ChatCompletionChunk[] = [];
    for await (const chunk of stream) chunks.push(chunk);
    expect(chunks[0]!.choices[0]!.delta).toEqual({ role: 'assistant', content: '' });
    expect(chunks.map((c) => c.choices[0]?.delta.content ?? '').join('')).toBe(words(4));
    expect(chunks.every((c) => c.model === 'claude')).toBe(true);
    expect(chunks.at(-2)!.choices[0]!.finish_reason).toBe('stop');
    expect(chunks.at(-1)!.usage).toEqual(expectedUsage(4, 4));
    expect(await lastSettle()).toMatchObject({ inputTokens: 4n, outputTokens: 4n, usageSource: ledgerV1.UsageSource.USAGE_SOURCE_UPSTREAM });
  });

  it('refuses with 400 what Anthropic cannot honour, before any money moves', async () => {
    const reserves = world.ledger.calls.reserve.length;
    for (const [params, param] of [[{ logprobs: true }, 'logprobs'], [{ temperature: 1.5 }, 'temperature'], [{ response_format: { type: 'json_object' } }, 'response_format']] as const) {
      const error = await client.chat.completions.create({ model: 'claude', messages: [{ role: 'user', content: 'hi' }], ...params }).catch((e: unknown) => e);
      expect(error, param).toBeInstanceOf(OpenAI.BadRequestError);
      expect((error as InstanceType<typeof OpenAI.BadRequestError>).param).toBe(param);
    }
    expect(world.ledger.calls.reserve.length).toBe(reserves);
  });
});

describe('PROJECT_BUDGET', () => {
  it('maps PROJECT_BUDGET_EXCEEDED to 402 budget_exceeded with no upstream traffic', async () => {
    world.ledger.setProjectCap('capped-project', 10n);
    const upstreamRequests = world.upstream.requests.length;
    const error = await world.client(capped.apiKey).chat.completions.create({ model: 'chat', messages: [{ role: 'user', content: 'hi' }], stream: true }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect((error as InstanceType<typeof OpenAI.APIError>).status).toBe(402);
    expect((error as InstanceType<typeof OpenAI.APIError>).code).toBe('budget_exceeded');
    expect(world.upstream.requests.length).toBe(upstreamRequests);
    expect(world.ledger.account('capped')).toMatchObject({ heldMicros: 0n, debitedMicros: 0n });
  });
});

describe('shutdown', () => {
  it('lets a stream finish within the grace, cuts one that does not, settles both, and refuses new requests', async () => {
    const draining = await world.startProxy({ SHUTDOWN_GRACE_MS: '1500' });
    await waitFor(() => draining.isReady(), 5000, 'first snapshot');
    const drainingClient = world.client(acme.apiKey, draining);
    // Text each stream has received so far, so the test can wait until both are mid-stream.
    const received = new Map<string, string>();
    const read = async (content: string) => {
      const stream = await drainingClient.chat.completions.create({ model: 'chat', messages: [{ role: 'user', content }], stream: true });
      let text = '';
      try {
        for await (const chunk of stream) {
          text += chunk.choices[0]?.delta.content ?? '';
          received.set(content, text);
        }
        return { text, error: undefined };
      } catch (error) {
        return { text, error };
      }
    };
    const shortPrompt = '[[fake:reply_words=4]] [[fake:chunk_delay_ms=100]]';
    const longPrompt = '[[fake:reply_words=200]] [[fake:chunk_delay_ms=50]]';
    const short = read(shortPrompt);
    const long = read(longPrompt);
    await waitFor(() => world.ledger.calls.reserve.length >= 2 && world.upstream.requests.length > 0, 5000, 'both streams started');
    await waitFor(() => (received.get(shortPrompt) ?? '') !== '' && (received.get(longPrompt) ?? '') !== '', 5000, 'text delivered on both streams');
    const reservationIds = world.ledger.calls.reserve.slice(-2).map((r) => r.reservationId);
    const closing = draining.close();
    expect(draining.isReady()).toBe(false);
    const refused = await fetch(`${draining.baseUrl}/models`, { headers: { authorization: `Bearer ${acme.apiKey}` } }).catch((e: unknown) => e);
    expect(refused instanceof Response ? refused.status : 'refused').not.toBe(200);
    await closing;

    const [shortResult, longResult] = await Promise.all([short, long]);
    expect(shortResult).toEqual({ text: words(4), error: undefined });
    expect(longResult.error).toBeInstanceOf(OpenAI.APIError);
    expect((longResult.error as InstanceType<typeof OpenAI.APIError>).code).toBe('service_unavailable');
    expect(longResult.text.length).toBeGreaterThan(0);
    for (const reservationId of reservationIds) expect(world.ledger.reservationState(reservationId)).toBe('settled');
    const longSettle = world.ledger.calls.settle.find((s) => s.reservationId === reservationIds[1])!;
    expect(Number(longSettle.outputTokens)).toBeGreaterThanOrEqual(tokens(longResult.text));
    expect(world.ledger.account('acme')!.heldMicros).toBe(0n);
  });
});
