/**
 * People over real PostgreSQL: sign-in, the first start's setup link, invitations and reset
 * links (expired, reused, revoked all 404), members and the last-owner rule, platform people,
 * CSRF, audit entries naming the person, link emails over SMTP, and no secret in any log line.
 */
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SMTPServer } from 'smtp-server';
import type { Database } from '@gateway/db';
import { createTestDatabase, testPostgresUrl, type TestDatabase } from '@gateway/testkit';
import {
  invitationCreatedResponse, linkInfoResponse, memberListResponse, personAccountResponse, personCreatedResponse, personResponse,
  sessionResponse,
} from './people/http/people-schemas.ts';
import { errorResponse } from './common/http/response-schemas.ts';
import { startAdminHarness, type AdminHarness, type HarnessResponse } from './test-support/admin-harness.ts';
import { startPostgresAdmin, type PostgresAdmin } from './test-support/postgres-admin.ts';
import { captureLogs, type CapturedLogs } from './test-support/captured-logs.ts';
import {
  callAnonymously, createOrganisation, followLink, invite, linkTokenOf, newMember, sessionClientOf, signIn, testEmail, testPassword,
} from './test-support/people-client.ts';

const serverUrl = testPostgresUrl();
const itPg = it.skipIf(!serverUrl);

let testDatabase: TestDatabase;
let postgres: PostgresAdmin | undefined;
let admin: AdminHarness;
let db: Database;
let logs: CapturedLogs;
const setupLinks: string[] = [];
/** Secrets seen during the tests; none may appear in a log line. */
const secretsSeen: string[] = [];

beforeAll(async () => {
  if (!serverUrl) return;
  logs = captureLogs();
  postgres = await startPostgresAdmin(serverUrl, {
    logger: logs.logger, onSetupLink: (url) => setupLinks.push(url),
    env: { ADMIN_SETUP_EMAIL: 'Root@Example.test', ADMIN_PUBLIC_URL: 'https://dashboard.example.test/' },
  });
  ({ testDatabase, admin, db } = postgres);
});

afterAll(async () => {
  await postgres?.close();
});

function expectError(response: HarnessResponse, status: number, code: string): void {
  expect(response.status, response.text).toBe(status);
  expect(errorResponse.parse(response.json).error.code).toBe(code);
}

/** The audit events of an action, read with the platform token. */
async function auditEvents(action: string, organisationId?: string) {
  const query = organisationId ? `?organisation_id=${organisationId}&limit=100` : '?limit=100';
  const response = await admin.request('GET', `/admin/v1/audit-events${query}`);
  expect(response.status, response.text).toBe(200);
  return (response.json.data as Array<{ action: string; resource_id: string; actor: { kind: string; person_id: string | null }; changes: Record<string, unknown> }>)
    .filter((event) => event.action === action);
}

