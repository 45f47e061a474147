/**
 * Roles for EVERY route of the table, generated from createAdminRoutes (so routes added later are
 * covered without editing this file), with signed-in people on PostgreSQL: for a route that
 * declares a role, whatever its path (the organisation named by `{id}`, a project's, or one
 * selected by `organisation_id` or by default), a member with a role below the route's gets 403,
 * a member with the role gets past authorization (neither 403 nor the scope's 404), and an owner
 * of another organisation gets 404 exactly as for an unknown id. A platform route answers 403 to
 * every member, whatever their role. A route acting on no one organisation declares no role and
 * lets every member past.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testPostgresUrl } from '@gateway/testkit';
import { organisationRoles, roleAllows, type OrganisationRole } from './common/domain/actor.ts';
import { createAdminRoutes } from './common/http/admin-routes.ts';
import type { AdminRoute } from './common/http/route-definition.ts';
import type { AdminHarness, HarnessResponse } from './test-support/admin-harness.ts';
import { startPostgresAdmin, type PostgresAdmin } from './test-support/postgres-admin.ts';
import { createOrganisation, followLink, invite, newMember, type SessionClient } from './test-support/people-client.ts';

const serverUrl = testPostgresUrl();
const itPg = it.skipIf(!serverUrl);

/** Routes a person's session reaches (the table's, less the public ones and the probes). */
const authenticatedRoutes = createAdminRoutes({ allowPrivate: false }).filter((route) => route.authenticated && route.probe === undefined);
/** Routes that declare a role or act on one organisation: the role is checked there, whatever the path. */
const scopedRoutes = authenticatedRoutes.filter((route) => route.scope !== undefined || route.role !== undefined);
/** Routes for any member, acting on no one organisation (the caller's own list, the caller itself, the catalogue). */
const memberRoutes = authenticatedRoutes.filter((route) => route.access === 'organisation' && route.scope === undefined);
const platformRoutes = authenticatedRoutes.filter((route) => route.access === 'platform');

let postgres: PostgresAdmin | undefined;
let admin: AdminHarness;
let organisationId: string;
let projectId: string;
let otherOrganisationId: string;
const members = new Map<OrganisationRole, SessionClient>();
let stranger: SessionClient;
/** An owner of the organisation who is also a viewer of the other one. */
let ownerAndViewer: SessionClient;
/** A person whose only membership was removed: signed in, in no organisation. */
let memberOfNone: SessionClient;

beforeAll(async () => {
  if (!serverUrl) return;
  postgres = await startPostgresAdmin(serverUrl, { env: { SNAPSHOT_ACK_TIMEOUT_MS: '500' } });
  ({ admin } = postgres);
  organisationId = await createOrganisation(admin, 'Roles Org');
  otherOrganisationId = await createOrganisation(admin, 'Other Org');
  const project = await admin.request('POST', `/admin/v1/organisations/${organisationId}/projects`, { name: 'roles' });
  expect(project.status, project.text).toBe(201);
  projectId = project.json.project.id as string;
  for (const role of organisationRoles) members.set(role, await newMember(admin, organisationId, role));
  stranger = await newMember(admin, otherOrganisationId, 'owner', 'stranger');
  const both = await newMember(admin, organisationId, 'owner', 'both');
  expect((await followLink(admin, await invite(admin, otherOrganisationId, both.email, 'viewer'), both.password)).status).toBe(200);
  ownerAndViewer = both;
  memberOfNone = await newMember(admin, otherOrganisationId, 'viewer', 'none');
  const removed = await admin.request('DELETE', `/admin/v1/organisations/${otherOrganisationId}/members/${memberOfNone.personId}`);
  expect(removed.status, removed.text).toBe(204);
});

afterAll(async () => {
  await postgres?.close();
});

/** Whether the route names its organisation in the request (path `{id}` or `organisation_id`), so a foreign one can be tried. */
function namesOrganisation(route: AdminRoute): boolean {
  return route.path.includes('{id}') || route.scope === 'organisation_id';
}

/**
 * The ways to call the route on the organisation (or its project) given: the path with `{id}`
 * naming it and every other parameter a value nothing has (those answer a 404 of their own,
 * after authorization); a route without `{id}` both with `organisation_id` naming it, where the
 * route selects by it, and without (the caller's only organisation).
 */
