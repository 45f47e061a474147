import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request a test webhook receiver got: its headers, its raw body, and the status it answered. */
export interface ReceivedWebhookRequest {
  path: string;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  answeredStatus: number;
}

/** A real HTTP server on 127.0.0.1 and a free port that plays webhook receivers per path. */
export interface AlertReceiver {
  /** http://127.0.0.1:<port> */
  baseUrl: string;
  /** Every request so far, in arrival order. */
  requests: ReceivedWebhookRequest[];
  /** The requests to one path. */
  requestsTo(path: string): ReceivedWebhookRequest[];
  /** Makes `path` answer 500 to its first `failures` requests and 204 after (Infinity: always 500). */
  failFirst(path: string, failures: number): void;
  close(): Promise<void>;
}

/** Starts a receiver; every path answers 204 unless failFirst says otherwise. */
export async function startAlertReceiver(): Promise<AlertReceiver> {
  const requests: ReceivedWebhookRequest[] = [];
  const failuresLeft = new Map<string, number>();
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const path = request.url ?? '/';
      const left = failuresLeft.get(path) ?? 0;
      const status = left > 0 ? 500 : 204;
      if (left > 0) failuresLeft.set(path, left - 1);
      requests.push({ path, headers: request.headers, body: Buffer.concat(chunks).toString('utf8'), answeredStatus: status });
      response.statusCode = status;
      response.end(status === 500 ? 'receiver failing on purpose' : undefined);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    requestsTo: (path) => requests.filter((request) => request.path === path),
    failFirst: (path, failures) => { failuresLeft.set(path, failures); },
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

/**
 * Whether a header signs this body with this secret within `toleranceSeconds` of `nowSeconds`:
 * a receiver's side of domain/webhook-signature.ts, as docs/alerts.md tells receivers to check it
 * (constant-time comparison).
 */
export function signatureMatches(secret: string, body: string, header: string, nowSeconds: number, toleranceSeconds = 300): boolean {
  const parts = new Map(header.split(',').map((part) => {
    const at = part.indexOf('=');
    return [part.slice(0, at).trim(), part.slice(at + 1).trim()] as const;
  }));
  const time = Number(parts.get('t'));
  const given = parts.get('v1') ?? '';
  if (!Number.isInteger(time) || Math.abs(nowSeconds - time) > toleranceSeconds || !/^[0-9a-f]{64}$/.test(given)) return false;
  const expected = createHmac('sha256', secret).update(`${time}.${body}`, 'utf8').digest();
  return timingSafeEqual(expected, Buffer.from(given, 'hex'));
}
