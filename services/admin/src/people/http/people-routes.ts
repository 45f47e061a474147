import { GatewayError } from '@gateway/errors';
import type { SignedIn } from '../domain/sign-in.ts';
import { signInLimits } from '../domain/sign-in-throttle.ts';
import { deviceTokensPerBrowser, trustedDeviceLifetimeMs } from '../domain/trusted-devices.ts';
import {
  createInvitationBody, createPersonBody, followLinkBody, invitationCreatedResponse, invitationJson, invitationListResponse,
  invitationResponse, linkInfoJson, linkInfoResponse, memberJson, memberListResponse, memberResponse, passwordResetJson,
  passwordResetResponse, personAccountJson, personAccountResponse, personCreatedResponse, personJson, personResponse,
  sessionResponse, signInBody, updateMemberBody, updatePersonBody,
} from './people-schemas.ts';
import { listJson } from '../../common/http/json-views.ts';
import { listQuery, pageSizes } from '../../common/http/request-schemas.ts';
import { listResponse } from '../../common/http/response-schemas.ts';
import { defineRoute, routeErrors, type AdminRoute, type RouteRequest } from '../../common/http/route-definition.ts';
import { clearedSessionCookies, deviceSetCookie, deviceTokensOf, sameOriginRequest, sessionSetCookie, sessionTokenOf } from './session-cookie.ts';
import { z } from 'zod';

const writeErrors = routeErrors.write;
const readErrors = routeErrors.read;
const platformErrors = routeErrors.platform;

/** The /auth routes answer nothing a cache may keep (a CSRF token, a person). */
const noStore = { 'cache-control': 'no-store' };

/** Refuses a browser request from another origin to a sign-in route (login CSRF). */
function refuseCrossOrigin(request: RouteRequest<unknown, unknown>): void {
  if (!sameOriginRequest(request.origin, request.host)) {
    throw new GatewayError('permission_denied', { publicMessage: 'Cross-origin request refused.' });
  }
}

/** The origin the request reached, the base of links when ADMIN_PUBLIC_URL is unset. */
function requestOrigin(request: RouteRequest<unknown, unknown>): string {
  return `${request.secure ? 'https' : 'http'}://${request.host}`;
}

/**
 * The Set-Cookie headers of a sign-in: the session (cookie lifetime = the session's absolute
 * lifetime), and the device cookie with the new device token first, the browser's tokens for
 * other emails after it (the one it replaces dropped), at most `deviceTokensPerBrowser`.
 */
function startSessionHeaders({ session, device }: SignedIn, request: RouteRequest<unknown, unknown>): Record<string, string | string[]> {
  const maxAgeSeconds = (session.absoluteExpiresAt.getTime() - Date.now()) / 1000;
  const others = deviceTokensOf(request.cookieHeader).filter((token) => token !== device.replaces && token !== '');
  const deviceTokens = [device.token, ...new Set(others)].slice(0, deviceTokensPerBrowser);
  return {
    ...noStore,
    'set-cookie': [sessionSetCookie(session.token, maxAgeSeconds, request), deviceSetCookie(deviceTokens, trustedDeviceLifetimeMs / 1000, request)],
  };
}

/** Path parameter docs need no more than the route's summary: every id is checked by its shape first. */
const signInErrors = ['invalid_request', 'invalid_json', 'request_too_large', 'unsupported_media_type', 'permission_denied'] as const;

/** The people routes of the admin API: sign-in and sessions (/auth), members, invitations, password resets, people. */
export function peopleRoutes(): AdminRoute[] {
  return [...signInRoutes(), ...memberRoutes(), ...accountRoutes()];
}

