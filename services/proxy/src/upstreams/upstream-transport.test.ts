import { createServer, type Server } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeUpstream, type FakeUpstream } from '@gateway/fake-upstream';
import type { HostResolver } from '@gateway/address-policy';
import { UpstreamTransport } from './upstream-transport.ts';

/** A table resolver: names a test controls, so a "public" name can resolve to loopback offline. */
const names: Record<string, Array<{ address: string; family: 4 | 6 }>> = {
  'rebound.example.test': [{ address: '127.0.0.1', family: 4 }],
  'mixed.example.test': [{ address: '127.0.0.1', family: 4 }, { address: '8.8.8.8', family: 4 }],
};
const resolve: HostResolver = async (hostname) => {
  const addresses = names[hostname];
  if (addresses === undefined) throw Object.assign(new Error(`no such name ${hostname}`), { code: 'ENOTFOUND' });
  return addresses;
};

const chatRequest = {
  path: '/chat/completions',
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }),
};

let upstream: FakeUpstream;
/** A bare TCP listener counting every connection made to it: the SSRF guard must open none. */
let listener: Server;
let listenerPort: number;
let connections = 0;
let transport: UpstreamTransport;

beforeAll(async () => {
  upstream = await startFakeUpstream();
  listener = createServer((socket) => { connections += 1; socket.destroy(); });
  await new Promise<void>((done) => listener.listen(0, '127.0.0.1', done));
  listenerPort = (listener.address() as AddressInfo).port;
  transport = new UpstreamTransport({ connectTimeoutMs: 2_000, firstByteTimeoutMs: 5_000, idleTimeoutMs: 5_000, totalTimeoutMs: 10_000, resolve });
});

afterAll(async () => {
  await transport.close();
  await upstream.close();
  await new Promise<void>((done) => listener.close(() => done()));
});

describe('UpstreamTransport SSRF guard at connect time', () => {
  it.each([
    ['a name that resolves to loopback', (port: number) => `http://rebound.example.test:${port}/v1`, /rebound\.example\.test resolves to 127\.0\.0\.1, loopback/],
    ['a name with one loopback address among public ones', (port: number) => `http://mixed.example.test:${port}/v1`, /resolves to 127\.0\.0\.1/],
    ['a literal loopback address', (port: number) => `http://127.0.0.1:${port}/v1`, /127\.0\.0\.1 is loopback/],
    ['an https URL whose name resolves to loopback (refused before TLS)', (port: number) => `https://rebound.example.test:${port}/v1`, /resolves to 127\.0\.0\.1/],
    ['an https URL with a literal loopback address', (port: number) => `https://127.0.0.1:${port}/v1`, /127\.0\.0\.1 is loopback/],
    ['an IPv4-mapped literal', (port: number) => `http://[::ffff:127.0.0.1]:${port}/v1`, /IPv4-mapped loopback/],
    ['an IPv4-translated literal', (port: number) => `http://[::ffff:0:7f00:1]:${port}/v1`, /IPv4-translated/],
    ['a 6to4 literal', (port: number) => `http://[2002:7f00:1::]:${port}/v1`, /6to4/],
  ])('refuses %s when the model is not allowed private, before any connection', async (_, urlOf, reason) => {
    const before = connections;
    const outcome = await transport.send({ baseUrl: urlOf(listenerPort), allowPrivateNetwork: false }, chatRequest);
    expect(outcome).toMatchObject({ kind: 'unreachable' });
    expect(outcome.kind === 'unreachable' && outcome.reason).toMatch(reason);
    expect(outcome.kind === 'unreachable' && outcome.reason).toMatch(/ERR_UPSTREAM_ADDRESS_REFUSED/);
    expect(connections).toBe(before);
  });

  it('refuses a streamed call the same way (unreachable: the Reserve is released)', async () => {
    upstream.requests.length = 0;
    const port = upstream.port;
    const outcome = await transport.openStream({ baseUrl: `http://rebound.example.test:${port}/v1` }, chatRequest, new AbortController().signal);
    expect(outcome).toMatchObject({ kind: 'unreachable' });
    expect(upstream.requests).toHaveLength(0);
  });

  it('treats an absent flag as not allowed (fail closed)', async () => {
    upstream.requests.length = 0;
    const outcome = await transport.send({ baseUrl: upstream.baseUrl }, chatRequest);
    expect(outcome).toMatchObject({ kind: 'unreachable' });
    expect(upstream.requests).toHaveLength(0);
  });

  it('connects to the same loopback upstream when the admin allowed the model private', async () => {
    upstream.requests.length = 0;
    const byName = await transport.send({ baseUrl: `http://rebound.example.test:${upstream.port}/v1`, allowPrivateNetwork: true }, chatRequest);
    expect(byName).toMatchObject({ kind: 'response', statusCode: 200 });
    const byLiteral = await transport.send({ baseUrl: upstream.baseUrl, allowPrivateNetwork: true }, chatRequest);
    expect(byLiteral).toMatchObject({ kind: 'response', statusCode: 200 });
    expect(upstream.requests).toHaveLength(2);
  });

  it('does not let a checked call reuse a connection opened for an allowed model', async () => {
    // The allowed calls above left a pooled keep-alive connection to this origin.
    upstream.requests.length = 0;
    const outcome = await transport.send({ baseUrl: upstream.baseUrl, allowPrivateNetwork: false }, chatRequest);
    expect(outcome).toMatchObject({ kind: 'unreachable' });
    expect(upstream.requests).toHaveLength(0);
  });
});

