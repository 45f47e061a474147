import type { Database } from '@gateway/db';
import type { Logger } from '@gateway/logger';
import type { AdminConfig } from '../config.ts';
import type { AdminService } from '../domain/admin-service.ts';
import type { PaymentProvider } from '../domain/payment-provider.ts';
import { createRazorpayClient } from '../transport/razorpay-client.ts';

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

/** The background work of payments: reconciling top-ups still awaiting payment, expiring unpaid orders. */
export function startPaymentJobs(_deps: PaymentJobsDeps): { close(): Promise<void> } {
  return { close: async () => {} };
}
