import type { Database } from '@gateway/db';
import type { LedgerPort } from './ledger-port.ts';
import type { ResourceAccess } from './resource-access.ts';

/** What the analytics aggregate is built from. */
export interface AnalyticsServiceDeps {
  db: Database;
  ledger: LedgerPort;
  access: ResourceAccess;
}

/** Usage export and platform analytics: customer price against provider cost (route tag "analytics"). */
export function createAnalyticsService(_deps: AnalyticsServiceDeps) {
  return {};
}
