/**
 * Bad input on the proxy: every bad input gets a 4xx in the OpenAI error shape, never a
 * 500, a body-less answer or a reset. Malformed paths (before any key check), content encodings,
 * a zip bomb, text that is not Unicode, deep nesting, oversize headers and Node's own parser
 * errors (sent as exact bytes over raw sockets). No refused request moves money.
 */
import { brotliCompressSync, deflateSync, gzipSync, zstdCompressSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sendRawHttp, type RawHttpAnswer } from '@gateway/http-guard';
import { gatewayModel, startProxyWorld, stateOf, tenant, waitFor, type ProxyWorld, type TestProxy } from '../test-support/proxy-world.ts';

const acme = tenant('acme');
const maxBodyBytes = 64 * 1024;
let world: ProxyWorld;
let proxy: TestProxy;
let port: number;

beforeAll(async () => {
  world = await startProxyWorld((baseUrl) => stateOf([acme], [gatewayModel('chat', baseUrl)]));
  world.ledger.credit('acme', 10_000_000n);
  proxy = await world.startProxy({ PROXY_MAX_BODY_BYTES: String(maxBodyBytes) });
  port = Number(new URL(proxy.baseUrl).port);
  await waitFor(() => proxy.isReady(), 5000, 'first snapshot');
});
afterAll(async () => { await world?.close(); });

/** Reserve calls and upstream requests so far: a refused request adds to neither. */
function traffic() {
  return { reserves: world.ledger.calls.reserve.length, upstream: world.upstream.requests.length, account: world.ledger.account('acme') };
}

/** An OpenAI-shaped error with this status and code. */
async function expectError(response: Response, status: number, code: string, param?: string): Promise<Record<string, any>> {
  const text = await response.text();
  expect(response.status, text).toBe(status);
  expect(response.headers.get('content-type')).toMatch(/^application\/json/);
  const body = JSON.parse(text) as { error: Record<string, unknown> };
  expect(body.error).toMatchObject({ code, type: expect.any(String), message: expect.any(String) });
  if (param !== undefined) expect(body.error.param).toBe(param);
  return body.error;
}

function expectRawError(answer: RawHttpAnswer, status: number, code: string): void {
  expect(answer.status, `${answer.ending}: ${answer.body}`).toBe(status);
  expect(answer.headers['content-type']).toMatch(/^application\/json/);
  expect(answer.json).toMatchObject({ error: { code, type: 'invalid_request_error', param: null, message: expect.any(String) } });
}

const chatBody = JSON.stringify({ model: 'chat', messages: [{ role: 'user', content: 'hello [[fake:reply_words=2]]' }], max_tokens: 10 });

function post(body: string | Buffer, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${proxy.baseUrl}/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${acme.apiKey}`, 'content-type': 'application/json', ...headers },
    body,
  });
}

describe('malformed paths', () => {
  it('answer 400 in the error shape before any key check, without echoing the path', async () => {
    for (const path of ['/v1/models/%E0%A4%A', '/v1/models/%ZZ', '/v1/models/a%00b', '/v1/chat/completions%ED%A0%80']) {
      const response = await fetch(`http://127.0.0.1:${port}${path}`);
      const error = await expectError(response, 400, 'invalid_request');
      expect(error.message).not.toContain('%');
    }
    // The same with a key: still the 400, and nothing counted or reserved.
    const before = traffic();
    await expectError(await fetch(`http://127.0.0.1:${port}/v1/models/%E0%A4%A`, { headers: { authorization: `Bearer ${acme.apiKey}` } }), 400, 'invalid_request');
    expect(traffic()).toEqual(before);
  });
});