/** Sign-in, sign-out, the session and one-time links (/auth: public, each checks its own cookie or link). */
function signInRoutes(): AdminRoute[] {
  return [
    defineRoute({
      method: 'post', path: '/auth/sign-in', operationId: 'signIn', tag: 'sign-in', authenticated: false, access: 'public',
      summary: 'Sign in to the dashboard with email and password: sets the session cookie and returns the CSRF token.',
      description: 'The cookie is `__Host-gw_session` (HttpOnly, SameSite=Lax, Path=/, Secure) over TLS and on loopback, `gw_session` without Secure over plain http elsewhere (development only). A wrong password and an unknown email get the same 401; '
        + `${signInLimits.perAccount} failures per email or ${signInLimits.perAddress} per client address in ${signInLimits.windowMs / 60_000} minutes answer 429 with Retry-After, `
        + `except for a browser whose device cookie (\`__Host-gw_device\`, set by every successful sign-in) is trusted for the email: it is refused only after ${signInLimits.perTrustedDevice} failures of its own (docs/people.md).`
        + ' A cross-origin Origin is refused (403).',
      body: signInBody,
      success: { status: 200, description: 'Signed in.', schema: sessionResponse },
      errors: [...signInErrors, 'unauthenticated', 'rate_limit_exceeded'],
      async handle({ service }, request) {
        refuseCrossOrigin(request);
        const signedIn = await service.people.signIn({
          email: request.body.email, password: request.body.password, clientAddress: request.clientAddress, userAgent: request.userAgent,
          deviceTokens: deviceTokensOf(request.cookieHeader),
        });
        return { status: 200, body: { person: personJson(signedIn.person), csrf_token: signedIn.session.csrfToken }, headers: startSessionHeaders(signedIn, request) };
      },
    }),
    defineRoute({
      method: 'post', path: '/auth/sign-out', operationId: 'signOut', tag: 'sign-in', authenticated: false, access: 'public',
      summary: 'End this session (needs X-CSRF-Token) and delete the cookie.',
      success: { status: 204, description: 'Signed out.', schema: z.null() },
      errors: ['unauthenticated', 'permission_denied'],
      async handle({ service }, request) {
        refuseCrossOrigin(request);
        await service.people.signOut(sessionTokenOf(request.cookieHeader), request.csrfToken, { everywhere: false });
        return { status: 204, body: undefined, headers: { ...noStore, 'set-cookie': clearedSessionCookies() } };
      },
    }),
    defineRoute({
      method: 'post', path: '/auth/sign-out-everywhere', operationId: 'signOutEverywhere', tag: 'sign-in', authenticated: false, access: 'public',
      summary: 'End every session of the signed-in person, on every device (needs X-CSRF-Token).',
      success: { status: 204, description: 'Every session ended.', schema: z.null() },
      errors: ['unauthenticated', 'permission_denied'],
      async handle({ service }, request) {
        refuseCrossOrigin(request);
        await service.people.signOut(sessionTokenOf(request.cookieHeader), request.csrfToken, { everywhere: true });
        return { status: 204, body: undefined, headers: { ...noStore, 'set-cookie': clearedSessionCookies() } };
      },
    }),
    defineRoute({
      method: 'get', path: '/auth/session', operationId: 'getSession', tag: 'sign-in', authenticated: false, access: 'public',
      summary: 'The signed-in person and the session\'s CSRF token (the same for the whole session); 401 when not signed in.',
      success: { status: 200, description: 'The session.', schema: sessionResponse },
      errors: ['unauthenticated'],
      async handle({ service }, request) {
        const { person, csrfToken } = await service.people.currentSession(sessionTokenOf(request.cookieHeader));
        return { status: 200, body: { person: personJson(person), csrf_token: csrfToken }, headers: noStore };
      },
    }),
    defineRoute({
      method: 'get', path: '/auth/links/{token}', operationId: 'getLink', tag: 'sign-in', authenticated: false, access: 'public',
      summary: 'What a one-time invitation, password-reset or setup link does; 404 once it is used, revoked or expired.',
      success: { status: 200, description: 'The link.', schema: linkInfoResponse },
      errors: ['not_found'],
      async handle({ service }, { params }) {
        return { status: 200, body: linkInfoJson(await service.people.describeLink(params.token!)), headers: noStore };
      },
    }),
    defineRoute({
      method: 'post', path: '/auth/links/{token}', operationId: 'followLink', tag: 'sign-in', authenticated: false, access: 'public',
      summary: 'Follow a one-time link: set the password (or, for an invitation to an existing account, give it) and sign in.',
      description: 'The link is used up. A reset or setup link ends the person\'s other sessions. An invitation adds the membership; a person who already has a password gives it instead of a new one (401 when wrong, throttled like sign-in).',
      body: followLinkBody,
      success: { status: 200, description: 'Signed in.', schema: sessionResponse },
      errors: [...signInErrors, 'not_found', 'unauthenticated', 'rate_limit_exceeded'],
      async handle({ service }, request) {
        refuseCrossOrigin(request);
        const signedIn = await service.people.followLink(request.params.token!, {
          password: request.body.password, displayName: request.body.display_name, clientAddress: request.clientAddress, userAgent: request.userAgent,
          deviceTokens: deviceTokensOf(request.cookieHeader),
        });
        return { status: 200, body: { person: personJson(signedIn.person), csrf_token: signedIn.session.csrfToken }, headers: startSessionHeaders(signedIn, request) };
      },
    }),
  ];
}

