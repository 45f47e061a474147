/**
 * The shared outbox against a real Redis: what one replica hands over at shutdown another adopts
 * and sends until the ledger answers, then deletes; an adopter killed without a hand-over loses
 * nothing (another claims its entries once idle); one that stops hands its adopted entries on.
 * The ledger here is an in-memory OutboxLedger that can be down and applies each reservation
 * once, as the real one does (IDEMPOTENCY), counting every call it gets.
 */
import { Writable } from 'node:stream';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ledgerV1 } from '@gateway/contracts';
import { createLogger } from '@gateway/logger';
import { testRedisUrl, uniqueRedisPrefix } from '@gateway/testkit';
import { OutboxHandover } from './outbox-handover.ts';
import { SettleOutbox, type OutboxLedger } from './settle-outbox.ts';

const redisUrl = testRedisUrl();

/** Polls a condition (sync or not) until it holds; a bound on waiting, not a timing assertion. */
async function waitFor(condition: () => boolean | Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
const { SettleResult, ReleaseResult, UsageSource } = ledgerV1;

/** A ledger that is up or down and settles each reservation once, answering a replay with OK. */
class TestLedger implements OutboxLedger {
  down = true;
  readonly calls: string[] = [];
  readonly settled = new Map<string, bigint>();
  /** The last Settle received per reservation, as the ledger would decode it. */
  readonly lastSettle = new Map<string, ledgerV1.SettleRequest>();
  async settle(request: ledgerV1.SettleRequest): Promise<ledgerV1.SettleResponse> {
    this.calls.push(request.reservationId);
    this.lastSettle.set(request.reservationId, request);
    if (this.down) throw new Error('ledger unavailable');
    if (!this.settled.has(request.reservationId)) this.settled.set(request.reservationId, request.costMicros);
    return { result: SettleResult.SETTLE_RESULT_OK, debitedMicros: request.costMicros, releasedMicros: 0n, overrunMicros: 0n, availableMicros: 0n, detail: '' };
  }
  async release(request: ledgerV1.ReleaseRequest): Promise<ledgerV1.ReleaseResponse> {
    this.calls.push(request.reservationId);
    if (this.down) throw new Error('ledger unavailable');
    return { result: ReleaseResult.RELEASE_RESULT_OK, releasedMicros: 0n, availableMicros: 0n, detail: '' };
  }
}

function settleRequest(reservationId: string, costMicros: bigint): ledgerV1.SettleRequest {
  return {
    reservationId, inputTokens: 3n, outputTokens: 5n, costMicros, providerCostMicros: 1n, modelSlug: 'chat', usageSource: UsageSource.USAGE_SOURCE_UPSTREAM,
    requestId: `req-${reservationId}`, overrunOutputTokens: 0n, tokenClasses: [{ tokenClass: 'output', tokens: 5n, costMicros, providerCostMicros: 1n }],
    // The deployment that answered and a failed attempt (issue 29): carried through the hand-over and the replay line.
    deployment: 'eu-backup',
    failedAttempts: [{ attempt: 1, deployment: 'primary', outcome: 'timeout', inputTokens: 3n, outputTokens: 0n, providerCostMicros: 2n }],
  };
}

describe.skipIf(!redisUrl)('the shared outbox in Redis', () => {
  let redis: Redis;
  const logs: string[] = [];
  const logger = createLogger('proxy', 'debug', new Writable({ write(chunk, _encoding, done) { logs.push(String(chunk)); done(); } }));
  const opened: Array<{ handover: OutboxHandover; redis: Redis }> = [];
  let streamKey: string;

  /** One replica's outbox and hand-over over its own connection. */
  function replica(name: string, ledger: TestLedger, claimIdleMs = 60_000) {
    const connection = new Redis(redisUrl!, { enableOfflineQueue: false, maxRetriesPerRequest: 0, commandTimeout: 1000 });
    const outbox = new SettleOutbox({ ledger, logger, maxEntries: 100, retryInitialMs: 10, retryMaxMs: 50 });
    const handover = new OutboxHandover({ redis: connection, streamKey, consumer: name, outbox, logger, adoptBelowDepth: 50, intervalMs: 20, claimIdleMs });
    opened.push({ handover, redis: connection });
    return { outbox, handover, ready: () => waitFor(() => connection.status === 'ready', 5_000, `${name} connected`) };
  }

  beforeAll(() => { redis = new Redis(redisUrl!); });
  afterAll(async () => { await redis.quit(); });
  afterEach(async () => {
    for (const { handover, redis: connection } of opened.splice(0)) {
      await handover.stopAdopting();
      connection.disconnect();
    }
    await redis.del(streamKey);
    logs.length = 0;
  });

  it('hands over at shutdown what the ledger did not answer; another replica adopts it, settles it once, and deletes it', async () => {
    streamKey = `${uniqueRedisPrefix('outbox')}stream`;
    const ledger = new TestLedger();
    const stopping = replica('proxy-a', ledger);
    await stopping.ready();
    const answers = ['r1', 'r2', 'r3'].map((id, index) => stopping.outbox.settle(settleRequest(id, BigInt(100 + index)), { organisationId: 'org', requestId: `req-${id}`, freesAvailable: false }));
    const released = stopping.outbox.release({ reservationId: 'r4', reason: 'upstream_not_called', failedAttempts: [], modelSlug: '' }, { organisationId: 'org', requestId: 'req-r4' });
    await waitFor(() => ledger.calls.length >= 8, 5_000, 'attempts during the outage');

    expect(await stopping.outbox.handOver((records) => stopping.handover.handOver(records))).toEqual({ handedOver: 4, abandoned: 0 });
    expect(await Promise.all([...answers, released])).toEqual([undefined, undefined, undefined, undefined]);
    expect(stopping.outbox.abandonedCount).toBe(0);
    expect(await redis.xlen(streamKey)).toBe(4);
    const [first] = await redis.xrange(streamKey, '-', '+', 'COUNT', 1);
    expect(first![1]).toEqual(expect.arrayContaining(['kind', 'settle', 'organisationId', 'org', 'requestId', 'req-r1', 'freesAvailable', 'false', 'from', 'proxy-a']));

    const live = replica('proxy-b', ledger);
    live.handover.start();
    await waitFor(() => live.outbox.outboxDepth() === 4, 5_000, 'the live replica adopted all four');
    expect(await redis.xlen(streamKey)).toBe(4);
    ledger.down = false;
    await waitFor(async () => (await redis.xlen(streamKey)) === 0, 5_000, 'the stream emptied once answered');
    expect(new Map(ledger.settled)).toEqual(new Map([['r1', 100n], ['r2', 101n], ['r3', 102n]]));
    // What a replay needs travels whole: the adopter sent the very request (token classes included).
    expect(ledger.lastSettle.get('r1')).toEqual(settleRequest('r1', 100n));
    expect(live.outbox.outboxDepth()).toBe(0);
  });

  it('lets another replica claim what a killed adopter held, and a stopping adopter hands its adopted entries on', async () => {
    streamKey = `${uniqueRedisPrefix('outbox')}stream`;
    const ledger = new TestLedger();
    const first = replica('proxy-a', ledger);
    await first.ready();
    void first.outbox.settle(settleRequest('k1', 7n), { organisationId: 'org', requestId: 'req-k1' });
    expect((await first.outbox.handOver((records) => first.handover.handOver(records))).handedOver).toBe(1);

    // proxy-b adopts, then is "killed": it stops touching its entries and never hands them over.
    const killed = replica('proxy-b', ledger);
    killed.handover.start();
    await waitFor(() => killed.outbox.outboxDepth() === 1, 5_000, 'proxy-b adopted');
    await killed.handover.stopAdopting();
    const claimer = replica('proxy-c', ledger, 200);
    claimer.handover.start();
    await waitFor(() => claimer.outbox.outboxDepth() === 1, 5_000, 'proxy-c claimed the idle entry');
    const pending = await redis.xpending(streamKey, 'proxies', '-', '+', 10) as Array<[string, string, number, number]>;
    expect(pending.map(([, consumer]) => consumer)).toEqual(['proxy-c']);

    // proxy-c stops while the ledger is still down: the adopted entry goes back to the stream, acknowledged under its old id.
    await claimer.handover.stopAdopting();
    expect(await claimer.outbox.handOver((records) => claimer.handover.handOver(records))).toEqual({ handedOver: 1, abandoned: 0 });
    expect(await redis.xlen(streamKey)).toBe(1);
    expect(await redis.xpending(streamKey, 'proxies', '-', '+', 10)).toEqual([]);
    await claimer.handover.leaveGroup();

    ledger.down = false;
    const last = replica('proxy-d', ledger);
    last.handover.start();
    await waitFor(async () => (await redis.xlen(streamKey)) === 0, 5_000, 'proxy-d settled it');
    expect([...ledger.settled]).toEqual([['k1', 7n]]);
    // proxy-b's own outbox still retries its copy: the ledger answers it as a replay, applied once.
    await waitFor(() => killed.outbox.outboxDepth() === 0, 5_000, 'proxy-b copy answered');
    expect(ledger.settled.size).toBe(1);
  });

  it('without a shared outbox (or when Redis refuses the hand-over) logs each entry for replay and counts it abandoned', async () => {
    streamKey = `${uniqueRedisPrefix('outbox')}stream`;
    const ledger = new TestLedger();
    const alone = replica('proxy-a', ledger);
    await alone.ready();
    void alone.outbox.settle(settleRequest('z1', 9n), { organisationId: 'org', requestId: 'req-z1' });
    expect(await alone.outbox.handOver(async () => false)).toEqual({ handedOver: 0, abandoned: 1 });
    expect(alone.outbox.abandonedCount).toBe(1);
    const line = logs.find((candidate) => candidate.includes('not delivered before shutdown; replay it') && candidate.includes('z1'));
    expect(line).toBeDefined();
    // Every int64 as a decimal string, nested ones (token classes, failed attempts) included.
    expect((JSON.parse(line!) as { outboxEntry: { request: Record<string, unknown> } }).outboxEntry.request).toMatchObject({
      deployment: 'eu-backup',
      failedAttempts: [{ attempt: 1, deployment: 'primary', outcome: 'timeout', inputTokens: '3', outputTokens: '0', providerCostMicros: '2' }],
      tokenClasses: [{ tokenClass: 'output', tokens: '5', costMicros: '9', providerCostMicros: '1' }],
    });
    expect(await redis.exists(streamKey)).toBe(0);
  });
});
