import type { Server } from 'node:http';
import type { Database } from '@gateway/db';
import type { Logger } from '@gateway/logger';
import type { AdminConfig } from '../config.ts';
import type { LedgerPort } from '../domain/ledger-port.ts';
import type { LiveEvents } from '../domain/live-events.ts';
import type { Authentication, RequestCredentials } from '../http/admin-http-app.ts';

/** What the live updates need. */
export interface LiveUpdatesDeps {
  server: Server;
  db: Database;
  ledger: LedgerPort;
  liveEvents: LiveEvents;
  config: AdminConfig;
  logger: Logger;
  authenticate(credentials: RequestCredentials): Promise<Authentication | undefined>;
}

/** Serves the dashboard's WebSocket on the admin's HTTP server. */
export function attachLiveUpdates(_deps: LiveUpdatesDeps): { close(): Promise<void> } {
  return { close: async () => {} };
}
