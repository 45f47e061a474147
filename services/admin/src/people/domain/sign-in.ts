import type { Database } from '@gateway/db';
import { GatewayError } from '@gateway/errors';
import { systemActor } from '../../common/domain/actor.ts';
import { recordAuditEvent } from '../../common/domain/audit-log.ts';
import { hashPassword, verifyPassword } from './password-hashing.ts';
import {
  anyPersonExists, findPerson, findPersonByEmail, insertMembership, insertPerson, lockFirstPersonCreation, normalizeEmail, personView,
  setPasswordHash, type PersonRecord, type PersonView,
} from './people-store.ts';
import { describeLink, personOf, requireSession, type ClientFacts, type PeopleContext } from './people-context.ts';
import { invalidLink, linkUrl, personActor, throttled, wrongCredentials } from './people-rules.ts';
import { findPendingLink, issueLink, markLinkUsed } from './person-links.ts';
import { csrfTokenMatches, csrfTokenOf, systemClock, type Clock, type StartedSession } from './sessions.ts';
import { clearSignInFailures, recordSignInFailure, signInVerdict } from './sign-in-throttle.ts';
import { forgetTrustedDevices, trustDevice, trustedDeviceFor, type IssuedDevice, type PresentedDevice } from './trusted-devices.ts';

/** The first platform admin created at first start, with the setup link handed to the operator. */
export interface FirstPlatformAdmin {
  personId: string;
  email: string;
}

/**
 * When nobody exists yet, creates the first platform-admin person (`email`) with a one-time
 * setup link and hands `<publicUrl>/#/link/<token>` to `handOver` before committing: if it
 * throws, nothing is kept. Replicas starting together create one person, not two.
 */
export async function createFirstPlatformAdmin(
  db: Database,
  input: { email: string; publicUrl: string; linkTtlMs: number; handOver: (url: string) => void; clock?: Clock },
): Promise<FirstPlatformAdmin | undefined> {
  const now = (input.clock ?? systemClock)();
  return db.transaction(async (tx) => {
    await lockFirstPersonCreation(tx);
    if (await anyPersonExists(tx)) return undefined;
    const person = await insertPerson(tx, { email: normalizeEmail(input.email), platformAdmin: true });
    const { link, token } = await issueLink(tx, { kind: 'setup', personId: person.id, issuedBy: systemActor, now, ttlMs: input.linkTtlMs });
    await recordAuditEvent(tx, {
      actor: systemActor, organisationId: null, action: 'person.create', resourceType: 'person', resourceId: person.id,
      changes: { email: { before: null, after: person.email }, platform_admin: { before: null, after: true }, setup_link: { before: null, after: link.id } },
    });
    input.handOver(linkUrl(input.publicUrl, token));
    return { personId: person.id, email: person.email };
  });
}

/** A sign-in that succeeded: the person, the new session, and the device token that makes the browser trusted for the email. */
export interface SignedIn {
  person: PersonView;
  session: StartedSession;
  device: IssuedDevice;
}

/**
 * Checks a password for an email under the sign-in throttle (docs/people.md, "Sign-in
 * throttling"): 429 while throttled, 401 (one answer for an unknown email, a wrong password and a
 * disabled person) when wrong. Returns the active person and the trusted device the client
 * presented for this email, if any.
 */
async function checkPassword(
  ctx: PeopleContext, email: string, person: PersonRecord | undefined, password: string, client: Omit<ClientFacts, 'userAgent'>,
): Promise<{ person: PersonRecord; presented: PresentedDevice | undefined }> {
  const { db, logger } = ctx;
  const now = ctx.clock();
  const device = await trustedDeviceFor(db, email, client.deviceTokens ?? [], now);
  const verdict = await signInVerdict(db, { email, clientAddress: client.clientAddress, now, trustedDeviceIdHash: device?.idHash });
  const trustedDevice = verdict.attempt.trustedDeviceIdHash !== undefined;
  if (verdict.retryAfterSeconds !== undefined) {
    logger?.info({ clientAddress: client.clientAddress, trustedDevice }, 'sign-in throttled');
    throw throttled(verdict.retryAfterSeconds);
  }
  const matches = await verifyPassword(person?.passwordHash, password);
  if (!person || !matches || person.status !== 'active') {
    await recordSignInFailure(db, verdict.attempt);
    logger?.info({ clientAddress: client.clientAddress, trustedDevice }, 'sign-in failed');
    throw wrongCredentials();
  }
  await clearSignInFailures(db, verdict.attempt);
  return { person, presented: device };
}

/**
 * Signs a person in with email and password: a new session and a fresh device token for this
 * browser, or 401 (the same answer for an unknown email, a wrong password and a disabled
 * person), or 429 while throttled.
 */