/** The signed-in person, and an organisation's members and invitations (owners manage, viewers read the members). */
function memberRoutes(): AdminRoute[] {
  return [
    defineRoute({
      method: 'get', path: '/admin/v1/me', operationId: 'getMe', tag: 'people', authenticated: true, access: 'organisation',
      summary: 'The signed-in person (a token is not a person: 404).',
      description: 'Each membership lists `allowed_operations`: the operationIds of the organisation routes the member\'s role may call there.',
      success: { status: 200, description: 'The person.', schema: personResponse },
      errors: ['unauthenticated', 'not_found'],
      async handle({ service, operationsAllowedFor }, { actor }) {
        return { status: 200, body: personJson(await service.people.getMe(actor), operationsAllowedFor) };
      },
    }),
    defineRoute({
      method: 'get', path: '/admin/v1/organisations/{id}/members', operationId: 'listMembers', tag: 'people',
      authenticated: true, access: 'organisation', role: 'viewer', scope: 'organisation',
      summary: 'The organisation\'s members and their roles, in the order they joined.',
      success: { status: 200, description: 'Every member.', schema: memberListResponse },
      errors: readErrors,
      async handle({ service }, { actor, params }) {
        return { status: 200, body: { object: 'list', data: (await service.people.listMembers(actor, params.id!)).map(memberJson) } };
      },
    }),
    defineRoute({
      method: 'patch', path: '/admin/v1/organisations/{id}/members/{person_id}', operationId: 'updateMember', tag: 'people',
      authenticated: true, access: 'organisation', role: 'owner', scope: 'organisation',
      summary: 'Change a member\'s role (the last owner cannot be demoted: 409). Applies from the member\'s next request.',
      body: updateMemberBody,
      success: { status: 200, description: 'The member after the change.', schema: memberResponse },
      errors: [...writeErrors, 'not_found', 'conflict'],
      async handle({ service }, { actor, params, body }) {
        return { status: 200, body: memberJson(await service.people.updateMember(actor, params.id!, params.person_id!, body.role)) };
      },
    }),
    defineRoute({
      method: 'delete', path: '/admin/v1/organisations/{id}/members/{person_id}', operationId: 'removeMember', tag: 'people',
      authenticated: true, access: 'organisation', role: 'owner', scope: 'organisation',
      summary: 'Remove a member from the organisation (the last owner cannot be removed: 409). Applies from their next request.',
      success: { status: 204, description: 'Removed.', schema: z.null() },
      errors: ['unauthenticated', 'permission_denied', 'not_found', 'conflict'],
      async handle({ service }, { actor, params }) {
        await service.people.removeMember(actor, params.id!, params.person_id!);
        return { status: 204, body: undefined };
      },
    }),
    defineRoute({
      method: 'post', path: '/admin/v1/organisations/{id}/members/{person_id}/password-resets', operationId: 'createMemberPasswordReset', tag: 'people',
      authenticated: true, access: 'organisation', role: 'owner', scope: 'organisation',
      summary: 'Issue a one-time password-reset link for a member (shown once; emailed too when SMTP is set).',
      description: 'Refused (403) for a platform admin or a person who also belongs to an organisation the caller does not own: a platform admin resets those. The current password keeps working until the link is followed; following it ends the person\'s sessions.',
      success: { status: 201, description: 'The link.', schema: passwordResetResponse },
      errors: ['unauthenticated', 'permission_denied', 'not_found', 'conflict'],
      async handle({ service }, request) {
        const issued = await service.people.createMemberPasswordReset(request.actor, request.params.id!, request.params.person_id!, requestOrigin(request));
        return { status: 201, body: passwordResetJson(issued) };
      },
    }),
    defineRoute({
      method: 'post', path: '/admin/v1/organisations/{id}/invitations', operationId: 'createInvitation', tag: 'people',
      authenticated: true, access: 'organisation', role: 'owner', scope: 'organisation',
      summary: 'Invite an email into the organisation with a role: a one-time link, shown once (emailed too when SMTP is set).',
      description: 'Someone without an account sets a password by following it; someone with one gives their current password. A new invitation of the same email replaces a pending one. 409 when the person is already a member or disabled.',
      body: createInvitationBody,
      success: { status: 201, description: 'The invitation and its link.', schema: invitationCreatedResponse },
      errors: [...writeErrors, 'not_found', 'conflict'],
      async handle({ service }, request) {
        const issued = await service.people.createInvitation(request.actor, request.params.id!, request.body, requestOrigin(request));
        return { status: 201, body: { invitation: invitationJson(issued.link), link: issued.url, email_sent: issued.emailSent } };
      },
    }),
    defineRoute({
      method: 'get', path: '/admin/v1/organisations/{id}/invitations', operationId: 'listInvitations', tag: 'people',
      authenticated: true, access: 'organisation', role: 'owner', scope: 'organisation',
      summary: 'The organisation\'s pending invitations (not used, revoked or expired), oldest first.',
      success: { status: 200, description: 'Pending invitations.', schema: invitationListResponse },
      errors: readErrors,
      async handle({ service }, { actor, params }) {
        return { status: 200, body: { object: 'list', data: (await service.people.listInvitations(actor, params.id!)).map((link) => invitationJson(link)) } };
      },
    }),
    defineRoute({
      method: 'delete', path: '/admin/v1/organisations/{id}/invitations/{invitation_id}', operationId: 'revokeInvitation', tag: 'people',
      authenticated: true, access: 'organisation', role: 'owner', scope: 'organisation',
      summary: 'Revoke an invitation: its link answers 404 from now on (idempotent).',
      success: { status: 200, description: 'The invitation after the change.', schema: invitationResponse },
      errors: ['unauthenticated', 'permission_denied', 'not_found'],
      async handle({ service }, { actor, params }) {
        return { status: 200, body: invitationJson(await service.people.revokeInvitation(actor, params.id!, params.invitation_id!)) };
      },
    }),
  ];
}

