import { encode } from 'gpt-tokenizer/encoding/cl100k_base';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ledgerV1 } from '@gateway/contracts';
import { fakePromptTokens } from '@gateway/fake-upstream';
import {
  expectedCostMicros, expectedUsage, gatewayModel, startProxyWorld, stateOf, tenant, testPrices, waitFor, type ProxyWorld, type TestProxy,
} from './test-support/proxy-world.ts';

// Nothing unbilled while the proxy lives: the settle outbox through a ledger outage,
// its bound, first-chunk checkpoints, the non-streaming cut at the Reserve, and Releases repeated
// until the ledger answers. Each test failed on the proxy before the outbox.

const acme = tenant('acme');
const exact = tenant('exact');
const crowded = tenant('crowded');

/** Prompt tokens the proxy estimates for one user message (cl100k_base for the test model's upstream name). */
function estimatedPromptTokens(content: string): number {
  return encode(content, { disallowedSpecial: new Set() }).length + 3 + 3;
}

/** What a usage costs the wallet at the test prices, µ₹. */
function customerCost(usage: { prompt_tokens: number; completion_tokens: number }): bigint {
  return expectedCostMicros(usage.prompt_tokens, testPrices.inputPriceMicrosPerMtok) + expectedCostMicros(usage.completion_tokens, testPrices.outputPriceMicrosPerMtok);
}

let world: ProxyWorld;
let proxy: TestProxy;

beforeAll(async () => {
  world = await startProxyWorld((baseUrl) => stateOf([acme, exact, crowded], [gatewayModel('chat', baseUrl)]));
  world.ledger.credit('acme', 100_000_000n);
  world.ledger.credit('crowded', 100_000_000n);
  proxy = await world.startProxy({ LEDGER_CALL_TIMEOUT_MS: '1000' });
  await waitFor(() => proxy.isReady(), 5000, 'first snapshot');
});
afterAll(async () => { await world?.close(); });

/**
 * How long the ledger outage lasts, ms. The duration is the fault: five times the ~600 ms of
 * retries the proxy used to give up after, so only an outbox that keeps sending survives it.
 */
const outageMs = 3000;

/** Failed attempts the proxy's outbox logged for a reservation. */
function failedAttempts(target: TestProxy, reservationId: string): number {
  return target.logs.filter((line) => line.includes('the outbox sends it again') && line.includes(reservationId)).length;
}

describe('a ledger outage longer than the old retries', () => {
  it('settles every completion and stream that finished while the ledger was down, once each, at the right cost, once it is back', async () => {
    const client = world.client(acme.apiKey, proxy);
    const before = world.ledger.account('acme')!;
    const reservesBefore = world.ledger.answers.reserve.length;
    const completions = Array.from({ length: 3 }, (_, i) => client.chat.completions.create({
      model: 'chat', messages: [{ role: 'user', content: `outage completion ${i} [[fake:reply_words=5]] [[fake:delay_ms=600]]` }],
    }));
    const streams = Array.from({ length: 3 }, async (_, i) => {
      const stream = await client.chat.completions.create({
        model: 'chat', stream: true, stream_options: { include_usage: true },
        messages: [{ role: 'user', content: `outage stream ${i} [[fake:reply_words=20]] [[fake:chunk_delay_ms=60]]` }],
      });
      let usage: OpenAI.CompletionUsage | undefined;
      for await (const chunk of stream) if (chunk.usage) usage = chunk.usage;
      return usage!;
    });
    // Every Reserve is held, then the ledger goes away before any request has finished.
    await waitFor(() => world.ledger.answers.reserve.length === reservesBefore + 6, 5000, 'six reserves');
    const reservationIds = world.ledger.calls.reserve.slice(-6).map((r) => r.reservationId);
    await world.ledger.stop();

    const outageEndsAtMs = Date.now() + outageMs;
    const usages = [...(await Promise.all(completions)).map((c) => c.usage!), ...(await Promise.all(streams))];
    // The ledger comes back once the outage has lasted its length and every Settle has failed
    // again and again in the outbox (the state this test is about; waited for, not slept).
    await waitFor(() => Date.now() >= outageEndsAtMs && reservationIds.every((id) => failedAttempts(proxy, id) >= 4),
      outageMs + 15_000, 'an outage of its length, every Settle failed at least four times');
    expect(reservationIds.map((id) => world.ledger.reservationState(id))).toEqual(Array(6).fill('held'));
    await world.ledger.restart();
    expect(await proxy.idle(20_000)).toBe(true);

    let totalCost = 0n;
    for (const id of reservationIds) {
      expect(world.ledger.reservationState(id)).toBe('settled');
      // Every attempt that reached the ledger carried the same payload: one Settle, sent until answered.
      const settles = world.ledger.calls.settle.filter((s) => s.reservationId === id);
      expect(settles.length).toBeGreaterThanOrEqual(1);
      expect(new Set(settles.map((s) => s.costMicros))).toEqual(new Set([settles[0]!.costMicros]));
      totalCost += settles[0]!.costMicros;
    }
    expect(totalCost).toBe(usages.reduce((sum, usage) => sum + customerCost(usage), 0n));
    expect(reservationIds.every((id) => failedAttempts(proxy, id) >= 4)).toBe(true);
    expect(world.ledger.account('acme')).toEqual({
      creditedMicros: before.creditedMicros, heldMicros: 0n,
      debitedMicros: before.debitedMicros + totalCost, availableMicros: before.availableMicros - totalCost,
    });
  });
});

