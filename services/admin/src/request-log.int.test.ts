/**
 * The request log over the admin API (GET /admin/v1/organisations/{id}/requests and
 * /requests/{request_id}), on PostgreSQL with the fake ledger peer over real grpc-js: the list
 * newest first with every filter and cursor paging, one request by id, money as exact µ₹
 * strings, and the tenancy rules (another organisation's project or request is not found).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ledgerV1 } from '@gateway/contracts';
import { testPostgresUrl } from '@gateway/testkit';
import { errorResponse } from './common/http/response-schemas.ts';
import { requestLogListResponse, requestLogRecordResponse } from './platform/http/request-log-schemas.ts';
import type { AdminHarness, HarnessResponse } from './test-support/admin-harness.ts';
import { createOrganisation, newMember, type SessionClient } from './test-support/people-client.ts';
import { startPostgresAdmin, type PostgresAdmin } from './test-support/postgres-admin.ts';

const serverUrl = testPostgresUrl();
const itPg = it.skipIf(!serverUrl);
let postgres: PostgresAdmin | undefined;
let admin: AdminHarness;
let organisationId: string;
let otherOrganisationId: string;
let projectA: string;
let projectB: string;
let otherProject: string;
let viewer: SessionClient;

/** 2025-11-20T04:30:00.123Z (10:00:00.123 IST); each seeded request one second after the previous. */
const baseMs = 1_763_613_000_123n;

/** Asserts an OpenAI-shaped error with this status, code and (when given) param. */
function expectError(response: HarnessResponse, status: number, code: string, param?: string | null): void {
  expect(response.status, response.text).toBe(status);
  const body = errorResponse.parse(response.json);
  expect(body.error.code).toBe(code);
  if (param !== undefined) expect(body.error.param).toBe(param);
}

/** Creates a project of an organisation; its id. */
async function createProject(organisation: string, name: string): Promise<string> {
  const response = await admin.request('POST', `/admin/v1/organisations/${organisation}/projects`, { name });
  expect(response.status, response.text).toBe(201);
  return response.json.project.id as string;
}

beforeAll(async () => {
  if (!serverUrl) return;
  postgres = await startPostgresAdmin(serverUrl, { env: { SNAPSHOT_ACK_TIMEOUT_MS: '500' } });
  ({ admin } = postgres);
  organisationId = await createOrganisation(admin, 'Request Log Org');
  otherOrganisationId = await createOrganisation(admin, 'Other Org');
  projectA = await createProject(organisationId, 'alpha');
  projectB = await createProject(organisationId, 'beta');
  otherProject = await createProject(otherOrganisationId, 'theirs');
  viewer = await newMember(admin, organisationId, 'viewer');

  const record = (index: number, overrides: Partial<ledgerV1.RequestRecord>) => ledgerV1.RequestRecord.fromPartial({
    requestId: `req_${index}`, organisationId, projectId: projectA, surface: 'chat_completions', modelSlug: 'chat',
    status: 200, errorCode: '', stream: false, startedAtMs: baseMs + BigInt(index) * 1000n, latencyMs: 800 + index,
    inputTokens: 0n, outputTokens: 0n, costMicros: 0n, ...overrides,
  });
  admin.ledger.requests.push(
    record(1, { inputTokens: 1200n, outputTokens: 30n, costMicros: 3n }),
    record(2, {
      stream: true, timeToFirstTokenMs: 240, inputTokens: 1000n, outputTokens: 50n, costMicros: 1_234_567n, surface: 'responses', modelSlug: 'reasoner',
      tokenClasses: [
        { tokenClass: 'input', tokens: 100n, costMicros: 100n, providerCostMicros: 0n },
        { tokenClass: 'cached_input', tokens: 900n, costMicros: 45n, providerCostMicros: 0n },
        { tokenClass: 'output', tokens: 50n, costMicros: 1_234_422n, providerCostMicros: 0n },
      ],
    }),
    record(3, { status: 401, errorCode: 'invalid_api_key', projectId: projectB, latencyMs: 2 }),
    record(4, { status: 402, errorCode: 'insufficient_balance' }),
    record(5, { status: 429, errorCode: 'rate_limited', projectId: projectB }),
    record(6, { status: 502, errorCode: 'upstream_error', stream: true, inputTokens: 10n, costMicros: 7n }),
    record(7, { organisationId: otherOrganisationId, projectId: otherProject }),
  );
});

afterAll(async () => {
  await postgres?.close();
});

