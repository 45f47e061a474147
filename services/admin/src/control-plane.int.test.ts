/**
 * The control plane's newer routes over real PostgreSQL with the fake ledger peer: organisation
 * tokens (every route tried with a foreign id, generated from the route table), platform-admin
 * tokens and the command line, project rename/disable/rotation, budgets, gateway model
 * changes, usage summaries and the audit log. Secrets never appear in a response, log or audit
 * event after the one response that hands them over.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '@gateway/db';
import { ledgerV1 } from '@gateway/contracts';
import { hashSecret, issueSecret } from '@gateway/secrets';
import { testPostgresUrl } from '@gateway/testkit';
import { runAdminCli } from './cli.ts';
import { createAdminRoutes } from './common/http/admin-routes.ts';
import type { AdminRoute } from './common/http/route-definition.ts';
import { errorResponse, listResponse } from './common/http/response-schemas.ts';
import { adminTokenCreatedResponse, adminTokenResponse, organisationResponse, projectBudgetResponse, projectCreatedResponse, projectResponse } from './tenancy/http/tenancy-schemas.ts';
import { auditEventResponse, usageSummaryResponse } from './platform/http/platform-schemas.ts';
import { gatewayModelResponse } from './catalog/http/catalog-schemas.ts';
import type { AdminHarness, HarnessResponse } from './test-support/admin-harness.ts';
import { startPostgresAdmin, type PostgresAdmin } from './test-support/postgres-admin.ts';
import { captureLogs, type CapturedLogs } from './test-support/captured-logs.ts';
import { connectFakeProxy, type FakeProxy } from './test-support/fake-proxy.ts';

const serverUrl = testPostgresUrl();
const itPg = it.skipIf(!serverUrl);
let postgres: PostgresAdmin | undefined;
let admin: AdminHarness;
let db: Database;
let logs: CapturedLogs;
let proxy: FakeProxy;
/** Secrets handed out during the tests; none may appear in a log line or an audit event. */
const secretsSeen: string[] = [];
const upstreamCredential = `sk-vendor-${randomBytes(12).toString('hex')}`;

beforeAll(async () => {
  if (!serverUrl) return;
  logs = captureLogs();
  postgres = await startPostgresAdmin(serverUrl, { logger: logs.logger, env: { SNAPSHOT_ACK_TIMEOUT_MS: '2000' } });
  ({ admin, db } = postgres);
  secretsSeen.push(admin.token, upstreamCredential);
  // One acknowledging proxy, so every change is really pushed and waited for.
  proxy = connectFakeProxy(admin.grpcTarget, 'proxy-control-plane', { autoAck: true });
  await proxy.next((update) => update.full);
});

afterAll(async () => {
  proxy?.close();
  await postgres?.close();
});

function expectError(response: HarnessResponse, status: number, code: string, param?: string | null): void {
  expect(response.status, response.text).toBe(status);
  const body = errorResponse.parse(response.json);
  expect(body.error.code).toBe(code);
  if (param !== undefined) expect(body.error.param).toBe(param);
}

function modelBody(slug: string, overrides: Record<string, unknown> = {}) {
  return {
    slug, default_max_tokens: 64, max_context_tokens: 4096,
    input_price_micros_per_mtok: '2000000', output_price_micros_per_mtok: '5000000',
    upstream: { provider_kind: 'openai_compatible', base_url: 'https://api.example.com/v1', model: 'vendor-model-x', api_key: upstreamCredential },
    ...overrides,
  };
}

/** An organisation with a project and an organisation token. */
async function tenant(name: string) {
  const organisation = organisationResponse.parse((await admin.request('POST', '/admin/v1/organisations', { name })).json);
  const created = projectCreatedResponse.parse((await admin.request('POST', `/admin/v1/organisations/${organisation.id}/projects`, { name: `${name} app` })).json);
  const issued = await admin.request('POST', `/admin/v1/organisations/${organisation.id}/tokens`, { name: `${name} automation` });
  expect(issued.status, issued.text).toBe(201);
  const token = adminTokenCreatedResponse.parse(issued.json);
  secretsSeen.push(created.api_key, token.secret);
  return { organisation, project: created.project, apiKey: created.api_key, token: token.token, secret: token.secret };
}

const as = (secret: string) => ({ authorization: `Bearer ${secret}` });