describe('an upstream failure while the ledger is away', () => {
  it('answers the 502 at once and settles the zero usage once the ledger is back', async () => {
    const client = world.client(acme.apiKey, proxy);
    const before = world.ledger.account('acme')!;
    const reservesBefore = world.ledger.answers.reserve.length;
    const failing = client.chat.completions.create({ model: 'chat', messages: [{ role: 'user', content: 'vendor trouble [[fake:status=503]] [[fake:delay_ms=300]]' }] })
      .catch((e: unknown) => e);
    await waitFor(() => world.ledger.answers.reserve.length === reservesBefore + 1, 5000, 'the reserve');
    const reservationId = world.ledger.calls.reserve.at(-1)!.reservationId;
    await world.ledger.stop();
    try {
      // The client gets its 502 while the ledger is still down: the zero-usage Settle waits in the
      // outbox, not in front of the answer (it used to hold the answer until the ledger was back).
      const error = await failing;
      expect((error as InstanceType<typeof OpenAI.APIError>).status).toBe(502);
      expect(world.ledger.reservationState(reservationId)).toBe('held');
    } finally {
      await world.ledger.restart();
    }
    expect(await proxy.idle(20_000)).toBe(true);
    expect(world.ledger.reservationState(reservationId)).toBe('settled');
    expect(world.ledger.account('acme')).toEqual(before);
  });
});

describe('the outbox bound', () => {
  it('refuses new requests with 503 before any Reserve while the outbox is full, is not ready, and drops no Settle', async () => {
    const small = await world.startProxy({ PROXY_SETTLE_OUTBOX_MAX: '2' });
    await waitFor(() => small.isReady(), 5000, 'first snapshot');
    const client = world.client(crowded.apiKey, small);
    const before = world.ledger.account('crowded')!;
    world.ledger.failNext('settle', 1_000_000);
    const answered = await Promise.all([0, 1].map((i) => client.chat.completions.create({
      model: 'chat', messages: [{ role: 'user', content: `queued ${i} [[fake:reply_words=3]]` }],
    })));
    await waitFor(() => !small.isReady(), 5000, 'a full outbox');
    const reserves = world.ledger.calls.reserve.length;
    const upstreamRequests = world.upstream.requests.length;
    const refused = await client.chat.completions.create({ model: 'chat', messages: [{ role: 'user', content: 'one more' }] }).catch((e: unknown) => e);
    expect((refused as InstanceType<typeof OpenAI.APIError>).status).toBe(503);
    expect((refused as InstanceType<typeof OpenAI.APIError>).code).toBe('service_unavailable');
    expect(world.ledger.calls.reserve.length).toBe(reserves);
    expect(world.upstream.requests.length).toBe(upstreamRequests);

    world.ledger.failNext('settle', 0);
    expect(await small.idle(10_000)).toBe(true);
    await waitFor(() => small.isReady(), 5000, 'ready again');
    const cost = answered.reduce((sum, data) => sum + customerCost(data.usage!), 0n);
    expect(world.ledger.account('crowded')).toEqual({
      creditedMicros: before.creditedMicros, heldMicros: 0n,
      debitedMicros: before.debitedMicros + cost, availableMicros: before.availableMicros - cost,
    });
    const after = await client.chat.completions.create({ model: 'chat', messages: [{ role: 'user', content: 'room again [[fake:reply_words=1]]' }] });
    expect(after.choices[0]!.message.content).toBe('w1');
  });
});

describe('first-chunk checkpoints (SIGKILL bound)', () => {
  it('sends a stream\'s first checkpoint with its first content, long before the interval', async () => {
    const slow = await world.startProxy({ PROXY_CHECKPOINT_INTERVAL_MS: '60000', PROXY_STREAM_LEASE_MS: '125000' });
    await waitFor(() => slow.isReady(), 5000, 'first snapshot');
    const stream = await world.client(acme.apiKey, slow).chat.completions.create({
      model: 'chat', stream: true, stream_options: { include_usage: true },
      messages: [{ role: 'user', content: 'checkpoint me [[fake:reply_words=30]] [[fake:chunk_delay_ms=40]]' }],
    });
    const reservationId = world.ledger.calls.reserve.at(-1)!.reservationId;
    const checkpoints = () => world.ledger.calls.checkpoint.filter((c) => c.reservationId === reservationId);
    let usage: OpenAI.CompletionUsage | undefined;
    let checkedAfterFirstContent = false;
    for await (const chunk of stream) {
      if (!checkedAfterFirstContent && chunk.choices[0]?.delta.content) {
        checkedAfterFirstContent = true;
        await waitFor(() => checkpoints().length >= 1, 5000, 'the first checkpoint');
      }
      if (chunk.usage) usage = chunk.usage;
    }
    await slow.idle();
    const [first, ...rest] = checkpoints();
    expect(rest).toEqual([]); // the next one is due only after 60 s
    expect(first!.sequence).toBe(1n);
    expect(first!.outputTokens > 0n).toBe(true);
    expect(first!.outputTokens < BigInt(usage!.completion_tokens)).toBe(true);
  });
});

