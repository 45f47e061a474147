import { GatewayError, toHttpError } from '@gateway/errors';
import type { Logger } from '@gateway/logger';
import { startHttpServer, type RunningHttpServer } from '@gateway/service-runtime';
import type { MetricsRegistry } from './service-metrics.ts';

/** Where a service serves its metrics. */
export interface MetricsServerOptions {
  metrics: MetricsRegistry;
  host: string;
  /** The service's internal metrics port (PROXY_METRICS_PORT, ...); 0 binds a free one (tests). */
  port: number;
  logger: Logger;
}

/**
 * Serves `GET /metrics` in the Prometheus text format on a port of its own, apart from the
 * public API: traffic figures are for the operator's scraper (NetworkPolicy: the monitoring
 * namespace only), never for API clients. Anything else is a 404 in the gateway's error shape.
 */
export function startMetricsServer(options: MetricsServerOptions): Promise<RunningHttpServer> {
  const { metrics, logger } = options;
  return startHttpServer({
    host: options.host,
    port: options.port,
    logger,
    listener: (request, response) => {
      const path = (request.url ?? '/').split('?')[0];
      if ((request.method === 'GET' || request.method === 'HEAD') && path === '/metrics') {
        metrics.render().then(
          (text) => {
            response.writeHead(200, { 'content-type': metrics.registry.contentType, 'content-length': Buffer.byteLength(text) });
            response.end(request.method === 'HEAD' ? undefined : text);
          },
          (error: unknown) => {
            logger.error({ err: error }, 'metrics collection failed');
            const failure = toHttpError(new GatewayError('internal_error'));
            response.writeHead(failure.status, failure.headers);
            response.end(JSON.stringify(failure.body));
          },
        );
        return;
      }
      const notFound = toHttpError(new GatewayError('not_found', { publicMessage: 'This port serves only GET /metrics.' }));
      response.writeHead(notFound.status, notFound.headers);
      response.end(JSON.stringify(notFound.body));
    },
  });
}
