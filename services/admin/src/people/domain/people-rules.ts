import { GatewayError } from '@gateway/errors';
import { accessTo, type Actor } from '../../common/domain/actor.ts';
import type { PersonRecord, PersonView } from './people-store.ts';

/** One answer for every link that cannot be followed: unknown, used, revoked, expired or its person disabled. */
export function invalidLink(): GatewayError {
  return new GatewayError('not_found', { publicMessage: 'This link is invalid, used or expired.' });
}

/** One answer for a wrong password and an unknown email, so the answer does not tell which emails exist. */
export function wrongCredentials(): GatewayError {
  return new GatewayError('unauthenticated', { publicMessage: 'Email or password is wrong.' });
}

/** No valid session cookie. */
export function notSignedIn(): GatewayError {
  return new GatewayError('unauthenticated', { publicMessage: 'Not signed in, or the session has ended.' });
}

/** Too many failed sign-ins for this email or from this address (`retryAfterSeconds`: for Retry-After). */
export function throttled(retryAfterSeconds: number): GatewayError {
  return new GatewayError('rate_limit_exceeded', {
    publicMessage: `Too many failed sign-ins. Try again in ${Math.ceil(retryAfterSeconds / 60)} minute(s).`,
    headers: { 'retry-after': String(retryAfterSeconds) },
  });
}

/** The link's URL under the dashboard's public address: `<base>/#/link/<token>` (the fragment never reaches a server log). */
export function linkUrl(publicBaseUrl: string, token: string): string {
  return `${publicBaseUrl.replace(/\/+$/, '')}/#/link/${token}`;
}

/** How long links stay valid (`linkTtlMs`, ms), in words for emails. */
export function linkTtlWords(linkTtlMs: number): string {
  return linkTtlMs % 3_600_000 === 0 ? `${linkTtlMs / 3_600_000} hour(s)` : `${Math.ceil(linkTtlMs / 60_000)} minute(s)`;
}

/** The person actor a link's follower becomes for the audit log (roles do not matter there). */
export function personActor(person: PersonRecord, sessionIdHash: string): Actor {
  return { kind: 'person', personId: person.id, sessionId: sessionIdHash, platformAdmin: person.platformAdmin, roles: new Map() };
}

/**
 * Whether resetting this person's password would hand the caller more than the organisations it
 * owns: a platform admin, or a member of an organisation the caller does not own or run.
 */
export function resetReachesBeyondCaller(actor: Actor, person: PersonView): boolean {
  return person.platformAdmin || person.memberships.some((membership) => {
    const held = accessTo(actor, membership.organisationId);
    return held !== 'platform' && held !== 'owner';
  });
}