describe('request log', () => {
  /** The request ids of a listing (as the platform token, or `client`). */
  async function idsOf(query: string, client?: SessionClient): Promise<string[]> {
    const path = `/admin/v1/organisations/${organisationId}/requests${query}`;
    const response = client ? await client.request('GET', path) : await admin.request('GET', path);
    expect(response.status, response.text).toBe(200);
    return requestLogListResponse.parse(response.json).data.map((item) => item.request_id);
  }

  itPg('lists every request newest first, each field as shown, money as exact µ₹ strings', async () => {
    const response = await viewer.request('GET', `/admin/v1/organisations/${organisationId}/requests`);
    expect(response.status, response.text).toBe(200);
    const page = requestLogListResponse.parse(response.json);
    expect(page.data.map((item) => item.request_id)).toEqual(['req_6', 'req_5', 'req_4', 'req_3', 'req_2', 'req_1']);
    expect(page.next_cursor).toBeNull();
    expect(page.data[5]).toEqual({
      object: 'request', request_id: 'req_1', project_id: projectA, surface: 'chat_completions', model: 'chat', status: 200, error_code: null,
      stream: false, started_at: '2025-11-20T04:30:01.123Z', latency_ms: 801, time_to_first_token_ms: null,
      input_tokens: 1200, output_tokens: 30, cost_micros: '3',
    });
    expect(page.data[4]).toMatchObject({
      request_id: 'req_2', surface: 'responses', model: 'reasoner', stream: true, time_to_first_token_ms: 240, cost_micros: '1234567',
      cost_by_class: {
        input: { tokens: 100, cost_micros: '100' }, cached_input: { tokens: 900, cost_micros: '45' }, output: { tokens: 50, cost_micros: '1234422' },
      },
    });
    expect(page.data[2]).toMatchObject({ request_id: 'req_4', status: 402, error_code: 'insufficient_balance', cost_micros: '0' });
  });

  itPg('filters by status class or exact status, project, model, surface and window, and pages by cursor', async () => {
    expect(await idsOf('?status=4xx')).toEqual(['req_5', 'req_4', 'req_3']);
    expect(await idsOf('?status=2xx')).toEqual(['req_2', 'req_1']);
    expect(await idsOf('?status=5xx')).toEqual(['req_6']);
    expect(await idsOf('?status=402')).toEqual(['req_4']);
    expect(await idsOf(`?project_id=${projectB}`)).toEqual(['req_5', 'req_3']);
    expect(await idsOf(`?project_id=${projectB}&status=401`)).toEqual(['req_3']);
    expect(await idsOf('?model=reasoner')).toEqual(['req_2']);
    expect(await idsOf('?surface=responses')).toEqual(['req_2']);
    // The same window conventions as /usage: from inclusive, to exclusive, ms or ISO-8601 with an offset.
    expect(await idsOf(`?from=${baseMs + 2000n}&to=${baseMs + 4000n}`)).toEqual(['req_3', 'req_2']);
    expect(await idsOf(`?from=${encodeURIComponent('2025-11-20T10:00:05.123+05:30')}`)).toEqual(['req_6', 'req_5']);

    const first = requestLogListResponse.parse((await admin.request('GET', `/admin/v1/organisations/${organisationId}/requests?status=4xx&limit=2`)).json);
    expect(first.data.map((item) => item.request_id)).toEqual(['req_5', 'req_4']);
    expect(first.next_cursor).not.toBeNull();
    const next = requestLogListResponse.parse((await admin.request('GET',
      `/admin/v1/organisations/${organisationId}/requests?status=4xx&limit=2&cursor=${encodeURIComponent(first.next_cursor!)}`)).json);
    expect(next.data.map((item) => item.request_id)).toEqual(['req_3']);
    expect(next.next_cursor).toBeNull();
  });

  itPg('reads one request by id; another organisation\'s or an unknown one is 404', async () => {
    const response = await viewer.request('GET', `/admin/v1/organisations/${organisationId}/requests/req_6`);
    expect(response.status, response.text).toBe(200);
    expect(requestLogRecordResponse.parse(response.json)).toMatchObject({
      request_id: 'req_6', status: 502, error_code: 'upstream_error', stream: true, input_tokens: 10, cost_micros: '7', latency_ms: 806,
    });
    expectError(await admin.request('GET', `/admin/v1/organisations/${organisationId}/requests/req_7`), 404, 'not_found', 'request_id');
    expectError(await admin.request('GET', `/admin/v1/organisations/${organisationId}/requests/nope`), 404, 'not_found', 'request_id');
    expectError(await admin.request('GET', `/admin/v1/organisations/${organisationId}/requests/${'x'.repeat(129)}`), 404, 'not_found', 'request_id');
    // A member of this organisation reading the other's request: its organisation is not found, as an unknown id.
    expectError(await viewer.request('GET', `/admin/v1/organisations/${otherOrganisationId}/requests/req_7`), 404, 'not_found');
    expectError(await viewer.request('GET', `/admin/v1/organisations/${otherOrganisationId}/requests`), 404, 'not_found');
  });

  itPg('refuses bad queries naming the parameter, and another organisation\'s project as not found', async () => {
    const path = `/admin/v1/organisations/${organisationId}/requests`;
    expectError(await admin.request('GET', `${path}?status=3xx`), 400, 'invalid_request', 'status');
    expectError(await admin.request('GET', `${path}?status=600`), 400, 'invalid_request', 'status');
    expectError(await admin.request('GET', `${path}?surface=completions`), 400, 'invalid_request', 'surface');
    expectError(await admin.request('GET', `${path}?limit=501`), 400, 'invalid_request', 'limit');
    expectError(await admin.request('GET', `${path}?from=2000&to=1000`), 400, 'invalid_request', 'to');
    expectError(await admin.request('GET', `${path}?from=yesterday`), 400, 'invalid_request', 'from');
    expectError(await admin.request('GET', `${path}?unknown=1`), 400, 'invalid_request');
    expectError(await admin.request('GET', `${path}?project_id=${otherProject}`), 404, 'not_found', 'project_id');
  });
});
