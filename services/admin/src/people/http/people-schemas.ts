import { z } from 'zod';
import { organisationRoles, type OrganisationRole } from '../../common/domain/actor.ts';
import { passwordLength } from '../domain/password-hashing.ts';
import type { IssuedLink, LinkDescription } from '../domain/people-context.ts';
import type { Member, PersonView } from '../domain/people-store.ts';
import { linkStatus, type PersonLink } from '../domain/person-links.ts';
import { timestampShown as timestamp } from '../../common/http/wire-fields.ts';

/**
 * The people and sign-in routes' request and response shapes (OpenAPI; tests parse real
 * responses with them) and the JSON views that produce the responses.
 */

const id = (prefix: string, what: string) => z.string().regex(new RegExp(`^${prefix}_[0-9a-f]{24}$`))
  .meta({ description: `Id of the ${what}: "${prefix}_" and 24 lowercase hex characters.` });

const role = z.enum(organisationRoles as ['viewer', 'developer', 'owner'], { error: 'must be "viewer", "developer" or "owner"' })
  .meta({ description: 'viewer reads; developer also manages projects, keys and budgets; owner also manages members, alerts and the webhook.' });

const email = z.email({ error: 'must be an email address' }).max(254, { error: 'must be at most 254 characters' })
  .meta({ description: 'Email address (compared case-insensitively).' });

const newPassword = z.string({ error: (issue) => (issue.input === undefined ? 'is required' : 'must be a string') })
  .min(passwordLength.min, { error: `must be at least ${passwordLength.min} characters` })
  .max(passwordLength.max, { error: `must be at most ${passwordLength.max} characters` });

// ---- request bodies ----

/** Body of POST /auth/sign-in. Any email shape is accepted: a malformed one is simply wrong (401), like an unknown one. */
export const signInBody = z.strictObject({
  email: z.string({ error: 'is required' }).min(1, { error: 'must not be empty' }).max(320, { error: 'must be at most 320 characters' }),
  password: z.string({ error: 'is required' }).min(1, { error: 'must not be empty' }).max(passwordLength.max, { error: `must be at most ${passwordLength.max} characters` }),
});

/** Body of POST /auth/links/{token}. */
export const followLinkBody = z.strictObject({
  password: newPassword.meta({
    description: `The new password (${passwordLength.min}..${passwordLength.max} characters); for an invitation of a person who already has an account (password_set), their current password.`,
  }),
  display_name: z.string().trim().max(200, { error: 'must be at most 200 characters' }).optional()
    .meta({ description: 'Name shown to other members; kept as is when absent.' }),
});

/** Body of POST /admin/v1/organisations/{id}/invitations. */
export const createInvitationBody = z.strictObject({ email, role });

/** Body of PATCH /admin/v1/organisations/{id}/members/{person_id}. */
export const updateMemberBody = z.strictObject({ role });

/** Body of POST /admin/v1/people. */
export const createPersonBody = z.strictObject({
  email,
  platform_admin: z.literal(true, { error: 'must be true' })
    .meta({ description: 'Always true: other people join through an organisation\'s invitation.' }),
});

/** Body of PATCH /admin/v1/people/{id}: at least one field. */
export const updatePersonBody = z.strictObject({
  status: z.enum(['active', 'disabled'], { error: 'must be "active" or "disabled"' }).optional()
    .meta({ description: 'disabled: cannot sign in, and every session ends at once.' }),
  platform_admin: z.boolean({ error: 'must be true or false' }).optional(),
}).refine((body) => Object.keys(body).length > 0, { error: 'must change at least one of status, platform_admin' });

// ---- responses ----

const membershipResponse = z.strictObject({
  organisation_id: id('org', 'organisation'),
  organisation_name: z.string(),
  role,
  allowed_operations: z.array(z.string()).optional().meta({
    description: 'On GET /admin/v1/me: the operationIds of the organisation routes this role may call in this organisation, from the route table '
      + '(the same rule the server enforces), so the dashboard shows what a member may do without its own copy of the role order.',
  }),
});

/** A person as the dashboard sees them: never a password or its hash. */
export const personResponse = z.strictObject({
  id: id('per', 'person'),
  email: z.string(),
  display_name: z.string(),
  platform_admin: z.boolean(),
  memberships: z.array(membershipResponse).meta({ description: 'The organisations the person belongs to, with their role in each.' }),
});

/** A person as platform admins list them: the Person plus account state. */
export const personAccountResponse = personResponse.extend({
  status: z.enum(['active', 'disabled']),
  password_set: z.boolean().meta({ description: 'false: invited or set up, the link not followed yet.' }),
  created_at: timestamp,
});

