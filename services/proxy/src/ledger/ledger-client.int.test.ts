import { afterEach, describe, expect, it } from 'vitest';
import { ledgerV1 } from '@gateway/contracts';
import { GatewayError } from '@gateway/errors';
import { startLedgerPeer, type LedgerPeer } from '../test-support/ledger-peer.ts';
import { LedgerClient } from './ledger-client.ts';

const { BillingMode, ReserveResult, SettleResult, UsageSource } = ledgerV1;

function reserveRequest(reservationId: string): ledgerV1.ReserveRequest {
  return { reservationId, organisationId: 'org', projectId: 'org-project', billingMode: BillingMode.BILLING_MODE_COMMERCIAL, amountMicros: 100n, ttlMs: 60_000n, modelSlug: 'chat' };
}

function settleRequest(reservationId: string): ledgerV1.SettleRequest {
  return { reservationId, inputTokens: 1n, outputTokens: 2n, costMicros: 40n, providerCostMicros: 10n, modelSlug: 'chat', usageSource: UsageSource.USAGE_SOURCE_UPSTREAM, requestId: 'req', overrunOutputTokens: 0n, tokenClasses: [], deployment: '', failedAttempts: [] };
}

describe('LedgerClient over the Operate stream', () => {
  let peer: LedgerPeer | undefined;
  let client: LedgerClient | undefined;
  afterEach(async () => {
    client?.close();
    await peer?.close();
  });

  it('reserves and settles on the stream; a failed settle throws (the outbox repeats it) and a repeat debits once', async () => {
    peer = await startLedgerPeer();
    peer.credit('org', 1_000n);
    client = new LedgerClient({ address: peer.address, security: peer.proxySecurity, callTimeoutMs: 2_000 });
    expect((await client.reserve(reserveRequest('r-1'))).result).toBe(ReserveResult.RESERVE_RESULT_OK);
    peer.failNext('settle', 1);
    await expect(client.settle(settleRequest('r-1'))).rejects.toMatchObject({ code: 14 });
    expect((await client.settle(settleRequest('r-1'))).result).toBe(SettleResult.SETTLE_RESULT_OK);
    expect((await client.settle(settleRequest('r-1'))).result).toBe(SettleResult.SETTLE_RESULT_OK);
    expect(peer.calls.settle).toHaveLength(3);
    expect(peer.account('org')).toEqual({ creditedMicros: 1_000n, availableMicros: 960n, heldMicros: 0n, debitedMicros: 40n });
  });

  it('sends Settles queued while a batch is in flight together, at most 512 to a settle_batch message, each answered', async () => {
    peer = await startLedgerPeer();
    peer.credit('org', 1_000_000n);
    client = new LedgerClient({ address: peer.address, security: peer.proxySecurity, callTimeoutMs: 5_000 });
    const ids = Array.from({ length: 1_201 }, (_, index) => `r-batch-${index}`);
    for (const id of ids) expect((await client.reserve(reserveRequest(id))).result).toBe(ReserveResult.RESERVE_RESULT_OK);
    // The first leaves alone at once; the 1,200 queued behind it leave 512, 512 and 176 to a message.
    const answers = await Promise.all(ids.map((id) => client!.settle(settleRequest(id))));
    expect(answers.every((answer) => answer.result === SettleResult.SETTLE_RESULT_OK)).toBe(true);
    expect(peer.calls.settleBatch).toEqual([1, 512, 512, 176]);
    expect(peer.account('org')).toMatchObject({ heldMicros: 0n, debitedMicros: 1_201n * 40n });
  });

  it('fails an operation past its deadline as unavailable, and the stream still serves the next one', async () => {
    peer = await startLedgerPeer();
    peer.credit('org', 1_000n);
    client = new LedgerClient({ address: peer.address, security: peer.proxySecurity, callTimeoutMs: 100 });
    peer.delayNext('reserve', 400);
    const late = await client.reserve(reserveRequest('r-late')).catch((error: unknown) => error);
    expect(late).toBeInstanceOf(GatewayError);
    expect((late as GatewayError).code).toBe('service_unavailable');
    expect((await client.reserve(reserveRequest('r-next'))).result).toBe(ReserveResult.RESERVE_RESULT_OK);
  });

  it('tells its listener when the Operate stream ends (its credit grants are carved from no more), but not at its own close()', async () => {
    peer = await startLedgerPeer();
    peer.credit('org', 1_000n);
    client = new LedgerClient({ address: peer.address, security: peer.proxySecurity, callTimeoutMs: 2_000 });
    let ended = 0;
    client.onStreamEnded(() => { ended += 1; });
    expect((await client.reserve(reserveRequest('r-open'))).result).toBe(ReserveResult.RESERVE_RESULT_OK);
    await peer.close();
    peer = undefined;
    await expect.poll(() => ended, { timeout: 10_000 }).toBe(1);

    const other = await startLedgerPeer();
    peer = other;
    other.credit('org', 1_000n);
    const own = new LedgerClient({ address: other.address, security: other.proxySecurity, callTimeoutMs: 2_000 });
    let ownEnded = 0;
    own.onStreamEnded(() => { ownEnded += 1; });
    expect((await own.reserve(reserveRequest('r-own'))).result).toBe(ReserveResult.RESERVE_RESULT_OK);
    own.close();
    // A round trip of another client after the close, so a wrongly sent notice would have come by now.
    const probe = new LedgerClient({ address: other.address, security: other.proxySecurity, callTimeoutMs: 2_000 });
    expect((await probe.reserve(reserveRequest('r-probe'))).result).toBe(ReserveResult.RESERVE_RESULT_OK);
    probe.close();
    expect(ownEnded).toBe(0);
  });

  it('answers unavailable when the ledger is gone, instead of hanging', async () => {
    peer = await startLedgerPeer();
    peer.credit('org', 1_000n);
    client = new LedgerClient({ address: peer.address, security: peer.proxySecurity, callTimeoutMs: 2_000 });
    expect((await client.reserve(reserveRequest('r-before'))).result).toBe(ReserveResult.RESERVE_RESULT_OK);
    await peer.close();
    peer = undefined;
    const error = await client.reserve(reserveRequest('r-after')).catch((e: unknown) => e);
    expect((error as GatewayError).code).toBe('service_unavailable');
  });
});
