/**
 * Roles for EVERY route of the table, generated from createAdminRoutes (so routes added later are
 * covered without editing this file), with signed-in people on PostgreSQL: for a route scoped to
 * an organisation or project, a member with a role below the route's gets 403, a member with
 * the role gets past authorization (neither 403 nor the scope's 404), and an owner of another
 * organisation gets 404 exactly as for an unknown id. A platform route answers 403 to every
 * member, whatever their role.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, testPostgresUrl, type TestDatabase } from '@gateway/testkit';
import { organisationRoles, roleAllows, type OrganisationRole } from './domain/actor.ts';
import { createAdminRoutes } from './http/admin-routes.ts';
import type { AdminRoute } from './http/route-definition.ts';
import { startAdminHarness, type AdminHarness, type HarnessResponse } from './test-support/admin-harness.ts';
import { createOrganisation, newMember, type SessionClient } from './test-support/people-client.ts';

const serverUrl = testPostgresUrl();
const itPg = it.skipIf(!serverUrl);

/** Routes a person's session reaches (the table's, less the public ones and the probes). */
const authenticatedRoutes = createAdminRoutes({ allowPrivate: false }).filter((route) => route.authenticated && route.probe === undefined);
const scopedRoutes = authenticatedRoutes.filter((route) => route.scope !== undefined);
const platformRoutes = authenticatedRoutes.filter((route) => route.access === 'platform');

let testDatabase: TestDatabase;
let admin: AdminHarness;
let organisationId: string;
let projectId: string;
let otherOrganisationId: string;
const members = new Map<OrganisationRole, SessionClient>();
let stranger: SessionClient;

beforeAll(async () => {
  if (!serverUrl) return;
  testDatabase = await createTestDatabase(serverUrl);
  admin = await startAdminHarness({ databaseUrl: testDatabase.url, env: { SNAPSHOT_ACK_TIMEOUT_MS: '500' } });
  organisationId = await createOrganisation(admin, 'Roles Org');
  otherOrganisationId = await createOrganisation(admin, 'Other Org');
  const project = await admin.request('POST', `/admin/v1/organisations/${organisationId}/projects`, { name: 'roles' });
  expect(project.status, project.text).toBe(201);
  projectId = project.json.project.id as string;
  for (const role of organisationRoles) members.set(role, await newMember(admin, organisationId, role));
  stranger = await newMember(admin, otherOrganisationId, 'owner', 'stranger');
});

afterAll(async () => {
  await admin?.close();
  await testDatabase?.drop();
});

/**
 * The route's path with `{id}` naming the organisation (or project) given, and every other
 * parameter a value nothing has: those answer a 404 of their own, after authorization.
 */
function pathOf(route: AdminRoute, scopeOrganisationId: string): string {
  const id = route.scope === 'project' ? (scopeOrganisationId === organisationId ? projectId : 'proj_000000000000000000000000') : scopeOrganisationId;
  return route.path.replace(/\{([^}]+)\}/g, (_match, name: string) => (name === 'id' ? id : `unknown-${name}`));
}

/** Calls a route as a member: an empty JSON body where the route takes one (its validation comes after authorization). */
function callAs(client: SessionClient, route: AdminRoute, path: string): Promise<HarnessResponse> {
  return client.request(route.method.toUpperCase(), path, route.body === undefined ? undefined : {});
}

/** Whether an answer is the scope check's 404: the organisation or project of `{id}` does not exist for the caller. */
function isScopeNotFound(response: HarnessResponse): boolean {
  return response.status === 404 && response.json?.error?.param === 'id';
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
      const response = await callAs(members.get(role)!, route, pathOf(route, organisationId));
      expect(response.status, `${role}: ${response.text}`).toBe(403);
      expect(response.json.error.code).toBe('permission_denied');
    }
  });

  itPg('a member with the role gets past authorization', async () => {
    if (needed === 'platform') return;
    const response = await callAs(members.get(needed)!, route, pathOf(route, organisationId));
    expect(response.status, response.text).not.toBe(401);
    expect(response.status, response.text).not.toBe(403);
    expect(isScopeNotFound(response), response.text).toBe(false);
    expect(response.status, response.text).toBeLessThan(500);
  });

  itPg('a member of another organisation gets 404, as for an unknown id', async () => {
    const foreign = await callAs(stranger, route, pathOf(route, organisationId));
    expect(isScopeNotFound(foreign), foreign.text).toBe(true);
    const unknown = await callAs(members.get('owner')!, route, pathOf(route, 'org_000000000000000000000000'));
    expect(isScopeNotFound(unknown), unknown.text).toBe(true);
    expect(foreign.json.error.message.replace(/"[^"]+"/, '…')).toBe(unknown.json.error.message.replace(/"[^"]+"/, '…'));
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
