/**
 * The admin REST API over real PostgreSQL, with a fake ledger peer over real grpc-js.
 * Every route: success, invalid input naming the fields, 401 without a valid token, 404 for
 * unknown ids; credits' idempotency; secrets shown once and credentials never shown.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '@gateway/db';
import { ledgerV1 } from '@gateway/contracts';
import { hashSecret, isWellFormedSecret, issueSecret } from '@gateway/secrets';
import { testPostgresUrl } from '@gateway/testkit';
import { createCredentialCipher } from './common/domain/credential-cipher.ts';
import { createAdminRoutes } from './common/http/admin-routes.ts';
import { buildOpenApiDocument } from './common/http/openapi-document.ts';
import { errorResponse, listResponse } from './common/http/response-schemas.ts';
import { balanceResponse, creditResponse } from './billing/http/balance-schemas.ts';
import { gatewayModelResponse } from './catalog/http/catalog-schemas.ts';
import { organisationResponse, projectCreatedResponse, projectResponse } from './tenancy/http/tenancy-schemas.ts';
import { usageListResponse } from './platform/http/platform-schemas.ts';
import type { AdminHarness, HarnessResponse } from './test-support/admin-harness.ts';
import { startPostgresAdmin, type PostgresAdmin } from './test-support/postgres-admin.ts';
import { captureLogs, type CapturedLogs } from './test-support/captured-logs.ts';

const serverUrl = testPostgresUrl();
const itPg = it.skipIf(!serverUrl);
let postgres: PostgresAdmin | undefined;
let admin: AdminHarness;
let db: Database;
let logs: CapturedLogs;
/** Secrets seen during the tests; none may appear in a log line. */
const secretsSeen: string[] = [];

const upstreamCredential = `sk-vendor-${randomBytes(12).toString('hex')}`;

beforeAll(async () => {
  if (!serverUrl) return;
  logs = captureLogs();
  postgres = await startPostgresAdmin(serverUrl, { logger: logs.logger, env: { SNAPSHOT_ACK_TIMEOUT_MS: '1000' } });
  ({ admin, db } = postgres);
  secretsSeen.push(admin.token, upstreamCredential);
});

afterAll(async () => {
  await postgres?.close();
});

/** Asserts an OpenAI-shaped error with this status, code and (when given) param. */
function expectError(response: HarnessResponse, status: number, code: string, param?: string | null): void {
  expect(response.status, response.text).toBe(status);
  const body = errorResponse.parse(response.json);
  expect(body.error.code).toBe(code);
  if (param !== undefined) expect(body.error.param).toBe(param);
}

function modelBody(slug: string, overrides: Record<string, unknown> = {}) {
  return {
    slug,
    display_name: `Model ${slug}`,
    default_max_tokens: 64,
    max_context_tokens: 4096,
    input_price_micros_per_mtok: '2000000',
    output_price_micros_per_mtok: '5000000',
    provider_input_cost_micros_per_mtok: '1000000',
    upstream: { provider_kind: 'openai_compatible', base_url: 'https://api.example.com/v1', model: 'vendor-model-x', api_key: upstreamCredential },
    ...overrides,
  };
}

async function createOrganisation(body: Record<string, unknown> = { name: 'Acme' }) {
  const response = await admin.request('POST', '/admin/v1/organisations', body);
  expect(response.status, response.text).toBe(201);
  return organisationResponse.parse(response.json);
}

async function countRows(table: string): Promise<number> {
  const { rows } = await db.query<{ count: bigint }>(`SELECT count(*)::bigint AS count FROM ${table}`);
  return Number(rows[0]!.count);
}

describe('authentication', () => {
  const unknownOrg = 'org_000000000000000000000000';
  const adminRoutes: Array<[string, string]> = [
    ['POST', '/admin/v1/organisations'],
    ['GET', '/admin/v1/organisations'],
    ['GET', `/admin/v1/organisations/${unknownOrg}`],
    ['PATCH', `/admin/v1/organisations/${unknownOrg}`],
    ['POST', `/admin/v1/organisations/${unknownOrg}/credits`],
    ['GET', `/admin/v1/organisations/${unknownOrg}/balance`],
    ['GET', `/admin/v1/organisations/${unknownOrg}/usage`],
    ['POST', `/admin/v1/organisations/${unknownOrg}/projects`],
    ['GET', `/admin/v1/organisations/${unknownOrg}/projects`],
    ['GET', '/admin/v1/projects/proj_000000000000000000000000'],
    ['POST', '/admin/v1/gateway-models'],
    ['GET', '/admin/v1/gateway-models'],
    ['GET', '/admin/v1/gateway-models/demo'],
    ['GET', '/admin/v1/no-such-route'],
  ];
  const wrongTokens: Array<[string, Record<string, string>]> = [
    ['no Authorization header', { authorization: '' }],
    ['a well-formed token that was never issued', { authorization: `Bearer ${issueSecret('adminToken').secret}` }],
    ['a token with a broken checksum', { authorization: 'Bearer gwadm_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' }],
    ['an API key instead of an admin token', { authorization: `Bearer ${issueSecret('apiKey').secret}` }],
    ['Basic instead of Bearer', { authorization: 'Basic YWRtaW46YWRtaW4=' }],
  ];

  itPg('answers 401 unauthenticated on every admin route without a valid platform-admin token', async () => {
    const organisationsBefore = await countRows('organisations');
    for (const [method, path] of adminRoutes) {
      for (const [label, headers] of wrongTokens) {
        const response = await admin.request(method, path, method === 'GET' ? undefined : { name: 'x' }, headers);
        expect(response.status, `${method} ${path} with ${label}`).toBe(401);
        expectError(response, 401, 'unauthenticated', null);
        expect(response.headers.get('www-authenticate')).toMatch(/^Bearer/);
      }
    }
    expect(await countRows('organisations')).toBe(organisationsBefore);
  });

  itPg('checks the token before reading the body', async () => {
    const response = await admin.request('POST', '/admin/v1/organisations', '{"name":', { authorization: '' });
    expectError(response, 401, 'unauthenticated');
  });

  itPg('serves health, readiness and the OpenAPI document without a token', async () => {
    const health = await admin.request('GET', '/healthz', undefined, { authorization: '' });
    expect([health.status, health.json]).toEqual([200, { status: 'ok' }]);
    const ready = await admin.request('GET', '/readyz', undefined, { authorization: '' });
    expect([ready.status, ready.json]).toEqual([200, { status: 'ready' }]);
    const document = await admin.request('GET', '/admin/v1/openapi.json', undefined, { authorization: '' });
    expect(document.status).toBe(200);
    expect(document.json).toEqual(buildOpenApiDocument(createAdminRoutes({ allowPrivate: false })));
  });
});