describe('first start', () => {
  itPg('creates the first platform admin with a one-time setup link under ADMIN_PUBLIC_URL', async () => {
    expect(setupLinks).toHaveLength(1);
    expect(setupLinks[0]).toMatch(/^https:\/\/dashboard\.example\.test\/#\/link\/[A-Za-z0-9_-]{43}$/);
    const token = linkTokenOf(setupLinks[0]!);
    secretsSeen.push(token);
    const info = await callAnonymously(admin, 'GET', `/auth/links/${token}`);
    expect(info.status, info.text).toBe(200);
    expect(linkInfoResponse.parse(info.json)).toMatchObject({ kind: 'setup', email: 'root@example.test', organisation_name: null, role: null, password_set: false });

    const password = testPassword('root');
    secretsSeen.push(password);
    const followed = await followLink(admin, token, password, { display_name: 'Root' });
    const root = sessionClientOf(admin, followed);
    secretsSeen.push(root.cookie.split('=')[1]!, root.csrfToken);
    expect(sessionResponse.parse(followed.json).person).toMatchObject({ email: 'root@example.test', display_name: 'Root', platform_admin: true, memberships: [] });

    // Used up: the same link answers 404 now, with the one message.
    const again = await followLink(admin, token, password);
    expectError(again, 404, 'not_found');
    expect(again.json.error.message).toBe('This link is invalid, used or expired.');

    // The platform-admin person sees everything.
    expect((await root.request('GET', '/admin/v1/people')).status).toBe(200);
    const signedIn = await signIn(admin, 'ROOT@example.test ', password);
    expect(signedIn.status, signedIn.text).toBe(200);
  });

  itPg('a restart on the same database issues no second link', async () => {
    const again: string[] = [];
    const second = await startAdminHarness({ databaseUrl: testDatabase.url, ledger: admin.ledger, token: admin.token, encryptionKey: admin.encryptionKey, onSetupLink: (url) => again.push(url) });
    await second.close();
    expect(again).toEqual([]);
  });

  itPg('without onSetupLink no person is created and a warning says how to get a link', async () => {
    const empty = await createTestDatabase(serverUrl!);
    const captured = captureLogs();
    const bare = await startAdminHarness({ databaseUrl: empty.url, logger: captured.logger });
    try {
      const people = await bare.request('GET', '/admin/v1/people');
      expect(people.json.data).toEqual([]);
      expect(captured.text()).toContain('POST /admin/v1/people');
    } finally {
      await bare.close();
      await empty.drop();
    }
  });
});

describe('sign-in', () => {
  itPg('answers a wrong password and an unknown email the same way', async () => {
    const organisationId = await createOrganisation(admin, 'Sign-in Org');
    const member = await newMember(admin, organisationId, 'viewer');
    const wrong = await signIn(admin, member.email, 'not-the-password-at-all');
    const unknown = await signIn(admin, testEmail('nobody'), 'not-the-password-at-all');
    expectError(wrong, 401, 'unauthenticated');
    expect(unknown.status).toBe(401);
    expect(unknown.json).toEqual(wrong.json);
    expect(wrong.headers.getSetCookie()).toEqual([]);

    const right = await signIn(admin, member.email, member.password);
    const body = sessionResponse.parse(right.json);
    expect(body.person.memberships).toEqual([{ organisation_id: organisationId, organisation_name: 'Sign-in Org', role: 'viewer' }]);
    expect(right.headers.get('cache-control')).toBe('no-store');
  });

  itPg('refuses a cross-origin Origin (login CSRF) and accepts the same origin', async () => {
    const organisationId = await createOrganisation(admin);
    const member = await newMember(admin, organisationId, 'viewer');
    const cross = await signIn(admin, member.email, member.password, { origin: 'https://evil.example' });
    expectError(cross, 403, 'permission_denied');
    const same = await signIn(admin, member.email, member.password, { origin: admin.baseUrl });
    expect(same.status, same.text).toBe(200);
  });

  itPg('a disabled person cannot sign in (same 401), and their sessions end at once', async () => {
    const organisationId = await createOrganisation(admin);
    const member = await newMember(admin, organisationId, 'developer');
    expect((await member.request('GET', '/auth/session')).status).toBe(200);
    const disabled = await admin.request('PATCH', `/admin/v1/people/${member.personId}`, { status: 'disabled' });
    expect(personAccountResponse.parse(disabled.json).status).toBe('disabled');
    expectError(await member.request('GET', `/admin/v1/organisations/${organisationId}`), 401, 'unauthenticated');
    expectError(await signIn(admin, member.email, member.password), 401, 'unauthenticated');
    await admin.request('PATCH', `/admin/v1/people/${member.personId}`, { status: 'active' });
    expect((await signIn(admin, member.email, member.password)).status).toBe(200);
  });
});

describe('CSRF and same origin on session state changes', () => {
  itPg('a session needs its X-CSRF-Token on changes (missing or wrong: 403); a bearer token needs none', async () => {
    const organisationId = await createOrganisation(admin);
    const owner = await newMember(admin, organisationId, 'owner');
    const path = `/admin/v1/organisations/${organisationId}/projects`;
    const missing = await owner.request('POST', path, { name: 'p' }, { 'x-csrf-token': '' });
    expectError(missing, 403, 'permission_denied');
    const wrong = await owner.request('POST', path, { name: 'p' }, { 'x-csrf-token': 'A'.repeat(43) });
    expectError(wrong, 403, 'permission_denied');
    const crossOrigin = await owner.request('POST', path, { name: 'p' }, { origin: 'https://evil.example' });
    expectError(crossOrigin, 403, 'permission_denied');
    expect((await owner.request('POST', path, { name: 'p' })).status).toBe(201);
    // GET needs none; the bearer token needs none.
    expect((await owner.request('GET', path, undefined)).status).toBe(200);
    expect((await admin.request('POST', path, { name: 'q' })).status).toBe(201);
  });

  itPg('sign-out needs the CSRF token, then the session is over and the cookie deleted', async () => {
    const organisationId = await createOrganisation(admin);
    const member = await newMember(admin, organisationId, 'viewer');
    expectError(await member.request('POST', '/auth/sign-out', undefined, { 'x-csrf-token': 'wrong' }), 403, 'permission_denied');
    const out = await member.request('POST', '/auth/sign-out');
    expect(out.status, out.text).toBe(204);
    expect(out.headers.getSetCookie().some((line) => /^__Host-gw_session=;.*Max-Age=0/i.test(line))).toBe(true);
    expectError(await member.request('GET', '/auth/session'), 401, 'unauthenticated');
    expectError(await member.request('GET', `/admin/v1/organisations/${organisationId}`), 401, 'unauthenticated');
  });

  itPg('GET /auth/session gives the same CSRF token for the whole session', async () => {
    const organisationId = await createOrganisation(admin);
    const member = await newMember(admin, organisationId, 'viewer');
    const first = await member.request('GET', '/auth/session');
    const second = await member.request('GET', '/auth/session');
    expect(first.json.csrf_token).toBe(member.csrfToken);
    expect(second.json.csrf_token).toBe(member.csrfToken);
    expectError(await callAnonymously(admin, 'GET', '/auth/session'), 401, 'unauthenticated');
  });
});

describe('invitations and reset links', () => {
  itPg('an invitation is shown once, listed while pending, and follows into a membership', async () => {
    const organisationId = await createOrganisation(admin, 'Invite Org');
    const email = testEmail('invitee');
    const created = await admin.request('POST', `/admin/v1/organisations/${organisationId}/invitations`, { email: email.toUpperCase(), role: 'developer' });
    expect(created.status, created.text).toBe(201);
    const body = invitationCreatedResponse.parse(created.json);
    expect(body.invitation).toMatchObject({ email, role: 'developer', status: 'pending', organisation_id: organisationId });
    expect(body.email_sent).toBe(false);
    const token = linkTokenOf(body.link);
    secretsSeen.push(token);
    const pending = await admin.request('GET', `/admin/v1/organisations/${organisationId}/invitations`);
    expect(pending.json.data.map((invitation: { id: string }) => invitation.id)).toEqual([body.invitation.id]);
    expect(JSON.stringify(pending.json)).not.toContain(token);

    const info = linkInfoResponse.parse((await callAnonymously(admin, 'GET', `/auth/links/${token}`)).json);
    expect(info).toMatchObject({ kind: 'invitation', email, organisation_name: 'Invite Org', role: 'developer', password_set: false });
    expectError(await followLink(admin, token, 'short'), 400, 'invalid_request');
    const joined = sessionClientOf(admin, await followLink(admin, token, testPassword()));
    const members = memberListResponse.parse((await joined.request('GET', `/admin/v1/organisations/${organisationId}/members`)).json);
    expect(members.data).toEqual([expect.objectContaining({ person_id: joined.personId, email, role: 'developer' })]);
    expect((await admin.request('GET', `/admin/v1/organisations/${organisationId}/invitations`)).json.data).toEqual([]);

    const [accepted] = await auditEvents('invitation.accept', organisationId);
    expect(accepted).toMatchObject({ resource_id: body.invitation.id, actor: { kind: 'person', person_id: joined.personId } });
  });

  itPg('expired, reused and revoked links all answer 404 with one message', async () => {
    const organisationId = await createOrganisation(admin);
    const expiredToken = await invite(admin, organisationId, testEmail('late'), 'viewer');
    await db.query("UPDATE person_links SET expires_at = now() - interval '1 second' WHERE used_at IS NULL AND organisation_id = $1", [organisationId]);
    const revokedEmail = testEmail('revoked');
    const revokedToken = await invite(admin, organisationId, revokedEmail, 'viewer');
    const [pending] = (await admin.request('GET', `/admin/v1/organisations/${organisationId}/invitations`)).json.data as Array<{ id: string }>;
    const revoked = await admin.request('DELETE', `/admin/v1/organisations/${organisationId}/invitations/${pending!.id}`);
    expect(revoked.json.status).toBe('revoked');
    const usedToken = await invite(admin, organisationId, testEmail('used'), 'viewer');
    expect((await followLink(admin, usedToken, testPassword())).status).toBe(200);

    for (const token of [expiredToken, revokedToken, usedToken, 'A'.repeat(43), 'not-a-token']) {
      for (const response of [await callAnonymously(admin, 'GET', `/auth/links/${token}`), await followLink(admin, token, testPassword())]) {
        expectError(response, 404, 'not_found');
        expect(response.json.error.message).toBe('This link is invalid, used or expired.');
      }
    }
    expect((await auditEvents('invitation.revoke', organisationId))).toHaveLength(1);
  });

  itPg('inviting someone who has an account asks for their password, keeps it, and adds the membership', async () => {
    const first = await createOrganisation(admin, 'First');
    const second = await createOrganisation(admin, 'Second');
    const member = await newMember(admin, first, 'viewer');
    const token = await invite(admin, second, member.email, 'owner');
    expect(linkInfoResponse.parse((await callAnonymously(admin, 'GET', `/auth/links/${token}`)).json).password_set).toBe(true);
    expectError(await followLink(admin, token, testPassword('guess')), 401, 'unauthenticated');
    const joined = sessionClientOf(admin, await followLink(admin, token, member.password));
    expect(joined.personId).toBe(member.personId);
    const me = personResponse.parse((await joined.request('GET', '/admin/v1/me')).json);
    expect(me.memberships.map((membership) => [membership.organisation_name, membership.role])).toEqual([['First', 'viewer'], ['Second', 'owner']]);
    // The old password still signs in; the member's earlier session goes on.
    expect((await signIn(admin, member.email, member.password)).status).toBe(200);
    expect((await member.request('GET', '/auth/session')).status).toBe(200);
    // Already a member now: 409.
    expectError(await admin.request('POST', `/admin/v1/organisations/${second}/invitations`, { email: member.email, role: 'viewer' }), 409, 'conflict');
  });

  itPg('a password reset sets a new password and ends every other session of the person', async () => {
    const organisationId = await createOrganisation(admin);
    const owner = await newMember(admin, organisationId, 'owner');
    const member = await newMember(admin, organisationId, 'developer');
    const otherDevice = sessionClientOf(admin, await signIn(admin, member.email, member.password));
    const reset = await owner.request('POST', `/admin/v1/organisations/${organisationId}/members/${member.personId}/password-resets`);
    expect(reset.status, reset.text).toBe(201);
    const token = linkTokenOf(reset.json.link as string);
    expect(linkInfoResponse.parse((await callAnonymously(admin, 'GET', `/auth/links/${token}`)).json).kind).toBe('password_reset');
    // The current password works until the link is followed.
    expect((await signIn(admin, member.email, member.password)).status).toBe(200);
    const newPassword = testPassword('new');
    const after = sessionClientOf(admin, await followLink(admin, token, newPassword));
    expectError(await member.request('GET', '/auth/session'), 401, 'unauthenticated');
    expectError(await otherDevice.request('GET', '/auth/session'), 401, 'unauthenticated');
    expect((await after.request('GET', '/auth/session')).status).toBe(200);
    expectError(await signIn(admin, member.email, member.password), 401, 'unauthenticated');
    expect((await signIn(admin, member.email, newPassword)).status).toBe(200);

    const [issued] = await auditEvents('person.password_reset_issue', organisationId);
    expect(issued).toMatchObject({ resource_id: member.personId, actor: { kind: 'person', person_id: owner.personId } });
    const passwordSet = (await auditEvents('person.password_set')).filter((event) => event.resource_id === member.personId);
    expect(passwordSet.at(-1)!.actor.person_id).toBe(member.personId);
  });

  itPg('an owner cannot reset the password of someone with access beyond their organisations', async () => {
    const mine = await createOrganisation(admin);
    const theirs = await createOrganisation(admin);
    const owner = await newMember(admin, mine, 'owner');
    const shared = await newMember(admin, mine, 'viewer');
    await invite(admin, theirs, shared.email, 'viewer').then((token) => followLink(admin, token, shared.password));
    expectError(await owner.request('POST', `/admin/v1/organisations/${mine}/members/${shared.personId}/password-resets`), 403, 'permission_denied');
    // A platform admin can.
    expect((await admin.request('POST', `/admin/v1/people/${shared.personId}/password-resets`)).status).toBe(201);
  });
});

describe('members', () => {
  itPg('role changes apply on the next request; the last owner cannot be demoted or removed', async () => {
    const organisationId = await createOrganisation(admin);
    const owner = await newMember(admin, organisationId, 'owner');
    const member = await newMember(admin, organisationId, 'viewer');
    const projects = `/admin/v1/organisations/${organisationId}/projects`;
    expectError(await member.request('POST', projects, { name: 'p' }), 403, 'permission_denied');
    const promoted = await owner.request('PATCH', `/admin/v1/organisations/${organisationId}/members/${member.personId}`, { role: 'developer' });
    expect(promoted.status, promoted.text).toBe(200);
    expect(promoted.json.role).toBe('developer');
    expect((await member.request('POST', projects, { name: 'p' })).status).toBe(201);

    const self = `/admin/v1/organisations/${organisationId}/members/${owner.personId}`;
    expectError(await owner.request('PATCH', self, { role: 'viewer' }), 409, 'conflict');
    expectError(await owner.request('DELETE', self), 409, 'conflict');

    const removed = await owner.request('DELETE', `/admin/v1/organisations/${organisationId}/members/${member.personId}`);
    expect(removed.status, removed.text).toBe(204);
    // Removed: the organisation no longer exists for them.
    expectError(await member.request('GET', `/admin/v1/organisations/${organisationId}`), 404, 'not_found');

    const [roleChange] = await auditEvents('membership.update', organisationId);
    expect(roleChange).toMatchObject({ resource_id: member.personId, actor: { kind: 'person', person_id: owner.personId }, changes: { role: { before: 'viewer', after: 'developer' } } });
    expect((await auditEvents('membership.delete', organisationId))[0]!.actor.person_id).toBe(owner.personId);
  });

  itPg('another organisation\'s members, invitations and people are 404 by URL', async () => {
    const mine = await createOrganisation(admin);
    const theirs = await createOrganisation(admin);
    const owner = await newMember(admin, mine, 'owner');
    const stranger = await newMember(admin, theirs, 'owner');
    for (const path of ['members', 'invitations']) {
      expectError(await owner.request('GET', `/admin/v1/organisations/${theirs}/${path}`), 404, 'not_found');
    }
    expectError(await owner.request('PATCH', `/admin/v1/organisations/${theirs}/members/${stranger.personId}`, { role: 'viewer' }), 404, 'not_found');
    // A person of another organisation is not a member here.
    expectError(await owner.request('DELETE', `/admin/v1/organisations/${mine}/members/${stranger.personId}`), 404, 'not_found');
    expectError(await owner.request('GET', '/admin/v1/people'), 403, 'permission_denied');
  });
});

describe('what /me says a member may do', () => {
  itPg('lists the operations of the routes each membership\'s role allows, from the route table', async () => {
    const organisationId = await createOrganisation(admin, 'Capabilities Org');
    const viewer = await newMember(admin, organisationId, 'viewer', 'capabilities-viewer');
    const owner = await newMember(admin, organisationId, 'owner', 'capabilities-owner');
    const allowedOf = async (member: typeof viewer) => {
      const me = personResponse.parse((await member.request('GET', '/admin/v1/me')).json);
      return me.memberships.find((membership) => membership.organisation_id === organisationId)!.allowed_operations;
    };
    const viewerAllowed = await allowedOf(viewer);
    expect(viewerAllowed).toContain('listMembers');
    expect(viewerAllowed).not.toContain('createInvitation');
    const ownerAllowed = await allowedOf(owner);
    expect(ownerAllowed).toContain('listMembers');
    expect(ownerAllowed).toContain('createInvitation');
  });
});

describe('platform people', () => {
  itPg('creates a platform-admin person with a setup link, lists people, refuses self-disable', async () => {
    const email = testEmail('ops');
    const created = await admin.request('POST', '/admin/v1/people', { email, platform_admin: true });
    expect(created.status, created.text).toBe(201);
    const body = personCreatedResponse.parse(created.json);
    expect(body.person).toMatchObject({ email, platform_admin: true, password_set: false, status: 'active' });
    expectError(await admin.request('POST', '/admin/v1/people', { email, platform_admin: true }), 409, 'conflict');
    const ops = sessionClientOf(admin, await followLink(admin, linkTokenOf(body.link), testPassword('ops')));
    expectError(await ops.request('PATCH', `/admin/v1/people/${ops.personId}`, { status: 'disabled' }), 409, 'conflict');

    const listed: string[] = [];
    let after: string | undefined;
    for (;;) {
      const page = await ops.request('GET', `/admin/v1/people?limit=2${after ? `&after=${after}` : ''}`);
      expect(page.status, page.text).toBe(200);
      listed.push(...page.json.data.map((person: { email: string }) => person.email));
      if (!page.json.has_more) break;
      after = page.json.data.at(-1).id;
    }
    expect(listed).toContain(email);
    expect(listed).toContain('root@example.test');
    expect(new Set(listed).size).toBe(listed.length);

    const [event] = (await auditEvents('person.create')).filter((entry) => entry.resource_id === body.person.id);
    expect(event!.actor.kind).toBe('platform_admin');
  });

  itPg('GET /me answers a token 404 (tokens are not people)', async () => {
    expectError(await admin.request('GET', '/admin/v1/me'), 404, 'not_found');
  });
});

describe('link emails', () => {
  itPg('with SMTP_URL and SMTP_FROM an invitation is also emailed, with the link', async () => {
    const received: string[] = [];
    const smtp = new SMTPServer({
      authOptional: true, disabledCommands: ['STARTTLS'],
      onData(stream, _session, callback) {
        const chunks: Buffer[] = [];
        stream.on('data', (chunk: Buffer) => chunks.push(chunk));
        stream.on('end', () => { received.push(Buffer.concat(chunks).toString('utf8')); callback(); });
      },
    });
    smtp.listen(0, '127.0.0.1');
    await once(smtp.server, 'listening');
    const port = (smtp.server.address() as AddressInfo).port;
    const mailing = await startAdminHarness({
      databaseUrl: testDatabase.url, ledger: admin.ledger, token: admin.token, encryptionKey: admin.encryptionKey,
      env: { SMTP_URL: `smtp://127.0.0.1:${port}`, SMTP_FROM: 'gateway@example.test' },
    });
    try {
      const organisationId = await createOrganisation(mailing, 'Mail Org');
      const email = testEmail('mailed');
      const created = await mailing.request('POST', `/admin/v1/organisations/${organisationId}/invitations`, { email, role: 'viewer' });
      expect(created.status, created.text).toBe(201);
      expect(created.json.email_sent).toBe(true);
      expect(received).toHaveLength(1);
      const message = received[0]!.replace(/=\r?\n/g, '');
      expect(message).toContain(`To: ${email}`);
      expect(message).toContain('From: gateway@example.test');
      expect(message).toContain(linkTokenOf(created.json.link as string));
    } finally {
      await mailing.close();
      await new Promise<void>((resolve) => smtp.close(() => resolve()));
    }
  });
});

describe('logs', () => {
  itPg('no password, session, CSRF or link token reaches a log line; link paths are logged without the token', async () => {
    expect(secretsSeen.length).toBeGreaterThan(3);
    const text = logs.text();
    for (const secret of secretsSeen) expect(text).not.toContain(secret);
    expect(text).toContain('/auth/links/{token}');
    expect(text).toContain('"msg":"signed in"');
  });
});
