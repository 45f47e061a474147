import { createServer } from 'node:net';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parsePrometheusText, sumSamples, testRedisUrl, uniqueRedisPrefix } from '@gateway/testkit';
import { gatewayModel, startProxyWorld, stateOf, tenant, trafficOf, waitFor, type ProxyWorld, type TestProxy } from './test-support/proxy-world.ts';
import { redisServerAvailable, startRedisServer } from './test-support/redis-servers.ts';

const redisUrl = testRedisUrl();
const limited = tenant('limited', { rpmLimit: 3 });
const browsing = tenant('browsing', { rpmLimit: 2 });
const shared = tenant('shared', { rpmLimit: 4 });
const bystander = tenant('bystander', { rpmLimit: 4 });
const unlimited = tenant('unlimited', { rpmLimit: 0 });
const degraded = tenant('degraded', { rpmLimit: 5 });

const hello = [{ role: 'user' as const, content: 'hi [[fake:reply_words=1]]' }];

let world: ProxyWorld;
beforeAll(async () => {
  world = await startProxyWorld((baseUrl) => stateOf([limited, browsing, shared, bystander, unlimited, degraded], [gatewayModel('chat', baseUrl)]));
  for (const id of ['limited', 'browsing', 'shared', 'bystander', 'unlimited', 'degraded']) world.ledger.credit(id, 10_000_000n);
});
afterAll(async () => { await world?.close(); });

async function readyProxy(env: Record<string, string> = {}): Promise<TestProxy> {
  const proxy = await world.startProxy(env);
  await waitFor(() => proxy.isReady(), 5000, 'first snapshot');
  return proxy;
}

/** Sends one completion; resolves to the status and headers, whether it succeeded or not. */
async function attempt(client: OpenAI): Promise<{ status: number; headers: Headers; error?: InstanceType<typeof OpenAI.APIError> }> {
  try {
    const { response } = await client.chat.completions.create({ model: 'chat', messages: hello }).withResponse();
    return { status: response.status, headers: response.headers };
  } catch (error) {
    if (!(error instanceof OpenAI.APIError)) throw error;
    return { status: error.status ?? 0, headers: error.headers ?? new Headers(), error };
  }
}

