// Credit grants end to end against the ledger peer (which holds grants as the ledger does): carved
// requests make no Reserve call, one usage record each, money exact; a recall lets a second
// replica's request succeed; SIGTERM closes grants; long streams are promoted and checkpoint;
// grants off is the exact path.
import OpenAI from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import { scrapeMetrics, sumSamples } from '@gateway/testkit';
import { startProxyWorld, stateOf, gatewayModel, tenant, waitFor, type ProxyWorld, type TestProxy } from './test-support/proxy-world.ts';

const acme = tenant('acme');
let world: ProxyWorld | undefined;

async function start(creditMicros: bigint, env: Record<string, string> = {}): Promise<{ world: ProxyWorld; proxy: TestProxy }> {
  world = await startProxyWorld((baseUrl) => stateOf([acme], [gatewayModel('chat', baseUrl)]));
  world.ledger.credit('acme', creditMicros);
  const proxy = await world.startProxy({ PROXY_CREDIT_GRANTS: 'on', ...env });
  await waitFor(() => proxy.isReady(), 5000, 'first snapshot');
  return { world, proxy };
}

afterEach(async () => {
  await world?.close();
  world = undefined;
});

/** Σ cost of every Settle the peer answered OK, µ₹. */
function settledCost(peer: ProxyWorld['ledger']): bigint {
  return peer.answers.settle.reduce((sum, answer) => sum + answer.debitedMicros, 0n);
}

async function complete(client: OpenAI, content = 'hello [[fake:reply_words=5]]'): Promise<void> {
  await client.chat.completions.create({ model: 'chat', messages: [{ role: 'user', content }], max_tokens: 20 });
}

