import type { IncomingMessage, RequestListener, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createGuardedServer } from '@gateway/http-guard';
import type { Logger } from '@gateway/logger';

/** Where and how to serve HTTP. */
export interface HttpServerOptions {
  /** The service's request handler (an express app or a plain listener). */
  listener: RequestListener;
  host: string;
  /** 0 binds any free port (tests); the handle reports the bound one. */
  port: number;
  /** Receives one line per connection refused at the HTTP parser (@gateway/http-guard). */
  logger?: Logger;
  /** How long an idle keep-alive connection stays open, ms; Node's default (5 s) when omitted. */
  keepAliveTimeoutMs?: number;
  /** How long a client may take to send the request headers, ms; Node's default (60 s) when omitted. */
  headersTimeoutMs?: number;
}

/** A listening HTTP server: its bound port and its two-stage stop. */
export interface RunningHttpServer {
  /** The port it listens on (the one chosen by the system when asked for 0). */
  port: number;
  /** The node server, for what the helper does not cover (tests, extra listeners). */
  server: Server;
  /**
   * First stage of the stop: accepts no new connection, closes idle keep-alive connections, and
   * makes every response still to be written (and every request still arriving on an open
   * connection) end its connection. In-flight requests go on. Idempotent.
   */
  stopAccepting(): void;
  /**
   * stopAccepting(), then waits for the in-flight requests up to graceMs, then destroys every
   * remaining socket. Resolves once the server is closed. Idempotent.
   */
  close(graceMs: number): Promise<void>;
}

/** Tells a response to end its connection, if its headers are still to be written. */
function endConnectionAfter(response: ServerResponse): void {
  if (!response.headersSent) response.setHeader('connection', 'close');
}

/**
 * Starts an HTTP server on host:port with the http-guard settings every service uses: parser
 * errors, oversize headers (431), bad Expect and CONNECT answered as JSON in the error shape.
 * Resolves once it listens; rejects if it cannot bind (port taken).
 */
export function startHttpServer(options: HttpServerOptions): Promise<RunningHttpServer> {
  const server = createGuardedServer(options.listener, options.logger === undefined ? {} : { logger: options.logger });
  if (options.keepAliveTimeoutMs !== undefined) server.keepAliveTimeout = options.keepAliveTimeoutMs;
  if (options.headersTimeoutMs !== undefined) server.headersTimeout = options.headersTimeoutMs;

  // Responses not yet finished: at the stop they are told to close their connection, so a
  // keep-alive client does not send its next request into a server that is going away.
  const inFlight = new Set<ServerResponse>();
  let stopping = false;
  server.prependListener('request', (_request: IncomingMessage, response: ServerResponse) => {
    if (stopping) endConnectionAfter(response);
    inFlight.add(response);
    response.once('close', () => inFlight.delete(response));
  });

  const closed = new Promise<void>((resolve) => server.once('close', () => resolve()));
  let closing: Promise<void> | undefined;

  const stopAccepting = () => {
    if (stopping) return;
    stopping = true;
    server.close();
    server.closeIdleConnections();
    for (const response of inFlight) endConnectionAfter(response);
  };

  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve({
        port: (server.address() as AddressInfo).port,
        server,
        stopAccepting,
        close(graceMs) {
          closing ??= (async () => {
            stopAccepting();
            let timer: NodeJS.Timeout | undefined;
            const graceOver = new Promise<void>((done) => { timer = setTimeout(done, graceMs); });
            await Promise.race([closed, graceOver]);
            clearTimeout(timer);
            // What is still open after the grace is cut: the process must be able to stop.
            server.closeAllConnections();
            await closed;
          })();
          return closing;
        },
      });
    });
  });
}
