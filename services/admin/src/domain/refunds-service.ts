import type { Database } from '@gateway/db';
import type { AdminConfig } from '../config.ts';
import type { LedgerPort } from './ledger-port.ts';
import type { PaymentProvider } from './payment-provider.ts';
import type { ResourceAccess } from './resource-access.ts';

/** What the refunds aggregate is built from. */
export interface RefundsServiceDeps {
  db: Database;
  ledger: LedgerPort;
  access: ResourceAccess;
  config: AdminConfig;
  provider: PaymentProvider | undefined;
}

/** Refunds of a top-up's unspent balance, with their credit notes (route tag "billing"). */
export function createRefundsService(_deps: RefundsServiceDeps) {
  return {};
}
