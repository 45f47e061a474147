import { createHmac, randomBytes } from 'node:crypto';
import type { Queryable } from '@gateway/db';
import { hashSecret, hashesEqual } from '@gateway/secrets';

/** How long sessions last, ms: without use (moved forward on use), and at most from sign-in. */
export interface SessionLifetimes {
  idleMs: number;
  absoluteMs: number;
}

/** The current time; injected so tests can move it instead of waiting. */
export type Clock = () => Date;

/** The system clock. */
export const systemClock: Clock = () => new Date();

/**
 * Use moves a session's idle expiry forward at most this often, ms: a dashboard polling every
 * second then writes the row once a minute, not once a request.
 */
const touchIntervalMs = 60_000;

/** Ended and expired sessions are deleted this long after they ended, ms (kept a day for support questions). */
const endedSessionRetentionMs = 24 * 60 * 60_000;

/** A session token (the cookie value) is 32 random bytes in base64url: 43 characters. */
const sessionTokenPattern = /^[A-Za-z0-9_-]{43}$/;

/** A session just started: the token goes into the cookie, the CSRF token to the dashboard; neither is stored. */
export interface StartedSession {
  /** The cookie value: 32 random bytes, base64url. Only its SHA-256 is stored. */
  token: string;
  /** The X-CSRF-Token the dashboard must send on every state change. Only its SHA-256 is stored. */
  csrfToken: string;
  /** SHA-256 (hex) of the token: the session's id in the database and in actors (not a secret). */
  idHash: string;
  absoluteExpiresAt: Date;
}

/** A valid session as a request presents it. */
export interface ActiveSession {
  idHash: string;
  personId: string;
  platformAdmin: boolean;
  /** SHA-256 (hex) of the session's CSRF token. */
  csrfTokenHash: string;
}

/**
 * The CSRF token of a session, derived from its token by HMAC: the dashboard can ask for it again
 * (GET /auth/session) without the server keeping it, every tab gets the same one, and neither
 * the token nor the stored hashes reveal it to someone who only reads the database.
 */
export function csrfTokenOf(sessionToken: string): string {
  return createHmac('sha256', sessionToken).update('gateway-admin:csrf').digest('base64url');
}

/** Whether a presented X-CSRF-Token is the session's, comparing SHA-256 hashes in constant time. */
export function csrfTokenMatches(session: ActiveSession, presented: string | undefined): boolean {
  return presented !== undefined && presented.length <= 200 && hashesEqual(hashSecret(presented), session.csrfTokenHash);
}

/**
 * Sessions in the `sessions` table: started at sign-in (or when a link is followed), found by
 * the SHA-256 of the cookie value, ended by sign-out, by sign-out everywhere, when the person's
 * password is set or they are disabled, after `idleMs` without use or `absoluteMs` after start.
 */
export function createSessions(db: Queryable, lifetimes: SessionLifetimes, clock: Clock = systemClock) {
  return {
    /** Starts a session for a person (inside the caller's transaction when given one). */
    async start(tx: Queryable, input: { personId: string; userAgent: string; clientAddress: string }): Promise<StartedSession> {
      const now = clock();
      const token = randomBytes(32).toString('base64url');
      const csrfToken = csrfTokenOf(token);
      const idHash = hashSecret(token);
      const absoluteExpiresAt = new Date(now.getTime() + lifetimes.absoluteMs);
      const idleExpiresAt = new Date(Math.min(now.getTime() + lifetimes.idleMs, absoluteExpiresAt.getTime()));
      await tx.query(
        `DELETE FROM sessions WHERE LEAST(idle_expires_at, absolute_expires_at, COALESCE(revoked_at, 'infinity')) < $1`,
        [new Date(now.getTime() - endedSessionRetentionMs)],
      );
      await tx.query(
        `INSERT INTO sessions (id_hash, person_id, csrf_token_hash, created_at, last_seen_at, idle_expires_at, absolute_expires_at, user_agent, client_address)
         VALUES ($1, $2, $3, $4, $4, $5, $6, $7, $8)`,
        [idHash, input.personId, hashSecret(csrfToken), now, idleExpiresAt, absoluteExpiresAt, input.userAgent.slice(0, 300), input.clientAddress.slice(0, 100)],
      );
      return { token, csrfToken, idHash, absoluteExpiresAt };
    },

    /**
     * The session a cookie value opens, if it is valid now: not ended, not expired, its person
     * active. Use moves the idle expiry forward (never past the absolute one), at most once a minute.
     */
    async resolve(token: string | undefined): Promise<ActiveSession | undefined> {
      if (token === undefined || !sessionTokenPattern.test(token)) return undefined;
      const now = clock();
      const idHash = hashSecret(token);
      const { rows } = await db.query<{
        id_hash: string; person_id: string; csrf_token_hash: string; last_seen_at: Date; absolute_expires_at: Date; platform_admin: boolean;
      }>(
        `SELECT s.id_hash, s.person_id, s.csrf_token_hash, s.last_seen_at, s.absolute_expires_at, p.platform_admin
         FROM sessions s JOIN people p ON p.id = s.person_id
         WHERE s.id_hash = $1 AND s.revoked_at IS NULL AND s.idle_expires_at > $2 AND s.absolute_expires_at > $2 AND p.status = 'active'`,
        [idHash, now],
      );
      const row = rows[0];
      if (!row || !hashesEqual(row.id_hash, idHash)) return undefined;
      if (now.getTime() - row.last_seen_at.getTime() >= touchIntervalMs) {
        const idleExpiresAt = new Date(Math.min(now.getTime() + lifetimes.idleMs, row.absolute_expires_at.getTime()));
        await db.query('UPDATE sessions SET last_seen_at = $2, idle_expires_at = $3 WHERE id_hash = $1 AND revoked_at IS NULL', [idHash, now, idleExpiresAt]);
      }
      return { idHash, personId: row.person_id, platformAdmin: row.platform_admin, csrfTokenHash: row.csrf_token_hash };
    },

    /** Ends one session (sign-out). */
    async end(idHash: string): Promise<void> {
      await db.query('UPDATE sessions SET revoked_at = $2 WHERE id_hash = $1 AND revoked_at IS NULL', [idHash, clock()]);
    },

    /** Ends every session of a person, or every one but `exceptIdHash` (inside the caller's transaction). */
    async endAllOf(tx: Queryable, personId: string, exceptIdHash?: string): Promise<number> {
      const { rows } = await tx.query(
        `UPDATE sessions SET revoked_at = $2
         WHERE person_id = $1 AND revoked_at IS NULL AND ($3::text IS NULL OR id_hash <> $3) RETURNING id_hash`,
        [personId, clock(), exceptIdHash ?? null],
      );
      return rows.length;
    },
  };
}
