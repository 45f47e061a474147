import type { Database } from '@gateway/db';
import type { Logger } from '@gateway/logger';
import type { AdminConfig } from '../config.ts';
import type { AdminService } from '../domain/admin-service.ts';
import type { PaymentProvider } from '../domain/payment-provider.ts';
import { createRazorpayClient } from '../transport/razorpay-client.ts';
import { startPeriodicJob } from './periodic-job.ts';

/** The payment provider PAYMENT_PROVIDER names (undefined when unset: no top-ups). */
export function createPaymentProvider(config: AdminConfig): PaymentProvider | undefined {
  const kind = config.PAYMENT_PROVIDER;
  if (kind === undefined) return undefined;
  const keyId = config.RAZORPAY_KEY_ID;
  const keySecret = config.RAZORPAY_KEY_SECRET;
  const webhookSecret = config.RAZORPAY_WEBHOOK_SECRET;
  // The config schema already requires these with a provider; this keeps the types honest.
  if (keyId === undefined || keySecret === undefined || webhookSecret === undefined) {
    throw new Error(`PAYMENT_PROVIDER=${kind} needs RAZORPAY_KEY_ID, RAZORPAY_KEY_SECRET and RAZORPAY_WEBHOOK_SECRET`);
  }
  const baseUrl = kind === 'local' ? config.LOCAL_PAYMENTS_URL : config.RAZORPAY_API_URL;
  if (baseUrl === undefined) throw new Error('PAYMENT_PROVIDER=local needs LOCAL_PAYMENTS_URL');
  return createRazorpayClient({ kind, baseUrl, keyId, keySecret, webhookSecret });
}

/** What the payment jobs need. */
export interface PaymentJobsDeps {
  db: Database;
  config: AdminConfig;
  logger: Logger;
  service: AdminService;
  provider: PaymentProvider | undefined;
}

/**
 * The background work of payments: every PAYMENT_RECONCILE_INTERVAL_MS, one reconciliation pass
 * (top-ups awaiting payment asked of the provider and settled from its answer, settlements cut
 * short finished, unpaid ones past expires_at expired; service.reconcileTopUps). Passes never
 * overlap (the next is timed from the end of the last); replicas share the work through row
 * claims. Nothing runs without a provider. close() stops the timer and waits for a pass in flight.
 */
export function startPaymentJobs(deps: PaymentJobsDeps): { close(): Promise<void> } {
  const { config, logger, service } = deps;
  if (deps.provider === undefined) return { close: async () => {} };
  return startPeriodicJob({
    name: 'top-up reconciliation', firstDelayMs: config.PAYMENT_RECONCILE_INTERVAL_MS, intervalMs: config.PAYMENT_RECONCILE_INTERVAL_MS, logger,
    failureMessage: 'top-up reconciliation pass failed; retried at the next interval',
    run: async () => {
      const { checked, failed } = await service.reconcileTopUps();
      // Ids and error codes only: provider answers and billing details stay out of the log.
      for (const { topUpId, error } of failed) logger.warn({ topUpId, err: error }, 'top-up reconciliation failed; retried at a later pass');
      if (checked > 0) logger.debug({ checked, failed: failed.length }, 'top-ups reconciled');
    },
  });
}