describe('conventions', () => {
  itPg('echoes a sane x-request-id and makes one up otherwise', async () => {
    const echoed = await admin.request('GET', '/admin/v1/organisations', undefined, { 'x-request-id': 'req-abc.123' });
    expect(echoed.headers.get('x-request-id')).toBe('req-abc.123');
    const fresh = await admin.request('GET', '/admin/v1/organisations', undefined, { 'x-request-id': 'bad id with spaces' });
    expect(fresh.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    expect(logs.text()).toContain('"requestId":"req-abc.123"');
  });

  itPg('answers invalid_json for a body that is not JSON, and 413 above 1 MB', async () => {
    expectError(await admin.request('POST', '/admin/v1/organisations', '{"name": "Acme",'), 400, 'invalid_json');
    expectError(await admin.request('POST', '/admin/v1/organisations', 'name=Acme', { 'content-type': 'application/x-www-form-urlencoded' }), 400, 'invalid_json');
    const large = JSON.stringify({ name: 'x'.repeat(1024 * 1024 + 10) });
    expectError(await admin.request('POST', '/admin/v1/organisations', large), 413, 'request_too_large');
  });

  itPg('answers 404 not_found for an unknown route', async () => {
    expectError(await admin.request('GET', '/admin/v1/no-such-route'), 404, 'not_found');
    expectError(await admin.request('DELETE', '/admin/v1/organisations'), 404, 'not_found');
  });
});

describe('organisations', () => {
  itPg('creates an organisation with defaults and opens its ledger account first', async () => {
    const response = await admin.request('POST', '/admin/v1/organisations', { name: '  Acme Ltd  ' });
    expect(response.status).toBe(201);
    const organisation = organisationResponse.parse(response.json);
    expect(organisation).toMatchObject({
      name: 'Acme Ltd', status: 'active', billing_mode: 'commercial', rpm_limit: 600, allowed_gateway_models: [],
    });
    expect(organisation.id).toMatch(/^org_[0-9a-f]{24}$/);
    expect(admin.ledger.accounts.get(organisation.id)).toEqual({ creditedMicros: 0n, availableMicros: 0n, heldMicros: 0n, debitedMicros: 0n });
    const fetched = await admin.request('GET', `/admin/v1/organisations/${organisation.id}`);
    expect([fetched.status, fetched.json]).toEqual([200, organisation]);
  });

  itPg('response storage: on with the platform\'s retention by default; its own token sets it (audited, pushed), another organisation\'s is a 404, bad values name the field', async () => {
    const organisation = await createOrganisation({ name: 'Storing' });
    expect(organisation).toMatchObject({ store_responses: true, response_retention_s: null });
    const token = await admin.request('POST', `/admin/v1/organisations/${organisation.id}/tokens`, { name: 'automation' });
    expect(token.status, token.text).toBe(201);
    const own = { authorization: `Bearer ${token.json.secret as string}` };
    secretsSeen.push(token.json.secret as string);
    const path = `/admin/v1/organisations/${organisation.id}/response-storage`;
    const set = await admin.request('PUT', path, { store_responses: false, response_retention_s: 3600 }, own);
    expect([set.status, organisationResponse.parse(set.json)]).toMatchObject([200, { store_responses: false, response_retention_s: 3600 }]);
    expect((await admin.request('GET', `/admin/v1/organisations/${organisation.id}`)).json).toMatchObject({ store_responses: false, response_retention_s: 3600 });
    const { rows } = await db.query<{ changes: unknown }>(
      "SELECT changes FROM audit_events WHERE resource_id = $1 AND action = 'organisation.response_storage'", [organisation.id],
    );
    expect(rows.map((row) => row.changes)).toEqual([{ store_responses: { before: true, after: false }, response_retention_s: { before: null, after: 3600 } }]);

    const other = await createOrganisation({ name: 'Other' });
    expectError(await admin.request('PUT', `/admin/v1/organisations/${other.id}/response-storage`, { store_responses: false, response_retention_s: null }, own), 404, 'not_found');
    expectError(await admin.request('PUT', path, { store_responses: true, response_retention_s: 0 }), 400, 'invalid_request', 'response_retention_s');
    expectError(await admin.request('PUT', path, { store_responses: true, response_retention_s: 2_592_001 }), 400, 'invalid_request', 'response_retention_s');
    expectError(await admin.request('PUT', path, { response_retention_s: null }), 400, 'invalid_request', 'store_responses');
  });

  itPg('creates an organisation with every field, allowed models sorted', async () => {
    for (const slug of ['org-model-b', 'org-model-a']) {
      expect((await admin.request('POST', '/admin/v1/gateway-models', modelBody(slug))).status).toBe(201);
    }
    const organisation = await createOrganisation({
      name: 'Internal team', billing_mode: 'internal', rpm_limit: 1_000_000, allowed_gateway_models: ['org-model-b', 'org-model-a'],
    });
    expect(organisation).toMatchObject({ billing_mode: 'internal', rpm_limit: 1_000_000, allowed_gateway_models: ['org-model-a', 'org-model-b'] });
  });

  itPg('refuses invalid input naming every bad field, and creates nothing', async () => {
    const before = await countRows('organisations');
    const accountsBefore = admin.ledger.accounts.size;
    const response = await admin.request('POST', '/admin/v1/organisations', {
      name: '', billing_mode: 'free', rpm_limit: 1.5, allowed_gateway_models: 'all', colour: 'red',
    });
    expectError(response, 400, 'invalid_request', 'name');
    for (const field of ['name', 'billing_mode', 'rpm_limit', 'allowed_gateway_models', 'colour']) {
      expect(response.json.error.message).toContain(`${field}:`);
    }
    expectError(await admin.request('POST', '/admin/v1/organisations', { name: 'x'.repeat(201) }), 400, 'invalid_request', 'name');
    expectError(await admin.request('POST', '/admin/v1/organisations', { name: 'x', rpm_limit: 1_000_001 }), 400, 'invalid_request', 'rpm_limit');
    const unknownSlug = await admin.request('POST', '/admin/v1/organisations', { name: 'x', allowed_gateway_models: ['no-such-model'] });
    expectError(unknownSlug, 400, 'invalid_request', 'allowed_gateway_models');
    expect(unknownSlug.json.error.message).toContain('"no-such-model"');
    expect(await countRows('organisations')).toBe(before);
    expect(admin.ledger.accounts.size).toBe(accountsBefore);
  });

  itPg('leaves nothing behind when the ledger is down', async () => {
    const before = await countRows('organisations');
    admin.ledger.failNext('openAccount');
    const response = await admin.request('POST', '/admin/v1/organisations', { name: 'Unlucky' });
    expectError(response, 503, 'service_unavailable');
    expect(await countRows('organisations')).toBe(before);
  });

  itPg('answers 404 for unknown organisation ids', async () => {
    expectError(await admin.request('GET', '/admin/v1/organisations/org_0123456789abcdef01234567'), 404, 'not_found', 'id');
    expectError(await admin.request('GET', '/admin/v1/organisations/not-an-id'), 404, 'not_found', 'id');
  });

  itPg('lists organisations in creation order with cursor paging', async () => {
    const created = [await createOrganisation({ name: 'Page 1' }), await createOrganisation({ name: 'Page 2' }), await createOrganisation({ name: 'Page 3' })];
    const all: string[] = [];
    let after: string | undefined;
    for (;;) {
      const response = await admin.request('GET', `/admin/v1/organisations?limit=2${after ? `&after=${after}` : ''}`);
      expect(response.status).toBe(200);
      const page = listResponse(organisationResponse).parse(response.json);
      expect(page.data.length).toBeLessThanOrEqual(2);
      all.push(...page.data.map((organisation) => organisation.id));
      if (!page.has_more) break;
      after = page.data.at(-1)!.id;
    }
    expect(all).toHaveLength(await countRows('organisations'));
    expect(new Set(all).size).toBe(all.length);
    expect(all.slice(-3)).toEqual(created.map((organisation) => organisation.id));

    const badPaging = await admin.request('GET', '/admin/v1/organisations?limit=101&after=org_0123456789abcdef01234567&sort=name');
    expectError(badPaging, 400, 'invalid_request', 'limit');
    expect(badPaging.json.error.message).toContain('sort: is not a known query parameter');
    expectError(await admin.request('GET', '/admin/v1/organisations?after=org_0123456789abcdef01234567'), 400, 'invalid_request', 'after');
  });

  itPg('changes an organisation and refuses bad changes without applying any of them', async () => {
    const organisation = await createOrganisation({ name: 'Before' });
    const response = await admin.request('PATCH', `/admin/v1/organisations/${organisation.id}`, {
      name: 'After', status: 'suspended', billing_mode: 'internal', rpm_limit: 42, allowed_gateway_models: ['org-model-a'],
    });
    expect(response.status, response.text).toBe(200);
    expect(organisationResponse.parse(response.json)).toEqual({
      ...organisation, name: 'After', status: 'suspended', billing_mode: 'internal', rpm_limit: 42, allowed_gateway_models: ['org-model-a'],
    });

    const invalid = await admin.request('PATCH', `/admin/v1/organisations/${organisation.id}`, { status: 'deleted', rpm_limit: 0 });
    expectError(invalid, 400, 'invalid_request', 'status');
    expect(invalid.json.error.message).toContain('rpm_limit:');
    expectError(await admin.request('PATCH', `/admin/v1/organisations/${organisation.id}`, {}), 400, 'invalid_request', 'body');
    expectError(await admin.request('PATCH', `/admin/v1/organisations/${organisation.id}`, { name: 'Changed', allowed_gateway_models: ['nope'] }),
      400, 'invalid_request', 'allowed_gateway_models');
    expectError(await admin.request('PATCH', '/admin/v1/organisations/org_0123456789abcdef01234567', { name: 'x' }), 404, 'not_found', 'id');
    const unchanged = await admin.request('GET', `/admin/v1/organisations/${organisation.id}`);
    expect(unchanged.json).toMatchObject({ name: 'After', status: 'suspended', rpm_limit: 42, allowed_gateway_models: ['org-model-a'] });
  });
});

describe('credits and balance', () => {
  itPg('credits exactly, replays the same key and body, and refuses the same key with another body', async () => {
    const organisation = await createOrganisation({ name: 'Wallet' });
    const path = `/admin/v1/organisations/${organisation.id}/credits`;
    const first = await admin.request('POST', path, { amount_micros: '1500000', reason: 'welcome credit' }, { 'idempotency-key': 'topup-1' });
    expect(first.status, first.text).toBe(201);
    expect(creditResponse.parse(first.json)).toEqual({
      credit_id: `manual:${organisation.id}:topup-1`,
      organisation_id: organisation.id,
      amount_micros: '1500000',
      reason: 'welcome credit',
      balance: {
        organisation_id: organisation.id, currency: 'INR',
        credited_micros: '1500000', available_micros: '1500000', held_micros: '0', debited_micros: '0',
      },
    });
    expect(admin.ledger.credits.get(`manual:${organisation.id}:topup-1`)).toEqual({ organisationId: organisation.id, amountMicros: 1_500_000n, reason: 'welcome credit' });

    // A second credit under another key; then a replay of the first returns the first result unchanged.
    const second = await admin.request('POST', path, { amount_micros: 2_500_001, reason: 'more' }, { 'idempotency-key': 'topup-2' });
    expect(second.status).toBe(201);
    expect(second.json.balance.available_micros).toBe('4000001');
    const replay = await admin.request('POST', path, { amount_micros: 1_500_000, reason: 'welcome credit' }, { 'idempotency-key': 'topup-1' });
    expect(replay.status).toBe(200);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.json).toEqual(first.json);

    const conflict = await admin.request('POST', path, { amount_micros: '1500001', reason: 'welcome credit' }, { 'idempotency-key': 'topup-1' });
    expectError(conflict, 409, 'idempotency_conflict', 'Idempotency-Key');
    const balance = await admin.request('GET', `/admin/v1/organisations/${organisation.id}/balance`);
    expect(balance.status).toBe(200);
    expect(balanceResponse.parse(balance.json)).toEqual({
      organisation_id: organisation.id, currency: 'INR',
      credited_micros: '4000001', available_micros: '4000001', held_micros: '0', debited_micros: '0',
    });
  });

  itPg('completes a credit whose first attempt failed, when retried with the same key', async () => {
    const organisation = await createOrganisation({ name: 'Retry' });
    const path = `/admin/v1/organisations/${organisation.id}/credits`;
    admin.ledger.failNext('credit');
    expectError(await admin.request('POST', path, { amount_micros: '700', reason: 'r' }, { 'idempotency-key': 'k' }), 503, 'service_unavailable');
    const retry = await admin.request('POST', path, { amount_micros: '700', reason: 'r' }, { 'idempotency-key': 'k' });
    expect(retry.status).toBe(201);
    expect(retry.json.balance.credited_micros).toBe('700');
  });

  itPg('maps a ledger idempotency conflict the admin did not see to 409', async () => {
    const organisation = await createOrganisation({ name: 'Ledger conflict' });
    admin.ledger.credits.set(`manual:${organisation.id}:elsewhere`, { organisationId: organisation.id, amountMicros: 1n, reason: 'other' });
    const response = await admin.request('POST', `/admin/v1/organisations/${organisation.id}/credits`,
      { amount_micros: '5', reason: 'r' }, { 'idempotency-key': 'elsewhere' });
    expectError(response, 409, 'idempotency_conflict');
  });

  itPg('refuses bad credits naming every problem, and credits nothing', async () => {
    const organisation = await createOrganisation({ name: 'Strict wallet' });
    const path = `/admin/v1/organisations/${organisation.id}/credits`;
    const missingKey = await admin.request('POST', path, { amount_micros: '0', reason: '' });
    expectError(missingKey, 400, 'invalid_request', 'Idempotency-Key');
    expect(missingKey.json.error.message).toContain('amount_micros: must be at least 1');
    expect(missingKey.json.error.message).toContain('reason: must not be empty');
    expectError(await admin.request('POST', path, { amount_micros: '5', reason: 'r' }, { 'idempotency-key': 'has space' }), 400, 'invalid_request', 'Idempotency-Key');
    expectError(await admin.request('POST', path, { amount_micros: '5', reason: 'r' }, { 'idempotency-key': 'k'.repeat(129) }), 400, 'invalid_request', 'Idempotency-Key');
    expectError(await admin.request('POST', path, { amount_micros: 1.25, reason: 'r' }, { 'idempotency-key': 'k1' }), 400, 'invalid_request', 'amount_micros');
    expectError(await admin.request('POST', path, { amount_micros: '-1', reason: 'r' }, { 'idempotency-key': 'k2' }), 400, 'invalid_request', 'amount_micros');
    expectError(await admin.request('POST', path, { amount_micros: '5', reason: 'r'.repeat(501) }, { 'idempotency-key': 'k3' }), 400, 'invalid_request', 'reason');
    expect(admin.ledger.accounts.get(organisation.id)!.creditedMicros).toBe(0n);
    expect(await countRows(`manual_credits WHERE organisation_id = '${organisation.id}'`)).toBe(0);
  });

  itPg('answers 404 for the credits and balance of an unknown organisation', async () => {
    const unknown = 'org_0123456789abcdef01234567';
    expectError(await admin.request('POST', `/admin/v1/organisations/${unknown}/credits`, { amount_micros: '5', reason: 'r' }, { 'idempotency-key': 'k' }), 404, 'not_found');
    expectError(await admin.request('GET', `/admin/v1/organisations/${unknown}/balance`), 404, 'not_found');
  });
});