export async function signIn(ctx: PeopleContext, input: { email: string; password: string } & ClientFacts): Promise<SignedIn> {
  const { db, logger } = ctx;
  const email = normalizeEmail(input.email);
  const { person, presented } = await checkPassword(ctx, email, await findPersonByEmail(db, email), input.password, input);
  const device = await trustDevice(db, email, ctx.clock(), presented);
  const session = await ctx.sessions.start(db, { personId: person.id, userAgent: input.userAgent, clientAddress: input.clientAddress });
  logger?.info({ personId: person.id, clientAddress: input.clientAddress, trustedDevice: presented !== undefined }, 'signed in');
  return { person: await personView(db, person), session, device };
}

/** The signed-in person and the session's CSRF token, or 401. */
export async function currentSession(ctx: PeopleContext, sessionToken: string | undefined): Promise<{ person: PersonView; csrfToken: string }> {
  const session = await requireSession(ctx, sessionToken);
  return { person: await personView(ctx.db, await personOf(ctx, session)), csrfToken: csrfTokenOf(sessionToken!) };
}

/** Ends the session (401 without one, 403 without its CSRF token); everywhere: every session of the person. */
export async function signOut(ctx: PeopleContext, sessionToken: string | undefined, csrfToken: string | undefined, options: { everywhere: boolean }): Promise<void> {
  const session = await requireSession(ctx, sessionToken);
  if (!csrfTokenMatches(session, csrfToken)) {
    throw new GatewayError('permission_denied', { publicMessage: 'Missing or invalid X-CSRF-Token header (see GET /auth/session).' });
  }
  if (options.everywhere) await ctx.sessions.endAllOf(ctx.db, session.personId);
  else await ctx.sessions.end(session.idHash);
  ctx.logger?.info({ personId: session.personId, everywhere: options.everywhere }, 'signed out');
}

/**
 * Follows a link (once) and signs the person in. A reset or setup link sets the password
 * and ends the person's other sessions. An invitation adds the membership; it sets the
 * password of a person who has none, and asks a person who has one for it (throttled as a
 * sign-in), so a forwarded invitation cannot take over an existing account.
 */
export async function followLink(
  ctx: PeopleContext, token: string, input: { password: string; displayName?: string | undefined } & ClientFacts,
): Promise<SignedIn> {
  const { link, passwordSet } = await describeLink(ctx, token);
  const checkExisting = link.kind === 'invitation' && passwordSet;
  const existing = await findPerson(ctx.db, link.personId);
  let newHash: string | undefined;
  let presented: PresentedDevice | undefined;
  // A person who already has a password gives it, under the sign-in throttle, so a forwarded
  // invitation cannot take over an existing account.
  if (checkExisting) ({ presented } = await checkPassword(ctx, existing!.email, existing, input.password, input));
  else newHash = await hashPassword(input.password);
  const result = await ctx.db.transaction(async (tx) => {
    const now = ctx.clock();
    const locked = await findPendingLink(tx, token, now, { forUpdate: true });
    const person = locked && await findPerson(tx, locked.personId, { forUpdate: true });
    if (!locked || !person || person.status !== 'active') throw invalidLink();
    // The password checked above must still be the person's (it cannot have changed meanwhile).
    if (checkExisting && person.passwordHash !== existing!.passwordHash) throw wrongCredentials();
    await markLinkUsed(tx, locked.id, now);
    if (newHash !== undefined) {
      await setPasswordHash(tx, person.id, newHash, now, input.displayName);
      await ctx.sessions.endAllOf(tx, person.id);
      // A new password: browsers trusted for the old one are trusted no longer.
      await forgetTrustedDevices(tx, person.email);
    }
    const device = await trustDevice(tx, person.email, now, presented);
    const session = await ctx.sessions.start(tx, { personId: person.id, userAgent: input.userAgent, clientAddress: input.clientAddress });
    const actor = personActor(person, session.idHash);
    if (locked.kind === 'invitation') {
      await insertMembership(tx, { personId: person.id, organisationId: locked.organisationId!, role: locked.role!, now });
      await recordAuditEvent(tx, {
        actor, organisationId: locked.organisationId, action: 'invitation.accept', resourceType: 'invitation', resourceId: locked.id,
        changes: { person_id: { before: null, after: person.id }, role: { before: null, after: locked.role } },
      });
    }
    if (newHash !== undefined) {
      await recordAuditEvent(tx, {
        actor, organisationId: null, action: 'person.password_set', resourceType: 'person', resourceId: person.id,
        changes: { password: { before: person.passwordHash === null ? null : '(set)', after: '(set)' }, link: { before: null, after: locked.id } },
      });
    }
    return { person: await personView(tx, (await findPerson(tx, person.id))!), session, device };
  });
  ctx.logger?.info({ personId: result.person.id, linkKind: link.kind }, 'link followed: signed in');
  return result;
}