/** The signed-in person and the CSRF token to send as X-CSRF-Token on every state change. */
export const sessionResponse = z.strictObject({
  person: personResponse,
  csrf_token: z.string().meta({ description: 'Send as X-CSRF-Token on every POST/PATCH/PUT/DELETE of this session.' }),
});

/** What a one-time link does, before it is followed. */
export const linkInfoResponse = z.strictObject({
  kind: z.enum(['invitation', 'password_reset', 'setup']),
  email: z.string(),
  organisation_name: z.string().nullable().meta({ description: 'For an invitation: the organisation it joins; null otherwise.' }),
  role: role.nullable().meta({ description: 'For an invitation: the role it grants; null otherwise.' }),
  expires_at: timestamp,
  password_set: z.boolean().meta({ description: 'Whether the person already has a password: an invitation then asks for it instead of a new one.' }),
});

/** A member of an organisation. */
export const memberResponse = z.strictObject({
  person_id: id('per', 'person'),
  email: z.string(),
  display_name: z.string(),
  role,
  joined_at: timestamp,
});

/** An organisation's members, in the order they joined (all of them: no paging). */
export const memberListResponse = z.strictObject({ object: z.literal('list'), data: z.array(memberResponse) });

/** An invitation (its link is shown only once, when it is created). */
export const invitationResponse = z.strictObject({
  id: id('inv', 'invitation'),
  organisation_id: id('org', 'organisation'),
  email: z.string(),
  role,
  status: z.enum(['pending', 'used', 'revoked', 'expired']),
  created_at: timestamp,
  expires_at: timestamp,
});

/** An organisation's pending invitations, oldest first. */
export const invitationListResponse = z.strictObject({ object: z.literal('list'), data: z.array(invitationResponse) });

const linkShown = z.string().meta({ description: 'The one-time link (`<dashboard URL>/#/link/<token>`), shown this once; only its hash is stored.' });
const emailSent = z.boolean().meta({ description: 'Whether the link was also emailed (SMTP_URL and SMTP_FROM set, and the server took it).' });

/** The answer to an invitation: the only time its link is shown. */
export const invitationCreatedResponse = z.strictObject({ invitation: invitationResponse, link: linkShown, email_sent: emailSent });

/** The answer to a password reset: the only time its link is shown. */
export const passwordResetResponse = z.strictObject({ link: linkShown, expires_at: timestamp, email_sent: emailSent });

/** The answer to creating a platform-admin person: the only time their setup link is shown. */
export const personCreatedResponse = z.strictObject({ person: personAccountResponse, link: linkShown, email_sent: emailSent });

// ---- JSON views ----

/**
 * The JSON of a person (Person); with `allowedOperations` (GET /admin/v1/me), each membership
 * also lists the operations its role may call there.
 */
export function personJson(person: PersonView, allowedOperations?: (role: OrganisationRole) => readonly string[]) {
  return {
    id: person.id,
    email: person.email,
    display_name: person.displayName,
    platform_admin: person.platformAdmin,
    memberships: person.memberships.map((membership) => ({
      organisation_id: membership.organisationId, organisation_name: membership.organisationName, role: membership.role,
      ...(allowedOperations === undefined ? {} : { allowed_operations: [...allowedOperations(membership.role)] }),
    })),
  };
}

/** The JSON of a person with their account state (platform admins' list). */
export function personAccountJson(person: PersonView) {
  return { ...personJson(person), status: person.status, password_set: person.passwordSet, created_at: person.createdAt.toISOString() };
}

/** The JSON of a link before it is followed. */
export function linkInfoJson({ link, passwordSet }: LinkDescription) {
  return {
    kind: link.kind, email: link.email, organisation_name: link.organisationName, role: link.role,
    expires_at: link.expiresAt.toISOString(), password_set: passwordSet,
  };
}

/** The JSON of a member. */
export function memberJson(member: Member) {
  return { person_id: member.personId, email: member.email, display_name: member.displayName, role: member.role, joined_at: member.joinedAt.toISOString() };
}

/** The JSON of an invitation, its status as of `now`. */
export function invitationJson(link: PersonLink, now: Date = new Date()) {
  return {
    id: link.id, organisation_id: link.organisationId!, email: link.email, role: link.role!, status: linkStatus(link, now),
    created_at: link.createdAt.toISOString(), expires_at: link.expiresAt.toISOString(),
  };
}

/** The JSON of a freshly issued password-reset link. */
export function passwordResetJson(issued: IssuedLink) {
  return { link: issued.url, expires_at: issued.link.expiresAt.toISOString(), email_sent: issued.emailSent };
}
