import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gatewayModel, startProxyWorld, stateOf, tenant, waitFor, type ProxyWorld, type TestProxy } from './test-support/proxy-world.ts';

// The SSRF guard at connect time: a model the admin did not allow a
// private network must never reach a loopback upstream, whether its URL names it by a host name
// (`localhost` resolves to 127.0.0.1 through /etc/hosts, the honest offline stand-in for a
// public name that resolves to loopback) or by a literal address.
const acme = tenant('acme', { allowedGatewayModelSlugs: ['by-name', 'by-literal', 'allowed'] });
const upstreamCredential = 'sk-upstream-credential-123';
const creditMicros = 10_000_000n;

let world: ProxyWorld;
let proxy: TestProxy;
let client: OpenAI;

beforeAll(async () => {
  world = await startProxyWorld((baseUrl) => {
    const byName = baseUrl.replace('127.0.0.1', 'localhost');
    return stateOf([acme], [
      gatewayModel('by-name', byName, { allowPrivateNetwork: false }),
      gatewayModel('by-literal', baseUrl, { allowPrivateNetwork: false }),
      gatewayModel('allowed', byName, { allowPrivateNetwork: true }),
    ]);
  }, { requiredApiKey: upstreamCredential });
  world.ledger.credit('acme', creditMicros);
  proxy = await world.startProxy();
  await waitFor(() => proxy.isReady(), 5000, 'first snapshot');
  client = world.client(acme.apiKey);
});
afterAll(async () => { await world?.close(); });

describe('a model not allowed a private network', () => {
  it.each([
    ['by-name', false], ['by-literal', false], ['by-name', true], ['by-literal', true],
  ] as const)('%s (stream: %s) gets 502, the fake upstream receives nothing, and the Reserve is released', async (model, stream) => {
    const requestsBefore = world.upstream.requests.length;
    const releasesBefore = world.ledger.calls.release.length;
    const balance = world.ledger.account('acme')!;
    const response = await fetch(`${proxy.baseUrl}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${acme.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model, stream, messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(response.status).toBe(502);
    const text = await response.text();
    expect(JSON.parse(text)).toMatchObject({ error: { code: 'upstream_error' } });
    // The client learns nothing about the address or the guard.
    for (const detail of ['127.0.0.1', 'localhost', 'loopback', 'SSRF', 'REFUSED']) expect(text).not.toContain(detail);

    expect(world.upstream.requests.length).toBe(requestsBefore);
    const reservationId = world.ledger.calls.reserve.at(-1)!.reservationId;
    await waitFor(() => world.ledger.calls.release.length > releasesBefore, 5000, 'release');
    expect(world.ledger.calls.release.at(-1)).toMatchObject({ reservationId, reason: 'upstream_unreachable' });
    expect(world.ledger.reservationState(reservationId)).toBe('released');
    expect(world.ledger.account('acme')).toEqual(balance);
    // The operator's log says why.
    await waitFor(() => proxy.logs.some((line) => line.includes('ERR_UPSTREAM_ADDRESS_REFUSED') && line.includes('loopback')), 5000, 'log line');
  });
});

describe('a model the admin allowed a private network', () => {
  it('reaches the same loopback upstream by name and is billed', async () => {
    const requestsBefore = world.upstream.requests.length;
    const balance = world.ledger.account('acme')!;
    const completion = await client.chat.completions.create({ model: 'allowed', messages: [{ role: 'user', content: 'hi [[fake:reply_words=3]]' }] });
    expect(completion.model).toBe('allowed');
    expect(world.upstream.requests.length).toBe(requestsBefore + 1);
    await waitFor(() => world.ledger.account('acme')!.debitedMicros > balance.debitedMicros, 5000, 'settle');
    const after = world.ledger.account('acme')!;
    expect(after.creditedMicros).toBe(creditMicros);
    expect(after.availableMicros + after.heldMicros + after.debitedMicros).toBe(after.creditedMicros);
  });
});