function pathsOf(route: AdminRoute, scopeOrganisationId: string): string[] {
  const id = route.scope === 'project' ? (scopeOrganisationId === organisationId ? projectId : 'proj_000000000000000000000000') : scopeOrganisationId;
  const path = route.path.replace(/\{([^}]+)\}/g, (_match, name: string) => (name === 'id' ? id : `unknown-${name}`));
  if (route.path.includes('{id}')) return [path];
  return route.scope === 'organisation_id' ? [`${path}?organisation_id=${scopeOrganisationId}`, path] : [path];
}

/** The one way to call a route that names its organisation, naming the one given. */
function pathOf(route: AdminRoute, scopeOrganisationId: string): string {
  return pathsOf(route, scopeOrganisationId)[0]!;
}

/** Calls a route as a member: an empty JSON body where the route takes one (its validation comes after authorization). */
function callAs(client: SessionClient, route: AdminRoute, path: string): Promise<HarnessResponse> {
  return client.request(route.method.toUpperCase(), path, route.body === undefined ? undefined : {});
}

/** Whether an answer is the scope check's 404: the organisation or project the request names does not exist for the caller. */
function isScopeNotFound(response: HarnessResponse): boolean {
  return response.status === 404 && ['id', 'organisation_id'].includes(response.json?.error?.param as string);
}

function describeRoute(route: AdminRoute): string {
  return `${route.method.toUpperCase()} ${route.path} (${route.access}${route.role ? `, ${route.role}` : ''})`;
}

describe('the route table', () => {
  it('has scoped and platform routes to check', () => {
    expect(scopedRoutes.length).toBeGreaterThan(20);
    expect(platformRoutes.length).toBeGreaterThan(5);
    // Every scoped organisation route names its least role (the default, owner, would hide a missing one).
    for (const route of scopedRoutes.filter((scoped) => scoped.access === 'organisation')) expect(route.role, describeRoute(route)).toBeDefined();
  });
});

describe.each(scopedRoutes.map((route) => [describeRoute(route), route] as const))('%s', (_name, route) => {
  const needed: OrganisationRole | 'platform' = route.access === 'platform' ? 'platform' : route.role ?? 'owner';

  itPg('a member with a lesser role gets 403', async () => {
    const lesser = organisationRoles.filter((role) => needed === 'platform' || !roleAllows(role, needed));
    for (const role of lesser) {
      for (const path of pathsOf(route, organisationId)) {
        const response = await callAs(members.get(role)!, route, path);
        expect(response.status, `${role} ${path}: ${response.text}`).toBe(403);
        expect(response.json.error.code).toBe('permission_denied');
      }
    }
  });

  itPg('a member with the role gets past authorization', async () => {
    if (needed === 'platform') return;
    for (const path of pathsOf(route, organisationId)) {
      const response = await callAs(members.get(needed)!, route, path);
      expect(response.status, `${path}: ${response.text}`).not.toBe(401);
      expect(response.status, `${path}: ${response.text}`).not.toBe(403);
      expect(isScopeNotFound(response), response.text).toBe(false);
      expect(response.status, response.text).toBeLessThan(500);
    }
  });

  itPg('a member of another organisation gets 404, as for an unknown id', async () => {
    if (!namesOrganisation(route)) return;
    const foreign = await callAs(stranger, route, pathOf(route, organisationId));
    expect(isScopeNotFound(foreign), foreign.text).toBe(true);
    const unknown = await callAs(members.get('owner')!, route, pathOf(route, 'org_000000000000000000000000'));
    expect(isScopeNotFound(unknown), unknown.text).toBe(true);
    expect(foreign.json.error.message.replace(/"[^"]+"/, '…')).toBe(unknown.json.error.message.replace(/"[^"]+"/, '…'));
  });
});

/** Whether an answer got past authorization: not refused for who the caller is, nor for the organisation it names. */
function expectPastAuthorization(response: HarnessResponse, label: string): void {
  expect(response.status, `${label}: ${response.text}`).not.toBe(401);
  expect(response.status, `${label}: ${response.text}`).not.toBe(403);
  expect(isScopeNotFound(response), `${label}: ${response.text}`).toBe(false);
  expect(response.status, `${label}: ${response.text}`).toBeLessThan(500);
}

