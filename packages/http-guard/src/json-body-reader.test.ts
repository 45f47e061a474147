import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import express from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GatewayError } from '@gateway/errors';
import { createJsonBodyParser } from './json-body.ts';
import { createJsonBodyReader } from './json-body-reader.ts';
import { sendRawHttp } from './raw-http.ts';

// The proxy reads bodies with createJsonBodyReader, the admin with createJsonBodyParser (express):
// the same request must have the same outcome through both, refusals included.

const limitBytes = 256;
const options = { limitBytes, maxDepth: 8, text: 'unicode' as const };
let port: number;
let close: () => void;

/** What a read came to: the value, or the refusal's code, public message, internal detail and param. */
function outcomeOf(error: unknown, value?: unknown): unknown {
  if (error === undefined) return { value: value === undefined ? '(none)' : value };
  if (!(error instanceof GatewayError)) return { thrown: String(error) };
  return { code: error.code, message: error.publicMessage, detail: error.message, param: error.param };
}

function answer(res: ServerResponse, outcome: unknown): void {
  res.setHeader('content-type', 'application/json');
  res.end(JSON.stringify(outcome));
}

beforeAll(async () => {
  const read = createJsonBodyReader(options);
  const parse = createJsonBodyParser(options);
  const app = express();
  app.post('/parser', (req, res) => {
    parse(req, res, (error?: unknown) => answer(res, outcomeOf(error ?? undefined, req.body)));
  });
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    if (req.url === '/reader') read(req).then((value) => answer(res, outcomeOf(undefined, value)), (error: unknown) => answer(res, outcomeOf(error)));
    else app(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
  close = () => server.close();
});
afterAll(() => close());

/** A POST of `body` with `headers` (Content-Length added unless chunked), to `path`. */
function request(path: string, headers: string, body: Buffer | string, chunked = false): Buffer {
  const bytes = Buffer.isBuffer(body) ? body : Buffer.from(body);
  const framing = chunked ? 'Transfer-Encoding: chunked\r\n' : `Content-Length: ${bytes.length}\r\n`;
  const payload = chunked ? Buffer.concat([Buffer.from(`${bytes.length.toString(16)}\r\n`), bytes, Buffer.from('\r\n0\r\n\r\n')]) : bytes;
  return Buffer.concat([Buffer.from(`POST ${path} HTTP/1.1\r\nHost: test\r\nConnection: close\r\n${headers}${framing}\r\n`), payload]);
}

const json = 'Content-Type: application/json\r\n';
const cases: Array<[string, string, Buffer | string, boolean?]> = [
  ['an object', json, '{"a":[1,"x",null]}'],
  ['no content type', '', '{"a":1}'],
  ['another content type', 'Content-Type: text/plain\r\n', '{"a":1}'],
  ['an empty body', json, ''],
  ['an array', json, '[1,2]'],
  ['leading whitespace', json, ' \r\n\t{"a":1}'],
  ['a byte order mark', json, '\ufeff{"a":1}'],
  ['a string at the top', json, '"x"'],
  ['whitespace only', json, '   '],
  ['broken JSON', json, '{"a":'],
  ['invalid UTF-8', json, Buffer.concat([Buffer.from('{"a":"'), Buffer.from([0xff, 0xc3]), Buffer.from('"}')])],
  ['a lone surrogate', json, '{"a":["\\ud800"]}'],
  ['a lone surrogate in a key', json, '{"\\udc00":1}'],
  ['too deep', json, `${'['.repeat(9)}${']'.repeat(9)}`],
  ['charset UTF-8', 'Content-Type: application/json; charset=UTF-8\r\n', '{"a":1}'],
  ['charset quoted', 'Content-Type: application/json; charset="utf-8"\r\n', '{"a":1}'],
  ['charset empty', 'Content-Type: application/json; charset=\r\n', '{"a":1}'],
  ['charset utf8', 'Content-Type: application/json; charset=utf8\r\n', '{"a":1}'],
  ['charset latin1', 'Content-Type: application/json; charset=latin1\r\n', '{"a":1}'],
  ['charset utf-16le', 'Content-Type: application/json; charset=utf-16le\r\n', Buffer.from('{"a":"é"}', 'utf16le')],
  ['charset utf-foo', 'Content-Type: application/json; charset=utf-foo\r\n', '{"a":1}'],
  ['a malformed content type', 'Content-Type: ;;=;\r\n', '{"a":1}'],
  ['gzip', 'Content-Encoding: gzip\r\n', gzipSync('{"a":1}')],
  ['GZIP', 'Content-Encoding: GZIP\r\n', gzipSync('{"a":1}')],
  ['deflate', 'Content-Encoding: deflate\r\n', deflateSync('{"a":1}')],
  ['br', 'Content-Encoding: br\r\n', brotliCompressSync('{"a":1}')],
  ['identity', 'Content-Encoding: identity\r\n', '{"a":1}'],
  ['not gzip', 'Content-Encoding: gzip\r\n', '{"a":1}'],
  ['truncated gzip', 'Content-Encoding: gzip\r\n', gzipSync('{"a":1}').subarray(0, 12)],
  ['not br', 'Content-Encoding: br\r\n', '{"a":1}'],
  ['empty gzip', 'Content-Encoding: gzip\r\n', ''],
  ['zstd', 'Content-Encoding: zstd\r\n', '{"a":1}'],
  ['an unknown coding', 'Content-Encoding: compress\r\n', '{"a":1}'],
  ['two codings', 'Content-Encoding: gzip, br\r\n', '{"a":1}'],
  ['too large', json, `{"a":"${'x'.repeat(limitBytes)}"}`],
  ['at the limit', json, `{"a":"${'x'.repeat(limitBytes - 8)}"}`],
  ['a gzip bomb', 'Content-Encoding: gzip\r\n', gzipSync(`{"a":"${' '.repeat(100_000)}"}`)],
  ['chunked', json, '{"a":1}', true],
  ['chunked too large', json, `{"a":"${'x'.repeat(limitBytes)}"}`, true],
  ['chunked gzip', 'Content-Encoding: gzip\r\n', gzipSync('{"a":1}'), true],
];

describe('createJsonBodyReader', () => {
  it.each(cases)('has the outcome of createJsonBodyParser for %s', async (_name, headers, body, chunked) => {
    const [reader, parser] = await Promise.all([
      sendRawHttp(port, request('/reader', headers, body, chunked)),
      sendRawHttp(port, request('/parser', headers, body, chunked)),
    ]);
    expect(reader.json).toBeDefined();
    expect(reader.json).toEqual(parser.json);
  });

  it('reads nothing from a request without a body', async () => {
    const head = (path: string) => `POST ${path} HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n`;
    const [reader, parser] = await Promise.all([sendRawHttp(port, head('/reader')), sendRawHttp(port, head('/parser'))]);
    expect(reader.json).toEqual({ value: '(none)' });
    expect(parser.json).toEqual({ value: '(none)' });
  });
});
