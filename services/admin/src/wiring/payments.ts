import type { Database } from '@gateway/db';
import type { Logger } from '@gateway/logger';
import type { AdminConfig } from '../config.ts';
import type { AdminService } from '../domain/admin-service.ts';
import type { PaymentProvider } from '../domain/payment-provider.ts';

/** The payment provider PAYMENT_PROVIDER names (undefined when unset: no top-ups). */
export function createPaymentProvider(_config: AdminConfig): PaymentProvider | undefined {
  return undefined;
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
