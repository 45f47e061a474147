import type { Database } from '@gateway/db';
import type { AdminConfig } from '../config.ts';
import type { CredentialCipher } from './credential-cipher.ts';
import type { LedgerPort } from './ledger-port.ts';
import type { LiveEvents } from './live-events.ts';
import type { ResourceAccess } from './resource-access.ts';

/** What the alerts aggregate is built from. */
export interface AlertsServiceDeps {
  db: Database;
  ledger: LedgerPort;
  cipher: CredentialCipher;
  access: ResourceAccess;
  config: AdminConfig;
  liveEvents: LiveEvents;
}

/** Budget and low-balance alerts, the organisation's webhook and its delivery log (route tag "alerts"). */
export function createAlertsService(_deps: AlertsServiceDeps) {
  return {};
}