describe.each(scopedRoutes.filter((route) => route.scope === 'organisation_id').map((route) => [describeRoute(route), route] as const))('%s selects its organisation', (_name, route) => {
  const needed: OrganisationRole | 'platform' = route.access === 'platform' ? 'platform' : route.role ?? 'owner';

  itPg('a member of several organisations names one (400 without), and the role held in that one decides', async () => {
    const unnamed = await callAs(ownerAndViewer, route, route.path);
    expect(unnamed.status, unnamed.text).toBe(400);
    expect(unnamed.json.error.param).toBe('organisation_id');
    const owned = await callAs(ownerAndViewer, route, `${route.path}?organisation_id=${organisationId}`);
    if (needed === 'platform') expect(owned.status, owned.text).toBe(403);
    else expectPastAuthorization(owned, 'as owner');
    const viewed = await callAs(ownerAndViewer, route, `${route.path}?organisation_id=${otherOrganisationId}`);
    if (needed === 'platform' || !roleAllows('viewer', needed)) expect(viewed.status, viewed.text).toBe(403);
    else expectPastAuthorization(viewed, 'as viewer');
  });

  itPg('a person in no organisation gets 403 without organisation_id, and 404 naming one', async () => {
    const unnamed = await callAs(memberOfNone, route, route.path);
    expect(unnamed.status, unnamed.text).toBe(403);
    const named = await callAs(memberOfNone, route, `${route.path}?organisation_id=${otherOrganisationId}`);
    expect(isScopeNotFound(named), named.text).toBe(true);
  });

  itPg('a repeated organisation_id is refused (400) before anything is looked up', async () => {
    const repeated = await callAs(members.get('viewer')!, route, `${route.path}?organisation_id=${organisationId}&organisation_id=${otherOrganisationId}`);
    expect(repeated.status, repeated.text).toBe(400);
    expect(repeated.json.error.param).toBe('organisation_id');
  });

  itPg('a platform admin leaves it out to act on every organisation', async () => {
    const response = await admin.request(route.method.toUpperCase(), route.path, route.body === undefined ? undefined : {});
    expectPastAuthorization(response, 'platform token');
  });
});

describe('the audit log read by people', () => {
  itPg('an owner reads their organisation\'s events and no other\'s; a viewer or developer reads none', async () => {
    for (const role of ['viewer', 'developer'] as const) {
      const refused = await members.get(role)!.request('GET', '/admin/v1/audit-events?limit=100');
      expect(refused.status, refused.text).toBe(403);
      expect(refused.json.data).toBeUndefined();
      expect(refused.text).not.toContain('@example.test');
    }
    const read = await members.get('owner')!.request('GET', '/admin/v1/audit-events?limit=100');
    expect(read.status, read.text).toBe(200);
    const events = read.json.data as Array<{ organisation_id: string; action: string }>;
    expect(events.filter((event) => event.action === 'invitation.accept')).toHaveLength(4);
    expect(events.every((event) => event.organisation_id === organisationId)).toBe(true);
    // Owner here and viewer there: the other organisation's log stays closed to them.
    const theirs = await ownerAndViewer.request('GET', `/admin/v1/audit-events?organisation_id=${otherOrganisationId}&limit=100`);
    expect(theirs.status, theirs.text).toBe(403);
    const ours = await ownerAndViewer.request('GET', `/admin/v1/audit-events?organisation_id=${organisationId}&limit=100`);
    expect(ours.json.data).toEqual(events);
  });
});

describe.each(memberRoutes.map((route) => [describeRoute(route), route] as const))('%s', (_name, route) => {
  itPg('every member, even a viewer, gets past authorization: the route acts on no one organisation', async () => {
    expect(route.role, 'a role on a route without an organisation could not be checked anywhere').toBeUndefined();
    for (const role of organisationRoles) {
      const response = await callAs(members.get(role)!, route, route.path);
      expect(response.status, `${role}: ${response.text}`).not.toBe(401);
      expect(response.status, `${role}: ${response.text}`).not.toBe(403);
      expect(response.status, `${role}: ${response.text}`).toBeLessThan(500);
    }
  });
});

describe.each(platformRoutes.filter((route) => route.scope === undefined).map((route) => [describeRoute(route), route] as const))('%s', (_name, route) => {
  itPg('every member, even an owner, gets 403', async () => {
    for (const role of organisationRoles) {
      const response = await callAs(members.get(role)!, route, pathOf(route, organisationId));
      expect(response.status, `${role}: ${response.text}`).toBe(403);
    }
  });
});