/** Every person's account: the platform admins' people routes. */
function accountRoutes(): AdminRoute[] {
  return [
    defineRoute({
      method: 'get', path: '/admin/v1/people', operationId: 'listPeople', tag: 'people', authenticated: true, access: 'platform',
      summary: 'Every person, in creation order (cursor paging: `after` is a person id).',
      query: listQuery,
      success: { status: 200, description: 'A page of people.', schema: listResponse(personAccountResponse) },
      errors: ['unauthenticated', 'invalid_request', ...platformErrors],
      async handle({ service }, { actor, query }) {
        const page = await service.people.listPeople(actor, { limit: query.limit ?? pageSizes.default, after: query.after });
        return { status: 200, body: listJson(page, personAccountJson) };
      },
    }),
    defineRoute({
      method: 'post', path: '/admin/v1/people', operationId: 'createPerson', tag: 'people', authenticated: true, access: 'platform',
      summary: 'Create a platform-admin person with a one-time setup link, shown once (emailed too when SMTP is set).',
      body: createPersonBody,
      success: { status: 201, description: 'The person and their setup link.', schema: personCreatedResponse },
      errors: [...writeErrors, 'conflict', ...platformErrors],
      async handle({ service }, request) {
        const created = await service.people.createPlatformAdminPerson(request.actor, { email: request.body.email }, requestOrigin(request));
        return { status: 201, body: { person: personAccountJson(created.person), link: created.url, email_sent: created.emailSent } };
      },
    }),
    defineRoute({
      method: 'patch', path: '/admin/v1/people/{id}', operationId: 'updatePerson', tag: 'people', authenticated: true, access: 'platform',
      summary: 'Disable or re-enable a person, or grant or drop platform admin. Disabling ends every session at once; nobody changes their own (409).',
      body: updatePersonBody,
      success: { status: 200, description: 'The person after the change.', schema: personAccountResponse },
      errors: [...writeErrors, 'not_found', 'conflict', ...platformErrors],
      async handle({ service }, { actor, params, body }) {
        const person = await service.people.updatePersonAccount(actor, params.id!, { status: body.status, platformAdmin: body.platform_admin });
        return { status: 200, body: personAccountJson(person) };
      },
    }),
    defineRoute({
      method: 'post', path: '/admin/v1/people/{id}/password-resets', operationId: 'createPersonPasswordReset', tag: 'people',
      authenticated: true, access: 'platform',
      summary: 'Issue a one-time password-reset link for anyone (shown once; emailed too when SMTP is set).',
      success: { status: 201, description: 'The link.', schema: passwordResetResponse },
      errors: ['unauthenticated', 'not_found', 'conflict', ...platformErrors],
      async handle({ service }, request) {
        const issued = await service.people.createPersonPasswordReset(request.actor, request.params.id!, requestOrigin(request));
        return { status: 201, body: passwordResetJson(issued) };
      },
    }),
  ];
}
