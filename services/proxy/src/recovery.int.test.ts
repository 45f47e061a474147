import { freePort, testRedisUrl, uniqueRedisPrefix } from '@gateway/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gatewayModel, startProxyWorld, stateOf, tenant, waitFor, type ProxyWorld, type TestProxy } from './test-support/proxy-world.ts';

const acme = tenant('acme');
const hello = [{ role: 'user' as const, content: 'hi [[fake:reply_words=2]]' }];
const redisUrl = testRedisUrl();

/**
 * How long each peer stays down. With grpc-js's default backoff (1 s, ×1.6, ±20 %, up to
 * 120 s) the attempts after a drop fall near 1, 2.6, 5.2, 9.3, 15.8 and 26.3 s: a peer back at
 * 18 s was found only about 8 s later. With the capped backoff it is found within about 2 s.
 */
const outageMs = 18_000;
/** The bound on waiting for recovery after a peer is back (a bound, not a timing assertion). */
const recoveryBoundMs = 5_000;
/** Gap between the requests that keep arriving during the ledger's outage, ms: the load's pace, not a wait for a state. */
const outageRequestGapMs = 1_000;
/** Gap between attempts while polling for recovery, ms. */
const pollGapMs = 100;

/**
 * Lets `ms` pass while the world keeps running. Used only for the outage itself, whose length is
 * the fault injected (see outageMs), and to pace requests; every wait for a state is a poll.
 */
function during(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** The /readyz answer of a proxy: status code and body. */
async function readyz(proxy: TestProxy): Promise<{ status: number; body: { status: string; dependencies: Record<string, string> } }> {
  const response = await fetch(`http://127.0.0.1:${proxy.ports.http}/readyz`);
  return { status: response.status, body: await response.json() as { status: string; dependencies: Record<string, string> } };
}

/** Sends one chat completion; resolves with the HTTP status (200 or the error's). */
async function chat(world: ProxyWorld, proxy: TestProxy): Promise<number> {
  return world.client(acme.apiKey, proxy).chat.completions.create({ model: 'chat', messages: hello })
    .then(() => 200, (error: { status?: number }) => error.status ?? 0);
}

/**
 * After an outage of the admin or the ledger, the proxy's channels come
 * back within a few seconds of the peer (capped reconnect backoff, keepalive), not 6-21 s later.
 */
describe('recovery of the internal gRPC channels', () => {
  let world: ProxyWorld;

  beforeAll(async () => {
    world = await startProxyWorld((baseUrl) => stateOf([acme], [gatewayModel('chat', baseUrl)]), { heartbeatIntervalMs: 100 });
    world.ledger.credit('acme', 10_000_000n);
  });

  afterAll(async () => {
    await world?.close();
  });

  it('holds a fresh snapshot again within 5 s of the admin coming back after an 18 s outage', async () => {
    const proxy = await world.startProxy({ PROXY_CONFIG_STALENESS_MS: '1000' });
    await waitFor(() => proxy.isReady(), 10_000, 'first snapshot');

    await world.admin.stop();
    await waitFor(() => !proxy.isReady(), 10_000, 'stale snapshot once the admin is gone');
    expect((await readyz(proxy)).body).toMatchObject({ status: 'not_ready', dependencies: { config: 'stale' } });
    await during(outageMs);
    await world.admin.restart();

    await waitFor(() => proxy.isReady(), recoveryBoundMs, 'a fresh snapshot within 5 s of the admin restart');
    expect(await chat(world, proxy)).toBe(200);
  }, 60_000);

  it('reserves again within 5 s of the ledger coming back after an 18 s outage, and stays ready throughout', async () => {
    const proxy = await world.startProxy();
    await waitFor(() => proxy.isReady(), 10_000, 'first snapshot');
    expect(await chat(world, proxy)).toBe(200);
    const before = world.ledger.account('acme')!;

    await world.ledger.stop();
    // Traffic keeps arriving during the outage: each request is a clean 503, and the proxy stays
    // ready (every replica shares the ledger; unready everywhere helps nobody).
    const outageEnds = Date.now() + outageMs;
    while (Date.now() < outageEnds) {
      expect(await chat(world, proxy)).toBe(503);
      expect(proxy.isReady()).toBe(true);
      await during(outageRequestGapMs);
    }
    expect((await readyz(proxy))).toMatchObject({ status: 200, body: { status: 'ready', dependencies: { config: 'fresh', ledger: 'down' } } });
    await world.ledger.restart();

    const deadline = Date.now() + recoveryBoundMs;
    let status = 0;
    while (status !== 200 && Date.now() < deadline) {
      status = await chat(world, proxy);
      if (status !== 200) await during(pollGapMs);
    }
    expect(status, 'a Reserve within 5 s of the ledger restart').toBe(200);
    await proxy.idle(5_000);
    // The refused requests held nothing; the one that passed was reserved and settled.
    const after = world.ledger.account('acme')!;
    expect(after.heldMicros).toBe(0n);
    expect(after.debitedMicros).toBeGreaterThan(before.debitedMicros);
    expect(after.creditedMicros).toBe(after.availableMicros + after.heldMicros + after.debitedMicros);
  }, 60_000);
});

describe('/readyz of the proxy', () => {
  let world: ProxyWorld;

  beforeAll(async () => {
    world = await startProxyWorld((baseUrl) => stateOf([acme], [gatewayModel('chat', baseUrl)]), { heartbeatIntervalMs: 100 });
    world.ledger.credit('acme', 10_000_000n);
  });

  afterAll(async () => {
    await world?.close();
  });

  it.skipIf(!redisUrl)('is ready with a fresh snapshot, naming redis, ledger and config as up, the RPM pools shared, and the settle outbox\'s depth', async () => {
    const proxy = await world.startProxy({ REDIS_URL: redisUrl!, PROXY_REDIS_PREFIX: uniqueRedisPrefix('readyz') });
    await waitFor(() => proxy.isReady(), 10_000, 'first snapshot');
    expect(await chat(world, proxy)).toBe(200);
    // Once its Settle is answered, the outbox is empty (its depth is what a SIGKILL would lose).
    expect(await proxy.idle()).toBe(true);
    expect(await readyz(proxy)).toEqual({
      status: 200, body: { status: 'ready', dependencies: { config: 'fresh', ledger: 'up', redis: 'up', response_store: 'up', rpm: 'shared', settle_outbox: '0' } },
    });
  });

  it('stays ready when Redis is unreachable (each request is a 503), and names redis down', async () => {
    const deadRedis = `redis://127.0.0.1:${await freePort()}`;
    const proxy = await world.startProxy({ REDIS_URL: deadRedis });
    await waitFor(() => proxy.isReady(), 10_000, 'first snapshot');
    expect(await chat(world, proxy)).toBe(503);
    expect(await readyz(proxy)).toMatchObject({ status: 200, body: { status: 'ready', dependencies: { config: 'fresh', redis: 'down' } } });
  });

  it('is not ready before its first snapshot and once shutting down', async () => {
    world.admin.setSilent(true);
    const proxy = await world.startProxy({ PROXY_ID: 'silent-admin', PROXY_CONFIG_STALENESS_MS: '1000' });
    try {
      expect(await readyz(proxy)).toMatchObject({ status: 503, body: { status: 'not_ready', dependencies: { config: 'none', redis: 'in_process' } } });
    } finally {
      world.admin.setSilent(false);
    }
    await waitFor(() => proxy.isReady(), 10_000, 'snapshot once the admin answers');
    const closing = proxy.close();
    expect(proxy.isReady()).toBe(false);
    await closing;
  });
});