describe('UpstreamTransport non-streaming outcomes', () => {
  /** An HTTP upstream whose answer each test scripts. */
  async function scriptedUpstream(answer: (res: import('node:http').ServerResponse) => void) {
    const { createServer: createHttpServer } = await import('node:http');
    const server = createHttpServer((req, res) => { req.resume(); req.on('end', () => answer(res)); });
    await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
    const endpoint = { baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`, allowPrivateNetwork: true };
    return { endpoint, close: () => new Promise<void>((done) => { server.closeAllConnections(); server.close(() => done()); }) };
  }

  it('collects a JSON answer sent in many pieces (multi-byte characters split between them), call after call', async () => {
    const upstream = await scriptedUpstream((res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      const text = JSON.stringify({ id: 'x', text: 'é'.repeat(5000) });
      for (let i = 0; i < text.length; i += 700) res.write(text.slice(i, i + 700));
      res.end();
    });
    try {
      for (let i = 0; i < 3; i += 1) {
        expect(await transport.send(upstream.endpoint, chatRequest)).toEqual({ kind: 'response', statusCode: 200, json: { id: 'x', text: 'é'.repeat(5000) } });
      }
    } finally { await upstream.close(); }
  });

  it('answers http_error for a non-2xx (its body discarded), failed for a body that is not JSON or too large', async () => {
    let body = '';
    let status = 200;
    const upstream = await scriptedUpstream((res) => { res.writeHead(status, { 'content-type': 'application/json' }); res.end(body); });
    const small = new UpstreamTransport({ connectTimeoutMs: 2_000, firstByteTimeoutMs: 5_000, idleTimeoutMs: 5_000, totalTimeoutMs: 10_000, maxResponseBytes: 1000, resolve });
    try {
      status = 503; body = '{"error":"vendor secret"}';
      expect(await small.send(upstream.endpoint, chatRequest)).toEqual({ kind: 'http_error', statusCode: 503 });
      status = 200; body = 'not json';
      expect(await small.send(upstream.endpoint, chatRequest)).toEqual({ kind: 'failed', reason: 'response body is not JSON' });
      body = JSON.stringify({ text: 'x'.repeat(2000) });
      expect(await small.send(upstream.endpoint, chatRequest)).toEqual({ kind: 'failed', reason: 'ResponseTooLargeError' });
      body = '{}';
      expect(await small.send(upstream.endpoint, chatRequest)).toEqual({ kind: 'response', statusCode: 200, json: {} });
    } finally { await small.close(); await upstream.close(); }
  });

  it('keeps a 429\'s or 503\'s Retry-After (seconds or a date) for routing, and times an attempt out when its headers are late', async () => {
    let headers: Record<string, string> = {};
    let status = 429;
    const upstream = await scriptedUpstream((res) => {
      if (status === 0) return; // never answers
      res.writeHead(status, { 'content-type': 'application/json', ...headers });
      res.end('{"error":"vendor secret"}');
    });
    try {
      headers = { 'retry-after': '7' };
      expect(await transport.send(upstream.endpoint, chatRequest)).toEqual({ kind: 'http_error', statusCode: 429, retryAfterMs: 7_000 });
      status = 503;
      headers = { 'retry-after': new Date(Date.now() + 60_000).toUTCString() };
      const dated = await transport.send(upstream.endpoint, chatRequest);
      expect(dated).toMatchObject({ kind: 'http_error', statusCode: 503 });
      expect((dated as { retryAfterMs: number }).retryAfterMs).toBeGreaterThan(50_000);
      status = 500;
      expect(await transport.send(upstream.endpoint, chatRequest)).toEqual({ kind: 'http_error', statusCode: 500 });
      status = 429;
      headers = { 'retry-after': 'soon' };
      expect(await transport.send(upstream.endpoint, chatRequest)).toEqual({ kind: 'http_error', statusCode: 429 });
      status = 0;
      expect(await transport.send(upstream.endpoint, chatRequest, { headersTimeoutMs: 100 })).toEqual({ kind: 'timeout', reason: "no response headers within the attempt's 100 ms" });
      // An attempt's share of the whole-call time, when it is the shorter limit.
      expect(await transport.send(upstream.endpoint, chatRequest, { headersTimeoutMs: 5_000, totalTimeoutMs: 80 })).toEqual({ kind: 'timeout', reason: 'no complete answer within 80 ms' });
      expect(await transport.openStream(upstream.endpoint, chatRequest, new AbortController().signal, { headersTimeoutMs: 100 }))
        .toEqual({ kind: 'timeout', reason: "no response headers within the attempt's 100 ms" });
    } finally { await upstream.close(); }
  });

  it('times out a body that never ends within the total time, and a refused connection is unreachable', async () => {
    const upstream = await scriptedUpstream((res) => { res.writeHead(200, { 'content-type': 'application/json' }); res.write('{"partial":'); });
    const quick = new UpstreamTransport({ connectTimeoutMs: 2_000, firstByteTimeoutMs: 5_000, idleTimeoutMs: 5_000, totalTimeoutMs: 200, resolve });
    try {
      expect(await quick.send(upstream.endpoint, chatRequest)).toEqual({ kind: 'timeout', reason: 'no complete answer within 200 ms' });
      const closed = await scriptedUpstream(() => undefined);
      await closed.close();
      expect(await quick.send(closed.endpoint, chatRequest)).toMatchObject({ kind: 'unreachable', reason: expect.stringMatching(/ECONNREFUSED/) });
    } finally { await quick.close(); await upstream.close(); }
  });
});

describe('UpstreamTransport streamed calls', () => {
  /** An HTTP upstream whose streamed answer each test scripts; resolves `closed` when a response's connection closes. */
  async function scriptedStream(answer: (res: import('node:http').ServerResponse) => void) {
    const { createServer: createHttpServer } = await import('node:http');
    let closedConnections = 0;
    const server = createHttpServer((req, res) => { req.resume(); req.on('end', () => answer(res)); });
    server.on('connection', (socket) => { socket.on('close', () => { closedConnections += 1; }); });
    await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
    const endpoint = { baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`, allowPrivateNetwork: true };
    return { endpoint, closedConnections: () => closedConnections, close: () => new Promise<void>((done) => { server.closeAllConnections(); server.close(() => done()); }) };
  }
  async function until(condition: () => boolean): Promise<void> {
    while (!condition()) await new Promise((resolve) => setImmediate(resolve));
  }

  it('hands a slow reader every byte of a large body (the connection paused, then resumed), and a non-2xx is http_error', async () => {
    const piece = 'x'.repeat(16 * 1024);
    let status = 200;
    const upstream = await scriptedStream((res) => {
      res.writeHead(status, { 'content-type': 'text/event-stream' });
      for (let i = 0; i < 64; i += 1) res.write(piece);
      res.end();
    });
    try {
      const opened = await transport.openStream(upstream.endpoint, chatRequest, new AbortController().signal);
      if (opened.kind !== 'stream') throw new Error(`no stream: ${opened.kind}`);
      let received = 0;
      for await (const bytes of opened.stream.body) {
        received += bytes.length;
        await new Promise((resolve) => setTimeout(resolve, 1)); // a slow client
      }
      opened.stream.close();
      expect(received).toBe(64 * piece.length);
      status = 503;
      expect(await transport.openStream(upstream.endpoint, chatRequest, new AbortController().signal)).toEqual({ kind: 'http_error', statusCode: 503 });
    } finally { await upstream.close(); }
  });

  it('fails the body as aborted by the gateway when the signal fires, and as a timeout on an idle gap', async () => {
    const upstream = await scriptedStream((res) => { res.writeHead(200, { 'content-type': 'text/event-stream' }); res.write('data: first\n\n'); });
    const idle = new UpstreamTransport({ connectTimeoutMs: 2_000, firstByteTimeoutMs: 5_000, idleTimeoutMs: 150, totalTimeoutMs: 10_000, resolve });
    try {
      const stop = new AbortController();
      const opened = await transport.openStream(upstream.endpoint, chatRequest, stop.signal);
      if (opened.kind !== 'stream') throw new Error(`no stream: ${opened.kind}`);
      const reader = opened.stream.body[Symbol.asyncIterator]();
      expect((await reader.next()).done).toBe(false);
      const pending = reader.next();
      stop.abort('client_closed');
      const error = await pending.then(() => undefined, (e: unknown) => e);
      expect(opened.stream.failureOf(error)).toEqual({ kind: 'failed', reason: 'aborted by the gateway' });
      opened.stream.close();

      const idled = await idle.openStream(upstream.endpoint, chatRequest, new AbortController().signal);
      if (idled.kind !== 'stream') throw new Error(`no stream: ${idled.kind}`);
      const failure = await (async () => { try { for await (const _ of idled.stream.body) { /* read */ } } catch (e) { return idled.stream.failureOf(e); } return undefined; })();
      expect(failure).toMatchObject({ kind: 'timeout', reason: expect.stringMatching(/UND_ERR_BODY_TIMEOUT/) });
      idled.stream.close();
    } finally { await idle.close(); await upstream.close(); }
  });

  it('cuts the connection of a body still open at close() (an upstream lingering after [DONE])', async () => {
    const upstream = await scriptedStream((res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: [DONE]\n\n');
    });
    try {
      const lingering = await transport.openStream(upstream.endpoint, chatRequest, new AbortController().signal);
      if (lingering.kind !== 'stream') throw new Error(`no stream: ${lingering.kind}`);
      for await (const _ of lingering.stream.body) break;
      lingering.stream.close();
      await until(() => upstream.closedConnections() === 1);
      expect(upstream.closedConnections()).toBe(1);
    } finally { await upstream.close(); }
  });
});
