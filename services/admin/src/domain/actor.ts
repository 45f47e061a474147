import { GatewayError } from '@gateway/errors';

/**
 * Who is making a change or a read: a platform admin, an organisation's own automation (which
 * sees and changes only that organisation), the command line, or the admin itself.
 */
export type Actor =
  | { kind: 'platform_admin'; tokenId: string }
  | { kind: 'organisation_token'; tokenId: string; organisationId: string }
  | { kind: 'cli' }
  | { kind: 'system' };

/** The admin itself (seeding the demo model at start). */
export const systemActor: Actor = { kind: 'system' };

/** Whether an actor may see the organisation with this id. Other organisations do not exist for it. */
export function canSeeOrganisation(actor: Actor, organisationId: string): boolean {
  return actor.kind !== 'organisation_token' || actor.organisationId === organisationId;
}

/** Refuses an organisation token with 403: the operation is a platform admin's alone. */
export function requirePlatformAdmin(actor: Actor): void {
  if (actor.kind === 'organisation_token') {
    throw new GatewayError('permission_denied', { publicMessage: 'Only a platform-admin token may do this.' });
  }
}
