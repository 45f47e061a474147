import type { Database } from '@gateway/db';
import { GatewayError } from '@gateway/errors';
import type { Logger } from '@gateway/logger';
import type { LedgerPort } from '../../common/domain/ledger-port.ts';
import type { ResourceAccess } from '../../common/domain/resource-access.ts';
import type { InvoicingSettings } from '../../invoicing/domain/invoicing-settings.ts';
import type { BillingSettings } from './billing-settings.ts';
import type { PaymentProvider } from './payment-provider.ts';
import type { TopUpCause } from './topup-state.ts';
import type { UnmatchedSource } from './unmatched-payments.ts';

/** What the top-up operations (packages, profiles, purchases, payment signals) are built from. */
export interface TopUpsDeps {
  db: Database;
  ledger: LedgerPort;
  access: ResourceAccess;
  settings: BillingSettings;
  /** The invoicing settings a top-up's document is issued under (and the seller's name Checkout shows). */
  invoicing: InvoicingSettings;
  /** undefined: no payment provider configured, no purchases. */
  provider: PaymentProvider | undefined;
  /** Where a captured payment the admin will not credit (amount mismatch) is reported; silent when absent. */
  logger?: Logger | undefined;
  /** Told of each captured payment newly recorded as not matching its order (metrics), with the signal that brought it. */
  onAmountMismatch?: ((cause: TopUpCause) => void) | undefined;
  /** Told of each payment newly recorded as matching nothing the gateway sold (metrics), with the signal that brought it. */
  onUnmatchedPayment?: ((source: UnmatchedSource) => void) | undefined;
  /** Told of each payment reversal a webhook recorded with a shortfall (metrics). */
  onPaymentShortfall?: (() => void) | undefined;
}

/** The configured payment provider, or service_unavailable when there is none. */
export function requireProvider(deps: Pick<TopUpsDeps, 'provider'>): PaymentProvider {
  if (deps.provider === undefined) {
    throw new GatewayError('service_unavailable', { publicMessage: 'Top-ups are not available: no payment provider is configured (PAYMENT_PROVIDER).' });
  }
  return deps.provider;
}
