import type { AdminConfig } from '../config.ts';
import type { TenancySettings } from './domain/tenancy-settings.ts';

/** The tenancy area's settings from the admin's environment (the one place their variable names appear). */
export function tenancySettingsFrom(config: AdminConfig): TenancySettings {
  return { platformResponseRetentionS: config.ADMIN_RESPONSE_RETENTION_S };
}
