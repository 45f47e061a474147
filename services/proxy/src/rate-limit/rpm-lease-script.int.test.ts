/**
 * The lease rule has two statements: the Redis script production runs (rpm-lease-script.ts) and
 * its TypeScript reading (test-support/rpm-lease-model.ts) that the lease book's tests answer
 * with. This runs the real script on a real Redis and the TypeScript on the same random pools,
 * and asserts the same lease, so neither can drift from the other.
 */
import { testRedisUrl, uniqueRedisPrefix } from '@gateway/testkit';
import fc from 'fast-check';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rpmWindowMs } from '../domain/rate-limit.ts';
import { rpmLeaseSize } from '../test-support/rpm-lease-model.ts';
import { defineRpmLeaseCommand, type RpmLeaseCommand } from './rpm-lease-script.ts';

const redisUrl = testRedisUrl();

describe.skipIf(!redisUrl)('the RPM lease script and its TypeScript statement', () => {
  let redis: Redis;
  let lease: RpmLeaseCommand;
  const prefix = uniqueRedisPrefix('rpm-lease-script');
  beforeAll(() => {
    redis = new Redis(redisUrl!);
    lease = defineRpmLeaseCommand(redis);
  });
  afterAll(async () => {
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length > 0) await redis.del(...keys);
    redis.disconnect();
  });

  it('admits the same lease for every pool: limit, entries already counted, need and want', async () => {
    const pool = fc.record({
      // From 1: an rpm_limit of 0 means no limit, and the proxy never asks the pool (http-app.ts).
      limit: fc.integer({ min: 1, max: 120 }),
      counted: fc.integer({ min: 0, max: 120 }),
      need: fc.integer({ min: 1, max: 40 }),
      extra: fc.integer({ min: 0, max: 40 }),
    });
    let run = 0;
    await fc.assert(fc.asyncProperty(pool, async ({ limit, counted, need, extra }) => {
      run += 1;
      const key = `${prefix}${String(run)}`;
      // Entries scored far ahead stay counted for the whole call, whatever the Redis clock says.
      const aheadMs = Date.now() + 10 * rpmWindowMs;
      if (counted > 0) await redis.zadd(key, ...Array.from({ length: counted }, (_, i) => [aheadMs, `held:${String(i)}`]).flat());
      const want = need + extra;
      const reply = await lease(key, limit, rpmWindowMs, 1000, need, want, 'lease');
      const expected = rpmLeaseSize(limit - counted, need, want);
      expect(reply.admitted).toBe(expected);
      expect(reply.free).toBe(Math.max(0, limit - counted));
      // The log is the witness: every admitted token is one more entry.
      expect(await redis.zcard(key)).toBe(counted + expected);
      await redis.del(key);
    }), { numRuns: 300 });
  });
});
