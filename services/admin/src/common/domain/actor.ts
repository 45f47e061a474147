import { GatewayError } from '@gateway/errors';

/**
 * A person's role in one organisation, weakest first: a viewer reads; a developer also manages
 * projects, keys, budgets and reads usage; an owner also manages members, alerts and the webhook.
 */
export type OrganisationRole = 'viewer' | 'developer' | 'owner';

/** The roles in increasing order of what they may do. */
export const organisationRoles: readonly OrganisationRole[] = ['viewer', 'developer', 'owner'];

/** Whether `held` allows what `needed` allows (owner ⊇ developer ⊇ viewer). */
export function roleAllows(held: OrganisationRole, needed: OrganisationRole): boolean {
  return organisationRoles.indexOf(held) >= organisationRoles.indexOf(needed);
}

/**
 * Who is making a change or a read: a platform admin's token, an organisation's own automation
 * token (which acts as an owner of that organisation only), a signed-in person (a platform admin,
 * or a member of some organisations with a role in each), the command line, or the admin itself.
 */
export type Actor =
  | { kind: 'platform_admin'; tokenId: string }
  | { kind: 'organisation_token'; tokenId: string; organisationId: string }
  | {
    kind: 'person';
    personId: string;
    /** The session the person signed in with. */
    sessionId: string;
    /** Whether the person is a platform admin (sees and changes everything). */
    platformAdmin: boolean;
    /** The person's role in each organisation they belong to, by organisation id. */
    roles: ReadonlyMap<string, OrganisationRole>;
  }
  | { kind: 'cli' }
  | { kind: 'system' };

/** The admin itself (seeding the demo model at start). */
export const systemActor: Actor = { kind: 'system' };

/** Whether the actor may do what is a platform admin's alone. */
export function isPlatformActor(actor: Actor): boolean {
  switch (actor.kind) {
    case 'platform_admin': case 'cli': case 'system': return true;
    case 'person': return actor.platformAdmin;
    case 'organisation_token': return false;
  }
}

/**
 * What the actor may do in an organisation: 'platform' for platform actors, its role for a member
 * (an organisation token is an owner of its own), undefined when the organisation does not exist for it.
 */
export function accessTo(actor: Actor, organisationId: string): OrganisationRole | 'platform' | undefined {
  if (isPlatformActor(actor)) return 'platform';
  if (actor.kind === 'organisation_token') return actor.organisationId === organisationId ? 'owner' : undefined;
  if (actor.kind === 'person') return actor.roles.get(organisationId);
  return undefined;
}

/** Whether an actor may see the organisation with this id. Other organisations do not exist for it. */
export function canSeeOrganisation(actor: Actor, organisationId: string): boolean {
  return accessTo(actor, organisationId) !== undefined;
}

/** The organisations an actor is limited to, or undefined when it sees all of them (platform actors). */
export function visibleOrganisations(actor: Actor): readonly string[] | undefined {
  if (isPlatformActor(actor)) return undefined;
  if (actor.kind === 'organisation_token') return [actor.organisationId];
  if (actor.kind === 'person') return [...actor.roles.keys()];
  return [];
}

/**
 * The organisation a request acts on where the caller may name one (`organisation_id`) or leave
 * it out: the one named; left out, the caller's only organisation (an organisation token's own,
 * a person's one membership), or undefined for a platform actor, who then acts on every
 * organisation. A member of several organisations must name one (400), since which one is
 * meant is a guess; a person in none has nothing to act on (403).
 */
export function selectedOrganisation(actor: Actor, named: string | undefined): string | undefined {
  if (named !== undefined || isPlatformActor(actor)) return named;
  const visible = visibleOrganisations(actor) ?? [];
  if (visible.length === 1) return visible[0];
  if (visible.length === 0) throw new GatewayError('permission_denied', { publicMessage: 'This needs a role in an organisation, and you belong to none.' });
  throw new GatewayError('invalid_request', { publicMessage: 'Invalid request: organisation_id: required for a member of several organisations.', param: 'organisation_id' });
}

/** Refuses with 403 an actor that is not a platform admin: the operation is a platform admin's alone. */
export function requirePlatformAdmin(actor: Actor): void {
  if (!isPlatformActor(actor)) {
    throw new GatewayError('permission_denied', { publicMessage: 'Only a platform admin may do this.' });
  }
}

/**
 * Refuses with 403 a member whose role in the organisation is below `needed`. The caller has
 * already made sure the organisation exists for the actor (404 otherwise).
 */
export function requireRole(actor: Actor, organisationId: string, needed: OrganisationRole): void {
  const access = accessTo(actor, organisationId);
  if (access === 'platform' || (access !== undefined && roleAllows(access, needed))) return;
  throw new GatewayError('permission_denied', { publicMessage: `This needs the ${needed} role in the organisation.` });
}

/** The person behind an actor, for the audit log; null for tokens, the command line and the system. */
export function personIdOf(actor: Actor): string | null {
  return actor.kind === 'person' ? actor.personId : null;
}

/** The admin token behind an actor, for the audit log; null otherwise. */
export function tokenIdOf(actor: Actor): string | null {
  return actor.kind === 'platform_admin' || actor.kind === 'organisation_token' ? actor.tokenId : null;
}
