import type { Database } from '@gateway/db';
import type { Logger } from '@gateway/logger';
import { bearerTokenOf } from '@gateway/secrets';
import { authenticateAdminToken } from '../tenancy/domain/admin-tokens.ts';
import type { PeopleSettings } from './domain/people-settings.ts';
import { createFirstPlatformAdmin } from './domain/sign-in.ts';
import { anyPersonExists, rolesOf } from './domain/people-store.ts';
import { createSessions, csrfTokenMatches, systemClock, type Clock } from './domain/sessions.ts';
import type { Authentication, RequestCredentials } from '../common/http/admin-http-app.ts';
import { sessionTokenOf } from './http/session-cookie.ts';

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
  settings: PeopleSettings;
  logger: Logger;
  /** Receives the first platform-admin person's one-time setup link, to show to the operator. */
  onSetupLink?: ((url: string) => void) | undefined;
  /** The current time (tests move it); the system clock by default. */
  clock?: Clock | undefined;
}

/**
 * Builds the admin's authentication and its first-start setup. A request with an Authorization
 * header is judged by its bearer token alone; without one, by its session cookie: the person's
 * roles are read from their memberships on every request, so a role change, a removal or a
 * disabled account applies to the very next request.
 */
export function createPeopleWiring(deps: PeopleWiringDeps): PeopleWiring {
  const { db, settings, logger } = deps;
  const sessions = createSessions(db, { idleMs: settings.sessionIdleMs, absoluteMs: settings.sessionAbsoluteMs }, deps.clock ?? systemClock);
  return {
    async authenticate(credentials) {
      // An empty Authorization header carries no credential: the cookie decides then.
      if (credentials.authorization !== undefined && credentials.authorization.trim() !== '') {
        const token = bearerTokenOf(credentials.authorization);
        const actor = token === undefined ? undefined : await authenticateAdminToken(db, token);
        return actor === undefined ? undefined : { actor, via: 'token' };
      }
      const session = await sessions.resolve(sessionTokenOf(credentials.cookieHeader));
      if (session === undefined) return undefined;
      return {
        actor: {
          kind: 'person', personId: session.personId, sessionId: session.idHash, platformAdmin: session.platformAdmin,
          roles: await rolesOf(db, session.personId),
        },
        via: 'session',
        csrfTokenValid: csrfTokenMatches(session, credentials.csrfToken),
      };
    },

    async afterListen(publicUrl) {
      if (deps.onSetupLink === undefined) {
        if (!await anyPersonExists(db)) {
          logger.warn(
            'nobody can sign in to the dashboard yet and no setup link was issued: start with `pnpm start` to have one printed, '
            + 'or create a platform-admin person with POST /admin/v1/people and the platform-admin token',
          );
        }
        return;
      }
      const created = await createFirstPlatformAdmin(db, {
        email: settings.setupEmail, publicUrl, linkTtlMs: settings.linkTtlMs, handOver: deps.onSetupLink, clock: deps.clock ?? systemClock,
      });
      if (created !== undefined) {
        logger.info({ personId: created.personId, email: created.email }, 'first platform-admin person created; its setup link was handed to the operator (not logged)');
      }
    },
  };
}
