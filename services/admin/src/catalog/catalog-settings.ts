import type { AdminConfig } from '../config.ts';
import type { CatalogSettings } from './domain/catalog-settings.ts';

/** The catalog area's settings from the admin's environment (the one place their variable names appear). */
export function catalogSettingsFrom(config: AdminConfig): CatalogSettings {
  return { allowPrivateUpstreams: config.ADMIN_ALLOW_PRIVATE_UPSTREAMS, proxyPublicUrl: config.ADMIN_PROXY_PUBLIC_URL };
}
