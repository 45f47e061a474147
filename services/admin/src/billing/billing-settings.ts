import type { AdminConfig } from '../config.ts';
import type { BillingSettings } from './domain/billing-settings.ts';

/** The billing settings from the admin's environment (the one place their variable names appear for the area). */
export function billingSettingsFrom(config: AdminConfig): BillingSettings {
  return {
    topUpExpiryMs: config.TOPUP_EXPIRY_MS,
    dashboardUrl: config.ADMIN_PUBLIC_URL,
    reconcileAfterMs: config.PAYMENT_RECONCILE_AFTER_MS,
    reconcileIntervalMs: config.PAYMENT_RECONCILE_INTERVAL_MS,
    sweepIntervalMs: config.PAYMENT_SWEEP_INTERVAL_MS,
    sweepWindowMs: config.PAYMENT_SWEEP_WINDOW_MS,
  };
}
