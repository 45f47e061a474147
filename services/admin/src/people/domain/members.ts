import { GatewayError } from '@gateway/errors';
import { personIdOf, type Actor, type OrganisationRole } from '../../common/domain/actor.ts';
import { recordAuditEvent } from '../../common/domain/audit-log.ts';
import { isId } from '../../common/domain/ids.ts';
import { notFound } from '../../common/domain/resource-access.ts';
import {
  deleteMembership, findMember, findPerson, findPersonByEmail, insertPerson, listMembers as listMemberRows, normalizeEmail, personView,
  setMembershipRole, type Member, type PersonView,
} from './people-store.ts';
import {
  emailLink, issuePasswordReset, issuedLinkUrl, requireAnotherOwner, requireMember, type IssuedLink, type PeopleContext,
} from './people-context.ts';
import { resetReachesBeyondCaller } from './people-rules.ts';
import { findInvitation, issueLink, linkStatus, listPendingInvitations, revokeLink, revokePendingLinks, type PersonLink } from './person-links.ts';

/** The person behind a session (404 for a token: tokens are not people). */
export async function getMe(ctx: PeopleContext, actor: Actor): Promise<PersonView> {
  const personId = personIdOf(actor);
  const person = personId === null ? undefined : await findPerson(ctx.db, personId);
  if (!person) {
    throw new GatewayError('not_found', { publicMessage: 'Only a signed-in person has a /me: this credential is a token, not a person.' });
  }
  return personView(ctx.db, person);
}

/** An organisation's members, in the order they joined. */
export async function listMembers(ctx: PeopleContext, actor: Actor, organisationId: string): Promise<Member[]> {
  await ctx.access.requireOrganisation(actor, organisationId);
  return listMemberRows(ctx.db, organisationId);
}

/** Changes a member's role (the last owner cannot be demoted: 409). */
export async function updateMember(ctx: PeopleContext, actor: Actor, organisationId: string, personId: string, role: OrganisationRole): Promise<Member> {
  return ctx.db.transaction(async (tx) => {
    // The organisation's row lock serializes membership changes, so two owners cannot demote each other at once.
    await ctx.access.requireOrganisation(actor, organisationId, tx, { forUpdate: true });
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
}

/** Removes a member from the organisation (the last owner cannot be removed: 409). */
export async function removeMember(ctx: PeopleContext, actor: Actor, organisationId: string, personId: string): Promise<void> {
  await ctx.db.transaction(async (tx) => {
    await ctx.access.requireOrganisation(actor, organisationId, tx, { forUpdate: true });
    const member = await requireMember(tx, organisationId, personId);
    await requireAnotherOwner(tx, organisationId, member);
    await deleteMembership(tx, organisationId, personId);
    await recordAuditEvent(tx, {
      actor, organisationId, action: 'membership.delete', resourceType: 'person', resourceId: personId,
      changes: { role: { before: member.role, after: null }, email: { before: member.email, after: null } },
    });
  });
}

/**
 * Invites an email into the organisation with a role: a person without an account is
 * created (no password yet); one who has an account joins when they follow the link and
 * enter their password. A new invitation of the same email replaces a pending one.
 */
export async function createInvitation(
  ctx: PeopleContext, actor: Actor, organisationId: string, input: { email: string; role: OrganisationRole }, requestOrigin: string,
): Promise<IssuedLink> {
  const email = normalizeEmail(input.email);
  const now = ctx.clock();
  const { link, token, organisationName } = await ctx.db.transaction(async (tx) => {
    const organisation = await ctx.access.requireOrganisation(actor, organisationId, tx, { forUpdate: true });
    const person = await findPersonByEmail(tx, email, { forUpdate: true }) ?? await insertPerson(tx, { email, platformAdmin: false });
    if (person.status !== 'active') throw new GatewayError('conflict', { publicMessage: 'This person\'s account is disabled.', param: 'email' });
    if (await findMember(tx, organisationId, person.id)) {
      throw new GatewayError('conflict', { publicMessage: 'This person is already a member of the organisation.', param: 'email' });
    }
    const replaced = await revokePendingLinks(tx, { personId: person.id, kind: 'invitation', organisationId, now });
    const issued = await issueLink(tx, { kind: 'invitation', personId: person.id, organisationId, role: input.role, issuedBy: actor, now, ttlMs: ctx.settings.linkTtlMs });
    await recordAuditEvent(tx, {
      actor, organisationId, action: 'invitation.create', resourceType: 'invitation', resourceId: issued.link.id,
      changes: {
        email: { before: null, after: email }, role: { before: null, after: input.role }, person_id: { before: null, after: person.id },
        expires_at: { before: null, after: issued.link.expiresAt.toISOString() }, replaced: { before: null, after: replaced },
      },
    });
    return { ...issued, organisationName: organisation.name };
  });
  const url = issuedLinkUrl(ctx, requestOrigin, token);
  const emailSent = await emailLink(ctx, {
    to: email, subject: `You are invited to ${organisationName} on the gateway dashboard`, url, action: 'accept',
    before: [`${email} is invited to join ${organisationName} as ${input.role} on the gateway dashboard.`],
    after: ['', 'If you did not expect this, ignore this email.'],
  });
  return { link, url, emailSent };
}

/** The organisation's invitations that can still be followed. */
export async function listInvitations(ctx: PeopleContext, actor: Actor, organisationId: string): Promise<PersonLink[]> {
  await ctx.access.requireOrganisation(actor, organisationId);
  return listPendingInvitations(ctx.db, organisationId, ctx.clock());
}

/** Revokes an invitation (idempotent; a used one stays used). */
export async function revokeInvitation(ctx: PeopleContext, actor: Actor, organisationId: string, invitationId: string): Promise<PersonLink> {
  return ctx.db.transaction(async (tx) => {
    await ctx.access.requireOrganisation(actor, organisationId, tx);
    const link = isId('invitation', invitationId) ? await findInvitation(tx, organisationId, invitationId) : undefined;
    if (!link) throw notFound('invitation of this organisation', invitationId, 'invitation_id');
    const now = ctx.clock();
    if (linkStatus(link, now) === 'pending') {
      await revokeLink(tx, link.id, now);
      await recordAuditEvent(tx, {
        actor, organisationId, action: 'invitation.revoke', resourceType: 'invitation', resourceId: link.id,
        changes: { revoked_at: { before: null, after: now.toISOString() } },
      });
    }
    return (await findInvitation(tx, organisationId, invitationId))!;
  });
}

/**
 * An owner's password-reset link for a member. Refused (403) for a platform admin or a
 * person who also belongs to an organisation the caller does not own: a reset would hand the
 * caller that access too. A platform admin resets anyone through /admin/v1/people.
 */
export async function createMemberPasswordReset(
  ctx: PeopleContext, actor: Actor, organisationId: string, personId: string, requestOrigin: string,
): Promise<IssuedLink> {
  await ctx.access.requireOrganisation(actor, organisationId);
  await requireMember(ctx.db, organisationId, personId);
  const person = (await findPerson(ctx.db, personId))!;
  if (resetReachesBeyondCaller(actor, await personView(ctx.db, person))) {
    throw new GatewayError('permission_denied', {
      publicMessage: 'This person also has access beyond organisations you own; a platform admin can reset their password.',
    });
  }
  return issuePasswordReset(ctx, actor, person, organisationId, requestOrigin);
}