describe('credit grants against the ledger peer', () => {
  it('carves every Reserve from one grant (no Reserve call), one usage record per request, debited = Σ cost, and SIGTERM returns the grant', async () => {
    const { world, proxy } = await start(100_000_000n);
    const client = world.client(acme.apiKey);
    for (let i = 0; i < 5; i += 1) await complete(client);
    await Promise.all(Array.from({ length: 10 }, () => complete(client)));
    expect(await proxy.idle()).toBe(true);
    expect(world.ledger.calls.reserve).toEqual([]);
    expect(world.ledger.calls.acquireGrant.length).toBeGreaterThanOrEqual(1);
    // One usage record per request, each naming its grant and carve.
    const settles = world.ledger.calls.settle;
    expect(new Set(settles.map((settle) => settle.reservationId)).size).toBe(15);
    expect(settles.every((settle) => settle.grantId !== undefined && (settle.reservedMicros ?? 0n) > 0n)).toBe(true);
    const account = world.ledger.account('acme')!;
    // CONSERVATION: credited = available + held + debited, and debited is the sum of the costs.
    expect(account.debitedMicros).toBe(settledCost(world.ledger));
    expect(account.debitedMicros).toBeGreaterThan(0n);
    expect(account.creditedMicros).toBe(account.availableMicros + account.heldMicros + account.debitedMicros);
    expect(account.heldMicros).toBeGreaterThan(0n); // the grant still holds its remainder
    // The proxy's gauge of what its grants hold uncarved is that remainder, once every grant it replaced is closed.
    const heldGauge = async () => sumSamples(await scrapeMetrics(`http://127.0.0.1:${proxy.ports.metrics}/metrics`), 'gateway_proxy_grant_held_micros');
    let gauge = await heldGauge();
    for (const deadline = Date.now() + 5000; gauge !== Number(world.ledger.account('acme')!.heldMicros) && Date.now() < deadline;) {
      await new Promise((resolve) => setTimeout(resolve, 10));
      gauge = await heldGauge();
    }
    expect(gauge).toBe(Number(world.ledger.account('acme')!.heldMicros));
    await proxy.close();
    const after = world.ledger.account('acme')!;
    expect(after.heldMicros).toBe(0n);
    expect(after.availableMicros).toBe(100_000_000n - after.debitedMicros);
    expect([...world.ledger.grants().values()].every((grant) => grant.state === 'closed')).toBe(true);
  });

  it('near exhaustion takes the exact path (NOT_GRANTED, then a back-off) and answers 402 exactly when a Reserve does not fit', async () => {
    // A request reserves about 170 µ₹ (max_tokens 20 at the test prices): 10 % of 1 000 µ₹ is too small for a grant.
    const { world, proxy } = await start(1_000n);
    const client = world.client(acme.apiKey);
    await complete(client);
    expect(world.ledger.answers.acquireGrant.map((answer) => answer.result)).toEqual([5]); // ACQUIRE_GRANT_RESULT_NOT_GRANTED
    expect(world.ledger.calls.reserve).toHaveLength(1);
    await complete(client);
    expect(world.ledger.calls.acquireGrant).toHaveLength(1); // backing off: no grant asked per request
    expect(world.ledger.calls.reserve).toHaveLength(2);
    const tooBig = await client.chat.completions.create({ model: 'chat', messages: [{ role: 'user', content: 'big' }], max_tokens: 400 })
      .catch((error: unknown) => error);
    expect(tooBig).toBeInstanceOf(OpenAI.APIError);
    expect((tooBig as InstanceType<typeof OpenAI.APIError>).status).toBe(402);
    expect(await proxy.idle()).toBe(true);
    const account = world.ledger.account('acme')!;
    expect(account.heldMicros).toBe(0n);
    expect(account.debitedMicros).toBe(settledCost(world.ledger));
  });

  it('a recall lets a second replica\'s request succeed: money idling in another replica\'s grant never causes a 402', async () => {
    const { world, proxy } = await start(1_000n);
    world.ledger.setGrantSharePercent(50);
    // Replica A holds a grant of half the balance (500 µ₹) after one request.
    await complete(world.client(acme.apiKey));
    expect(await proxy.idle()).toBe(true);
    expect(world.ledger.calls.reserve).toEqual([]);
    const grantId = world.ledger.calls.acquireGrant[0]!.grantId;
    expect(world.ledger.account('acme')!.availableMicros).toBe(500n);
    // Replica B (exact path) asks for a Reserve of about 590 µ₹: only with A's uncarved remainder back does it fit.
    const proxyB = await world.startProxy({ PROXY_CREDIT_GRANTS: 'off' });
    await waitFor(() => proxyB.isReady(), 5000, 'second proxy snapshot');
    await world.client(acme.apiKey, proxyB).chat.completions.create({ model: 'chat', messages: [{ role: 'user', content: 'hello [[fake:reply_words=5]]' }], max_tokens: 80 });
    const answers = world.ledger.answers.reserve.map((answer) => [answer.result, answer.grantsRecalled ?? 0]);
    expect(answers[0]).toEqual([5, 1]); // INSUFFICIENT_BALANCE, one grant pulled back
    expect(answers.at(-1)![0]).toBe(1); // then OK
    // A's grant had nothing outstanding: closed at once (a busy one returns U first, closes later).
    expect(world.ledger.calls.adjustGrant[0]).toMatchObject({ grantId, close: true, reason: 'recalled' });
    expect(await proxyB.idle()).toBe(true);
    await waitFor(() => world.ledger.grants().get(grantId)?.state === 'closed', 5000, 'the recalled grant to close');
    const account = world.ledger.account('acme')!;
    expect(account.heldMicros).toBe(0n);
    expect(account.debitedMicros).toBe(settledCost(world.ledger));
    expect(account.creditedMicros).toBe(account.availableMicros + account.debitedMicros);
  });

  it('promotes a carved stream after one checkpoint interval to its own reservation, which then checkpoints; a short stream makes no ledger call before its Settle', async () => {
    const { world, proxy } = await start(100_000_000n, { PROXY_CHECKPOINT_INTERVAL_MS: '200' });
    const client = world.client(acme.apiKey);
    const short = await client.chat.completions.create({ model: 'chat', messages: [{ role: 'user', content: 'short [[fake:reply_words=3]]' }], stream: true, max_tokens: 20 });
    for await (const chunk of short) void chunk;
    expect(await proxy.idle()).toBe(true);
    expect(world.ledger.calls.reserve).toEqual([]);
    expect(world.ledger.calls.checkpoint).toEqual([]);
    const long = await client.chat.completions.create({
      model: 'chat', messages: [{ role: 'user', content: 'long [[fake:reply_words=30]] [[fake:chunk_delay_ms=30]]' }], stream: true, max_tokens: 100,
    });
    for await (const chunk of long) void chunk;
    expect(await proxy.idle()).toBe(true);
    const promoted = world.ledger.calls.reserve;
    expect(promoted).toHaveLength(1);
    expect(promoted[0]!.grantId).toBeDefined();
    expect(world.ledger.calls.checkpoint.length).toBeGreaterThanOrEqual(1);
    expect(world.ledger.calls.checkpoint.every((checkpoint) => checkpoint.reservationId === promoted[0]!.reservationId)).toBe(true);
    expect(world.ledger.reservationState(promoted[0]!.reservationId)).toBe('settled');
    const account = world.ledger.account('acme')!;
    expect(account.debitedMicros).toBe(settledCost(world.ledger));
    expect(account.creditedMicros).toBe(account.availableMicros + account.heldMicros + account.debitedMicros);
  });

  it('a promoted stream\'s hold is a lease of PROXY_STREAM_LEASE_MS that its checkpoints renew, also while the upstream sends nothing (EXPIRY)', async () => {
    const leaseMs = 1500;
    const { world, proxy } = await start(100_000_000n, { PROXY_CHECKPOINT_INTERVAL_MS: '200', PROXY_STREAM_LEASE_MS: String(leaseMs), LEDGER_CALL_TIMEOUT_MS: '1000' });
    const client = world.client(acme.apiKey);
    // Four words, then twice the lease with no bytes at all, then four more.
    const stream = await client.chat.completions.create({
      model: 'chat', messages: [{ role: 'user', content: 'lease [[fake:reply_words=8]] [[fake:chunk_delay_ms=100]] [[fake:pause_after=4]] [[fake:pause_ms=3000]]' }],
      stream: true, max_tokens: 100,
    });
    // While the stream runs, the promoted reservation is sampled: held past its deadline would let
    // the sweeper expire a stream that is alive.
    const lapses: string[] = [];
    let streaming = true;
    const sampling = (async () => {
      while (streaming) {
        const reservationId = world.ledger.calls.reserve[0]?.reservationId;
        const held = reservationId === undefined ? undefined : world.ledger.reservationCheckpoint(reservationId);
        const nowMs = BigInt(Date.now());
        if (reservationId !== undefined && held !== undefined && world.ledger.reservationState(reservationId) === 'held' && nowMs > held.expiresAtMs) {
          lapses.push(`${nowMs - held.expiresAtMs} ms past its deadline`);
        }
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    })();
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    streaming = false;
    await sampling;
    expect(text.trim().split(/\s+/)).toHaveLength(8);
    expect(await proxy.idle()).toBe(true);
    const promoted = world.ledger.calls.reserve;
    expect(promoted).toHaveLength(1);
    // The deadline is the database's now() plus the lease, never RESERVE_TTL_MS: a dead proxy's stream holds for one lease after its last renewal.
    expect(promoted[0]!.ttlMs).toBe(BigInt(leaseMs));
    const checkpoints = world.ledger.calls.checkpoint;
    expect(checkpoints.every((checkpoint) => checkpoint.extendTtlMs === BigInt(leaseMs))).toBe(true);
    // Renewals during the silence carry the same running totals (no new tokens) under new sequences.
    const silentRenewals = checkpoints.filter((checkpoint, i) => i > 0 && checkpoint.outputTokens === checkpoints[i - 1]!.outputTokens);
    expect(silentRenewals.length).toBeGreaterThanOrEqual(2);
    expect(lapses).toEqual([]);
    expect(world.ledger.answers.checkpoint.every((answer) => answer.result === 1)).toBe(true); // CHECKPOINT_RESULT_OK
    expect(world.ledger.reservationState(promoted[0]!.reservationId)).toBe('settled');
    const account = world.ledger.account('acme')!;
    expect(account.debitedMicros).toBe(settledCost(world.ledger));
    expect(account.creditedMicros).toBe(account.availableMicros + account.heldMicros + account.debitedMicros);
  });

  it('with PROXY_CREDIT_GRANTS=off every request takes the exact path, as before', async () => {
    const { world, proxy } = await start(100_000_000n, { PROXY_CREDIT_GRANTS: 'off' });
    const client = world.client(acme.apiKey);
    for (let i = 0; i < 3; i += 1) await complete(client);
    expect(await proxy.idle()).toBe(true);
    expect(world.ledger.calls.acquireGrant).toEqual([]);
    expect(world.ledger.calls.reserve).toHaveLength(3);
    expect(world.ledger.calls.settle.every((settle) => settle.grantId === undefined)).toBe(true);
    expect(world.ledger.account('acme')!.heldMicros).toBe(0n);
  });
});
