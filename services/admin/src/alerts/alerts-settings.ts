import type { AdminConfig } from '../config.ts';
import type { AlertsSettings } from './domain/alerts-settings.ts';

/** The alerts area's settings from the admin's environment (the one place their names are read). */
export function alertsSettingsFrom(config: AdminConfig): AlertsSettings {
  return {
    allowPrivateWebhooks: config.ADMIN_ALLOW_PRIVATE_UPSTREAMS,
    dashboardUrl: config.ADMIN_PUBLIC_URL,
    webhookTimeoutMs: config.ALERT_WEBHOOK_TIMEOUT_MS,
    retryBaseMs: config.ALERT_RETRY_BASE_MS,
    retryWindowMs: config.ALERT_RETRY_WINDOW_MS,
    pollMs: config.ALERT_POLL_MS,
    lowBalancePollMs: config.LOW_BALANCE_POLL_MS,
  };
}
