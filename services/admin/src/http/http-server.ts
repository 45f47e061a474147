import type { RequestListener, Server } from 'node:http';
import { createGuardedServer } from '@gateway/http-guard';
import type { Logger } from '@gateway/logger';

/**
 * Starts an HTTP server on host:port (0 for a free port) and resolves with it and its bound port.
 * The server answers Node's own parser errors and oversize headers in the error shape (@gateway/http-guard).
 */
export function startHttpServer(listener: RequestListener, host: string, port: number, logger?: Logger): Promise<{ server: Server; port: number }> {
  return new Promise((resolve, reject) => {
    const server = createGuardedServer(listener, logger === undefined ? {} : { logger });
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      const address = server.address();
      resolve({ server, port: typeof address === 'object' && address ? address.port : port });
    });
  });
}

/**
 * Stops an HTTP server: no new connections, idle keep-alive connections closed now, in-flight
 * requests given up to graceMs, then every remaining connection is cut.
 */
export function stopHttpServer(server: Server, graceMs: number): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => server.closeAllConnections(), graceMs);
    timer.unref();
    server.close(() => {
      clearTimeout(timer);
      resolve();
    });
    server.closeIdleConnections();
  });
}
