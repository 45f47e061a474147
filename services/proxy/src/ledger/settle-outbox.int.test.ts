import { Writable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { ledgerV1 } from '@gateway/contracts';
import { createLogger } from '@gateway/logger';
import { requestContextOf, startTracing, traceparentOfSpanContext, withContext, type OutgoingSpanSlot } from '@gateway/telemetry';
import { startLedgerPeer, type LedgerPeer } from '../test-support/ledger-peer.ts';
import { waitFor } from '../test-support/proxy-world.ts';
import { LedgerClient } from './ledger-client.ts';
import { SettleOutbox } from './settle-outbox.ts';

const { BillingMode, ReleaseResult, ReserveResult, SettleResult, UsageSource } = ledgerV1;

function reserveRequest(reservationId: string): ledgerV1.ReserveRequest {
  return { reservationId, organisationId: 'org', projectId: 'org-project', billingMode: BillingMode.BILLING_MODE_COMMERCIAL, amountMicros: 100n, ttlMs: 60_000n, modelSlug: 'chat' };
}

function settleRequest(reservationId: string, costMicros = 40n): ledgerV1.SettleRequest {
  return { reservationId, inputTokens: 1n, outputTokens: 2n, costMicros, providerCostMicros: 10n, modelSlug: 'chat', usageSource: UsageSource.USAGE_SOURCE_UPSTREAM, requestId: `req-${reservationId}`, overrunOutputTokens: 0n, tokenClasses: [], deployment: '', failedAttempts: [] };
}

const owner = (reservationId: string) => ({ organisationId: 'org', requestId: `req-${reservationId}` });

describe('SettleOutbox against a ledger peer', () => {
  let peer: LedgerPeer | undefined;
  let client: LedgerClient | undefined;
  const logs: string[] = [];
  const logger = createLogger('proxy', 'debug', new Writable({ write(chunk, _encoding, done) { logs.push(String(chunk)); done(); } }));
  const attemptsLogged = (reservationId: string) => logs.filter((line) => line.includes('the outbox sends it again') && line.includes(reservationId)).length;

  async function start(maxEntries = 100): Promise<{ peer: LedgerPeer; client: LedgerClient; outbox: SettleOutbox }> {
    peer = await startLedgerPeer();
    peer.credit('org', 1_000n);
    client = new LedgerClient({ address: peer.address, security: peer.proxySecurity, callTimeoutMs: 1_000 });
    return { peer, client, outbox: new SettleOutbox({ ledger: client, logger, maxEntries, retryInitialMs: 10, retryMaxMs: 50 }) };
  }

  afterEach(async () => {
    client?.close();
    await peer?.close();
    peer = undefined;
    client = undefined;
    logs.length = 0;
  });

  it('keeps sending a Settle through a ledger outage far longer than three attempts, and it debits once', async () => {
    const { peer, client, outbox } = await start();
    expect((await client.reserve(reserveRequest('r-out'))).result).toBe(ReserveResult.RESERVE_RESULT_OK);
    await peer.stop();
    expect(outbox.oldestQueuedAtMs()).toBeUndefined();
    const queuedFromMs = Date.now();
    const settled = outbox.settle(settleRequest('r-out'), owner('r-out'));
    expect(outbox.outboxDepth()).toBe(1);
    const oldestMs = outbox.oldestQueuedAtMs()!;
    expect(oldestMs).toBeGreaterThanOrEqual(queuedFromMs);
    // The old client gave up after 3 attempts; the outbox is still at it after 8.
    await waitFor(() => attemptsLogged('r-out') >= 8, 10_000, 'eight failed attempts');
    expect(peer.calls.settle).toHaveLength(0);
    // An entry queued later leaves the oldest entry's age as it was (the metric's oldest age keeps growing).
    const released = outbox.release({ reservationId: 'r-later', reason: 'reserve_outcome_unknown', failedAttempts: [], modelSlug: '' }, owner('r-later'));
    expect(outbox.oldestQueuedAtMs()).toBe(oldestMs);
    await peer.restart();
    expect((await settled)?.result).toBe(SettleResult.SETTLE_RESULT_OK);
    expect((await released)?.result).toBe(ReleaseResult.RELEASE_RESULT_RESERVATION_UNKNOWN);
    expect(outbox.outboxDepth()).toBe(0);
    expect(outbox.oldestQueuedAtMs()).toBeUndefined();
    expect(peer.account('org')).toEqual({ creditedMicros: 1_000n, availableMicros: 960n, heldMicros: 0n, debitedMicros: 40n });
  });

  it('repeats a Release the ledger fails until it is answered; an unknown id is final and leaves a tombstone', async () => {
    const { peer, outbox } = await start();
    peer.failNext('release', 5);
    const released = await outbox.release({ reservationId: 'r-never', reason: 'reserve_outcome_unknown', failedAttempts: [], modelSlug: '' }, owner('r-never'));
    expect(released?.result).toBe(ReleaseResult.RELEASE_RESULT_RESERVATION_UNKNOWN);
    expect(peer.calls.release.map((r) => r.reservationId)).toEqual(Array(6).fill('r-never'));
    expect(peer.tombstoned('r-never')).toBe(true);
  });

  it('sends again on a retryable answer and stops at a final refusal', async () => {
    const { peer, client, outbox } = await start();
    expect((await client.reserve(reserveRequest('r-final'))).result).toBe(ReserveResult.RESERVE_RESULT_OK);
    expect((await outbox.settle(settleRequest('r-final'), owner('r-final')))?.result).toBe(SettleResult.SETTLE_RESULT_OK);
    // Same id, other payload: IDEMPOTENCY_CONFLICT is the ledger's final word, not a reason to loop.
    expect((await outbox.settle(settleRequest('r-final', 41n), owner('r-final')))?.result).toBe(SettleResult.SETTLE_RESULT_IDEMPOTENCY_CONFLICT);
    expect(peer.calls.settle).toHaveLength(2);
  });

  it('is full at its bound but still queues the Settles of requests already admitted, and drops none', async () => {
    const { peer, client, outbox } = await start(2);
    for (const id of ['r-a', 'r-b', 'r-c']) expect((await client.reserve(reserveRequest(id))).result).toBe(ReserveResult.RESERVE_RESULT_OK);
    await peer.stop();
    const settles = [outbox.settle(settleRequest('r-a', 10n), owner('r-a')), outbox.settle(settleRequest('r-b', 20n), owner('r-b'))];
    expect(outbox.outboxFull()).toBe(true);
    settles.push(outbox.settle(settleRequest('r-c', 30n), owner('r-c')));
    expect(outbox.outboxDepth()).toBe(3);
    expect(await outbox.drain(200)).toBe(false);
    await peer.restart();
    expect(await outbox.drain(10_000)).toBe(true);
    expect((await Promise.all(settles)).map((response) => response?.result)).toEqual(Array(3).fill(SettleResult.SETTLE_RESULT_OK));
    expect(outbox.outboxFull()).toBe(false);
    expect(peer.account('org')).toMatchObject({ heldMicros: 0n, debitedMicros: 60n });
  });

  it('waits for an organisation\'s entries, bounded, and says whether there were any', async () => {
    const { peer, client, outbox } = await start();
    expect(await outbox.waitForOrganisation('org', 1_000)).toBe(false);
    expect((await client.reserve(reserveRequest('r-wait'))).result).toBe(ReserveResult.RESERVE_RESULT_OK);
    peer.delayNext('settle', 100);
    const settled = outbox.settle(settleRequest('r-wait'), owner('r-wait'));
    expect(await outbox.waitForOrganisation('org', 5_000)).toBe(true);
    expect(peer.reservationState('r-wait')).toBe('settled');
    expect((await settled)?.result).toBe(SettleResult.SETTLE_RESULT_OK);
  });

  it('waits only for entries whose answer returns money to available: a Settle that frees nothing (a carve\'s, or one costing its whole Reserve) is not waited for', async () => {
    const { peer, client, outbox } = await start();
    expect((await client.reserve(reserveRequest('r-frees-nothing'))).result).toBe(ReserveResult.RESERVE_RESULT_OK);
    peer.delayNext('settle', 3_000);
    const settled = outbox.settle(settleRequest('r-frees-nothing', 100n), { ...owner('r-frees-nothing'), freesAvailable: false });
    expect(await outbox.waitForOrganisation('org', 5_000)).toBe(false);
    expect(peer.reservationState('r-frees-nothing')).toBe('held'); // not waited for: still in flight
    expect((await settled)?.result).toBe(SettleResult.SETTLE_RESULT_OK);
  });

  it('sends every attempt of a Settle with the traceparent of the step that queued it, after the request\'s work (and its context) has ended', async () => {
    // Spans are made (valid ids) but none sampled, so nothing is exported to the unused endpoint.
    const tracing = startTracing('proxy', { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9', OTEL_TRACES_SAMPLER: 'always_off' });
    try {
      const { peer, client, outbox } = await start();
      expect((await client.reserve(reserveRequest('r-traced'))).result).toBe(ReserveResult.RESERVE_RESULT_OK);
      peer.failNext('settle', 2);
      // As RequestTrace does: the request's work runs in a context whose slot names its settle step.
      const server = tracing.tracer.startSpan('POST /v1/chat/completions');
      const step = tracing.tracer.startSpan('settle');
      const slot: OutgoingSpanSlot = { span: step };
      const settled = withContext(requestContextOf(server, slot), () => outbox.settle(settleRequest('r-traced'), owner('r-traced')));
      // The work is over (RequestTrace.run's finally) before the retries go out.
      slot.span = undefined;
      slot.closed = true;
      expect((await settled)?.result).toBe(SettleResult.SETTLE_RESULT_OK);
      const expected = traceparentOfSpanContext(step.spanContext());
      expect(expected).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-00$/);
      expect(peer.calls.settle.map((request) => request.traceparent)).toEqual([expected, expected, expected]);
    } finally {
      await tracing.shutdown();
    }
  });

  it('abandons what is left at shutdown with one replayable error line per entry, and counts them', async () => {
    const { peer, client, outbox } = await start();
    expect((await client.reserve(reserveRequest('r-left'))).result).toBe(ReserveResult.RESERVE_RESULT_OK);
    await peer.stop();
    const settled = outbox.settle(settleRequest('r-left', 37n), owner('r-left'));
    await waitFor(() => attemptsLogged('r-left') >= 1, 5_000, 'a failed attempt');
    expect(outbox.abandon()).toBe(1);
    expect(await settled).toBeUndefined();
    expect(outbox.outboxDepth()).toBe(0);
    expect(outbox.abandonedCount).toBe(1);
    const line = logs.map((l) => JSON.parse(l) as { level: number; msg: string; outboxEntry?: Record<string, unknown> })
      .find((l) => l.outboxEntry !== undefined)!;
    expect(line.level).toBe(50);
    expect(line.outboxEntry).toMatchObject({
      kind: 'settle', organisationId: 'org', requestId: 'req-r-left',
      request: {
        reservationId: 'r-left', inputTokens: '1', outputTokens: '2', costMicros: '37', providerCostMicros: '10', modelSlug: 'chat',
        usageSource: UsageSource.USAGE_SOURCE_UPSTREAM, requestId: 'req-r-left', overrunOutputTokens: '0',
      },
    });
    expect(line.outboxEntry!.attempts).toBeGreaterThanOrEqual(1);
  });
});