/** A valid body (and headers) for each route that takes one, so a refusal is about the id, not the input. */
function validInput(route: AdminRoute): { body?: unknown; headers?: Record<string, string> } {
  switch (route.operationId) {
    case 'createOrganisation': return { body: { name: 'x' } };
    case 'updateOrganisation': return { body: { rpm_limit: 7 } };
    case 'creditOrganisation': return { body: { amount_micros: '1', reason: 'r' }, headers: { 'idempotency-key': `k-${randomBytes(4).toString('hex')}` } };
    case 'createProject': return { body: { name: 'x' } };
    case 'updateProject': return { body: { status: 'disabled' } };
    case 'setProjectBudget': return { body: { monthly_cap_micros: '1000' } };
    case 'createGatewayModel': return { body: modelBody(`m-${randomBytes(3).toString('hex')}`) };
    case 'updateGatewayModel': return { body: { display_name: 'x' } };
    case 'createPlatformAdminToken': case 'createOrganisationToken': return { body: { name: 'x' } };
    default: return {};
  }
}

describe('organisation tokens', () => {
  itPg('see and change only their organisation: every route with a foreign id answers 404 and changes nothing', async () => {
    const mine = await tenant('Mine');
    const theirs = await tenant('Theirs');
    expect((await admin.request('POST', '/admin/v1/gateway-models', modelBody('scoped-model'))).status).toBe(201);
    const platformTokens = listResponse(adminTokenResponse).parse((await admin.request('GET', '/admin/v1/platform-admin-tokens')).json);
    const auditBefore = (await db.query('SELECT count(*)::int AS n FROM audit_events')).rows[0];
    const keysBefore = (await db.query('SELECT id, revoked_at FROM api_keys ORDER BY id')).rows;

    const foreignIds: Record<string, string> = { id: theirs.organisation.id, token_id: theirs.token.id, slug: 'scoped-model' };
    const exercised: string[] = [];
    for (const route of createAdminRoutes({ allowPrivate: false }).filter((candidate) => candidate.authenticated)) {
      const params = [...route.path.matchAll(/\{([^}]+)\}/g)].map(([, name]) => name!);
      if (params.length === 0) continue;
      let path = route.path;
      for (const name of params) {
        const value = name === 'id' && route.path.startsWith('/admin/v1/projects/') ? theirs.project.id
          : name === 'id' && route.path.startsWith('/admin/v1/platform-admin-tokens/') ? platformTokens.data[0]!.id
            : foreignIds[name]!;
        path = path.replace(`{${name}}`, value);
      }
      const input = validInput(route);
      const response = await admin.request(route.method.toUpperCase(), path, input.body, { ...input.headers, ...as(mine.secret) });
      const label = `${route.method.toUpperCase()} ${route.path}`;
      if (route.access === 'platform' && route.scope === undefined) {
        // Gateway models, platform tokens and people belong to no organisation: refusing them is
        // about permission, not existence.
        expect(response.status, label).toBe(403);
      } else {
        expect(response.status, `${label}: ${response.text}`).toBe(404);
        expect(errorResponse.parse(response.json).error.code).toBe('not_found');
        expect(response.text).not.toContain('Theirs');
      }
      exercised.push(label);
    }
    // Query parameters naming foreign ids are foreign ids too.
    expectError(await admin.request('GET', `/admin/v1/audit-events?organisation_id=${theirs.organisation.id}`, undefined, as(mine.secret)), 404, 'not_found');
    expectError(await admin.request('GET', `/admin/v1/organisations/${mine.organisation.id}/usage?project_id=${theirs.project.id}`, undefined, as(mine.secret)), 404, 'not_found', 'project_id');
    expect(exercised.length).toBeGreaterThanOrEqual(18);

    expect((await db.query('SELECT count(*)::int AS n FROM audit_events')).rows[0]).toEqual(auditBefore);
    expect((await db.query('SELECT id, revoked_at FROM api_keys ORDER BY id')).rows).toEqual(keysBefore);
    const theirProject = await admin.request('GET', `/admin/v1/projects/${theirs.project.id}`);
    expect(theirProject.json).toEqual(theirs.project);
  });

  itPg('work on their own organisation, and get 403 for what is a platform admin\'s alone', async () => {
    const mine = await tenant('Own');
    const own = await admin.request('GET', `/admin/v1/organisations/${mine.organisation.id}`, undefined, as(mine.secret));
    expect([own.status, own.json]).toEqual([200, mine.organisation]);
    const listed = listResponse(organisationResponse).parse((await admin.request('GET', '/admin/v1/organisations', undefined, as(mine.secret))).json);
    expect(listed.data.map((organisation) => organisation.id)).toEqual([mine.organisation.id]);
    const project = await admin.request('POST', `/admin/v1/organisations/${mine.organisation.id}/projects`, { name: 'by automation' }, as(mine.secret));
    expect(project.status, project.text).toBe(201);
    secretsSeen.push(project.json.api_key);
    expect((await admin.request('GET', `/admin/v1/organisations/${mine.organisation.id}/balance`, undefined, as(mine.secret))).status).toBe(200);

    expectError(await admin.request('PATCH', `/admin/v1/organisations/${mine.organisation.id}`, { rpm_limit: 1_000_000 }, as(mine.secret)), 403, 'permission_denied');
    expectError(await admin.request('POST', `/admin/v1/organisations/${mine.organisation.id}/credits`, { amount_micros: '1000', reason: 'free money' },
      { ...as(mine.secret), 'idempotency-key': 'self-credit' }), 403, 'permission_denied');
    expectError(await admin.request('POST', `/admin/v1/organisations/${mine.organisation.id}/tokens`, { name: 'more' }, as(mine.secret)), 403, 'permission_denied');
    for (const [method, path, body] of [
      ['POST', '/admin/v1/organisations', { name: 'x' }],
      ['GET', '/admin/v1/gateway-models', undefined],
      ['POST', '/admin/v1/gateway-models', modelBody('not-allowed')],
      ['GET', '/admin/v1/platform-admin-tokens', undefined],
      ['POST', '/admin/v1/platform-admin-tokens', { name: 'escalate' }],
    ] as const) {
      expectError(await admin.request(method, path, body, as(mine.secret)), 403, 'permission_denied');
    }
    expect(admin.ledger.credits.has(`manual:${mine.organisation.id}:self-credit`)).toBe(false);

    // Its audit log holds only its organisation's events.
    const events = listResponse(auditEventResponse).parse((await admin.request('GET', '/admin/v1/audit-events?limit=100', undefined, as(mine.secret))).json);
    expect(events.data.length).toBeGreaterThan(0);
    expect(events.data.every((event) => event.organisation_id === mine.organisation.id)).toBe(true);
  });

  itPg('stop working the moment they are revoked, by the organisation itself or a platform admin', async () => {
    const mine = await tenant('Revoking');
    const revoked = await admin.request('DELETE', `/admin/v1/organisations/${mine.organisation.id}/tokens/${mine.token.id}`, undefined, as(mine.secret));
    expect(revoked.status, revoked.text).toBe(200);
    expect(adminTokenResponse.parse(revoked.json).revoked_at).not.toBeNull();
    expectError(await admin.request('GET', `/admin/v1/organisations/${mine.organisation.id}`, undefined, as(mine.secret)), 401, 'unauthenticated');
    const again = await admin.request('DELETE', `/admin/v1/organisations/${mine.organisation.id}/tokens/${mine.token.id}`);
    expect(again.status).toBe(200); // idempotent
    const tokens = listResponse(adminTokenResponse).parse((await admin.request('GET', `/admin/v1/organisations/${mine.organisation.id}/tokens`)).json);
    expect(tokens.data.map((token) => token.id)).toEqual([mine.token.id]);
    expect(JSON.stringify(tokens)).not.toContain(mine.secret);
    expectError(await admin.request('POST', `/admin/v1/organisations/${mine.organisation.id}/tokens`, { name: '' }), 400, 'invalid_request', 'name');
    expectError(await admin.request('DELETE', `/admin/v1/organisations/${mine.organisation.id}/tokens/adm_000000000000000000000000`), 404, 'not_found', 'token_id');
  });
});

