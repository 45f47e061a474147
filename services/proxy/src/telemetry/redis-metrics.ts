import type { ProxyMetrics } from '@gateway/telemetry';
import type { RpmMode } from '../rate-limit/degraded-shares.ts';
import type { RedisObserver } from '../redis/redis-client.ts';

/** The Redis observer that feeds the proxy's Redis metrics (command latency and errors; `up` is read at scrape time). */
export function redisMetricsObserver(metrics: Pick<ProxyMetrics, 'proxyRedisCommandDuration' | 'proxyRedisErrors'>): RedisObserver {
  return {
    command(client, seconds, ok) {
      metrics.proxyRedisCommandDuration.observe({ client, outcome: ok ? 'ok' : 'error' }, seconds);
      if (!ok) metrics.proxyRedisErrors.inc({ client, kind: 'command' });
    },
    connectionError(client) {
      metrics.proxyRedisErrors.inc({ client, kind: 'connection' });
    },
  };
}

/** gateway_proxy_rpm_degraded's value for each limiter mode (the catalogue's help states the same). */
export const rpmModeGaugeValue: Record<RpmMode, number> = { shared: 0, degraded: 1, failing_closed: 2 };
