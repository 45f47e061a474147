import type { Database, Queryable } from '@gateway/db';
import { GatewayError } from '@gateway/errors';
import type { Logger } from '@gateway/logger';
import type { Actor } from '../../common/domain/actor.ts';
import { recordAuditEvent } from '../../common/domain/audit-log.ts';
import { isId } from '../../common/domain/ids.ts';
import { notFound, type ResourceAccess } from '../../common/domain/resource-access.ts';
import type { Mailer } from './mailer.ts';
import type { PeopleSettings } from './people-settings.ts';
import { countOwners, findMember, findPerson, type Member, type PersonRecord } from './people-store.ts';
import { findPendingLink, issueLink, revokePendingLinks, type PersonLink } from './person-links.ts';
import { invalidLink, linkTtlWords, linkUrl, notSignedIn } from './people-rules.ts';
import { createSessions, systemClock, type ActiveSession, type Clock } from './sessions.ts';

/** What the people operations are built from. */
export interface PeopleServiceDeps {
  db: Database;
  access: ResourceAccess;
  settings: PeopleSettings;
  /** Where sign-ins and sign-outs are logged (person id only, never a secret); silent when absent. */
  logger?: Logger | undefined;
  /** The current time (tests move it); the system clock by default. */
  clock?: Clock | undefined;
  /** Sends link emails; none: links are only shown, never emailed. */
  mailer?: Mailer | undefined;
}

/** What every people operation works with: its deps, with the clock and the sessions made once. */
export interface PeopleContext {
  db: Database;
  access: ResourceAccess;
  settings: PeopleSettings;
  logger: Logger | undefined;
  clock: Clock;
  mailer: Mailer | undefined;
  sessions: ReturnType<typeof createSessions>;
}

/** Who is signing in or following a link, as the request shows it (never authorizes anything). */
export interface ClientFacts {
  clientAddress: string;
  userAgent: string;
  /** The device tokens the browser's device cookie carries (at most one per email it signed in as); none: an untrusted client. */
  deviceTokens?: readonly string[] | undefined;
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

/** The context the people operations share, from their deps. */
export function peopleContext(deps: PeopleServiceDeps): PeopleContext {
  const clock = deps.clock ?? systemClock;
  const { settings } = deps;
  return {
    db: deps.db, access: deps.access, settings, logger: deps.logger, clock, mailer: deps.mailer,
    sessions: createSessions(deps.db, { idleMs: settings.sessionIdleMs, absoluteMs: settings.sessionAbsoluteMs }, clock),
  };
}

/** The URL of a link: under the configured public URL when set, else under the origin the issuing request reached. */
export function issuedLinkUrl(ctx: PeopleContext, requestOrigin: string, token: string): string {
  return linkUrl(ctx.settings.publicUrl ?? requestOrigin, token);
}

/**
 * Emails a link when a mailer is set; a failure is logged and answered as not sent (the issuer
 * still has the link). The body is `before`, the line saying how long the link works and what it
 * does (`action`), the URL, then `after`: every link email words its lifetime the same way.
 */
export async function emailLink(ctx: PeopleContext, message: { to: string; subject: string; before: string[]; action: string; url: string; after: string[] }): Promise<boolean> {
  if (ctx.mailer === undefined) return false;
  const text = [
    ...message.before, '', `Follow this link within ${linkTtlWords(ctx.settings.linkTtlMs)} to ${message.action} (it works once):`, '', message.url,
    ...message.after,
  ].join('\n');
  try {
    await ctx.mailer.send({ to: message.to, subject: message.subject, text });
    return true;
  } catch (error) {
    ctx.logger?.warn({ err: error instanceof Error ? error.message : String(error) }, 'link email not sent');
    return false;
  }
}

/** The session a cookie opens, or 401. */
export async function requireSession(ctx: PeopleContext, sessionToken: string | undefined): Promise<ActiveSession> {
  const session = await ctx.sessions.resolve(sessionToken);
  if (!session) throw notSignedIn();
  return session;
}

/** The person a session belongs to (it exists: sessions reference people). */
export async function personOf(ctx: PeopleContext, session: ActiveSession): Promise<PersonRecord> {
  const person = await findPerson(ctx.db, session.personId);
  if (!person) throw notSignedIn();
  return person;
}

/** A member of the organisation, or not_found (the caller may already see the organisation). */
export async function requireMember(tx: Queryable, organisationId: string, personId: string): Promise<Member> {
  const member = isId('person', personId) ? await findMember(tx, organisationId, personId) : undefined;
  if (!member) throw notFound('member of this organisation', personId, 'person_id');
  return member;
}

/** Refuses (409) leaving an organisation without an owner. */
export async function requireAnotherOwner(tx: Queryable, organisationId: string, member: Member): Promise<void> {
  if (member.role === 'owner' && await countOwners(tx, organisationId) <= 1) {
    throw new GatewayError('conflict', { publicMessage: 'This is the organisation\'s last owner: make someone else an owner first.' });
  }
}

/** What a link does, while it can be followed; 404 otherwise (also when its person is disabled). */
export async function describeLink(ctx: PeopleContext, token: string): Promise<LinkDescription> {
  const link = await findPendingLink(ctx.db, token, ctx.clock());
  const person = link && await findPerson(ctx.db, link.personId);
  if (!link || !person || person.status !== 'active') throw invalidLink();
  return { link, passwordSet: person.passwordHash !== null };
}

/** Issues a password-reset link for a person, replacing any earlier pending one, and audits it; emailed after the commit. */
export async function issuePasswordReset(
  ctx: PeopleContext, actor: Actor, person: PersonRecord, organisationId: string | null, requestOrigin: string,
): Promise<IssuedLink> {
  if (person.status !== 'active') throw new GatewayError('conflict', { publicMessage: 'This person is disabled: enable them first.' });
  const now = ctx.clock();
  const { link, token } = await ctx.db.transaction(async (tx) => {
    await revokePendingLinks(tx, { personId: person.id, kind: 'password_reset', now });
    const issued = await issueLink(tx, { kind: 'password_reset', personId: person.id, issuedBy: actor, now, ttlMs: ctx.settings.linkTtlMs });
    await recordAuditEvent(tx, {
      actor, organisationId, action: 'person.password_reset_issue', resourceType: 'person', resourceId: person.id,
      changes: { password_reset_link: { before: null, after: issued.link.id }, expires_at: { before: null, after: issued.link.expiresAt.toISOString() } },
    });
    return issued;
  });
  const url = issuedLinkUrl(ctx, requestOrigin, token);
  const emailSent = await emailLink(ctx, {
    to: person.email, subject: 'Set a new password for the gateway dashboard', url, action: 'set it',
    before: [`A new password was requested for ${person.email} on the gateway dashboard.`],
    after: ['', 'Your current password keeps working until then. If you did not expect this, tell your organisation\'s owner.'],
  });
  return { link, url, emailSent };
}
