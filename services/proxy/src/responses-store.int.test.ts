/**
 * Stored Responses at the proxy, against a real ledger peer, config peer and fake upstream, and
 * real Redis where the store is Redis: a continuation's Reserve is the whole prompt's; records are
 * sealed at rest and bound to their organisation; with the store down, a continuation is a 503
 * before any Reserve and a new response is still answered and billed once, marked not stored; an
 * organisation with storing off refuses `store: true` and item_references.
 */
import { createServer } from 'node:net';
import { Redis } from 'ioredis';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { leakMarkers } from '@gateway/fake-upstream';
import { testRedisUrl } from '@gateway/testkit';
import { gatewayModel, startProxyWorld, stateOf, tenant, trafficOf, waitFor, type ProxyWorld, type TestProxy } from './test-support/proxy-world.ts';

const acme = tenant('acme');
const other = tenant('other');
const storeless = tenant('storeless', { responseStoreDisabled: true });
const upstreamCredential = 'sk-upstream-credential-123';
const redisUrl = testRedisUrl();

/** A TCP port nothing listens on (bound, then closed): a Redis that is down. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

let world: ProxyWorld;
let proxy: TestProxy;

beforeAll(async () => {
  world = await startProxyWorld((baseUrl) => stateOf([acme, other, storeless], [gatewayModel('chat', baseUrl)]), { requiredApiKey: upstreamCredential });
  for (const id of ['acme', 'other', 'storeless']) world.ledger.credit(id, 100_000_000n);
  proxy = await world.startProxy();
  await waitFor(() => proxy.isReady(), 5000, 'first snapshot');
});
afterAll(async () => { await world?.close(); });

describe('continuing a stored response', () => {
  it('reserves for the whole prompt: the same Reserve as the conversation sent in full with store: false', async () => {
    const client = world.client(acme.apiKey);
    const first = await client.responses.create({ model: 'chat', input: 'One two three [[fake:reply_words=5]]' });
    await proxy.idle();
    await client.responses.create({ model: 'chat', previous_response_id: first.id, input: 'Four five' });
    await proxy.idle();
    const continued = world.ledger.calls.reserve.at(-1)!.amountMicros;
    await client.responses.create({
      model: 'chat', store: false,
      input: [{ role: 'user', content: [{ type: 'input_text', text: 'One two three [[fake:reply_words=5]]' }] }, first.output[0] as never, { role: 'user', content: 'Four five' }],
    });
    await proxy.idle();
    const inFull = world.ledger.calls.reserve.at(-1)!.amountMicros;
    expect(continued).toBe(inFull);
    const alone = await client.responses.create({ model: 'chat', store: false, input: 'Four five' });
    await proxy.idle();
    expect(alone.usage!.input_tokens).toBeLessThan(first.usage!.input_tokens);
    expect(world.ledger.calls.reserve.at(-1)!.amountMicros).toBeLessThan(continued);
  });

  it('GET and input_items conceal the upstream as the POST did: no upstream id, model name or vendor field in their bytes', async () => {
    const created = await world.client(acme.apiKey).responses.create({ model: 'chat', input: 'Look it up [[fake:tool_call=lookup]] [[fake:tool_text=2]]', tools: [{ type: 'function', name: 'lookup', parameters: { type: 'object' }, strict: false }] });
    for (const path of [`/responses/${created.id}`, `/responses/${created.id}/input_items`]) {
      const answer = await fetch(`${proxy.baseUrl}${path}`, { headers: { authorization: `Bearer ${acme.apiKey}` } });
      const text = await answer.text();
      expect(answer.status).toBe(200);
      expect(leakMarkers.all.filter((marker) => text.includes(marker)), path).toEqual([]);
    }
    const fetched = await world.client(acme.apiKey).responses.retrieve(created.id);
    expect(fetched.output.map((item) => item.type)).toEqual(['message', 'function_call']);
    expect(fetched.model).toBe('chat');
  });
});

describe('an organisation with storing off', () => {
  it('refuses store: true naming store and an item_reference naming the item, before any Reserve; serves an absent store unstored', async () => {
    await proxy.idle();
    const before = trafficOf(world);
    const client = world.client(storeless.apiKey);
    const store = await client.responses.create({ model: 'chat', input: 'x', store: true }).catch((e: unknown) => e);
    expect((store as InstanceType<typeof OpenAI.BadRequestError>).error).toMatchObject({ param: 'store', code: 'invalid_request' });
    const previous = await client.responses.create({ model: 'chat', input: 'x', previous_response_id: 'resp_00000000-0000-4000-8000-000000000000' }).catch((e: unknown) => e);
    expect((previous as InstanceType<typeof OpenAI.BadRequestError>).error).toMatchObject({ param: 'previous_response_id' });
    const reference = await client.responses.create({ model: 'chat', input: [{ role: 'user', content: 'x' }, { type: 'item_reference', id: 'msg_1' }] }).catch((e: unknown) => e);
    expect((reference as InstanceType<typeof OpenAI.BadRequestError>).error).toMatchObject({ param: 'input[1]' });
    expect((reference as Error).message).toContain('turned off for this organisation');
    expect(trafficOf(world)).toEqual(before);
    const served = await client.responses.create({ model: 'chat', input: 'x [[fake:reply_words=1]]' });
    expect((served as unknown as { store: boolean }).store).toBe(false);
  });
});

describe.skipIf(!redisUrl)('stored in Redis', () => {
  let redisProxy: TestProxy;
  let redis: Redis;
  const prefix = `resp-int-${Date.now()}:`;

  beforeAll(async () => {
    redisProxy = await world.startProxy({ REDIS_URL: redisUrl!, PROXY_REDIS_PREFIX: `rpm-int-${Date.now()}:`, PROXY_RESPONSE_STORE_PREFIX: prefix });
    await waitFor(() => redisProxy.isReady(), 5000, 'first snapshot');
    // Both Redis connections up (the RPM pool fails closed until then), as /readyz names them.
    const deadline = Date.now() + 5000;
    for (;;) {
      const body = await (await fetch(`${redisProxy.baseUrl.slice(0, -'/v1'.length)}/readyz`)).text();
      if (body.includes('"redis":"up"') && body.includes('"response_store":"up"')) break;
      if (Date.now() > deadline) throw new Error(`Redis not up: ${body}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    redis = new Redis(redisUrl!);
  });
  afterAll(() => { redis?.disconnect(); });

  it('is sealed at rest, expires by Redis\'s own clock, and a record moved under another organisation does not open', async () => {
    const secret = 'The launch code is swordfish';
    const a = await world.client(acme.apiKey, redisProxy).responses.create({ model: 'chat', input: `${secret} [[fake:reply_words=2]]` });
    const key = `${prefix}acme:${a.id}`;
    const sealed = await redis.getBuffer(key);
    expect(sealed).not.toBeNull();
    expect(sealed!.includes(Buffer.from('swordfish'))).toBe(false);
    expect(sealed!.includes(Buffer.from('w1 w2'))).toBe(false);
    const ttlMs = await redis.pttl(key);
    // The platform's default retention (the config peer sends none): 30 days.
    expect(ttlMs).toBeGreaterThan(29 * 24 * 3600 * 1000);

    // The same bytes under another organisation's name: they do not open there (the organisation is in the key and the associated data).
    await redis.set(`${prefix}other:${a.id}`, sealed!, 'PX', 60_000);
    expect(await world.client(other.apiKey, redisProxy).responses.retrieve(a.id).catch((e: unknown) => e)).toBeInstanceOf(OpenAI.NotFoundError);
    expect((await world.client(acme.apiKey, redisProxy).responses.retrieve(a.id)).id).toBe(a.id);
  });
});

describe('with the store down', () => {
  let downProxy: TestProxy;

  beforeAll(async () => {
    downProxy = await world.startProxy({ PROXY_RESPONSE_STORE_REDIS_URL: `redis://127.0.0.1:${await closedPort()}` });
    await waitFor(() => downProxy.isReady(), 5000, 'first snapshot');
  });

  it('a continuation and a GET are a 503 before any Reserve; a new response is answered, billed once, and says store: false', async () => {
    const client = world.client(acme.apiKey, downProxy);
    await downProxy.idle();
    const before = trafficOf(world);
    const continued = await client.responses.create({ model: 'chat', input: 'x', previous_response_id: 'resp_00000000-0000-4000-8000-000000000000' }).catch((e: unknown) => e);
    expect(continued).toBeInstanceOf(OpenAI.InternalServerError);
    expect((continued as InstanceType<typeof OpenAI.InternalServerError>).status).toBe(503);
    expect((continued as Error).message).toContain('Stored responses cannot be read right now');
    const fetched = await client.responses.retrieve('resp_00000000-0000-4000-8000-000000000000').catch((e: unknown) => e);
    expect((fetched as InstanceType<typeof OpenAI.InternalServerError>).status).toBe(503);
    expect(trafficOf(world)).toEqual(before);

    const served = await client.responses.create({ model: 'chat', input: 'Kept? [[fake:reply_words=3]]' });
    await downProxy.idle();
    expect(served).toMatchObject({ status: 'completed', store: false, output_text: 'w1 w2 w3' });
    expect(trafficOf(world)).toEqual({ ...before, upstream: before.upstream + 1, reserve: before.reserve + 1, settle: before.settle + 1 });
    expect(downProxy.logs.join('')).toContain('response billed and returned but not stored');
  });
});