describe('the in-process limiter (no REDIS_URL)', () => {
  let proxy: TestProxy;
  beforeAll(async () => { proxy = await readyProxy(); });

  it('admits exactly the limit, then 429 with the exact message and OpenAI rate-limit headers', async () => {
    const client = world.client(limited.apiKey, proxy);
    const admitted = [await attempt(client), await attempt(client), await attempt(client)];
    expect(admitted.map((a) => a.status)).toEqual([200, 200, 200]);
    expect(admitted.map((a) => a.headers.get('x-ratelimit-remaining-requests'))).toEqual(['2', '1', '0']);
    expect(admitted[0]!.headers.get('x-ratelimit-limit-requests')).toBe('3');
    expect(admitted[0]!.headers.get('x-ratelimit-reset-requests')).toBe('1m0s');

    const before = { upstream: world.upstream.requests.length, reserve: world.ledger.calls.reserve.length };
    const refused = await attempt(client);
    expect(refused.error).toBeInstanceOf(OpenAI.RateLimitError);
    expect(refused.error!.code).toBe('rate_limit_exceeded');
    expect((refused.error!.error as { message: string }).message).toBe('Rate limit exceeded');
    const retryAfter = Number(refused.headers.get('retry-after'));
    expect(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 60).toBe(true);
    expect(refused.headers.get('x-ratelimit-limit-requests')).toBe('3');
    expect(refused.headers.get('x-ratelimit-remaining-requests')).toBe('0');
    expect(refused.headers.get('x-ratelimit-reset-requests')).toMatch(/^(\d+(\.\d+)?s|\d+ms|1m0s)$/);
    expect({ upstream: world.upstream.requests.length, reserve: world.ledger.calls.reserve.length }).toEqual(before);

    // The body is read while the RPM check runs, but admission still answers first: a broken
    // body from a caller over its limit is a 429, not a 400.
    const broken = await fetch(`${proxy.baseUrl}/chat/completions`, {
      method: 'POST', headers: { authorization: `Bearer ${limited.apiKey}`, 'content-type': 'application/json' }, body: '{"model": ',
    });
    expect(broken.status).toBe(429);
    expect(((await broken.json()) as { error: { code: string } }).error.code).toBe('rate_limit_exceeded');
  });

  it('counts /v1/models against the same organisation pool', async () => {
    const client = world.client(browsing.apiKey, proxy);
    await client.models.list();
    await client.models.list();
    await expect(client.models.list()).rejects.toBeInstanceOf(OpenAI.RateLimitError);
    expect((await attempt(client)).status).toBe(429);
  });

  it('does not limit an organisation whose rpm_limit is 0, and sends no rate-limit headers for it', async () => {
    const client = world.client(unlimited.apiKey, proxy);
    const results = await Promise.all(Array.from({ length: 5 }, () => attempt(client)));
    expect(results.map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
    expect(results[0]!.headers.get('x-ratelimit-limit-requests')).toBeNull();
  });
});

describe('the Redis limiter', () => {
  it.skipIf(!redisUrl)('shares one pool per organisation across proxies: a limit of N gives exactly N successes', async () => {
    const env = { REDIS_URL: redisUrl!, PROXY_REDIS_PREFIX: uniqueRedisPrefix('rpm') };
    const first = await readyProxy(env);
    const second = await readyProxy(env);
    await waitFor(() => first.logs.some((l) => l.includes('Redis rate limiter connected')) && second.logs.some((l) => l.includes('Redis rate limiter connected')));
    const clients = [world.client(shared.apiKey, first), world.client(shared.apiKey, second)];
    const results = await Promise.all(Array.from({ length: 10 }, (_, i) => attempt(clients[i % 2]!)));
    const statuses = results.map((r) => r.status).sort();
    expect(statuses).toEqual([200, 200, 200, 200, 429, 429, 429, 429, 429, 429]);
    for (const refused of results.filter((r) => r.status === 429)) {
      expect(refused.error).toBeInstanceOf(OpenAI.RateLimitError);
      expect((refused.error!.error as { message: string }).message).toBe('Rate limit exceeded');
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    }
    const remaining = results.filter((r) => r.status === 200).map((r) => r.headers.get('x-ratelimit-remaining-requests')).sort();
    expect(remaining).toEqual(['0', '1', '2', '3']);
    // Another organisation's pool is untouched.
    expect((await attempt(world.client(bystander.apiKey, second))).status).toBe(200);
  });

  it('fails closed with 503 when Redis cannot be reached, before any money or upstream traffic', async () => {
    const unused = createServer();
    await new Promise<void>((resolve) => unused.listen(0, '127.0.0.1', resolve));
    const { port } = unused.address() as { port: number };
    await new Promise<void>((resolve) => unused.close(() => resolve()));

    const proxy = await readyProxy({ REDIS_URL: `redis://127.0.0.1:${port}` });
    const before = { upstream: world.upstream.requests.length, reserve: world.ledger.calls.reserve.length };
    const result = await attempt(world.client(bystander.apiKey, proxy));
    expect(result.status).toBe(503);
    expect(result.error!.code).toBe('service_unavailable');
    expect({ upstream: world.upstream.requests.length, reserve: world.ledger.calls.reserve.length }).toEqual(before);
  });

  it.skipIf(!redisServerAvailable() && process.env.CI !== 'true')('while Redis is down admits the replica\'s exact share, then 429, then 503 past the bound; leasing resumes when Redis returns', async () => {
    let redis = await startRedisServer();
    const port = redis.port;
    try {
      // A limit of 5 over 2 replicas: this replica's share is floor(5 / 2) = 2 a minute.
      const proxy = await readyProxy({ REDIS_URL: `redis://127.0.0.1:${String(port)}`, PROXY_REPLICAS: '2', PROXY_RPM_DEGRADED_MS: '8000', PROXY_REDIS_PREFIX: uniqueRedisPrefix('rpm-degraded') });
      const readiness = async () => ((await (await fetch(`http://127.0.0.1:${String(proxy.ports.http)}/readyz`)).json()) as { status: string; dependencies: Record<string, string> });
      const gauge = async (name: string, labels: Record<string, string> = {}) => sumSamples(parsePrometheusText(await proxy.metrics.render()), name, labels);
      await expect.poll(async () => (await readiness()).dependencies.redis, { timeout: 5000, interval: 20 }).toBe('up');
      await redis.kill();
      await expect.poll(async () => (await readiness()).dependencies.redis, { timeout: 5000, interval: 20 }).toBe('down');

      const client = world.client(degraded.apiKey, proxy);
      const before = trafficOf(world);
      const statuses = [];
      for (let i = 0; i < 3; i += 1) statuses.push((await attempt(client)).status);
      expect(statuses).toEqual([200, 200, 429]);
      // Billing does not go through Redis: both admitted requests were reserved and settled.
      await waitFor(() => trafficOf(world).settle === before.settle + 2, 5000, 'settles');
      expect(trafficOf(world)).toMatchObject({ upstream: before.upstream + 2, reserve: before.reserve + 2 });
      // Degraded, and still ready: refusing readiness everywhere would turn admissions into connection errors.
      expect(await readiness()).toMatchObject({ status: 'ready', dependencies: { redis: 'down', rpm: 'degraded' } });
      expect(await gauge('gateway_proxy_redis_up', { client: 'rate_limiter' })).toBe(0);
      expect(await gauge('gateway_proxy_rpm_degraded')).toBe(1);
      expect(await gauge('gateway_proxy_redis_errors_total', { client: 'rate_limiter', kind: 'command' })).toBeGreaterThan(0);

      // Past PROXY_RPM_DEGRADED_MS the replica fails closed.
      await expect.poll(async () => (await readiness()).dependencies.rpm, { timeout: 10_000, interval: 50 }).toBe('failing_closed');
      const closed = await attempt(client);
      expect({ status: closed.status, code: closed.error?.code }).toEqual({ status: 503, code: 'service_unavailable' });
      expect(await gauge('gateway_proxy_rpm_degraded')).toBe(2);

      // Redis returns (empty: no persistence): the pool first counts the 2 admitted without it, so 3 more fit.
      redis = await startRedisServer({ port });
      await expect.poll(async () => (await readiness()).dependencies.redis, { timeout: 10_000, interval: 20 }).toBe('up');
      const after = [];
      for (let i = 0; i < 4; i += 1) after.push((await attempt(client)).status);
      expect(after).toEqual([200, 200, 200, 429]);
      expect(await readiness()).toMatchObject({ dependencies: { redis: 'up', rpm: 'shared' } });
      expect(await gauge('gateway_proxy_rpm_degraded')).toBe(0);
      expect(await gauge('gateway_proxy_redis_command_duration_seconds_count', { client: 'rate_limiter', outcome: 'ok' })).toBeGreaterThan(0);
    } finally {
      await redis.stop();
    }
  });
});