describe('content encodings', () => {
  it('decodes gzip, deflate and br bodies', async () => {
    for (const [encoding, encoded] of [['gzip', gzipSync(chatBody)], ['deflate', deflateSync(chatBody)], ['br', brotliCompressSync(chatBody)]] as const) {
      const response = await post(encoded, { 'content-encoding': encoding });
      expect(response.status, `${encoding}: ${await response.clone().text()}`).toBe(200);
      expect((await response.json() as { model: string }).model).toBe('chat');
    }
    await proxy.idle();
  });

  it('answers 400 for a body that claims gzip and is not, 415 for zstd or an unknown coding, 413 for a zip bomb; no money moves', async () => {
    await proxy.idle();
    const before = traffic();
    await expectError(await post(chatBody, { 'content-encoding': 'gzip' }), 400, 'invalid_request');
    await expectError(await post(chatBody, { 'content-encoding': 'br' }), 400, 'invalid_request');
    await expectError(await post(zstdCompressSync(chatBody), { 'content-encoding': 'zstd' }), 415, 'unsupported_media_type');
    await expectError(await post(chatBody, { 'content-encoding': 'compress' }), 415, 'unsupported_media_type');
    await expectError(await post(chatBody, { 'content-type': 'application/json; charset=latin1' }), 415, 'unsupported_media_type');
    // 16 MiB of spaces inside valid JSON compress to ~16 KiB: the limit counts decoded bytes.
    const bomb = gzipSync(Buffer.concat([Buffer.from('{"model":"chat","x":"'), Buffer.alloc(16 * 1024 * 1024, 0x20), Buffer.from('"}')]));
    expect(bomb.length).toBeLessThan(maxBodyBytes);
    await expectError(await post(bomb, { 'content-encoding': 'gzip' }), 413, 'request_too_large');
    expect(traffic()).toEqual(before);
  });
});

describe('text and structure', () => {
  it('forwards NUL in message text to the upstream, as JSON allows', async () => {
    const content = 'before\u0000after';
    const response = await post(JSON.stringify({ model: 'chat', messages: [{ role: 'user', content }], max_tokens: 10 }));
    expect(response.status, await response.clone().text()).toBe(200);
    expect((world.upstream.requests.at(-1)!.body as { messages: Array<{ content: string }> }).messages[0]!.content).toBe(content);
    await proxy.idle();
  });

  it('refuses a lone surrogate (400 naming the field) and nesting past the limit; no money moves', async () => {
    await proxy.idle();
    const before = traffic();
    const lone = '{"model":"chat","messages":[{"role":"user","content":"bad \\ud800 text"}]}';
    await expectError(await post(lone), 400, 'invalid_request', 'messages[0].content');
    const deep = `{"model":"chat","messages":[{"role":"user","content":"x"}],"response_format":${'['.repeat(10_000)}${']'.repeat(10_000)}}`;
    await expectError(await post(deep), 400, 'invalid_request');
    const deeper = `${'['.repeat(30_000)}${']'.repeat(30_000)}`;
    await expectError(await post(deeper), 400, 'invalid_request');
    // Huge numbers are numbers the schema refuses, never a crash.
    for (const number of ['1e309', '18446744073709551616', '-0', '"NaN"']) {
      const body = `{"model":"chat","messages":[{"role":"user","content":"x"}],"max_tokens":${number}}`;
      await expectError(await post(body), 400, 'invalid_request', 'max_tokens');
    }
    expect(traffic()).toEqual(before);
  });
});

describe("Node's HTTP parser", () => {
  it('answers an Authorization header over 16 KiB with 431 in the error shape, never a reset', async () => {
    for (const size of [17 * 1024, 2 * 1024 * 1024]) {
      const answer = await sendRawHttp(port, `GET /v1/models HTTP/1.1\r\nHost: proxy\r\nAuthorization: Bearer ${'k'.repeat(size)}\r\n\r\n`);
      expect(answer.ending).toBe('answered');
      expectRawError(answer, 431, 'headers_too_large');
    }
  });

  it('answers malformed request lines, headers and chunked bodies with 400 in the error shape', async () => {
    const requests = [
      'NOT HTTP AT ALL\r\n\r\n',
      'GET /v1/models HTTP/1.1\r\nHost: proxy\r\nNo colon here\r\n\r\n',
      `POST /v1/chat/completions HTTP/1.1\r\nHost: proxy\r\nAuthorization: Bearer ${acme.apiKey}\r\nTransfer-Encoding: chunked\r\n\r\nnot-hex\r\n{}\r\n0\r\n\r\n`,
      'GET /v1/models HTTP/1.1\r\nHost: proxy\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab',
    ];
    for (const request of requests) expectRawError(await sendRawHttp(port, request), 400, 'invalid_request');
    expectRawError(await sendRawHttp(port, 'GET /v1/models HTTP/1.1\r\n\r\n'), 400, 'invalid_request'); // no Host
  });

  it('still answers afterwards', async () => {
    const response = await fetch(`${proxy.baseUrl}/models`, { headers: { authorization: `Bearer ${acme.apiKey}` } });
    expect(response.status).toBe(200);
  });
});
