import type { Database } from '@gateway/db';
import type { Logger } from '@gateway/logger';
import type { AdminConfig } from '../config.ts';
import type { CredentialCipher } from '../domain/credential-cipher.ts';
import type { LedgerPort } from '../domain/ledger-port.ts';
import type { LiveEvents } from '../domain/live-events.ts';

/** What the alert workers need. */
export interface AlertWorkersDeps {
  db: Database;
  ledger: LedgerPort;
  cipher: CredentialCipher;
  config: AdminConfig;
  logger: Logger;
  liveEvents: LiveEvents;
}

/** The background work of alerts: reading the ledger's budget alerts, low-balance checks, webhook and email deliveries. */
export function startAlertWorkers(_deps: AlertWorkersDeps): { close(): Promise<void> } {
  return { close: async () => {} };
}
