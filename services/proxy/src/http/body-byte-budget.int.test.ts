import { request as httpRequest, type ClientRequest, type IncomingMessage } from 'node:http';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gatewayModel, startProxyWorld, stateOf, tenant, waitFor, type ProxyWorld, type TestProxy } from '../test-support/proxy-world.ts';

// PROXY_MAX_INFLIGHT_BODY_BYTES end to end (docs/proxy.md, "Bad input"): a body
// that does not fit the budget of bytes being read is a 503 before any byte of it is read, moving
// no money, and the budget comes back once the bodies holding it have been read.

const acme = tenant('acme');
const creditMicros = 1_000_000_000n;
const maxBodyBytes = 64 * 1024;
// One body of the largest size fits, a second does not; a small identity body fits beside it.
const inflightBodyBytes = 100_000;

let world: ProxyWorld;
let proxy: TestProxy;

beforeAll(async () => {
  world = await startProxyWorld((baseUrl) => stateOf([acme], [gatewayModel('chat', baseUrl)]));
  world.ledger.credit('acme', creditMicros);
  proxy = await world.startProxy({ PROXY_MAX_BODY_BYTES: String(maxBodyBytes), PROXY_MAX_INFLIGHT_BODY_BYTES: String(inflightBodyBytes) });
  await waitFor(() => proxy.isReady(), 5000, 'first snapshot');
});
afterAll(async () => { await world?.close(); });

function traffic() {
  return { upstream: world.upstream.requests.length, reserve: world.ledger.calls.reserve.length, settle: world.ledger.calls.settle.length };
}

const chatBody = (words: number) => JSON.stringify({ model: 'chat', max_tokens: 5, messages: [{ role: 'user', content: `${'word '.repeat(words)}[[fake:reply_words=2]]` }] });

/** A gzip body (its decoded size unknown to the proxy until read: it holds the whole per-body limit). */
async function postGzip(path = '/v1/chat/completions'): Promise<Response> {
  return fetch(`${proxy.baseUrl.replace(/\/v1$/, '')}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${acme.apiKey}`, 'content-type': 'application/json', 'content-encoding': 'gzip' },
    body: gzipSync(chatBody(2000)),
  });
}

/**
 * Starts a chunked request whose body has not finished arriving, and resolves once the proxy has
 * taken its share of the budget: Node answers `Expect: 100-continue` and runs the route's handler
 * (which takes the share synchronously, before its first await) in the same turn, so the client's
 * `continue` event is the state to wait for.
 */
async function startSlowBody(extraHeaders: Record<string, string> = {}): Promise<{ request: ClientRequest; response: Promise<IncomingMessage> }> {
  const url = new URL(`${proxy.baseUrl}/chat/completions`);
  const request = httpRequest({
    host: url.hostname, port: url.port, path: url.pathname, method: 'POST',
    headers: { authorization: `Bearer ${acme.apiKey}`, 'content-type': 'application/json', 'transfer-encoding': 'chunked', expect: '100-continue', ...extraHeaders },
  });
  const response = new Promise<IncomingMessage>((resolve, reject) => { request.once('response', resolve); request.once('error', reject); });
  const continued = new Promise<void>((resolve) => request.once('continue', resolve));
  request.flushHeaders();
  await continued;
  return { request, response };
}

async function readAll(response: IncomingMessage): Promise<string> {
  let text = '';
  for await (const chunk of response) text += String(chunk);
  return text;
}

describe('the budget of body bytes being read at once', () => {
  it('answers 503 with retry-after: 1 to a large body while another is still arriving, moving no money, and takes it once the budget is back', async () => {
    const slow = await startSlowBody();
    const body = chatBody(10);
    slow.request.write(body.slice(0, 20));

    const before = traffic();
    const refused = await postGzip();
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('1');
    expect(refused.headers.get('x-ratelimit-remaining-requests')).toBeNull(); // refused before the RPM count
    expect(await refused.json()).toEqual({
      error: { message: 'The gateway is reading too many large request bodies at once. Try again shortly.', type: 'api_error', param: null, code: 'service_unavailable' },
    });
    // The Messages surface refuses it in Anthropic's shape, as overloaded (its clients retry).
    const refusedMessages = await postGzip('/v1/messages');
    expect(refusedMessages.status).toBe(503);
    expect(((await refusedMessages.json()) as { error: { type: string } }).error.type).toBe('overloaded_error');
    expect(traffic()).toEqual(before);
    expect(world.ledger.account('acme')).toMatchObject({ heldMicros: 0n, debitedMicros: 0n });

    // The budget counts bytes, not requests: a small identity body still fits beside the slow one.
    const small = await fetch(`${proxy.baseUrl}/chat/completions`, {
      method: 'POST', headers: { authorization: `Bearer ${acme.apiKey}`, 'content-type': 'application/json' }, body: chatBody(3),
    });
    expect(small.status).toBe(200);

    // The slow body ends, is answered, and gives its share back.
    slow.request.end(body.slice(20));
    const answered = await slow.response;
    expect(answered.statusCode).toBe(200);
    await readAll(answered);

    const served = await postGzip();
    expect(served.status).toBe(200);
    await proxy.idle();
    // Three served requests, each reserved and settled once (ONE_OUTCOME); none for the refusals.
    expect(traffic()).toEqual({ upstream: before.upstream + 3, reserve: before.reserve + 3, settle: before.settle + 3 });
    const account = world.ledger.account('acme')!;
    expect(account.heldMicros).toBe(0n);
    const settled = world.ledger.calls.settle.slice(before.settle).reduce((sum, settle) => sum + settle.costMicros, 0n);
    expect(settled).toBeGreaterThan(0n);
    expect(account.debitedMicros).toBe(settled);
    expect(account.availableMicros).toBe(creditMicros - settled); // CONSERVATION
  });

  it('gives back the share of a compressed body whose client went away before its end (it was held for good: every later large body a 503)', async () => {
    const cut = await startSlowBody({ 'content-encoding': 'gzip' });
    cut.response.catch(() => {});
    cut.request.on('error', () => {});
    cut.request.write(gzipSync(chatBody(2000)).subarray(0, 100));
    // While it is held, a second large body does not fit.
    expect((await postGzip()).status).toBe(503);
    const before = traffic();
    cut.request.destroy();
    // The state to wait for: a large body fits again (a 503 until the aborted read has given its share back).
    let served: Response | undefined;
    const deadline = Date.now() + 5_000;
    while (served === undefined) {
      const attempt = await postGzip();
      if (attempt.status === 200) served = attempt;
      else if (Date.now() > deadline) throw new Error(`a large body is still refused (${attempt.status}) after the cut one's client went away`);
      else { await attempt.body?.cancel(); await new Promise((resolve) => setTimeout(resolve, 20)); }
    }
    await served.text();
    await proxy.idle();
    // The cut request reached neither the upstream nor the ledger; the served one once each.
    expect(traffic()).toEqual({ upstream: before.upstream + 1, reserve: before.reserve + 1, settle: before.settle + 1 });
  });
});
