/**
 * Sessions: idle and absolute expiry on a moved clock (in-memory PGlite, the admin's real
 * migrations), and over HTTP on PostgreSQL the cookie's name and attributes (TLS, loopback,
 * plain http elsewhere, a trusted proxy), expiry as stored, and sign-out everywhere.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type Database } from '@gateway/db';
import { createTestDatabase, testPostgresUrl, type TestDatabase } from '@gateway/testkit';
import { prepareAdminSchema } from './admin-schema.ts';
import { insertPerson } from './people/domain/people-store.ts';
import { createSessions, csrfTokenMatches } from './people/domain/sessions.ts';
import { startAdminHarness, type AdminHarness } from './test-support/admin-harness.ts';
import { createOrganisation, newMember, sessionClientOf, sessionCookieOf, signIn } from './test-support/people-client.ts';

const minute = 60_000;

describe('session expiry on a moved clock', () => {
  let db: Database;
  let personId: string;
  let nowMs = Date.parse('2026-11-24T10:00:00Z');
  const clock = () => new Date(nowMs);
  const lifetimes = { idleMs: 10 * minute, absoluteMs: 30 * minute };

  beforeAll(async () => {
    db = await openDatabase({ schema: 'admin' });
    await prepareAdminSchema(db);
    personId = (await insertPerson(db, { email: 'clock@example.test', platformAdmin: false })).id;
  });
  afterAll(async () => {
    await db?.close();
  });

  async function idleExpiryOf(idHash: string): Promise<number> {
    const { rows } = await db.query<{ idle_expires_at: Date }>('SELECT idle_expires_at FROM sessions WHERE id_hash = $1', [idHash]);
    return rows[0]!.idle_expires_at.getTime();
  }

  it('ends a session idle for idleMs', async () => {
    const sessions = createSessions(db, lifetimes, clock);
    const started = await sessions.start(db, { personId, userAgent: 'test', clientAddress: '127.0.0.1' });
    nowMs += 10 * minute - 1;
    expect(await sessions.resolve(started.token)).toBeDefined();
    // That use moved the idle expiry: 10 more minutes from now.
    expect(await idleExpiryOf(started.idHash)).toBe(nowMs + 10 * minute);
    nowMs += 10 * minute;
    expect(await sessions.resolve(started.token)).toBeUndefined();
  });

  it('moves the idle expiry at most once a minute, and never past the absolute expiry', async () => {
    const sessions = createSessions(db, lifetimes, clock);
    const startedAt = nowMs;
    const started = await sessions.start(db, { personId, userAgent: 'test', clientAddress: '127.0.0.1' });
    nowMs += 30_000;
    expect(await sessions.resolve(started.token)).toBeDefined();
    expect(await idleExpiryOf(started.idHash)).toBe(startedAt + 10 * minute);
    for (const step of [9 * minute, 9 * minute, 9 * minute]) {
      nowMs += step;
      expect(await sessions.resolve(started.token)).toBeDefined();
    }
    // 27.5 minutes in: idle would reach 37.5, the absolute expiry caps it at 30.
    expect(await idleExpiryOf(started.idHash)).toBe(startedAt + 30 * minute);
    nowMs = startedAt + 30 * minute - 1;
    expect(await sessions.resolve(started.token)).toBeDefined();
    nowMs = startedAt + 30 * minute;
    expect(await sessions.resolve(started.token)).toBeUndefined();
  });

  it('ends one session, or all of a person\'s but one; refuses malformed and unknown tokens', async () => {
    const sessions = createSessions(db, lifetimes, clock);
    const own = (await insertPerson(db, { email: 'devices@example.test', platformAdmin: false })).id;
    const a = await sessions.start(db, { personId: own, userAgent: '', clientAddress: '' });
    const b = await sessions.start(db, { personId: own, userAgent: '', clientAddress: '' });
    const c = await sessions.start(db, { personId: own, userAgent: '', clientAddress: '' });
    const someoneElses = await sessions.start(db, { personId, userAgent: '', clientAddress: '' });
    await sessions.end(a.idHash);
    expect(await sessions.resolve(a.token)).toBeUndefined();
    expect(await sessions.endAllOf(db, own, b.idHash)).toBe(1);
    expect(await sessions.resolve(someoneElses.token)).toBeDefined();
    expect(await sessions.resolve(b.token)).toBeDefined();
    expect(await sessions.resolve(c.token)).toBeUndefined();
    expect(await sessions.resolve(undefined)).toBeUndefined();
    expect(await sessions.resolve('short')).toBeUndefined();
    expect(await sessions.resolve('A'.repeat(43))).toBeUndefined();
  });

  it('matches only the session\'s own CSRF token', async () => {
    const sessions = createSessions(db, lifetimes, clock);
    const a = await sessions.start(db, { personId, userAgent: '', clientAddress: '' });
    const b = await sessions.start(db, { personId, userAgent: '', clientAddress: '' });
    const session = (await sessions.resolve(a.token))!;
    expect(csrfTokenMatches(session, a.csrfToken)).toBe(true);
    expect(csrfTokenMatches(session, b.csrfToken)).toBe(false);
    expect(csrfTokenMatches(session, undefined)).toBe(false);
    expect(csrfTokenMatches(session, '')).toBe(false);
    // Nothing secret is stored: neither the token nor the CSRF token.
    const { rows } = await db.query<Record<string, unknown>>('SELECT * FROM sessions');
    expect(JSON.stringify(rows)).not.toContain(a.token);
    expect(JSON.stringify(rows)).not.toContain(a.csrfToken);
  });
});

const serverUrl = testPostgresUrl();
const itPg = it.skipIf(!serverUrl);

describe('session cookies over HTTP', () => {
  let testDatabase: TestDatabase;
  let admin: AdminHarness;
  let proxied: AdminHarness;
  let db: Database;

  beforeAll(async () => {
    if (!serverUrl) return;
    testDatabase = await createTestDatabase(serverUrl);
    admin = await startAdminHarness({ databaseUrl: testDatabase.url, env: { ADMIN_SESSION_ABSOLUTE_MS: String(8 * 60 * minute) } });
    proxied = await startAdminHarness({
      databaseUrl: testDatabase.url, ledger: admin.ledger, token: admin.token, encryptionKey: admin.encryptionKey, env: { ADMIN_TRUST_PROXY: 'true' },
    });
    db = await openDatabase({ url: testDatabase.url, schema: 'admin', poolSize: 2 });
  });
  afterAll(async () => {
    await db?.close();
    await proxied?.close();
    await admin?.close();
    await testDatabase?.drop();
  });

  itPg('on loopback: __Host-gw_session, HttpOnly, SameSite=Lax, Path=/, Secure, no Domain, Max-Age = the absolute lifetime', async () => {
    const organisationId = await createOrganisation(admin);
    const member = await newMember(admin, organisationId, 'viewer');
    const response = await signIn(admin, member.email, member.password);
    const line = response.headers.getSetCookie().find((header) => header.startsWith('__Host-gw_session='))!;
    expect(line).toMatch(/; HttpOnly/i);
    expect(line).toMatch(/; SameSite=Lax/i);
    expect(line).toMatch(/; Path=\//i);
    expect(line).toMatch(/; Secure/i);
    expect(line).not.toMatch(/Domain=/i);
    const cookie = sessionCookieOf(response)!;
    expect(cookie.value).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(cookie.maxAge).toBeGreaterThan(8 * 60 * 60 - 60);
    expect(cookie.maxAge).toBeLessThanOrEqual(8 * 60 * 60);
  });

  itPg('over plain http to another host: gw_session without Secure (development only), and it works', async () => {
    const organisationId = await createOrganisation(admin);
    const member = await newMember(admin, organisationId, 'viewer');
    const response = await signIn(admin, member.email, member.password, { host: 'dashboard.lan:8081' });
    const cookie = sessionCookieOf(response)!;
    expect(cookie.name).toBe('gw_session');
    expect(cookie.secure).toBeFalsy();
    expect(cookie.httpOnly).toBe(true);
    const client = sessionClientOf(admin, response);
    expect((await client.request('GET', `/admin/v1/organisations/${organisationId}`)).status).toBe(200);
  });

  itPg('X-Forwarded-Proto: https counts as TLS only with ADMIN_TRUST_PROXY', async () => {
    const organisationId = await createOrganisation(admin);
    const member = await newMember(admin, organisationId, 'viewer');
    const headers = { host: 'dashboard.example.com', 'x-forwarded-proto': 'https' };
    expect(sessionCookieOf(await signIn(proxied, member.email, member.password, headers))).toMatchObject({ name: '__Host-gw_session', secure: true });
    expect(sessionCookieOf(await signIn(admin, member.email, member.password, headers))!.name).toBe('gw_session');
    expect(sessionCookieOf(await signIn(proxied, member.email, member.password, { host: 'dashboard.example.com' }))!.name).toBe('gw_session');
  });

  itPg('a session past its stored idle or absolute expiry is over', async () => {
    const organisationId = await createOrganisation(admin);
    const member = await newMember(admin, organisationId, 'viewer');
    const idle = sessionClientOf(admin, await signIn(admin, member.email, member.password));
    const absolute = sessionClientOf(admin, await signIn(admin, member.email, member.password));
    expect((await idle.request('GET', '/auth/session')).status).toBe(200);
    const { rows } = await db.query<{ id_hash: string }>('SELECT id_hash FROM sessions WHERE person_id = $1 ORDER BY created_at DESC LIMIT 2', [member.personId]);
    await db.query('UPDATE sessions SET idle_expires_at = now() WHERE id_hash = $1', [rows[1]!.id_hash]);
    await db.query('UPDATE sessions SET absolute_expires_at = now() WHERE id_hash = $1', [rows[0]!.id_hash]);
    expect((await idle.request('GET', '/auth/session')).status).toBe(401);
    expect((await absolute.request('GET', `/admin/v1/organisations/${organisationId}`)).status).toBe(401);
  });

  itPg('sign-out everywhere ends every session of the person, on every device', async () => {
    const organisationId = await createOrganisation(admin);
    const member = await newMember(admin, organisationId, 'viewer');
    const laptop = sessionClientOf(admin, await signIn(admin, member.email, member.password));
    const phone = sessionClientOf(admin, await signIn(admin, member.email, member.password));
    expect((await laptop.request('POST', '/auth/sign-out-everywhere')).status).toBe(204);
    for (const client of [member, laptop, phone]) expect((await client.request('GET', '/auth/session')).status).toBe(401);
  });

  itPg('an Authorization header is judged alone: a bad bearer token with a good cookie is 401', async () => {
    const organisationId = await createOrganisation(admin);
    const member = await newMember(admin, organisationId, 'viewer');
    const response = await member.request('GET', `/admin/v1/organisations/${organisationId}`, undefined, { authorization: 'Bearer gwadm_wrong' });
    expect(response.status).toBe(401);
  });
});
