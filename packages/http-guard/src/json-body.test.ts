import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import express from 'express';
import { afterEach, describe, expect, it } from 'vitest';
import { createJsonBodyParser, rawBodyOf } from './json-body.ts';

const servers: Array<{ close(): void }> = [];
afterEach(() => {
  for (const server of servers.splice(0)) server.close();
});

/** Serves an app that answers with what the parser kept: the raw bytes (base64) and the parsed value. */
async function startEcho(keepRawBody: boolean): Promise<string> {
  const app = express();
  app.use(createJsonBodyParser({ limitBytes: 1024, keepRawBody }));
  app.post('/', (request, response) => {
    response.json({ raw: rawBodyOf(request).toString('base64'), parsed: request.body });
  });
  const server = app.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  servers.push(server);
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
}

describe('createJsonBodyParser keepRawBody', () => {
  it('keeps the exact bytes received (after decoding) for a signature check, not a re-serialisation', async () => {
    const url = await startEcho(true);
    // Spacing and key order a re-serialisation would change.
    const body = '{ "b":1,  "a" : "x" }';
    const answer = await (await fetch(url, { method: 'POST', body: gzipSync(body), headers: { 'content-encoding': 'gzip' } })).json() as { raw: string; parsed: unknown };
    expect(Buffer.from(answer.raw, 'base64').toString('utf8')).toBe(body);
    expect(answer.parsed).toEqual({ b: 1, a: 'x' });
  });

  it('keeps nothing unless asked (the proxy does not pay for it)', async () => {
    const url = await startEcho(false);
    const answer = await (await fetch(url, { method: 'POST', body: '{"a":1}' })).json() as { raw: string; parsed: unknown };
    expect(answer.raw).toBe('');
    expect(answer.parsed).toEqual({ a: 1 });
  });
});