describe('usage', () => {
  itPg('lists the ledger usage records newest first, filtered and paged, money to the micro-rupee', async () => {
    const organisation = await createOrganisation({ name: 'Usage' });
    const project = projectCreatedResponse.parse((await admin.request('POST', `/admin/v1/organisations/${organisation.id}/projects`, { name: 'p' })).json).project;
    const record = (index: number, overrides: Partial<ledgerV1.UsageRecord> = {}) => ledgerV1.UsageRecord.fromPartial({
      id: `usage-${index}`, reservationId: `res-${index}`, organisationId: organisation.id, projectId: project.id, modelSlug: 'chat',
      inputTokens: 1000n + BigInt(index), outputTokens: 7n, costMicros: 2035n + BigInt(index), providerCostMicros: 1001n, debitedMicros: 2035n + BigInt(index),
      billingMode: ledgerV1.BillingMode.BILLING_MODE_COMMERCIAL, usageSource: ledgerV1.UsageSource.USAGE_SOURCE_UPSTREAM,
      requestId: `req-${index}`, createdAtMs: 1_700_000_000_000n + BigInt(index) * 1000n, ...overrides,
    });
    admin.ledger.usage.push(record(1), record(2, { modelSlug: 'other', usageSource: ledgerV1.UsageSource.USAGE_SOURCE_GATEWAY_ESTIMATE }), record(3, { overrunOutputTokens: 1_900n }));

    const response = await admin.request('GET', `/admin/v1/organisations/${organisation.id}/usage`);
    expect(response.status, response.text).toBe(200);
    const page = usageListResponse.parse(response.json);
    expect(page.data.map((item) => item.id)).toEqual(['usage-3', 'usage-2', 'usage-1']);
    expect(page.next_cursor).toBeNull();
    expect(page.data[0]).toEqual({
      id: 'usage-3', project_id: project.id, model: 'chat', input_tokens: 1003, output_tokens: 7,
      cost_micros: '2038', provider_cost_micros: '1001', debited_micros: '2038', usage_source: 'upstream',
      request_id: 'req-3', created_at: new Date(1_700_000_003_000).toISOString(), overrun_output_tokens: 1900,
    });
    expect(page.data[1]!.usage_source).toBe('gateway_estimate');
    expect(page.data[1]!.overrun_output_tokens).toBe(0);

    const filtered = await admin.request('GET', `/admin/v1/organisations/${organisation.id}/usage?model=chat&project_id=${project.id}&limit=1`);
    const first = usageListResponse.parse(filtered.json);
    expect(first.data.map((item) => item.id)).toEqual(['usage-3']);
    expect(first.next_cursor).not.toBeNull();
    const next = usageListResponse.parse((await admin.request('GET',
      `/admin/v1/organisations/${organisation.id}/usage?model=chat&limit=1&cursor=${encodeURIComponent(first.next_cursor!)}`)).json);
    expect(next.data.map((item) => item.id)).toEqual(['usage-1']);
  });

  itPg('refuses bad usage queries and unknown ids', async () => {
    const organisation = await createOrganisation({ name: 'Usage errors' });
    const other = await createOrganisation({ name: 'Other' });
    const otherProject = (await admin.request('POST', `/admin/v1/organisations/${other.id}/projects`, { name: 'theirs' })).json.project;
    const bad = await admin.request('GET', `/admin/v1/organisations/${organisation.id}/usage?limit=501&model=Not%20A%20Slug`);
    expectError(bad, 400, 'invalid_request', 'model');
    expect(bad.json.error.message).toContain('limit: must be an integer between 1 and 500');
    expectError(await admin.request('GET', `/admin/v1/organisations/${organisation.id}/usage?project_id=${otherProject.id}`), 404, 'not_found', 'project_id');
    expectError(await admin.request('GET', '/admin/v1/organisations/org_0123456789abcdef01234567/usage'), 404, 'not_found', 'id');
  });
});