describe('every route', () => {
  itPg('answers 401 without a valid token, generated from the route table', async () => {
    const expired = await admin.request('POST', '/admin/v1/platform-admin-tokens', { name: 'short-lived' });
    const expiredSecret = adminTokenCreatedResponse.parse(expired.json).secret;
    secretsSeen.push(expiredSecret);
    expect((await admin.request('DELETE', `/admin/v1/platform-admin-tokens/${expired.json.token.id}`)).status).toBe(200);
    const routes = createAdminRoutes({ allowPrivate: false }).filter((route) => route.authenticated);
    for (const route of routes) {
      const path = route.path.replace(/\{[^}]+\}/g, 'org_000000000000000000000000');
      for (const authorization of ['', `Bearer ${issueSecret('adminToken').secret}`, `Bearer ${expiredSecret}`]) {
        const response = await admin.request(route.method.toUpperCase(), path, validInput(route).body, { authorization });
        expect(response.status, `${route.method} ${route.path}`).toBe(401);
      }
    }
  });
});

describe('platform-admin tokens and the command line', () => {
  itPg('issues, lists and revokes tokens, never the last one, and never shows a secret twice', async () => {
    const issued = await admin.request('POST', '/admin/v1/platform-admin-tokens', { name: 'second admin' });
    expect(issued.status, issued.text).toBe(201);
    const { token, secret } = adminTokenCreatedResponse.parse(issued.json);
    secretsSeen.push(secret);
    expect(token).toMatchObject({ name: 'second admin', organisation_id: null, origin: 'api', revoked_at: null });
    expect((await admin.request('GET', '/admin/v1/organisations', undefined, as(secret))).status).toBe(200);
    const listed = await admin.request('GET', '/admin/v1/platform-admin-tokens?limit=100');
    expect(listed.json.data.map((candidate: { id: string }) => candidate.id)).toContain(token.id);
    expect(listed.text).not.toContain(secret);
    expectError(await admin.request('POST', '/admin/v1/platform-admin-tokens', { name: 'x', role: 'god' }), 400, 'invalid_request', 'role');
    expectError(await admin.request('DELETE', '/admin/v1/platform-admin-tokens/not-an-id'), 404, 'not_found', 'id');

    // Revoke every other active platform token; the last one is refused.
    const all = listResponse(adminTokenResponse).parse(listed.json).data.filter((candidate) => candidate.revoked_at === null);
    const bootstrapId = all.find((candidate) => candidate.origin === 'bootstrap_env')!.id;
    for (const candidate of all.filter((candidate) => candidate.id !== bootstrapId)) {
      expect((await admin.request('DELETE', `/admin/v1/platform-admin-tokens/${candidate.id}`)).status).toBe(200);
    }
    expectError(await admin.request('DELETE', `/admin/v1/platform-admin-tokens/${bootstrapId}`), 409, 'conflict');
    expectError(await admin.request('GET', '/admin/v1/organisations', undefined, as(secret)), 401, 'unauthenticated');
  });

  itPg('creates, lists and revokes platform-admin tokens from the command line', async () => {
    const created = await runAdminCli(await dbForCli(), ['create-platform-admin-token', '--name', 'ops on call']);
    expect(created.exitCode, created.stderr).toBe(0);
    const secret = /gwadm_\S+/.exec(created.stdout)![0].replace(/'$/, '');
    secretsSeen.push(secret);
    const me = await admin.request('GET', '/admin/v1/platform-admin-tokens?limit=100', undefined, as(secret));
    expect(me.status).toBe(200);
    const id = /adm_[0-9a-f]{24}/.exec(created.stdout)![0];
    const listed = await runAdminCli(await dbForCli(), ['list-platform-admin-tokens']);
    expect(listed.stdout).toContain(id);
    expect(listed.stdout).not.toContain(secret);
    expect((await runAdminCli(await dbForCli(), ['create-platform-admin-token'])).exitCode).toBe(2);
    expect((await runAdminCli(await dbForCli(), ['revoke-platform-admin-token', 'adm_000000000000000000000000'])).exitCode).toBe(1);
    expect((await runAdminCli(await dbForCli(), ['revoke-platform-admin-token', id])).exitCode).toBe(0);
    expectError(await admin.request('GET', '/admin/v1/organisations', undefined, as(secret)), 401, 'unauthenticated');
    const events = listResponse(auditEventResponse).parse((await admin.request('GET', '/admin/v1/audit-events?limit=100')).json);
    expect(events.data.filter((event) => event.resource_id === id).map((event) => [event.action, event.actor.kind]))
      .toEqual([['admin_token.create', 'cli'], ['admin_token.revoke', 'cli']]);
  });
});

/** The test's database handle, for the command line (it runs against the same database). */
async function dbForCli(): Promise<Database> {
  return db;
}

describe('projects', () => {
  itPg('renames, disables and re-enables a project; disabling reaches the proxy before the call returns', async () => {
    const mine = await tenant('Lifecycle');
    const renamed = await admin.request('PATCH', `/admin/v1/projects/${mine.project.id}`, { name: '  Renamed  ' });
    expect(renamed.status, renamed.text).toBe(200);
    expect(projectResponse.parse(renamed.json)).toEqual({ ...mine.project, name: 'Renamed' });

    const disabled = await admin.request('PATCH', `/admin/v1/projects/${mine.project.id}`, { status: 'disabled' });
    expect(disabled.json.status).toBe('disabled');
    expect(disabled.headers.get('x-config-propagation')).toBeNull();
    const pushed = proxy.updates.find((update) => update.projects.some((project) => project.id === mine.project.id && project.disabled))!;
    expect(proxy.acknowledgedVersions).toContain(pushed.version);
    const enabled = await admin.request('PATCH', `/admin/v1/projects/${mine.project.id}`, { status: 'active' });
    expect(enabled.json.status).toBe('active');

    const invalid = await admin.request('PATCH', `/admin/v1/projects/${mine.project.id}`, { name: '', status: 'deleted', colour: 'red' });
    expectError(invalid, 400, 'invalid_request', 'name');
    for (const field of ['name:', 'status:', 'colour:']) expect(invalid.json.error.message).toContain(field);
    expectError(await admin.request('PATCH', `/admin/v1/projects/${mine.project.id}`, {}), 400, 'invalid_request', 'body');
    expectError(await admin.request('PATCH', '/admin/v1/projects/proj_000000000000000000000000', { name: 'x' }), 404, 'not_found', 'id');
    expect((await admin.request('GET', `/admin/v1/projects/${mine.project.id}`)).json).toMatchObject({ name: 'Renamed', status: 'active' });
  });

  itPg('rotates a key: one active key, the old hash gone from the proxy before the new secret is returned', async () => {
    const mine = await tenant('Rotation');
    const rotated = await admin.request('POST', `/admin/v1/projects/${mine.project.id}/api-key-rotations`, undefined, as(mine.secret));
    expect(rotated.status, rotated.text).toBe(201);
    const body = projectCreatedResponse.parse(rotated.json);
    secretsSeen.push(body.api_key);
    expect(body.project.api_key!.id).not.toBe(mine.project.api_key!.id);
    expect(body.api_key).not.toBe(mine.apiKey);
    const { rows } = await db.query<{ key_hash: string; revoked: boolean }>(
      'SELECT key_hash, revoked_at IS NOT NULL AS revoked FROM api_keys WHERE project_id = $1 ORDER BY created_at', [mine.project.id],
    );
    expect(rows).toEqual([{ key_hash: hashSecret(mine.apiKey), revoked: true }, { key_hash: hashSecret(body.api_key), revoked: false }]);
    const delta = proxy.updates.find((update) => update.removedKeyHashes.includes(hashSecret(mine.apiKey)))!;
    expect(delta.apiKeys.map((key) => key.keyHash)).toEqual([hashSecret(body.api_key)]);
    expect(proxy.acknowledgedVersions).toContain(delta.version);
    expectError(await admin.request('POST', '/admin/v1/projects/proj_000000000000000000000000/api-key-rotations'), 404, 'not_found', 'id');
    const event = listResponse(auditEventResponse).parse((await admin.request(
      'GET', `/admin/v1/audit-events?organisation_id=${mine.organisation.id}&limit=100`,
    )).json).data.find((candidate) => candidate.action === 'project.rotate_key')!;
    expect(event).toMatchObject({
      actor: { kind: 'organisation_token', token_id: mine.token.id },
      changes: { api_key: { before: { id: mine.project.api_key!.id, hint: mine.project.api_key!.hint }, after: { id: body.project.api_key!.id, hint: body.project.api_key!.hint } } },
    });
  });

  itPg('sets, reads and clears a monthly budget in the ledger, to the micro-rupee', async () => {
    const mine = await tenant('Budget');
    admin.ledger.spend.set(mine.project.id, { settledMicros: 1_234_567n, heldMicros: 89n, softAlertRaised: false });
    const none = await admin.request('GET', `/admin/v1/projects/${mine.project.id}/budget`);
    expect(projectBudgetResponse.parse(none.json)).toMatchObject({ monthly_cap_micros: null, soft_alert_percent: null, settled_micros: '1234567', held_micros: '89', spent_micros: '1234656' });

    const set = await admin.request('PUT', `/admin/v1/projects/${mine.project.id}/budget`, { monthly_cap_micros: '999999999999999', soft_alert_percent: 75 });
    expect(set.status, set.text).toBe(200);
    expect(projectBudgetResponse.parse(set.json)).toMatchObject({ project_id: mine.project.id, monthly_cap_micros: '999999999999999', soft_alert_percent: 75 });
    expect(admin.ledger.budgets.get(mine.project.id)).toEqual({ organisationId: mine.organisation.id, monthlyCapMicros: 999_999_999_999_999n, softAlertPercent: 75 });
    const defaulted = await admin.request('PUT', `/admin/v1/projects/${mine.project.id}/budget`, { monthly_cap_micros: 5_000_000 }, as(mine.secret));
    expect(defaulted.json).toMatchObject({ monthly_cap_micros: '5000000', soft_alert_percent: 80 });

    const invalid = await admin.request('PUT', `/admin/v1/projects/${mine.project.id}/budget`, { monthly_cap_micros: '0', soft_alert_percent: 101, extra: 1 });
    expectError(invalid, 400, 'invalid_request', 'monthly_cap_micros');
    for (const field of ['soft_alert_percent:', 'extra:']) expect(invalid.json.error.message).toContain(field);
    expectError(await admin.request('PUT', `/admin/v1/projects/${mine.project.id}/budget`, { monthly_cap_micros: 1.5 }), 400, 'invalid_request', 'monthly_cap_micros');
    expect(admin.ledger.budgets.get(mine.project.id)!.monthlyCapMicros).toBe(5_000_000n);

    admin.ledger.failNext('setProjectBudget');
    expectError(await admin.request('PUT', `/admin/v1/projects/${mine.project.id}/budget`, { monthly_cap_micros: '1' }), 503, 'service_unavailable');
    expect(admin.ledger.budgets.get(mine.project.id)!.monthlyCapMicros).toBe(5_000_000n);

    const cleared = await admin.request('DELETE', `/admin/v1/projects/${mine.project.id}/budget`);
    expect(cleared.json).toMatchObject({ monthly_cap_micros: null, soft_alert_percent: null });
    expect(admin.ledger.budgets.has(mine.project.id)).toBe(false);
    const events = listResponse(auditEventResponse).parse((await admin.request('GET', `/admin/v1/audit-events?organisation_id=${mine.organisation.id}&limit=100`)).json).data;
    expect(events.filter((event) => event.action.endsWith('_budget')).map((event) => [event.action, event.changes])).toEqual([
      ['project.set_budget', { 'budget.monthly_cap_micros': { before: null, after: '999999999999999' }, 'budget.soft_alert_percent': { before: null, after: 75 } }],
      ['project.set_budget', { 'budget.monthly_cap_micros': { before: '999999999999999', after: '5000000' }, 'budget.soft_alert_percent': { before: 75, after: 80 } }],
      ['project.clear_budget', { 'budget.monthly_cap_micros': { before: '5000000', after: null }, 'budget.soft_alert_percent': { before: 80, after: null } }],
    ]);
  });
});

describe('gateway model changes', () => {
  itPg('changes prices, target and credential, pushes them, and never shows or logs the credential', async () => {
    expect((await admin.request('POST', '/admin/v1/gateway-models', modelBody('changing'))).status).toBe(201);
    const newCredential = `sk-new-${randomBytes(10).toString('hex')}`;
    secretsSeen.push(newCredential);
    const changed = await admin.request('PATCH', '/admin/v1/gateway-models/changing', {
      input_price_micros_per_mtok: '999999999999999', default_max_tokens: 128,
      upstream: { base_url: 'https://other.example.com/v2/', model: 'vendor-model-y', api_key: newCredential },
    });
    expect(changed.status, changed.text).toBe(200);
    expect(gatewayModelResponse.parse(changed.json)).toMatchObject({
      input_price_micros_per_mtok: '999999999999999', output_price_micros_per_mtok: '5000000', default_max_tokens: 128,
      upstream: { base_url: 'https://other.example.com/v2', model: 'vendor-model-y', has_api_key: true },
    });
    expect(changed.text).not.toContain(newCredential);
    const pushed = proxy.updates.find((update) => update.gatewayModels.some((model) => model.slug === 'changing' && model.upstream?.apiKey === newCredential))!;
    expect(pushed.full).toBe(false);
    expect(pushed.gatewayModels[0]!.inputPriceMicrosPerMtok).toBe(999_999_999_999_999n);
    expect(proxy.acknowledgedVersions).toContain(pushed.version);

    const removed = await admin.request('PATCH', '/admin/v1/gateway-models/changing', { upstream: { api_key: null } });
    expect(removed.json.upstream.has_api_key).toBe(false);

    const events = listResponse(auditEventResponse).parse((await admin.request('GET', '/admin/v1/audit-events?limit=100')).json).data
      .filter((event) => event.resource_id === 'changing');
    expect(events.map((event) => event.action)).toEqual(['gateway_model.create', 'gateway_model.update', 'gateway_model.update']);
    expect(events[1]!.changes).toEqual({
      default_max_tokens: { before: 64, after: 128 },
      input_price_micros_per_mtok: { before: '2000000', after: '999999999999999' },
      'upstream.base_url': { before: 'https://api.example.com/v1', after: 'https://other.example.com/v2' },
      'upstream.model': { before: 'vendor-model-x', after: 'vendor-model-y' },
      'upstream.api_key': { before: '(set)', after: '(replaced)' },
    });
    expect(events[2]!.changes).toEqual({ 'upstream.api_key': { before: '(set)', after: null } });
  });

  itPg('refuses bad changes naming every field, SSRF targets and impossible limits, changing nothing', async () => {
    expect((await admin.request('POST', '/admin/v1/gateway-models', modelBody('strict-change'))).status).toBe(201);
    // The SSRF address rule of a PATCH is judged at the edge when the body gives the model's
    // upstream.allow_private_network (so it is named with the other fields), else by the service
    // with the stored flag once the body is well formed.
    const invalid = await admin.request('PATCH', '/admin/v1/gateway-models/strict-change', {
      slug: 'renamed', output_price_micros_per_mtok: '-1',
      upstream: { base_url: 'https://169.254.169.254/latest', api_key: 'has space', allow_private_network: false },
    });
    expectError(invalid, 400, 'invalid_request');
    for (const field of ['slug:', 'output_price_micros_per_mtok:', 'upstream.base_url:', 'upstream.api_key:']) expect(invalid.json.error.message).toContain(field);
    expectError(await admin.request('PATCH', '/admin/v1/gateway-models/strict-change', { upstream: { base_url: 'https://169.254.169.254/latest' } }),
      400, 'invalid_request', 'upstream.base_url');
    expectError(await admin.request('PATCH', '/admin/v1/gateway-models/strict-change', { max_context_tokens: 32 }), 400, 'invalid_request', 'max_context_tokens');
    expectError(await admin.request('PATCH', '/admin/v1/gateway-models/strict-change', { upstream: {} }), 400, 'invalid_request', 'upstream');
    expectError(await admin.request('PATCH', '/admin/v1/gateway-models/no-such-model', { display_name: 'x' }), 404, 'not_found', 'slug');
    const unchanged = await admin.request('GET', '/admin/v1/gateway-models/strict-change');
    expect(unchanged.json).toMatchObject({ max_context_tokens: 4096, output_price_micros_per_mtok: '5000000', upstream: { base_url: 'https://api.example.com/v1' } });
  });
});

describe('usage summary', () => {
  itPg('sums the ledger usage by day (Asia/Kolkata) and model, to the micro-rupee, filtered by project and window', async () => {
    const mine = await tenant('Summary');
    const record = (id: string, createdAtMs: bigint, modelSlug: string, costMicros: bigint) => ledgerV1.UsageRecord.fromPartial({
      id, organisationId: mine.organisation.id, projectId: mine.project.id, modelSlug, inputTokens: 10n, outputTokens: 5n,
      costMicros, providerCostMicros: 1n, debitedMicros: costMicros, usageSource: ledgerV1.UsageSource.USAGE_SOURCE_UPSTREAM, createdAtMs,
    });
    // 2026-01-01T18:29:59.999Z is still 1 January in Kolkata; 18:30 is 2 January.
    admin.ledger.usage.push(
      record('s1', BigInt(Date.parse('2026-01-01T18:29:59.999Z')), 'm', 9_007_199_254_740_993n),
      record('s2', BigInt(Date.parse('2026-01-01T10:00:00.000Z')), 'm', 7n),
      record('s3', BigInt(Date.parse('2026-01-01T18:30:00.000Z')), 'm', 11n),
    );
    const response = await admin.request('GET', `/admin/v1/organisations/${mine.organisation.id}/usage/summary?project_id=${mine.project.id}`, undefined, as(mine.secret));
    expect(response.status, response.text).toBe(200);
    expect(usageSummaryResponse.parse(response.json).data).toEqual([
      { day: '2026-01-01', model: 'm', requests: 2, input_tokens: 20, output_tokens: 10, cost_micros: '9007199254741000', provider_cost_micros: '2', debited_micros: '9007199254741000', token_classes: [], unclassified_requests: 2 },
      { day: '2026-01-02', model: 'm', requests: 1, input_tokens: 10, output_tokens: 5, cost_micros: '11', provider_cost_micros: '1', debited_micros: '11', token_classes: [], unclassified_requests: 1 },
    ]);
    const windowed = await admin.request('GET', `/admin/v1/organisations/${mine.organisation.id}/usage/summary?from=2026-01-02T00:00:00%2B05:30`);
    expect(windowed.json.data.map((row: { day: string }) => row.day)).toEqual(['2026-01-02']);
    const invalid = await admin.request('GET', `/admin/v1/organisations/${mine.organisation.id}/usage/summary?from=yesterday&to=2026-01-01T00:00:00Z&x=1`);
    expectError(invalid, 400, 'invalid_request', 'from');
    expect(invalid.json.error.message).toContain('x: is not a known query parameter');
    expectError(await admin.request('GET', `/admin/v1/organisations/${mine.organisation.id}/usage/summary?from=2026-01-02T00:00:00Z&to=2026-01-01T00:00:00Z`), 400, 'invalid_request', 'to');
    admin.ledger.failNext('summarizeUsage');
    expectError(await admin.request('GET', `/admin/v1/organisations/${mine.organisation.id}/usage/summary`), 503, 'service_unavailable');
  });

  itPg('carries the ledger\'s per-class tokens and cost of each row, and counts the requests without classes', async () => {
    const mine = await tenant('Classes');
    const at = BigInt(Date.parse('2026-02-03T06:00:00.000Z'));
    const tokenClass = (name: string, tokens: bigint, costMicros: bigint, providerCostMicros: bigint) => ({ tokenClass: name, tokens, costMicros, providerCostMicros });
    admin.ledger.usage.push(
      ledgerV1.UsageRecord.fromPartial({
        id: 'c1', organisationId: mine.organisation.id, projectId: mine.project.id, modelSlug: 'm', inputTokens: 100n, outputTokens: 40n,
        costMicros: 1_700n, providerCostMicros: 850n, debitedMicros: 1_700n, createdAtMs: at,
        tokenClasses: [tokenClass('cached_input', 60n, 300n, 150n), tokenClass('input', 40n, 400n, 200n), tokenClass('output', 30n, 600n, 300n), tokenClass('reasoning', 10n, 400n, 200n)],
      }),
      ledgerV1.UsageRecord.fromPartial({
        id: 'c2', organisationId: mine.organisation.id, projectId: mine.project.id, modelSlug: 'm', inputTokens: 50n, outputTokens: 5n,
        costMicros: 700n, providerCostMicros: 350n, debitedMicros: 700n, createdAtMs: at + 1n,
        tokenClasses: [tokenClass('cached_input', 50n, 250n, 125n), tokenClass('output', 5n, 450n, 225n)],
      }),
      ledgerV1.UsageRecord.fromPartial({
        id: 'c3', organisationId: mine.organisation.id, projectId: mine.project.id, modelSlug: 'm', inputTokens: 10n, outputTokens: 5n,
        costMicros: 9_007_199_254_740_993n, providerCostMicros: 1n, debitedMicros: 9_007_199_254_740_993n, createdAtMs: at + 2n,
      }),
    );
    const response = await admin.request('GET', `/admin/v1/organisations/${mine.organisation.id}/usage/summary`, undefined, as(mine.secret));
    expect(response.status, response.text).toBe(200);
    expect(usageSummaryResponse.parse(response.json).data).toEqual([{
      day: '2026-02-03', model: 'm', requests: 3, input_tokens: 160, output_tokens: 50,
      cost_micros: '9007199254743393', provider_cost_micros: '1201', debited_micros: '9007199254743393',
      token_classes: [
        { class: 'cached_input', tokens: 110, cost_micros: '550', provider_cost_micros: '275' },
        { class: 'input', tokens: 40, cost_micros: '400', provider_cost_micros: '200' },
        { class: 'output', tokens: 35, cost_micros: '1050', provider_cost_micros: '525' },
        { class: 'reasoning', tokens: 10, cost_micros: '400', provider_cost_micros: '200' },
      ],
      unclassified_requests: 1,
    }]);
  });
});

describe('the audit log', () => {
  itPg('records every mutation with who, what, when and before/after, pages oldest first, and holds no secret', async () => {
    const mine = await tenant('Audited');
    await admin.request('PATCH', `/admin/v1/organisations/${mine.organisation.id}`, { status: 'suspended', rpm_limit: 9 });
    await admin.request('POST', `/admin/v1/organisations/${mine.organisation.id}/credits`, { amount_micros: '1500000', reason: 'welcome' }, { 'idempotency-key': 'audit-1' });
    await admin.request('POST', `/admin/v1/organisations/${mine.organisation.id}/credits`, { amount_micros: '1500000', reason: 'welcome' }, { 'idempotency-key': 'audit-1' });

    const pages: Array<{ id: string; action: string }> = [];
    let after = '';
    for (;;) {
      const response = await admin.request('GET', `/admin/v1/audit-events?organisation_id=${mine.organisation.id}&limit=2${after ? `&after=${after}` : ''}`);
      const page = listResponse(auditEventResponse).parse(response.json);
      pages.push(...page.data);
      if (!page.has_more) break;
      after = page.data.at(-1)!.id;
    }
    expect(pages.map((event) => event.action)).toEqual(['organisation.create', 'project.create', 'admin_token.create', 'organisation.update', 'organisation.credit']);
    const ids = pages.map((event) => BigInt(event.id));
    expect([...ids].sort((a, b) => (a < b ? -1 : 1))).toEqual(ids);
    const update = pages[3] as unknown as { changes: unknown; actor: unknown };
    expect(update.changes).toEqual({ status: { before: 'active', after: 'suspended' }, rpm_limit: { before: 600, after: 9 } });
    expect(update.actor).toEqual({ kind: 'platform_admin', token_id: expect.stringMatching(/^adm_/), person_id: null });

    expectError(await admin.request('GET', '/admin/v1/audit-events?after=abc&limit=0'), 400, 'invalid_request', 'limit');
    const everything = (await db.query<{ changes: unknown }>('SELECT changes FROM audit_events')).rows.map((row) => JSON.stringify(row.changes)).join('\n');
    for (const secret of secretsSeen) {
      expect(everything).not.toContain(secret);
      expect(everything).not.toContain(hashSecret(secret));
    }
  });

  itPg('never logs a secret or a hash of one', async () => {
    const text = logs.text();
    for (const secret of secretsSeen) {
      expect(text).not.toContain(secret);
      expect(text).not.toContain(hashSecret(secret));
    }
  });
});
