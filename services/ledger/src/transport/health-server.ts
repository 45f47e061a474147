import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { GatewayError, toHttpError } from '@gateway/errors';
import { requestIdFrom, type Logger } from '@gateway/logger';

/** What the health server needs to know about its service. */
export interface HealthServerOptions {
  host: string;
  /** 0 for any free port. */
  port: number;
  logger: Logger;
  /** Whether the service can serve right now; asked on every /readyz. */
  checkReady(): Promise<boolean>;
}

/** A running health server: its bound port and how to stop it. */
export interface HealthServer {
  port: number;
  close(): Promise<void>;
}

/** Writes a JSON body with the request id echoed back. */
function sendJson(response: ServerResponse, status: number, body: unknown, requestId: string, headers: Record<string, string> = {}): void {
  response.writeHead(status, { 'content-type': 'application/json', 'x-request-id': requestId, ...headers });
  response.end(JSON.stringify(body));
}

/**
 * Starts the ledger's HTTP server, which only answers probes: `/healthz` (the process is alive:
 * 200) and `/readyz` (200 when it can serve calls, 503 otherwise). Everything else is a 404 in
 * the gateway's error shape. The ledger's real interface is gRPC.
 */
export function startHealthServer(options: HealthServerOptions): Promise<HealthServer> {
  const { logger } = options;
  const handle = async (request: IncomingMessage, response: ServerResponse) => {
    const requestId = requestIdFrom(request.headers['x-request-id']);
    const path = (request.url ?? '/').split('?')[0];
    const isProbe = request.method === 'GET' || request.method === 'HEAD';
    let status: number;
    if (isProbe && path === '/healthz') {
      status = 200;
      sendJson(response, status, { status: 'ok' }, requestId);
    } else if (isProbe && path === '/readyz') {
      const ready = await options.checkReady();
      status = ready ? 200 : 503;
      sendJson(response, status, { status: ready ? 'ready' : 'not_ready' }, requestId);
    } else {
      const error = toHttpError(new GatewayError('not_found', { publicMessage: 'The ledger serves only /healthz and /readyz over HTTP.' }));
      status = error.status;
      sendJson(response, status, error.body, requestId, error.headers);
    }
    // Probes arrive every few seconds; they are logged at debug so they do not drown real lines.
    logger[path === '/healthz' || path === '/readyz' ? 'debug' : 'info']({ requestId, method: request.method, path, status }, 'http request');
  };

  const server = createServer((request, response) => {
    handle(request, response).catch((error: unknown) => {
      logger.error({ err: error }, 'health request failed');
      if (!response.headersSent) sendJson(response, 500, toHttpError(error).body, requestIdFrom(undefined));
    });
  });

  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve({
        port: (server.address() as AddressInfo).port,
        close: () => new Promise<void>((done) => {
          server.close(() => done());
          // Keep-alive sockets from probes would hold close() open; nothing in flight matters here.
          server.closeAllConnections();
        }),
      });
    });
  });
}
