import type { Database } from '@gateway/db';
import type { AdminConfig } from '../config.ts';
import type { LedgerPort } from './ledger-port.ts';
import type { LiveEvents } from './live-events.ts';
import type { PaymentProvider } from './payment-provider.ts';
import type { ResourceAccess } from './resource-access.ts';

/** What the top-ups aggregate is built from. */
export interface TopUpsServiceDeps {
  db: Database;
  ledger: LedgerPort;
  access: ResourceAccess;
  config: AdminConfig;
  /** undefined: PAYMENT_PROVIDER unset, no purchases. */
  provider: PaymentProvider | undefined;
  liveEvents: LiveEvents;
}

/** Top-up packages, billing profiles, purchases and their payment signals (route tag "billing"). */
export function createTopUpsService(_deps: TopUpsServiceDeps) {
  return {};
}