describe('non-streaming overrun', () => {
  it('cuts a runaway reply at the Reserve: length, billed the delivered tokens only, never below zero, overrun on the Settle', async () => {
    const content = 'runaway [[fake:reply_words=2000]] [[fake:ignore_max_tokens]]';
    const promptTokens = estimatedPromptTokens(content);
    const reserveMicros = expectedCostMicros(promptTokens, testPrices.inputPriceMicrosPerMtok) + expectedCostMicros(100, testPrices.outputPriceMicrosPerMtok);
    world.ledger.credit('exact', reserveMicros); // a Reserve that fits exactly
    const data = await world.client(exact.apiKey, proxy).chat.completions.create({
      model: 'chat', max_tokens: 100, messages: [{ role: 'user', content }],
    });
    await proxy.idle();

    const choice = data.choices[0]!;
    expect(choice.finish_reason).toBe('length');
    const fullReply = Array.from({ length: 2000 }, (_, i) => `w${i + 1}`).join(' ');
    expect(fullReply.startsWith(choice.message.content!)).toBe(true);
    const deliveredTokens = encode(choice.message.content!).length;
    expect(deliveredTokens).toBeGreaterThan(90);
    expect(deliveredTokens).toBeLessThanOrEqual(100);
    expect(data.usage).toEqual(expectedUsage(promptTokens, deliveredTokens));

    const deliveredCost = customerCost(data.usage!);
    expect(deliveredCost).toBeLessThanOrEqual(reserveMicros);
    const account = world.ledger.account('exact')!;
    expect(account).toEqual({ creditedMicros: reserveMicros, heldMicros: 0n, debitedMicros: deliveredCost, availableMicros: reserveMicros - deliveredCost });
    expect(account.availableMicros >= 0n).toBe(true);

    const reservationId = world.ledger.calls.reserve.at(-1)!.reservationId;
    const upstreamPromptTokens = fakePromptTokens([{ role: 'user', content }]);
    expect(world.ledger.calls.settle.filter((s) => s.reservationId === reservationId)).toEqual([expect.objectContaining({
      inputTokens: BigInt(promptTokens),
      outputTokens: BigInt(deliveredTokens),
      costMicros: deliveredCost,
      // The provider is paid for everything it produced: its prompt count and all 2,000 tokens.
      providerCostMicros: expectedCostMicros(upstreamPromptTokens, testPrices.providerInputCostMicrosPerMtok)
        + expectedCostMicros(2000, testPrices.providerOutputCostMicrosPerMtok),
      usageSource: ledgerV1.UsageSource.USAGE_SOURCE_GATEWAY_ESTIMATE,
      overrunOutputTokens: BigInt(2000 - deliveredTokens),
    })]);
  });
});

describe('a Release that meets a failing ledger', () => {
  it('is repeated until the ledger answers, so the Reserve it chases holds nothing', async () => {
    const hasty = await world.startProxy({ LEDGER_CALL_TIMEOUT_MS: '200' });
    await waitFor(() => hasty.isReady(), 5000, 'first snapshot');
    const before = world.ledger.account('acme')!;
    const reservesAnswered = world.ledger.answers.reserve.length;
    world.ledger.delayNext('reserve', 1000); // a frozen ledger: the Reserve lands after the proxy gave up on it
    world.ledger.failNext('release', 4); // and the first four Releases meet a failing ledger
    const error = await world.client(acme.apiKey, hasty).chat.completions.create({ model: 'chat', messages: [{ role: 'user', content: 'hi' }] })
      .catch((e: unknown) => e);
    expect((error as InstanceType<typeof OpenAI.APIError>).status).toBe(503);
    const reservationId = world.ledger.calls.reserve.at(-1)!.reservationId;

    // The late Reserve lands after 1 s: refused by the tombstone of the Release that came first,
    // or held and then released by a Release that came after it.
    await waitFor(() => world.ledger.answers.reserve.length === reservesAnswered + 1, 5000, 'the late reserve');
    expect(await hasty.idle()).toBe(true);
    expect(world.ledger.account('acme')).toEqual(before);
    expect(world.ledger.reservationState(reservationId) === 'released' || world.ledger.tombstoned(reservationId)).toBe(true);
    expect(world.ledger.calls.release.filter((r) => r.reservationId === reservationId)).toHaveLength(5);
    expect(failedAttempts(hasty, reservationId)).toBe(4);
  });
});
