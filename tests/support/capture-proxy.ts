/**
 * A capture proxy for the agents' end-to-end tests (tests/e2e/claude-code.e2e.test.ts,
 * codex.e2e.test.ts): it sits on loopback between the agent and the gateway's proxy, keeps every
 * request as the agent sent it, and relays the answer byte for byte as it streams, so the tests
 * assert on what the released agent really sends, never on a hand-written request shape.
 */
import { createServer, request as httpRequest, type Server } from 'node:http';

/** A request an agent sent to the gateway, as it sent it. */
export interface CapturedRequest {
  method: string;
  path: string;
  headers: Record<string, string | string[] | undefined>;
  body: Record<string, any> | undefined;
}

/** A loopback proxy in front of the gateway's proxy that keeps every request an agent sends (body parsed) and relays the answer as it streams. */
export async function startCaptureProxy(target: URL): Promise<{ baseUrl: string; captured: CapturedRequest[]; close(): Promise<void> }> {
  const captured: CapturedRequest[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      let body: Record<string, any> | undefined;
      try { body = raw.length > 0 ? JSON.parse(raw.toString('utf8')) as Record<string, any> : undefined; } catch { body = undefined; }
      captured.push({ method: req.method ?? 'GET', path: req.url ?? '/', headers: req.headers, body });
      const headers = { ...req.headers, host: target.host, 'content-length': String(raw.length) };
      const upstream = httpRequest({ host: target.hostname, port: target.port, method: req.method, path: req.url, headers }, (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      });
      upstream.on('error', () => { res.writeHead(502).end(); });
      upstream.end(raw);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('capture proxy has no port');
  return {
    baseUrl: `http://127.0.0.1:${address.port}`,
    captured,
    close: () => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }),
  };
}

/**
 * A trap for traffic beyond loopback: set as the agent's HTTP(S) proxy (`HTTPS_PROXY`,
 * `HTTP_PROXY`, `ALL_PROXY`, with `NO_PROXY` naming loopback only), it records every request or
 * `CONNECT` the agent makes to a host that is not loopback and refuses it, so a test asserts that
 * nothing tried to leave. Both agents' HTTP stacks honour these variables.
 */
export async function startEgressTrap(): Promise<{ proxyEnv: Record<string, string>; attempts: string[]; close(): Promise<void> }> {
  const attempts: string[] = [];
  const server: Server = createServer((req, res) => {
    attempts.push(`${req.method ?? 'GET'} ${req.url ?? ''}`);
    res.writeHead(502).end();
  });
  server.on('connect', (req: { url?: string }, socket: { end(data: string): void }) => {
    attempts.push(`CONNECT ${req.url ?? ''}`);
    socket.end('HTTP/1.1 502 Bad Gateway\r\n\r\n');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('egress trap has no port');
  const url = `http://127.0.0.1:${address.port}`;
  return {
    proxyEnv: {
      HTTPS_PROXY: url, HTTP_PROXY: url, ALL_PROXY: url, https_proxy: url, http_proxy: url, all_proxy: url,
      NO_PROXY: '127.0.0.1,localhost', no_proxy: '127.0.0.1,localhost',
    },
    attempts,
    close: () => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }),
  };
}
