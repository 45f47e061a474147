/**
 * The baseline the gateway is measured against: a bare reverse proxy (node:http and an undici
 * pool) that forwards /v1/chat/completions to the upstream with no auth, no rate limit, no
 * billing and no rewriting, streaming bodies both ways. Usage: node baseline-proxy.ts <upstream origin>
 * Prints `{"port":N}` on its first stdout line.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Pool } from 'undici';

const upstreamOrigin = process.argv[2];
if (!upstreamOrigin) throw new Error('usage: baseline-proxy.ts <upstream origin>');
const pool = new Pool(upstreamOrigin, { connections: 128, keepAliveTimeout: 30_000, pipelining: 1 });

const server = createServer((req, res) => {
  pool.request({
    method: req.method as 'POST',
    path: req.url ?? '/',
    headers: { 'content-type': req.headers['content-type'] ?? 'application/json', authorization: req.headers.authorization ?? '' },
    body: req,
  }).then(
    async (upstream) => {
      res.writeHead(upstream.statusCode, { 'content-type': String(upstream.headers['content-type'] ?? 'application/json') });
      for await (const chunk of upstream.body) res.write(chunk);
      res.end();
    },
    () => { res.writeHead(502).end(); },
  );
});
server.keepAliveTimeout = 30_000;
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`${JSON.stringify({ port: (server.address() as AddressInfo).port })}\n`);
});
process.on('SIGTERM', () => { server.close(); void pool.close().then(() => process.exit(0)); });
