import type { Database, Queryable } from '@gateway/db';
import { GatewayError } from '@gateway/errors';
import type { Logger } from '@gateway/logger';
import type { AdminConfig } from '../../config.ts';
import { accessTo, personIdOf, requirePlatformAdmin, systemActor, type Actor, type OrganisationRole } from '../../common/domain/actor.ts';
import type { Page, PageRequest } from '../../common/domain/admin-records.ts';
import { recordAuditEvent } from '../../common/domain/audit-log.ts';
import { isId } from '../../common/domain/ids.ts';
import { createMailer, type Mailer } from './mailer.ts';
import { hashPassword, verifyPassword } from './password-hashing.ts';
import {
  anyPersonExists, countOwners, deleteMembership, findMember, findPerson, findPersonByEmail, insertMembership, insertPerson,
  listMembers, listPeople, normalizeEmail, personView, setMembershipRole, setPasswordHash, updatePerson,
  type Member, type PersonRecord, type PersonView,
} from './people-store.ts';
import {
  findInvitation, findPendingLink, issueLink, linkStatus, listPendingInvitations, markLinkUsed, revokeLink, revokePendingLinks,
  type PersonLink,
} from './person-links.ts';
import { notFound, type ResourceAccess } from '../../common/domain/resource-access.ts';
import { createSessions, csrfTokenMatches, csrfTokenOf, systemClock, type ActiveSession, type Clock, type StartedSession } from './sessions.ts';
import { clearSignInFailures, recordSignInFailure, signInRetryAfterSeconds } from './sign-in-throttle.ts';

/** What the people aggregate is built from. */
export interface PeopleServiceDeps {
  db: Database;
  access: ResourceAccess;
  config: AdminConfig;
  /** Where sign-ins and sign-outs are logged (person id only, never a secret); silent when absent. */
  logger?: Logger | undefined;
  /** The current time (tests move it); the system clock by default. */
  clock?: Clock | undefined;
  /** Sends link emails; by default one over SMTP_URL/SMTP_FROM, none when they are unset. */
  mailer?: Mailer | undefined;
}

/** Who is signing in or following a link, as the request shows it (never authorizes anything). */
export interface ClientFacts {
  clientAddress: string;
  userAgent: string;
}

/** A one-time link just issued: its URL is shown once (and emailed when SMTP is set). */
export interface IssuedLink {
  link: PersonLink;
  /** `<public URL>/#/link/<token>`: the fragment never reaches a server log. */
  url: string;
  /** Whether it was emailed to the person (false without SMTP or when sending failed). */
  emailSent: boolean;
}

/** What the dashboard shows about a link before it is followed. */
export interface LinkDescription {
  link: PersonLink;
  /** Whether the person already has a password (an invitation then asks for it instead of a new one). */
  passwordSet: boolean;
}

/** One answer for every link that cannot be followed: unknown, used, revoked, expired or its person disabled. */
function invalidLink(): GatewayError {
  return new GatewayError('not_found', { publicMessage: 'This link is invalid, used or expired.' });
}

/** One answer for a wrong password and an unknown email, so the answer does not tell which emails exist. */
function wrongCredentials(): GatewayError {
  return new GatewayError('unauthenticated', { publicMessage: 'Email or password is wrong.' });
}

/** No valid session cookie. */
function notSignedIn(): GatewayError {
  return new GatewayError('unauthenticated', { publicMessage: 'Not signed in, or the session has ended.' });
}

/** Too many failed sign-ins for this email or from this address. */
function throttled(retryAfterSeconds: number): GatewayError {
  return new GatewayError('rate_limit_exceeded', {
    publicMessage: `Too many failed sign-ins. Try again in ${Math.ceil(retryAfterSeconds / 60)} minute(s).`,
    headers: { 'retry-after': String(retryAfterSeconds) },
  });
}

/** The link's URL under the dashboard's public address. */
function linkUrl(publicBaseUrl: string, token: string): string {
  return `${publicBaseUrl.replace(/\/+$/, '')}/#/link/${token}`;
}

