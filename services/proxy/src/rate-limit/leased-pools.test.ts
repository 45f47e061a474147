import { GatewayError } from '@gateway/errors';
import { describe, expect, it } from 'vitest';
import { rpmLeaseSize } from '../test-support/rpm-lease-model.ts';
import { LeasedPools, type LeaseReply } from './leased-pools.ts';

/** A lease call the test answers by hand: each call waits until the test settles it. */
function manualLease() {
  const calls: Array<{ poolId: string; limit: number; need: number; want: number; answer(reply: LeaseReply): void; fail(error: Error): void }> = [];
  const lease = (poolId: string, limit: number, need: number, want: number) => new Promise<LeaseReply>((resolve, reject) => {
    calls.push({ poolId, limit, need, want, answer: resolve, fail: reject });
  });
  return { calls, lease };
}

/** Lets the lease calls waiting for the end of this I/O phase go out, and pending callbacks run. */
async function settled(): Promise<void> {
  await new Promise<void>((resolve) => setImmediate(resolve));
}

describe('LeasedPools', () => {
  it('serves every request waiting on a pool with one lease call, then spare tokens with no call', async () => {
    let now = 0;
    const { calls, lease } = manualLease();
    const pools = new LeasedPools({ lease, leaseMax: 8, leaseMs: 1000, now: () => now });
    const waiting = [pools.consume('org', 10), pools.consume('org', 10), pools.consume('org', 10)];
    await settled();
    // The three that came in the same I/O phase share one call, which asks for each of them.
    expect(calls).toHaveLength(1);
    expect(calls[0]).toMatchObject({ poolId: 'org', limit: 10, need: 3, want: 3 });
    calls[0]!.answer({ admitted: rpmLeaseSize(10, 3, 3), free: 10, retryAfterMs: 0, resetMs: 61_000 });
    const decisions = await Promise.all(waiting);
    expect(decisions.map((d) => [d.allowed, d.remaining])).toEqual([[true, 9], [true, 8], [true, 7]]);
    expect(decisions[0]!.resetMs).toBe(61_000);
    expect(pools.localTokens('org')).toBe(0);
    now = 10;
    const next = pools.consume('org', 10);
    await settled();
    // Demand in this lease period is 4 requests: one waits, the want speculates on 3 more.
    expect(calls[1]).toMatchObject({ need: 1, want: 4 });
    const admitted = rpmLeaseSize(7, 1, 4);
    expect(admitted).toBe(2); // a quarter of the 6 the waiting one leaves: 1 spare
    calls[1]!.answer({ admitted, free: 7, retryAfterMs: 0, resetMs: 61_000 });
    expect(await next).toMatchObject({ allowed: true, remaining: 6 });
    now = 20;
    expect(pools.decideNow('org', 10)).toMatchObject({ allowed: true, remaining: 5, resetMs: 60_990 });
    await settled();
    expect(calls).toHaveLength(2);
    expect(pools.decideNow('org', 10)).toBeUndefined();
  });

  it('spends unused tokens at the lapse, counted from before the call was sent', async () => {
    let now = 0;
    const { calls, lease } = manualLease();
    const pools = new LeasedPools({ lease, leaseMax: 8, leaseMs: 1000, now: () => now });
    const first = pools.consume('org', 100);
    await settled();
    now = 400; // the reply takes 400 ms
    calls[0]!.answer({ admitted: 5, free: 100, retryAfterMs: 0, resetMs: 61_000 });
    expect((await first).allowed).toBe(true);
    expect(pools.localTokens('org')).toBe(4);
    now = 999;
    expect(pools.decideNow('org', 100)).toMatchObject({ allowed: true });
    now = 1000; // send time + leaseMs: the other 3 lapsed although they came back only 600 ms ago
    expect(pools.localTokens('org')).toBe(0);
    expect(pools.decideNow('org', 100)).toBeUndefined();
  });

  it('refuses waiters once the pool is full, and refuses locally until a slot can free', async () => {
    let now = 0;
    const { calls, lease } = manualLease();
    const pools = new LeasedPools({ lease, leaseMax: 8, leaseMs: 1000, now: () => now });
    const waiting = [pools.consume('org', 3), pools.consume('org', 3), pools.consume('org', 3)];
    await settled();
    calls[0]!.answer({ admitted: 1, free: 1, retryAfterMs: 5000, resetMs: 61_000 });
    const decisions = await Promise.all(waiting);
    expect(decisions.map((d) => d.allowed)).toEqual([true, false, false]);
    expect(decisions[1]).toEqual({ allowed: false, limit: 3, remaining: 0, retryAfterMs: 5000, resetMs: 61_000 });
    now = 4000;
    expect(pools.decideNow('org', 3)).toMatchObject({ allowed: false, retryAfterMs: 1000 });
    await settled();
    expect(calls).toHaveLength(1);
    // A raised limit is not the full pool it knew: it asks again.
    expect(pools.decideNow('org', 4)).toBeUndefined();
    now = 5000;
    expect(pools.decideNow('org', 3)).toBeUndefined();
  });

  it('fails closed with 503 when the lease call fails or answers after its lapse; later waiters lease again', async () => {
    let now = 0;
    const { calls, lease } = manualLease();
    const pools = new LeasedPools({ lease, leaseMax: 8, leaseMs: 100, now: () => now });
    const first = pools.consume('org', 10);
    await settled();
    const late = pools.consume('org', 10); // came while the call was out: not in its batch
    calls[0]!.fail(new Error('connection refused'));
    await expect(first).rejects.toBeInstanceOf(GatewayError);
    await expect(first).rejects.toMatchObject({ code: 'service_unavailable' });
    await settled();
    expect(calls).toHaveLength(2);
    now = 100;
    calls[1]!.answer({ admitted: 3, free: 10, retryAfterMs: 0, resetMs: 60_100 });
    await expect(late).rejects.toMatchObject({ code: 'service_unavailable' });
    expect(pools.localTokens('org')).toBe(0);
  });

  it('keeps pools apart: one organisation\'s leased tokens never admit another\'s requests', async () => {
    const { calls, lease } = manualLease();
    const pools = new LeasedPools({ lease, leaseMax: 8, leaseMs: 1000, now: () => 0 });
    const a = pools.consume('a', 10);
    await settled();
    calls[0]!.answer({ admitted: 4, free: 10, retryAfterMs: 0, resetMs: 61_000 });
    await a;
    expect(pools.localTokens('a')).toBe(3);
    expect(pools.decideNow('b', 10)).toBeUndefined();
    const b = pools.consume('b', 10);
    await settled();
    expect(calls.map((c) => c.poolId)).toEqual(['a', 'b']);
    calls[1]!.answer({ admitted: rpmLeaseSize(10, calls[1]!.need, calls[1]!.want), free: 10, retryAfterMs: 0, resetMs: 61_000 });
    expect((await b).allowed).toBe(true);
    expect(pools.localTokens('a')).toBe(3);
  });
});
