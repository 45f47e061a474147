/**
 * Three proxy processes lease RPM tokens from one organisation's pool in Redis. Hammered
 * together far past the limit, they admit at most the limit (leased tokens never stretch the
 * pool), more than none, and refuse the rest with 429 + Retry-After; the pool's log in Redis
 * holds exactly the limit, and only the admitted requests cost anything. MONITOR counts the
 * lease calls: far fewer than the requests (leases and known-full pools decide locally).
 * (The root package has no Redis client; two RESP lines over a socket are all it needs.)
 */
import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testPostgresUrl, testRedisUrl, uniqueRedisPrefix } from '@gateway/testkit';
import { e2eCostMicros, startE2eGateway, type E2eGateway } from '../support/e2e-gateway.ts';

const serverUrl = testPostgresUrl();
const redisUrl = testRedisUrl();
const rpmLimit = 30;
const proxyCount = 3;
const attemptsPerProxy = 40;
const redisPrefix = uniqueRedisPrefix('rpm-leases-e2e');

/** Opens a plain RESP connection to the test Redis. */
async function redisSocket(): Promise<Socket> {
  const url = new URL(redisUrl!);
  const socket = connect(Number(url.port || 6379), url.hostname);
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  return socket;
}

/** ZCARD of a key, as an integer. */
async function zcard(key: string): Promise<number> {
  const socket = await redisSocket();
  try {
    const reply = await new Promise<string>((resolve) => {
      let text = '';
      socket.on('data', (chunk: Buffer) => { text += chunk.toString(); if (text.endsWith('\r\n')) resolve(text); });
      socket.write(`*2\r\n$5\r\nZCARD\r\n$${String(Buffer.byteLength(key))}\r\n${key}\r\n`);
    });
    expect(reply).toMatch(/^:\d+\r\n$/);
    return Number(reply.slice(1, -2));
  } finally {
    socket.destroy();
  }
}

/** MONITOR: counts the script calls (EVAL/EVALSHA) on `key` until stopped. */
async function countScriptCalls(key: string): Promise<{ count(): number; stop(): void }> {
  const socket = await redisSocket();
  let calls = 0;
  let pending = '';
  socket.on('data', (chunk: Buffer) => {
    const lines = (pending + chunk.toString()).split('\r\n');
    pending = lines.pop()!;
    // e.g. +1700000000.123456 [0 127.0.0.1:5000] "evalsha" "<sha>" "1" "<key>" ...
    for (const line of lines) if (/^\+\S+ \[[^\]]*\] "eval(sha)?" "[^"]*" "1" "/i.test(line) && line.includes(`"${key}"`)) calls += 1;
  });
  socket.write('MONITOR\r\n');
  await new Promise<void>((resolve) => socket.once('data', () => resolve())); // +OK
  return { count: () => calls, stop: () => socket.destroy() };
}

describe.skipIf(!serverUrl || !redisUrl)('three proxies lease tokens from one RPM pool', () => {
  let gateway: E2eGateway;

  beforeAll(async () => {
    gateway = await startE2eGateway({
      serverUrl: serverUrl!, proxies: proxyCount, rpmLimit,
      proxyEnv: { REDIS_URL: redisUrl!, PROXY_REDIS_PREFIX: redisPrefix, PROXY_RPM_LEASE_MAX: '8', PROXY_RPM_LEASE_MS: '1000' },
    });
  }, 120_000);
  afterAll(async () => {
    await gateway?.close();
  });

  it(`admits at most ${rpmLimit} of ${proxyCount * attemptsPerProxy} concurrent requests, and refuses the rest with Retry-After`, async () => {
    const poolKey = `${redisPrefix}${gateway.organisationId}`;
    const monitor = await countScriptCalls(poolKey);
    let answers: Array<{ status: number; headers: Headers; body: string }>;
    try {
      answers = await Promise.all(Array.from({ length: proxyCount * attemptsPerProxy }, async (_, i) => {
        const response = await fetch(`${gateway.proxyBases[i % proxyCount]!}/chat/completions`, {
          method: 'POST',
          headers: { authorization: `Bearer ${gateway.apiKey}`, 'content-type': 'application/json' },
          body: JSON.stringify({ model: gateway.modelSlug, messages: [{ role: 'user', content: 'hi [[fake:reply_words=2]]' }] }),
        });
        return { status: response.status, headers: response.headers, body: await response.text() };
      }));
      // MONITOR's feed is another connection: wait for its first line rather than assume it came.
      await expect.poll(() => monitor.count(), { timeout: 5000, interval: 10 }).toBeGreaterThan(0);
    } finally {
      monitor.stop();
    }
    const admitted = answers.filter((a) => a.status === 200);
    const refused = answers.filter((a) => a.status === 429);
    expect(admitted.length + refused.length).toBe(answers.length);
    expect(admitted.length).toBeGreaterThan(0);
    expect(admitted.length).toBeLessThanOrEqual(rpmLimit);
    for (const answer of refused) {
      expect(Number(answer.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      expect(answer.headers.get('x-ratelimit-limit-requests')).toBe(String(rpmLimit));
      expect(answer.headers.get('x-ratelimit-remaining-requests')).toBe('0');
      expect((JSON.parse(answer.body) as { error: { code: string } }).error.code).toBe('rate_limit_exceeded');
    }
    // The pool's log: every admitted token is one entry; the burst filled it to the limit exactly
    // (a token leased but not used lapses, counted: under-use, never over-use).
    expect(await zcard(poolKey)).toBe(rpmLimit);
    const leaseCalls = monitor.count();
    expect(leaseCalls).toBeLessThan(answers.length / 2);
    console.log(`rpm-leases e2e: ${String(admitted.length)} admitted, ${String(refused.length)} refused, ${String(leaseCalls)} lease calls for ${String(answers.length)} requests`);

    // Only the admitted requests cost anything: each prompt is 2 words + 3, each reply 2 words.
    const balance = await gateway.settledBalance();
    expect(balance).toMatchObject({ held_micros: '0', debited_micros: (e2eCostMicros(5, 2) * BigInt(admitted.length)).toString() });
    expect((await gateway.admin('GET', `/organisations/${gateway.organisationId}/usage`)).data).toHaveLength(admitted.length);
  });
});
