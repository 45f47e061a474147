/**
 * The leased RPM pool against a real Redis: the script's log is the witness of what was
 * admitted (every token is one sorted-set entry), and MONITOR on a second connection counts
 * the lease calls that actually reached Redis.
 */
import { createServer } from 'node:net';
import { GatewayError } from '@gateway/errors';
import { createLogger } from '@gateway/logger';
import { testRedisUrl, uniqueRedisPrefix } from '@gateway/testkit';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisRateLimiter } from './redis-rate-limiter.ts';

const redisUrl = testRedisUrl();
const logger = createLogger('rpm-lease-test', 'silent');

describe.skipIf(!redisUrl)('RedisRateLimiter with leased tokens', () => {
  let redis: Redis;
  const limiters: RedisRateLimiter[] = [];
  beforeAll(() => { redis = new Redis(redisUrl!); });
  afterAll(async () => {
    await Promise.all(limiters.map((limiter) => limiter.close()));
    redis?.disconnect();
  });

  /** A connected replica's limiter (before its connection is up it fails closed). */
  async function limiter(keyPrefix: string, options: { leaseMax?: number; leaseMs?: number } = {}): Promise<RedisRateLimiter> {
    const created = new RedisRateLimiter({ target: { kind: 'url', url: redisUrl! }, keyPrefix, logger, ...options });
    limiters.push(created);
    await expect.poll(() => created.connectionState(), { timeout: 5000, interval: 10 }).toBe('up');
    return created;
  }

  /** The pool's log: member -> score (ms, the token's latest possible use). */
  async function poolLog(key: string): Promise<Map<string, number>> {
    const flat = await redis.zrange(key, '0', '-1', 'WITHSCORES');
    const log = new Map<string, number>();
    for (let i = 0; i < flat.length; i += 2) log.set(flat[i]!, Number(flat[i + 1]));
    return log;
  }

  /** The Redis server's clock, ms (what the script scores with). */
  async function redisNowMs(): Promise<number> {
    const [seconds, micros] = await redis.time();
    return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
  }

  /** Tokens per lease call, in call order, from the members `<replica>:<call>:<token>`. */
  function leaseSizes(log: Map<string, number>): number[] {
    const sizes = new Map<string, number>();
    for (const member of log.keys()) {
      const call = member.split(':').slice(0, 2).join(':');
      sizes.set(call, (sizes.get(call) ?? 0) + 1);
    }
    return [...sizes.entries()].sort(([a], [b]) => Number(a.split(':')[1]) - Number(b.split(':')[1])).map(([, size]) => size);
  }

  it('a burst over three replicas admits at most the limit: every logged token was used or is still held', async () => {
    const prefix = uniqueRedisPrefix('rpm-lease-burst');
    const replicas = await Promise.all([limiter(prefix), limiter(prefix), limiter(prefix)]);
    const limit = 20;
    const startedAtMs = await redisNowMs();
    const decisions = await Promise.all(Array.from({ length: 90 }, (_, i) => replicas[i % 3]!.consume('org', limit)));
    const endedAtMs = await redisNowMs();
    const allowed = decisions.filter((d) => d.allowed).length;
    const held = replicas.reduce((sum, replica) => sum + replica.localTokens('org'), 0);
    const log = await poolLog(`${prefix}org`);
    expect(log.size).toBe(limit);
    expect(allowed + held).toBe(limit);
    expect(allowed).toBeGreaterThan(0);
    for (const refused of decisions.filter((d) => !d.allowed)) {
      expect(refused).toMatchObject({ remaining: 0, limit });
      expect(refused.retryAfterMs).toBeGreaterThan(59_000);
    }
    // Each entry is scored at its lease time + 1000 ms (leaseMs), its latest possible use.
    for (const score of log.values()) {
      expect(score).toBeGreaterThanOrEqual(startedAtMs + 1000);
      expect(score).toBeLessThanOrEqual(endedAtMs + 1000);
    }
    // The remaining headers of the admitted requests count down without repeating.
    const remaining = decisions.filter((d) => d.allowed).map((d) => d.remaining);
    expect(new Set(remaining).size).toBe(remaining.length);
  });

  it('leases shrink as the pool nears its limit, down to one token per call at the end', async () => {
    const prefix = uniqueRedisPrefix('rpm-lease-taper');
    const replica = await limiter(prefix, { leaseMax: 8 });
    const limit = 40;
    const remaining: number[] = [];
    for (let i = 0; i < limit; i += 1) {
      const decision = await replica.consume('org', limit);
      expect(decision.allowed).toBe(true);
      remaining.push(decision.remaining);
    }
    expect(remaining).toEqual(Array.from({ length: limit }, (_, i) => limit - 1 - i));
    const refused = await replica.consume('org', limit);
    expect(refused.allowed).toBe(false);
    expect(refused.retryAfterMs).toBeGreaterThan(59_000);
    const sizes = leaseSizes(await poolLog(`${prefix}org`));
    expect(sizes.reduce((a, b) => a + b, 0)).toBe(limit);
    expect(Math.max(...sizes)).toBeLessThanOrEqual(8);
    expect(Math.max(...sizes)).toBeGreaterThan(1); // it did lease ahead far from the limit
    // Each lease held one waiting request plus at most a quarter of what that left free.
    let free = limit;
    for (const size of sizes) {
      expect(size - 1).toBeLessThanOrEqual(Math.floor((free - 1) / 4));
      free -= size;
    }
    expect(sizes.slice(-4)).toEqual([1, 1, 1, 1]); // 4, 3, 2, 1 free: per-request exactness
  });

  it('unused tokens lapse: they stay counted in the pool, and the next request leases again', async () => {
    const prefix = uniqueRedisPrefix('rpm-lease-lapse');
    const replica = await limiter(prefix, { leaseMax: 8, leaseMs: 200 });
    const limit = 1000;
    let calls = 0;
    const monitor = await redis.monitor();
    monitor.on('monitor', (_time: string, args: string[]) => {
      if (/^eval/i.test(args[0] ?? '') && args[3] === `${prefix}org`) calls += 1;
    });
    try {
      // Build demand until a lease leaves spare tokens behind.
      let used = 0;
      while (replica.localTokens('org') === 0 && used < 50) {
        expect((await replica.consume('org', limit)).allowed).toBe(true);
        used += 1;
      }
      const spare = replica.localTokens('org');
      expect(spare).toBeGreaterThan(0);
      await expect.poll(() => replica.localTokens('org'), { timeout: 5000, interval: 10 }).toBe(0);
      expect((await poolLog(`${prefix}org`)).size).toBe(used + spare);
      await expect.poll(() => calls, { timeout: 2000, interval: 10 }).toBeGreaterThan(0);
      const callsBefore = calls;
      const next = await replica.consume('org', limit);
      expect(next.allowed).toBe(true);
      // The lapsed tokens were spent, not returned: the pool counts them against the limit.
      expect(next.remaining).toBe(limit - used - spare - 1);
      await expect.poll(() => calls, { timeout: 2000, interval: 10 }).toBe(callsBefore + 1);
    } finally {
      monitor.disconnect();
    }
  });

  it('requests waiting on one pool share one lease call', async () => {
    const prefix = uniqueRedisPrefix('rpm-lease-shared');
    const replica = await limiter(prefix, { leaseMax: 8 });
    let calls = 0;
    const monitor = await redis.monitor();
    monitor.on('monitor', (_time: string, args: string[]) => {
      if (/^eval/i.test(args[0] ?? '') && args[3] === `${prefix}org`) calls += 1;
    });
    try {
      const decisions = await Promise.all(Array.from({ length: 50 }, () => replica.consume('org', 100)));
      expect(decisions.every((d) => d.allowed)).toBe(true);
      const log = await poolLog(`${prefix}org`);
      expect(leaseSizes(log)).toEqual([50]);
      await expect.poll(() => calls, { timeout: 2000, interval: 10 }).toBe(1);
    } finally {
      monitor.disconnect();
    }
  });

  it('fails closed with 503 when Redis cannot be reached', async () => {
    const unused = createServer();
    await new Promise<void>((resolve) => unused.listen(0, '127.0.0.1', resolve));
    const { port } = unused.address() as { port: number };
    await new Promise<void>((resolve) => unused.close(() => resolve()));
    const down = new RedisRateLimiter({ target: { kind: 'url', url: `redis://127.0.0.1:${String(port)}` }, keyPrefix: uniqueRedisPrefix('rpm-lease-down'), logger });
    limiters.push(down);
    const failures = await Promise.allSettled([down.consume('org', 10), down.consume('org', 10)]);
    for (const failure of failures) {
      expect(failure.status).toBe('rejected');
      const reason = (failure as PromiseRejectedResult).reason as GatewayError;
      expect(reason).toBeInstanceOf(GatewayError);
      expect(reason.code).toBe('service_unavailable');
    }
  });
});