/** The person actor a link's follower becomes for the audit log (roles do not matter there). */
function personActor(person: PersonRecord, sessionIdHash: string): Actor {
  return { kind: 'person', personId: person.id, sessionId: sessionIdHash, platformAdmin: person.platformAdmin, roles: new Map() };
}

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
    await tx.query('SELECT pg_advisory_xact_lock(hashtext($1))', ['gateway-admin:first-person']);
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

/**
 * People, memberships, invitation and reset links, sessions (route tags "people" and "sign-in").
 * Every change is audited with the person or token that made it; passwords are argon2id hashes,
 * session ids, CSRF and link tokens are stored as SHA-256 only.
 */
export function createPeopleService(deps: PeopleServiceDeps) {
  const { db, access, config } = deps;
  const clock = deps.clock ?? systemClock;
  const mailer = deps.mailer ?? createMailer(config);
  const sessions = createSessions(db, { idleMs: config.ADMIN_SESSION_IDLE_MS, absoluteMs: config.ADMIN_SESSION_ABSOLUTE_MS }, clock);
  const linkTtlMs = config.ADMIN_LINK_TTL_MS;

  /** The base of links: ADMIN_PUBLIC_URL when set, else the origin the issuing request reached. */
  function publicBaseOf(requestOrigin: string): string {
    return config.ADMIN_PUBLIC_URL ?? requestOrigin;
  }

  /** Emails a link when SMTP is set; a failure is logged and answered as not sent (the issuer still has the link). */
  async function emailLink(to: string, subject: string, text: string): Promise<boolean> {
    if (mailer === undefined) return false;
    try {
      await mailer.send({ to, subject, text });
      return true;
    } catch (error) {
      deps.logger?.warn({ err: error instanceof Error ? error.message : String(error) }, 'link email not sent');
      return false;
    }
  }

  /** How long links stay valid, in words for emails. */
  const linkTtlWords = linkTtlMs % 3_600_000 === 0 ? `${linkTtlMs / 3_600_000} hour(s)` : `${Math.ceil(linkTtlMs / 60_000)} minute(s)`;

  /** The session a cookie opens, or 401. */
  async function requireSession(sessionToken: string | undefined): Promise<ActiveSession> {
    const session = await sessions.resolve(sessionToken);
    if (!session) throw notSignedIn();
    return session;
  }

  /** The person a session belongs to (it exists: sessions reference people). */
  async function personOf(session: ActiveSession): Promise<PersonRecord> {
    const person = await findPerson(db, session.personId);
    if (!person) throw notSignedIn();
    return person;
  }

  /** A member of the organisation, or not_found (the caller may already see the organisation). */
  async function requireMember(tx: Queryable, organisationId: string, personId: string): Promise<Member> {
    const member = isId('person', personId) ? await findMember(tx, organisationId, personId) : undefined;
    if (!member) throw notFound('member of this organisation', personId, 'person_id');
    return member;
  }

  /** Refuses (409) leaving an organisation without an owner. */
  async function requireAnotherOwner(tx: Queryable, organisationId: string, member: Member): Promise<void> {
    if (member.role === 'owner' && await countOwners(tx, organisationId) <= 1) {
      throw new GatewayError('conflict', { publicMessage: 'This is the organisation\'s last owner: make someone else an owner first.' });
    }
  }

  /** Issues a password-reset link for a person, replacing any earlier pending one, and audits it. */
  async function issuePasswordReset(actor: Actor, person: PersonRecord, organisationId: string | null, requestOrigin: string): Promise<IssuedLink> {
    if (person.status !== 'active') throw new GatewayError('conflict', { publicMessage: 'This person is disabled: enable them first.' });
    const now = clock();
    const { link, token } = await db.transaction(async (tx) => {
      await revokePendingLinks(tx, { personId: person.id, kind: 'password_reset', now });
      const issued = await issueLink(tx, { kind: 'password_reset', personId: person.id, issuedBy: actor, now, ttlMs: linkTtlMs });
      await recordAuditEvent(tx, {
        actor, organisationId, action: 'person.password_reset_issue', resourceType: 'person', resourceId: person.id,
        changes: { password_reset_link: { before: null, after: issued.link.id }, expires_at: { before: null, after: issued.link.expiresAt.toISOString() } },
      });
      return issued;
    });
    const url = linkUrl(publicBaseOf(requestOrigin), token);
    const emailSent = await emailLink(person.email, 'Set a new password for the gateway dashboard', [
      `A new password was requested for ${person.email} on the gateway dashboard.`,
      '', `Follow this link within ${linkTtlWords} to set it (it works once):`, '', url, '',
      'Your current password keeps working until then. If you did not expect this, tell your organisation\'s owner.',
    ].join('\n'));
    return { link, url, emailSent };
  }

  /** What a link does, while it can be followed; 404 otherwise (also when its person is disabled). */
  async function describeLink(token: string): Promise<LinkDescription> {
    const link = await findPendingLink(db, token, clock());
    const person = link && await findPerson(db, link.personId);
    if (!link || !person || person.status !== 'active') throw invalidLink();
    return { link, passwordSet: person.passwordHash !== null };
  }

  return {
    /**
     * Signs a person in with email and password: a new session, or 401 (the same answer for an
     * unknown email, a wrong password and a disabled person), or 429 while throttled.
     */
    async signIn(input: { email: string; password: string } & ClientFacts): Promise<{ person: PersonView; session: StartedSession }> {
      const email = normalizeEmail(input.email);
      const attempt = { email, clientAddress: input.clientAddress, now: clock() };
      const retryAfter = await signInRetryAfterSeconds(db, attempt);
      if (retryAfter !== undefined) {
        deps.logger?.info({ clientAddress: input.clientAddress }, 'sign-in throttled');
        throw throttled(retryAfter);
      }
      const person = await findPersonByEmail(db, email);
      const matches = await verifyPassword(person?.passwordHash, input.password);
      if (!person || !matches || person.status !== 'active') {
        await recordSignInFailure(db, attempt);
        deps.logger?.info({ clientAddress: input.clientAddress }, 'sign-in failed');
        throw wrongCredentials();
      }
      await clearSignInFailures(db, email);
      const session = await sessions.start(db, { personId: person.id, userAgent: input.userAgent, clientAddress: input.clientAddress });
      deps.logger?.info({ personId: person.id, clientAddress: input.clientAddress }, 'signed in');
      return { person: await personView(db, person), session };
    },

    /** The signed-in person and the session's CSRF token, or 401. */
    async currentSession(sessionToken: string | undefined): Promise<{ person: PersonView; csrfToken: string }> {
      const session = await requireSession(sessionToken);
      return { person: await personView(db, await personOf(session)), csrfToken: csrfTokenOf(sessionToken!) };
    },

    /** Ends the session (401 without one, 403 without its CSRF token); everywhere: every session of the person. */
    async signOut(sessionToken: string | undefined, csrfToken: string | undefined, options: { everywhere: boolean }): Promise<void> {
      const session = await requireSession(sessionToken);
      if (!csrfTokenMatches(session, csrfToken)) {
        throw new GatewayError('permission_denied', { publicMessage: 'Missing or invalid X-CSRF-Token header (see GET /auth/session).' });
      }
      if (options.everywhere) await sessions.endAllOf(db, session.personId);
      else await sessions.end(session.idHash);
      deps.logger?.info({ personId: session.personId, everywhere: options.everywhere }, 'signed out');
    },

    /** What a link does, while it can be followed; 404 otherwise. */
    describeLink,

    /**
     * Follows a link (once) and signs the person in. A reset or setup link sets the password
     * and ends the person's other sessions. An invitation adds the membership; it sets the
     * password of a person who has none, and asks a person who has one for it (throttled as a
     * sign-in), so a forwarded invitation cannot take over an existing account.
     */
    async followLink(token: string, input: { password: string; displayName?: string | undefined } & ClientFacts): Promise<{ person: PersonView; session: StartedSession }> {
      const { link, passwordSet } = await describeLink(token);
      const checkExisting = link.kind === 'invitation' && passwordSet;
      const existing = await findPerson(db, link.personId);
      let newHash: string | undefined;
      if (checkExisting) {
        const attempt = { email: existing!.email, clientAddress: input.clientAddress, now: clock() };
        const retryAfter = await signInRetryAfterSeconds(db, attempt);
        if (retryAfter !== undefined) throw throttled(retryAfter);
        if (!await verifyPassword(existing!.passwordHash, input.password)) {
          await recordSignInFailure(db, attempt);
          throw wrongCredentials();
        }
        await clearSignInFailures(db, attempt.email);
      } else {
        newHash = await hashPassword(input.password);
      }
      const result = await db.transaction(async (tx) => {
        const now = clock();
        const locked = await findPendingLink(tx, token, now, { forUpdate: true });
        const person = locked && await findPerson(tx, locked.personId, { forUpdate: true });
        if (!locked || !person || person.status !== 'active') throw invalidLink();
        // The password checked above must still be the person's (it cannot have changed meanwhile).
        if (checkExisting && person.passwordHash !== existing!.passwordHash) throw wrongCredentials();
        await markLinkUsed(tx, locked.id, now);
        if (newHash !== undefined) {
          await setPasswordHash(tx, person.id, newHash, now, input.displayName);
          await sessions.endAllOf(tx, person.id);
        }
        const session = await sessions.start(tx, { personId: person.id, userAgent: input.userAgent, clientAddress: input.clientAddress });
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
        return { person: await personView(tx, (await findPerson(tx, person.id))!), session };
      });
      deps.logger?.info({ personId: result.person.id, linkKind: link.kind }, 'link followed: signed in');
      return result;
    },

    /** The person behind a session (404 for a token: tokens are not people). */
    async getMe(actor: Actor): Promise<PersonView> {
      const personId = personIdOf(actor);
      const person = personId === null ? undefined : await findPerson(db, personId);
      if (!person) {
        throw new GatewayError('not_found', { publicMessage: 'Only a signed-in person has a /me: this credential is a token, not a person.' });
      }
      return personView(db, person);
    },

    /** An organisation's members, in the order they joined. */
    async listMembers(actor: Actor, organisationId: string): Promise<Member[]> {
      await access.requireOrganisation(actor, organisationId);
      return listMembers(db, organisationId);
    },

    /** Changes a member's role (the last owner cannot be demoted: 409). */
    async updateMember(actor: Actor, organisationId: string, personId: string, role: OrganisationRole): Promise<Member> {
      return db.transaction(async (tx) => {
        // The organisation's row lock serializes membership changes, so two owners cannot demote each other at once.
        await access.requireOrganisation(actor, organisationId, tx, { forUpdate: true });
        const member = await requireMember(tx, organisationId, personId);
        if (member.role === role) return member;
        if (role !== 'owner') await requireAnotherOwner(tx, organisationId, member);
        await setMembershipRole(tx, organisationId, personId, role);
        await recordAuditEvent(tx, {
          actor, organisationId, action: 'membership.update', resourceType: 'person', resourceId: personId,
          changes: { role: { before: member.role, after: role } },
        });
        return { ...member, role };
      });
    },

    /** Removes a member from the organisation (the last owner cannot be removed: 409). */
    async removeMember(actor: Actor, organisationId: string, personId: string): Promise<void> {
      await db.transaction(async (tx) => {
        await access.requireOrganisation(actor, organisationId, tx, { forUpdate: true });
        const member = await requireMember(tx, organisationId, personId);
        await requireAnotherOwner(tx, organisationId, member);
        await deleteMembership(tx, organisationId, personId);
        await recordAuditEvent(tx, {
          actor, organisationId, action: 'membership.delete', resourceType: 'person', resourceId: personId,
          changes: { role: { before: member.role, after: null }, email: { before: member.email, after: null } },
        });
      });
    },

    /**
     * Invites an email into the organisation with a role: a person without an account is
     * created (no password yet); one who has an account joins when they follow the link and
     * enter their password. A new invitation of the same email replaces a pending one.
     */
    async createInvitation(actor: Actor, organisationId: string, input: { email: string; role: OrganisationRole }, requestOrigin: string): Promise<IssuedLink> {
      const email = normalizeEmail(input.email);
      const now = clock();
      const { link, token, organisationName } = await db.transaction(async (tx) => {
        const organisation = await access.requireOrganisation(actor, organisationId, tx, { forUpdate: true });
        const person = await findPersonByEmail(tx, email, { forUpdate: true }) ?? await insertPerson(tx, { email, platformAdmin: false });
        if (person.status !== 'active') throw new GatewayError('conflict', { publicMessage: 'This person\'s account is disabled.', param: 'email' });
        if (await findMember(tx, organisationId, person.id)) {
          throw new GatewayError('conflict', { publicMessage: 'This person is already a member of the organisation.', param: 'email' });
        }
        const replaced = await revokePendingLinks(tx, { personId: person.id, kind: 'invitation', organisationId, now });
        const issued = await issueLink(tx, { kind: 'invitation', personId: person.id, organisationId, role: input.role, issuedBy: actor, now, ttlMs: linkTtlMs });
        await recordAuditEvent(tx, {
          actor, organisationId, action: 'invitation.create', resourceType: 'invitation', resourceId: issued.link.id,
          changes: {
            email: { before: null, after: email }, role: { before: null, after: input.role }, person_id: { before: null, after: person.id },
            expires_at: { before: null, after: issued.link.expiresAt.toISOString() }, replaced: { before: null, after: replaced },
          },
        });
        return { ...issued, organisationName: organisation.name };
      });
      const url = linkUrl(publicBaseOf(requestOrigin), token);
      const emailSent = await emailLink(email, `You are invited to ${organisationName} on the gateway dashboard`, [
        `${email} is invited to join ${organisationName} as ${input.role} on the gateway dashboard.`,
        '', `Follow this link within ${linkTtlWords} to accept (it works once):`, '', url, '',
        'If you did not expect this, ignore this email.',
      ].join('\n'));
      return { link, url, emailSent };
    },

    /** The organisation's invitations that can still be followed. */
    async listInvitations(actor: Actor, organisationId: string): Promise<PersonLink[]> {
      await access.requireOrganisation(actor, organisationId);
      return listPendingInvitations(db, organisationId, clock());
    },

    /** Revokes an invitation (idempotent; a used one stays used). */
    async revokeInvitation(actor: Actor, organisationId: string, invitationId: string): Promise<PersonLink> {
      return db.transaction(async (tx) => {
        await access.requireOrganisation(actor, organisationId, tx);
        const link = isId('invitation', invitationId) ? await findInvitation(tx, organisationId, invitationId) : undefined;
        if (!link) throw notFound('invitation of this organisation', invitationId, 'invitation_id');
        const now = clock();
        if (linkStatus(link, now) === 'pending') {
          await revokeLink(tx, link.id, now);
          await recordAuditEvent(tx, {
            actor, organisationId, action: 'invitation.revoke', resourceType: 'invitation', resourceId: link.id,
            changes: { revoked_at: { before: null, after: now.toISOString() } },
          });
        }
        return (await findInvitation(tx, organisationId, invitationId))!;
      });
    },

    /**
     * An owner's password-reset link for a member. Refused (403) for a platform admin or a
     * person who also belongs to an organisation the caller does not own: a reset would hand the
     * caller that access too. A platform admin resets anyone through /admin/v1/people.
     */
    async createMemberPasswordReset(actor: Actor, organisationId: string, personId: string, requestOrigin: string): Promise<IssuedLink> {
      await access.requireOrganisation(actor, organisationId);
      await requireMember(db, organisationId, personId);
      const person = (await findPerson(db, personId))!;
      const view = await personView(db, person);
      const beyondCaller = person.platformAdmin || view.memberships.some((membership) => {
        const held = accessTo(actor, membership.organisationId);
        return held !== 'platform' && held !== 'owner';
      });
      if (beyondCaller) {
        throw new GatewayError('permission_denied', {
          publicMessage: 'This person also has access beyond organisations you own; a platform admin can reset their password.',
        });
      }
      return issuePasswordReset(actor, person, organisationId, requestOrigin);
    },

    /** A page of every person (platform admins only). */
    async listPeople(actor: Actor, page: PageRequest): Promise<Page<PersonView>> {
      requirePlatformAdmin(actor);
      if (page.after !== undefined && !(isId('person', page.after) && await findPerson(db, page.after))) {
        throw new GatewayError('invalid_request', { publicMessage: 'Invalid request: after: no person has this id.', param: 'after' });
      }
      return listPeople(db, page);
    },

    /** Creates a platform-admin person with a one-time setup link (platform admins only; 409 when the email exists). */
    async createPlatformAdminPerson(actor: Actor, input: { email: string }, requestOrigin: string): Promise<{ person: PersonView } & IssuedLink> {
      requirePlatformAdmin(actor);
      const email = normalizeEmail(input.email);
      const now = clock();
      const { person, link, token } = await db.transaction(async (tx) => {
        if (await findPersonByEmail(tx, email)) {
          throw new GatewayError('conflict', {
            publicMessage: 'A person with this email exists: make them a platform admin with PATCH /admin/v1/people/{id}.', param: 'email',
          });
        }
        const created = await insertPerson(tx, { email, platformAdmin: true });
        const issued = await issueLink(tx, { kind: 'setup', personId: created.id, issuedBy: actor, now, ttlMs: linkTtlMs });
        await recordAuditEvent(tx, {
          actor, organisationId: null, action: 'person.create', resourceType: 'person', resourceId: created.id,
          changes: { email: { before: null, after: email }, platform_admin: { before: null, after: true }, setup_link: { before: null, after: issued.link.id } },
        });
        return { person: await personView(tx, created), ...issued };
      });
      const url = linkUrl(publicBaseOf(requestOrigin), token);
      const emailSent = await emailLink(email, 'Your gateway dashboard account', [
        `A platform-admin account was created for ${email} on the gateway dashboard.`,
        '', `Follow this link within ${linkTtlWords} to set your password (it works once):`, '', url,
      ].join('\n'));
      return { person, link, url, emailSent };
    },

    /**
     * Disables or enables a person, or grants or drops platform admin (platform admins only).
     * Disabling ends every session at once. Nobody changes their own status or flag (409), so a
     * slip cannot lock the last person out.
     */
    async updatePersonAccount(
      actor: Actor, personId: string, change: { status?: 'active' | 'disabled' | undefined; platformAdmin?: boolean | undefined },
    ): Promise<PersonView> {
      requirePlatformAdmin(actor);
      return db.transaction(async (tx) => {
        const before = isId('person', personId) ? await findPerson(tx, personId, { forUpdate: true }) : undefined;
        if (!before) throw notFound('person', personId, 'id');
        if (personIdOf(actor) === personId) {
          throw new GatewayError('conflict', { publicMessage: 'You cannot disable yourself or drop your own platform-admin rights; ask another platform admin.' });
        }
        await updatePerson(tx, personId, change);
        const after = (await findPerson(tx, personId))!;
        const changes: Record<string, { before: string | boolean; after: string | boolean }> = {};
        if (before.status !== after.status) changes.status = { before: before.status, after: after.status };
        if (before.platformAdmin !== after.platformAdmin) changes.platform_admin = { before: before.platformAdmin, after: after.platformAdmin };
        if (after.status === 'disabled') await sessions.endAllOf(tx, personId);
        if (Object.keys(changes).length > 0) {
          await recordAuditEvent(tx, { actor, organisationId: null, action: 'person.update', resourceType: 'person', resourceId: personId, changes });
        }
        return personView(tx, after);
      });
    },

    /** A platform admin's password-reset link for anyone. */
    async createPersonPasswordReset(actor: Actor, personId: string, requestOrigin: string): Promise<IssuedLink> {
      requirePlatformAdmin(actor);
      const person = isId('person', personId) ? await findPerson(db, personId) : undefined;
      if (!person) throw notFound('person', personId, 'id');
      return issuePasswordReset(actor, person, null, requestOrigin);
    },
  };
}
