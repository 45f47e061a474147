import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGuardedServer, maxHeaderBytes } from './guarded-server.ts';
import { sendRawHttp } from './raw-http.ts';

let port: number;
// Reads the whole body before answering, as the services do, so a broken body is seen by the parser.
const server = createGuardedServer((req, res) => {
  req.resume();
  req.once('end', () => {
    res.setHeader('content-type', 'application/json');
    res.end('{"ok":true}');
  });
});

beforeAll(async () => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

/** Asserts an answer in the error shape with this status and code. */
function expectJsonError(answer: Awaited<ReturnType<typeof sendRawHttp>>, status: number, code: string): void {
  expect(answer.status, answer.body).toBe(status);
  expect(answer.headers['content-type']).toMatch(/^application\/json/);
  expect(answer.json).toMatchObject({ error: { code, type: 'invalid_request_error', param: null } });
  expect((answer.json as { error: { message: string } }).error.message.length).toBeGreaterThan(0);
}

describe('a guarded server', () => {
  it('answers oversize headers with 431 in the error shape, and is not reset even when megabytes follow', async () => {
    for (const size of [maxHeaderBytes + 1, 4 * 1024 * 1024]) {
      const answer = await sendRawHttp(port, `GET / HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${'a'.repeat(size)}\r\n\r\n`);
      expectJsonError(answer, 431, 'headers_too_large');
      expect(answer.ending).toBe('answered');
      expect(answer.headers.connection).toBe('close');
    }
  });

  it('answers every other parser error with 400 in the error shape', async () => {
    const malformed = [
      'GARBAGE\r\n\r\n',
      'GET / HTTP/9.9\r\nHost: x\r\n\r\n',
      'GET / HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n',
      'POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n\r\n',
      'POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello',
      'GET /\u0000 HTTP/1.1\r\nHost: x\r\n\r\n',
    ];
    for (const request of malformed) expectJsonError(await sendRawHttp(port, request), 400, 'invalid_request');
  });

  it('answers CONNECT and an unmet Expect in the error shape instead of dropping the connection', async () => {
    expectJsonError(await sendRawHttp(port, 'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n'), 400, 'invalid_request');
    expectJsonError(await sendRawHttp(port, 'GET / HTTP/1.1\r\nHost: x\r\nExpect: teapot\r\n\r\n'), 417, 'expectation_failed');
  });

  it('answers PRI (HTTP/2\'s preface method, whose connection Node closes once the handler returns) in the error shape', async () => {
    expectJsonError(await sendRawHttp(port, 'PRI *\r\nConnection: close\r\nContent-Length: 0\r\n\r\n'), 400, 'invalid_request');
    expectJsonError(await sendRawHttp(port, 'PRI /v1/models\r\n\r\n'), 400, 'invalid_request');
  });

  it('still serves after all of that', async () => {
    const answer = await sendRawHttp(port, 'GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    expect(answer.status).toBe(200);
    expect(answer.json).toEqual({ ok: true });
  });
});