describe('projects and their API keys', () => {
  itPg('creates a project whose secret is returned once, stored only as a hash, and never shown again', async () => {
    const organisation = await createOrganisation({ name: 'Keys' });
    const response = await admin.request('POST', `/admin/v1/organisations/${organisation.id}/projects`, { name: 'Backend' });
    expect(response.status, response.text).toBe(201);
    const created = projectCreatedResponse.parse(response.json);
    secretsSeen.push(created.api_key);
    expect(isWellFormedSecret('apiKey', created.api_key)).toBe(true);
    expect(created.project).toMatchObject({ organisation_id: organisation.id, name: 'Backend', status: 'active' });
    expect(created.project.api_key!.hint).toBe(`gwsk_…${created.api_key.slice(-4)}`);
    expect(response.text.split(created.api_key)).toHaveLength(2); // exactly once in the response

    const stored = await db.query<Record<string, unknown>>('SELECT * FROM api_keys WHERE project_id = $1', [created.project.id]);
    expect(stored.rows).toHaveLength(1);
    expect(stored.rows[0]!.key_hash).toBe(hashSecret(created.api_key));
    expect(JSON.stringify(stored.rows, (_key, value) => (typeof value === 'bigint' ? value.toString() : value))).not.toContain(created.api_key);

    const fetched = await admin.request('GET', `/admin/v1/projects/${created.project.id}`);
    expect(fetched.status).toBe(200);
    expect(projectResponse.parse(fetched.json)).toEqual(created.project);
    const listed = await admin.request('GET', `/admin/v1/organisations/${organisation.id}/projects`);
    expect(listResponse(projectResponse).parse(listed.json)).toEqual({ object: 'list', data: [created.project], has_more: false });
    for (const text of [fetched.text, listed.text]) {
      expect(text).not.toContain(created.api_key);
      expect(text).not.toContain(hashSecret(created.api_key));
    }
  });

  itPg('pages projects and refuses bad input and unknown ids', async () => {
    const organisation = await createOrganisation({ name: 'Many projects' });
    const ids: string[] = [];
    for (const name of ['one', 'two', 'three']) {
      ids.push((await admin.request('POST', `/admin/v1/organisations/${organisation.id}/projects`, { name })).json.project.id);
    }
    const firstPage = listResponse(projectResponse).parse((await admin.request('GET', `/admin/v1/organisations/${organisation.id}/projects?limit=2`)).json);
    expect([firstPage.data.map((project) => project.id), firstPage.has_more]).toEqual([ids.slice(0, 2), true]);
    const secondPage = listResponse(projectResponse).parse((await admin.request('GET',
      `/admin/v1/organisations/${organisation.id}/projects?limit=2&after=${ids[1]}`)).json);
    expect([secondPage.data.map((project) => project.id), secondPage.has_more]).toEqual([ids.slice(2), false]);

    const invalid = await admin.request('POST', `/admin/v1/organisations/${organisation.id}/projects`, { name: '', budget: 5 });
    expectError(invalid, 400, 'invalid_request', 'name');
    expect(invalid.json.error.message).toContain('budget: is not a known field');
    expectError(await admin.request('POST', '/admin/v1/organisations/org_0123456789abcdef01234567/projects', { name: 'x' }), 404, 'not_found', 'id');
    expectError(await admin.request('GET', '/admin/v1/organisations/org_0123456789abcdef01234567/projects'), 404, 'not_found', 'id');
    expectError(await admin.request('GET', '/admin/v1/projects/proj_0123456789abcdef01234567'), 404, 'not_found', 'id');
    expectError(await admin.request('GET', `/admin/v1/organisations/${organisation.id}/projects?limit=0`), 400, 'invalid_request', 'limit');
    expect(await countRows(`projects WHERE organisation_id = '${organisation.id}'`)).toBe(3);
  });
});

