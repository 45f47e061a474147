import type { Queryable } from '@gateway/db';
import type { AdminMetrics } from '@gateway/telemetry';
import { currentConfigVersion } from '../catalog/domain/config-snapshot.ts';

/** What the admin's state gauges read at scrape time. */
export interface AdminStateSources {
  db: Queryable;
  /** The config-stream hub: the proxies connected to this replica now. */
  hub: { connectedProxyIds(): string[] };
}

/**
 * Sets the admin's state gauges before every scrape: `adminConfigVersion` (the committed config
 * version, one row read: a change made through any admin replica shows on all of them) and
 * `adminConnectedProxies` (proxies that said hello on a stream to this replica and are still on it).
 */
export function observeAdminState(metrics: Pick<AdminMetrics, 'adminConfigVersion' | 'adminConnectedProxies' | 'onCollect'>, sources: AdminStateSources): void {
  metrics.onCollect(() => { metrics.adminConnectedProxies.set(sources.hub.connectedProxyIds().length); });
  metrics.onCollect(async () => { metrics.adminConfigVersion.set(Number(await currentConfigVersion(sources.db))); });
}