describe('gateway models', () => {
  itPg('sets, changes and audits the price sheet by token class; a negative or malformed class price is a 400 naming it', async () => {
    const created = await admin.request('POST', '/admin/v1/gateway-models', {
      ...modelBody('acme-classes'), cached_input_price_micros_per_mtok: '200000', cache_write_5m_price_micros_per_mtok: '2500000',
      provider_cache_write_1h_cost_micros_per_mtok: '3000000',
    });
    expect(created.status, created.text).toBe(201);
    expect(created.json).toMatchObject({
      cached_input_price_micros_per_mtok: '200000', cache_write_5m_price_micros_per_mtok: '2500000', cache_write_1h_price_micros_per_mtok: '2000000',
      reasoning_price_micros_per_mtok: null, provider_cache_write_1h_cost_micros_per_mtok: '3000000',
    });
    const changed = await admin.request('PATCH', '/admin/v1/gateway-models/acme-classes', { reasoning_price_micros_per_mtok: '9000000', image_input_price_micros_per_mtok: 0 });
    expect(changed.status, changed.text).toBe(200);
    expect(changed.json).toMatchObject({ reasoning_price_micros_per_mtok: '9000000', image_input_price_micros_per_mtok: '0', cached_input_price_micros_per_mtok: '200000' });
    const cleared = await admin.request('PATCH', '/admin/v1/gateway-models/acme-classes', { reasoning_price_micros_per_mtok: null });
    expect(cleared.json.reasoning_price_micros_per_mtok).toBeNull();
    const audit = await db.query<{ changes: Record<string, unknown> }>(
      "SELECT changes FROM audit_events WHERE resource_id = 'acme-classes' AND action = 'gateway_model.update' ORDER BY occurred_at, id",
    );
    expect(audit.rows[0]!.changes).toMatchObject({ reasoning_price_micros_per_mtok: { before: null, after: '9000000' } });
    expectError(await admin.request('PATCH', '/admin/v1/gateway-models/acme-classes', { cache_write_1h_price_micros_per_mtok: '-1' }), 400, 'invalid_request', 'cache_write_1h_price_micros_per_mtok');
    expectError(await admin.request('POST', '/admin/v1/gateway-models', { ...modelBody('acme-bad'), provider_reasoning_cost_micros_per_mtok: 1.5 }), 400, 'invalid_request', 'provider_reasoning_cost_micros_per_mtok');
  });

  itPg('creates a model whose credential is encrypted at rest and never returned', async () => {
    const response = await admin.request('POST', '/admin/v1/gateway-models', modelBody('acme-chat'));
    expect(response.status, response.text).toBe(201);
    expect(gatewayModelResponse.parse(response.json)).toEqual({
      slug: 'acme-chat', display_name: 'Model acme-chat', kind: 'chat', input_modalities: ['text'],
      reasoning_efforts: [], thinking_modes: [], max_thinking_budget_tokens: 0, returns_reasoning: false, default_max_tokens: 64, max_context_tokens: 4096,
      input_price_micros_per_mtok: '2000000', output_price_micros_per_mtok: '5000000',
      provider_input_cost_micros_per_mtok: '1000000', provider_output_cost_micros_per_mtok: '0',
      // Class prices left out: each input class at the input price (cost), reasoning as output (null).
      cached_input_price_micros_per_mtok: '2000000', cache_write_5m_price_micros_per_mtok: '2000000', cache_write_1h_price_micros_per_mtok: '2000000',
      reasoning_price_micros_per_mtok: null, audio_input_price_micros_per_mtok: '2000000', image_input_price_micros_per_mtok: '2000000',
      provider_cached_input_cost_micros_per_mtok: '1000000', provider_cache_write_5m_cost_micros_per_mtok: '1000000',
      provider_cache_write_1h_cost_micros_per_mtok: '1000000', provider_reasoning_cost_micros_per_mtok: null,
      provider_audio_input_cost_micros_per_mtok: '1000000', provider_image_input_cost_micros_per_mtok: '1000000',
      upstream: { provider_kind: 'openai_compatible', base_url: 'https://api.example.com/v1', model: 'vendor-model-x', has_api_key: true, allow_private_network: false, priority: 0, weight: 1 },
      created_at: response.json.created_at,
    });
    const fetched = await admin.request('GET', '/admin/v1/gateway-models/acme-chat');
    expect([fetched.status, fetched.json]).toEqual([200, response.json]);
    const listed = await admin.request('GET', '/admin/v1/gateway-models?limit=100');
    expect(listResponse(gatewayModelResponse).parse(listed.json).data.map((model) => model.slug)).toContain('acme-chat');
    for (const text of [response.text, fetched.text, listed.text]) expect(text).not.toContain(upstreamCredential);

    const stored = await db.query<{ upstream_api_key_encrypted: string }>('SELECT upstream_api_key_encrypted FROM gateway_models WHERE slug = $1', ['acme-chat']);
    const sealed = stored.rows[0]!.upstream_api_key_encrypted;
    expect(sealed).toMatch(/^v2:[0-9a-f]{8}:/);
    expect(sealed).not.toContain(upstreamCredential);
    expect(createCredentialCipher(admin.encryptionKey).decrypt(sealed, 'gateway_models:acme-chat')).toBe(upstreamCredential);
  });

  itPg('keeps exact prices beyond 2^53 when sent as strings, and defaults the display name and costs', async () => {
    const response = await admin.request('POST', '/admin/v1/gateway-models', {
      slug: 'vendor/precise-1', default_max_tokens: 1, max_context_tokens: 1,
      input_price_micros_per_mtok: '999999999999999', output_price_micros_per_mtok: 0,
      upstream: { provider_kind: 'openai_compatible', base_url: 'https://api.example.com', model: 'p' },
    });
    expect(response.status, response.text).toBe(201);
    expect(response.json).toMatchObject({
      slug: 'vendor/precise-1', display_name: 'vendor/precise-1',
      input_price_micros_per_mtok: '999999999999999', output_price_micros_per_mtok: '0',
      provider_input_cost_micros_per_mtok: '0', provider_output_cost_micros_per_mtok: '0',
      upstream: { base_url: 'https://api.example.com', has_api_key: false },
    });
    // A slug with a slash is found whether the slash is sent as is or percent-encoded.
    expect((await admin.request('GET', '/admin/v1/gateway-models/vendor/precise-1')).json.slug).toBe('vendor/precise-1');
    expect((await admin.request('GET', '/admin/v1/gateway-models/vendor%2Fprecise-1')).json.slug).toBe('vendor/precise-1');
  });

  itPg('refuses a duplicate slug with 409 and leaves the first model unchanged', async () => {
    expect((await admin.request('POST', '/admin/v1/gateway-models', modelBody('dup-model'))).status).toBe(201);
    const duplicate = await admin.request('POST', '/admin/v1/gateway-models', modelBody('dup-model', { display_name: 'Other' }));
    expectError(duplicate, 409, 'conflict', 'slug');
    expect((await admin.request('GET', '/admin/v1/gateway-models/dup-model')).json.display_name).toBe('Model dup-model');
  });

  itPg.each([
    ['a private address', 'https://10.0.0.5/v1'],
    ['loopback', 'https://127.0.0.1:8443/v1'],
    ['localhost', 'https://localhost/v1'],
    ['link-local cloud metadata', 'https://169.254.169.254/latest'],
    ['IPv6 loopback', 'https://[::1]/v1'],
    ['IPv6 unique-local', 'https://[fd00::1]/v1'],
    ['IPv4-mapped IPv6 loopback', 'https://[::ffff:127.0.0.1]/v1'],
    ['plain http', 'http://api.example.com/v1'],
    ['credentials in the URL', 'https://user:secret@api.example.com/v1'],
  ])('refuses an upstream at %s (SSRF) and stores nothing', async (_label, baseUrl) => {
    const before = await countRows('gateway_models');
    const response = await admin.request('POST', '/admin/v1/gateway-models', modelBody(`ssrf-${randomBytes(3).toString('hex')}`, {
      upstream: { provider_kind: 'openai_compatible', base_url: baseUrl, model: 'm', api_key: upstreamCredential },
    }));
    expectError(response, 400, 'invalid_request', 'upstream.base_url');
    expect(response.text).not.toContain(upstreamCredential);
    expect(await countRows('gateway_models')).toBe(before);
  });

  itPg('refuses invalid models naming every bad field', async () => {
    const response = await admin.request('POST', '/admin/v1/gateway-models', {
      slug: '-bad', default_max_tokens: 0, max_context_tokens: 20_000_000,
      input_price_micros_per_mtok: '1.5', output_price_micros_per_mtok: -1,
      upstream: { provider_kind: 'carrier_pigeon', base_url: 'https://api.example.com', api_key: '' },
    });
    expectError(response, 400, 'invalid_request', 'slug');
    for (const field of ['slug', 'default_max_tokens', 'max_context_tokens', 'input_price_micros_per_mtok', 'output_price_micros_per_mtok',
      'upstream.provider_kind', 'upstream.model', 'upstream.api_key']) {
      expect(response.json.error.message).toContain(`${field}:`);
    }
    expectError(await admin.request('POST', '/admin/v1/gateway-models', modelBody('ctx', { default_max_tokens: 100, max_context_tokens: 99 })),
      400, 'invalid_request', 'max_context_tokens');
  });

  itPg('pages gateway models by slug and refuses bad paging', async () => {
    // 'zz-' sorts after every other slug of this file, so these three are the last models.
    for (const slug of ['zz-page-a', 'zz-page-b', 'zz-page-c']) expect((await admin.request('POST', '/admin/v1/gateway-models', modelBody(slug))).status).toBe(201);
    const page = listResponse(gatewayModelResponse).parse((await admin.request('GET', '/admin/v1/gateway-models?after=zz-page-a&limit=1')).json);
    expect([page.data.map((model) => model.slug), page.has_more]).toEqual([['zz-page-b'], true]);
    const last = listResponse(gatewayModelResponse).parse((await admin.request('GET', '/admin/v1/gateway-models?after=zz-page-b&limit=2')).json);
    expect([last.data.map((model) => model.slug), last.has_more]).toEqual([['zz-page-c'], false]);
    const bad = await admin.request('GET', '/admin/v1/gateway-models?limit=abc&order=desc');
    expectError(bad, 400, 'invalid_request', 'limit');
    expect(bad.json.error.message).toContain('order: is not a known query parameter');
  });

  itPg('answers 404 for an unknown slug', async () => {
    expectError(await admin.request('GET', '/admin/v1/gateway-models/no-such-model'), 404, 'not_found', 'slug');
  });
});

describe('logs', () => {
  itPg('log one line per request and never a token, key or credential', async () => {
    const marker = `log-check-${randomBytes(4).toString('hex')}`;
    await admin.request('GET', '/admin/v1/organisations', undefined, { 'x-request-id': marker });
    const lines = logs.text().split('\n').filter((line) => line.includes(`"requestId":"${marker}"`));
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0]!)).toMatchObject({ method: 'GET', path: '/admin/v1/organisations', status: 200, requestId: marker });
    expect(typeof JSON.parse(lines[0]!).durationMs).toBe('number');
    expect(secretsSeen.length).toBeGreaterThanOrEqual(3);
    for (const secret of secretsSeen) expect(logs.text()).not.toContain(secret);
  });
});
