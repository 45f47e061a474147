/**
 * The usage explorer (listUsage's window, the CSV export, the summary by project) and the
 * platform's margin report, through the admin's HTTP API over real PostgreSQL, with the fake
 * ledger peer over real grpc-js serving the usage each test seeds.
 */
import { parse } from 'csv-parse/sync';
import { ledgerV1 } from '@gateway/contracts';
import { testPostgresUrl } from '@gateway/testkit';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { csvResponse, deploymentReportResponse, marginReportResponse } from './platform/http/analytics-schemas.ts';
import { errorResponse } from './common/http/response-schemas.ts';
import { adminTokenCreatedResponse, organisationResponse, projectCreatedResponse } from './tenancy/http/tenancy-schemas.ts';
import { usageListResponse, usageSummaryResponse } from './platform/http/platform-schemas.ts';
import type { AdminHarness, HarnessResponse } from './test-support/admin-harness.ts';
import { startPostgresAdmin, type PostgresAdmin } from './test-support/postgres-admin.ts';

const serverUrl = testPostgresUrl();
let postgres: PostgresAdmin | undefined;
let admin: AdminHarness;

beforeAll(async () => {
  if (!serverUrl) return;
  postgres = await startPostgresAdmin(serverUrl);
  ({ admin } = postgres);
});
afterAll(async () => {
  await postgres?.close();
});
// Every test seeds the usage it reads: the margin report sums every organisation's.
beforeEach(() => { if (admin) admin.ledger.usage.length = 0; });

/** Asserts an OpenAI-shaped error with this status, code and (when given) param. */
function expectError(response: HarnessResponse, status: number, code: string, param?: string | null): void {
  expect(response.status, response.text).toBe(status);
  const body = errorResponse.parse(response.json);
  expect(body.error.code).toBe(code);
  if (param !== undefined) expect(body.error.param).toBe(param);
}

async function createOrganisation(name: string, billingMode: 'commercial' | 'internal' = 'commercial') {
  const response = await admin.request('POST', '/admin/v1/organisations', { name, billing_mode: billingMode });
  expect(response.status, response.text).toBe(201);
  return organisationResponse.parse(response.json);
}

async function createProject(organisationId: string, name: string) {
  const response = await admin.request('POST', `/admin/v1/organisations/${organisationId}/projects`, { name });
  expect(response.status, response.text).toBe(201);
  return projectCreatedResponse.parse(response.json).project;
}

async function organisationToken(organisationId: string): Promise<string> {
  const response = await admin.request('POST', `/admin/v1/organisations/${organisationId}/tokens`, { name: 'analytics test' });
  expect(response.status, response.text).toBe(201);
  return adminTokenCreatedResponse.parse(response.json).secret;
}

/** The base instant of seeded usage: 2023-11-14T22:13:20Z, ms. */
const baseMs = 1_700_000_000_000n;

/** A usage record as the ledger would list it. */
function usageRecord(fields: Partial<ledgerV1.UsageRecord> & { id: string; organisationId: string; projectId: string }): ledgerV1.UsageRecord {
  return ledgerV1.UsageRecord.fromPartial({
    reservationId: `res-${fields.id}`, modelSlug: 'chat', inputTokens: 100n, outputTokens: 20n, costMicros: 1_500n, providerCostMicros: 600n,
    debitedMicros: 1_500n, billingMode: ledgerV1.BillingMode.BILLING_MODE_COMMERCIAL, usageSource: ledgerV1.UsageSource.USAGE_SOURCE_UPSTREAM,
    requestId: `req-${fields.id}`, createdAtMs: baseMs, overrunOutputTokens: 0n,
    ...fields,
  });
}

/** Every record the API lists for a query string, following next_cursor. */
async function listAllPages(organisationId: string, query: string) {
  const rows: Array<ReturnType<typeof usageListResponse.parse>['data'][number]> = [];
  let cursor: string | null = null;
  do {
    const suffix: string = cursor === null ? '' : `&cursor=${encodeURIComponent(cursor)}`;
    const response = await admin.request('GET', `/admin/v1/organisations/${organisationId}/usage?limit=500&${query}${suffix}`);
    expect(response.status, response.text).toBe(200);
    const page = usageListResponse.parse(response.json);
    rows.push(...page.data);
    cursor = page.next_cursor;
  } while (cursor !== null);
  return rows;
}

/** A CSV body parsed with a real RFC 4180 parser: its header and its rows. */
function parseCsv(text: string): { header: string[]; rows: string[][] } {
  csvResponse.parse(text);
  const [header, ...rows] = parse(text, { record_delimiter: '\r\n', relax_column_count: false }) as string[][];
  return { header: header!, rows };
}

/** What a spreadsheet-safe text cell holds for `value`. */
function safeText(value: string): string {
  return /^[=+\-@\t\r]/.test(value) ? `'${value}` : value;
}

/** The ISO-8601 Asia/Kolkata form of a UTC timestamp. */
function istOf(utc: string): string {
  return new Date(Date.parse(utc) + 330 * 60_000).toISOString().replace('Z', '+05:30');
}

describe.skipIf(!serverUrl)('usage explorer', () => {
  it('lists usage in a window: from inclusive, to exclusive, as ms since the epoch or ISO-8601; from >= to is a 400', async () => {
    const organisation = await createOrganisation('Window');
    const project = await createProject(organisation.id, 'p');
    for (let index = 0; index < 5; index++) {
      admin.ledger.usage.push(usageRecord({ id: `w-${index}`, organisationId: organisation.id, projectId: project.id, createdAtMs: baseMs + BigInt(index) * 1_000n }));
    }
    const ids = async (query: string) => (await listAllPages(organisation.id, query)).map((row) => row.id);
    expect(await ids(`from=${baseMs + 1_000n}&to=${baseMs + 3_000n}`)).toEqual(['w-2', 'w-1']);
    expect(await ids(`from=${encodeURIComponent(new Date(Number(baseMs) + 3_000).toISOString())}`)).toEqual(['w-4', 'w-3']);
    expect(await ids(`to=${baseMs + 1_000n}`)).toEqual(['w-0']);
    expect(await ids('')).toEqual(['w-4', 'w-3', 'w-2', 'w-1', 'w-0']);

    expectError(await admin.request('GET', `/admin/v1/organisations/${organisation.id}/usage?from=${baseMs}&to=${baseMs}`), 400, 'invalid_request', 'to');
    expectError(await admin.request('GET', `/admin/v1/organisations/${organisation.id}/usage?from=yesterday`), 400, 'invalid_request', 'from');
    expectError(await admin.request('GET', `/admin/v1/organisations/${organisation.id}/usage?to=0`), 400, 'invalid_request', 'to');
    expectError(await admin.request('GET', `/admin/v1/organisations/${organisation.id}/usage/export?from=5&to=4`), 400, 'invalid_request', 'to');
  });

  it('exports exactly the records the listing selects for the same filters, every page, as RFC 4180 CSV', async () => {
    const organisation = await createOrganisation('Export');
    const alpha = await createProject(organisation.id, 'alpha');
    const beta = await createProject(organisation.id, 'beta');
    const other = await createOrganisation('Someone else');
    // 1 203 records: more than two ledger pages of 500, with text a spreadsheet would run as a formula.
    for (let index = 0; index < 1_203; index++) {
      admin.ledger.usage.push(usageRecord({
        id: `u-${String(index).padStart(5, '0')}`, organisationId: organisation.id, projectId: index % 3 === 0 ? beta.id : alpha.id,
        modelSlug: index % 2 === 0 ? 'chat' : 'code', createdAtMs: baseMs + BigInt(index) * 60_000n,
        costMicros: 10_000_000_000_000n + BigInt(index), debitedMicros: 10_000_000_000_000n + BigInt(index),
        requestId: index === 7 ? '=HYPERLINK("http://evil.example","x")' : index === 8 ? '-2+3' : index === 9 ? 'has,comma "and quotes"\nand a line' : `req-${index}`,
        usageSource: index % 5 === 0 ? ledgerV1.UsageSource.USAGE_SOURCE_GATEWAY_ESTIMATE : ledgerV1.UsageSource.USAGE_SOURCE_UPSTREAM,
        overrunOutputTokens: index === 11 ? 1_900n : 0n,
        // One record itemised by token class: 60 of its 100 input tokens cached, 5 of its 20 output tokens reasoning.
        tokenClasses: index === 12 ? [
          { tokenClass: 'input', tokens: 40n, costMicros: 10_000_000_000_000n, providerCostMicros: 300n },
          { tokenClass: 'cached_input', tokens: 60n, costMicros: 2n, providerCostMicros: 20n },
          { tokenClass: 'output', tokens: 15n, costMicros: 5n, providerCostMicros: 200n },
          { tokenClass: 'reasoning', tokens: 5n, costMicros: 5n, providerCostMicros: 80n },
        ] : [],
      }));
    }
    admin.ledger.usage.push(usageRecord({ id: 'foreign', organisationId: other.id, projectId: 'proj_000000000000000000000000' }));

    const header = ['id', 'created_at', 'created_at_ist', 'project_id', 'model', 'input_tokens', 'output_tokens', 'cost_micros', 'debited_micros',
      'usage_source', 'request_id', 'overrun_output_tokens',
      'input_tokens', 'input_cost_micros', 'cached_input_tokens', 'cached_input_cost_micros', 'cache_write_5m_tokens', 'cache_write_5m_cost_micros',
      'cache_write_1h_tokens', 'cache_write_1h_cost_micros', 'audio_input_tokens', 'audio_input_cost_micros', 'image_input_tokens', 'image_input_cost_micros',
      'output_tokens', 'output_cost_micros', 'reasoning_tokens', 'reasoning_cost_micros'];
    const classCells = (row: { cost_by_class?: Record<string, { tokens: number; cost_micros: string }> | undefined }) => (row.cost_by_class === undefined
      ? Array<string>(16).fill('')
      : ['input', 'cached_input', 'cache_write_5m', 'cache_write_1h', 'audio_input', 'image_input', 'output', 'reasoning']
        .flatMap((tokenClass) => [String(row.cost_by_class![tokenClass]?.tokens ?? 0), row.cost_by_class![tokenClass]?.cost_micros ?? '0']));
    const filterSets = [
      '',
      `project_id=${beta.id}`,
      'model=code',
      `project_id=${alpha.id}&model=chat&from=${baseMs + 100n * 60_000n}&to=${baseMs + 900n * 60_000n}`,
      `from=${encodeURIComponent(new Date(Number(baseMs) + 1_000 * 60_000).toISOString())}`,
    ];
    for (const filters of filterSets) {
      const listed = await listAllPages(organisation.id, filters);
      const response = await admin.request('GET', `/admin/v1/organisations/${organisation.id}/usage/export?${filters}`);
      expect(response.status, response.text).toBe(200);
      expect(response.headers.get('content-type')).toBe('text/csv; charset=utf-8');
      expect(response.headers.get('content-disposition')).toMatch(new RegExp(`^attachment; filename="usage-${organisation.id}-\\d{4}-\\d{2}-\\d{2}\\.csv"$`));
      const csv = parseCsv(response.text);
      expect(csv.header).toEqual(header);
      expect(listed.length, filters).toBeGreaterThan(0);
      expect(csv.rows, filters).toEqual(listed.map((row) => [
        row.id, row.created_at, istOf(row.created_at), row.project_id, row.model, String(row.input_tokens), String(row.output_tokens),
        row.cost_micros, row.debited_micros, row.usage_source, safeText(row.request_id), String(row.overrun_output_tokens), ...classCells(row),
      ]));
    }
    const everything = parseCsv((await admin.request('GET', `/admin/v1/organisations/${organisation.id}/usage/export`)).text).rows;
    expect(everything).toHaveLength(1_203);
    expect(everything.find((row) => row[0] === 'u-00007')![10]).toBe('\'=HYPERLINK("http://evil.example","x")');
    expect(everything.find((row) => row[0] === 'u-00008')![10]).toBe('\'-2+3');
    expect(everything.find((row) => row[0] === 'u-00009')![10]).toBe('has,comma "and quotes"\nand a line');
    expect(everything.find((row) => row[0] === 'u-00000')!.slice(1, 3)).toEqual(['2023-11-14T22:13:20.000Z', '2023-11-15T03:43:20.000+05:30']);
    expect(everything.some((row) => row[0] === 'foreign')).toBe(false);
    expect(everything.find((row) => row[0] === 'u-00012')!.slice(12)).toEqual([
      '40', '10000000000000', '60', '2', '0', '0', '0', '0', '0', '0', '0', '0', '15', '5', '5', '5',
    ]);
  });

  it('lets a viewer (the organisation\'s own token) export its usage; another organisation\'s is not found', async () => {
    const mine = await createOrganisation('Mine');
    const theirs = await createOrganisation('Theirs');
    const project = await createProject(mine.id, 'p');
    admin.ledger.usage.push(usageRecord({ id: 'mine-1', organisationId: mine.id, projectId: project.id }));
    const token = await organisationToken(mine.id);
    const own = await admin.request('GET', `/admin/v1/organisations/${mine.id}/usage/export`, undefined, { authorization: `Bearer ${token}` });
    expect(own.status, own.text).toBe(200);
    expect(parseCsv(own.text).rows.map((row) => row[0])).toEqual(['mine-1']);
    expectError(await admin.request('GET', `/admin/v1/organisations/${theirs.id}/usage/export`, undefined, { authorization: `Bearer ${token}` }), 404, 'not_found');
    expectError(await admin.request('GET', `/admin/v1/organisations/${mine.id}/usage/export`, undefined, { authorization: 'Bearer gwadm_nope' }), 401, 'unauthenticated');
    expectError(await admin.request('GET', `/admin/v1/organisations/${mine.id}/usage/export?project_id=proj_000000000000000000000000`), 404, 'not_found', 'project_id');
  });

  it('sums usage by day, model and project with group_by=project; rows carry project_id only then', async () => {
    const organisation = await createOrganisation('Summary');
    const alpha = await createProject(organisation.id, 'alpha');
    const beta = await createProject(organisation.id, 'beta');
    admin.ledger.usage.push(
      usageRecord({ id: 's-1', organisationId: organisation.id, projectId: alpha.id, costMicros: 100n, debitedMicros: 100n }),
      usageRecord({ id: 's-2', organisationId: organisation.id, projectId: alpha.id, costMicros: 200n, debitedMicros: 200n }),
      usageRecord({ id: 's-3', organisationId: organisation.id, projectId: beta.id, costMicros: 7n, debitedMicros: 7n }),
    );
    const byProject = await admin.request('GET', `/admin/v1/organisations/${organisation.id}/usage/summary?group_by=project`);
    expect(byProject.status, byProject.text).toBe(200);
    const rows = usageSummaryResponse.parse(byProject.json).data;
    expect(rows.map((row) => [row.project_id, row.requests, row.cost_micros]).sort()).toEqual([[alpha.id, 2, '300'], [beta.id, 1, '7']].sort());
    const plain = usageSummaryResponse.parse((await admin.request('GET', `/admin/v1/organisations/${organisation.id}/usage/summary?from=${baseMs}`)).json).data;
    expect(plain).toEqual([expect.not.objectContaining({ project_id: expect.anything() })]);
    expect(plain[0]).toMatchObject({ day: '2023-11-15', requests: 3, cost_micros: '307' });
    expectError(await admin.request('GET', `/admin/v1/organisations/${organisation.id}/usage/summary?group_by=model`), 400, 'invalid_request', 'group_by');
  });
});

describe.skipIf(!serverUrl)('platform margin report', () => {
  it('reports commercial usage with its margin and internal usage apart, by organisation, day and model, in exact µ₹', async () => {
    const shop = await createOrganisation('Shop & Co');
    const lab = await createOrganisation('=Research Lab', 'internal');
    const shopProject = await createProject(shop.id, 'p');
    const labProject = await createProject(lab.id, 'p');
    const day = 86_400_000n;
    const big = 9_007_199_254_740_993n; // 2^53 + 1: exact only as bigint
    admin.ledger.usage.push(
      usageRecord({ id: 'm-1', organisationId: shop.id, projectId: shopProject.id, modelSlug: 'chat', costMicros: big, providerCostMicros: 1_000n, createdAtMs: baseMs }),
      usageRecord({ id: 'm-2', organisationId: shop.id, projectId: shopProject.id, modelSlug: 'code', costMicros: 500n, providerCostMicros: 800n, createdAtMs: baseMs + day }),
      usageRecord({
        id: 'm-3', organisationId: lab.id, projectId: labProject.id, modelSlug: 'chat', costMicros: 3_000n, providerCostMicros: 1_200n, debitedMicros: 0n,
        billingMode: ledgerV1.BillingMode.BILLING_MODE_INTERNAL, createdAtMs: baseMs + day,
      }),
    );

    const byOrganisation = await admin.request('GET', '/admin/v1/analytics/margin?group_by=organisation');
    expect(byOrganisation.status, byOrganisation.text).toBe(200);
    const report = marginReportResponse.parse(byOrganisation.json);
    expect(report).toEqual({
      object: 'list',
      group_by: 'organisation',
      data: [{
        key: shop.id, organisation_name: 'Shop & Co', billing_mode: 'commercial', requests: 2, input_tokens: 200, output_tokens: 40,
        customer_price_micros: (big + 500n).toString(), provider_cost_micros: '1800', margin_micros: (big + 500n - 1_800n).toString(),
        token_classes: [], unclassified_requests: 2,
      }],
      totals: {
        requests: 2, input_tokens: 200, output_tokens: 40,
        customer_price_micros: (big + 500n).toString(), provider_cost_micros: '1800', margin_micros: (big + 500n - 1_800n).toString(),
        token_classes: [], unclassified_requests: 2,
      },
      internal: {
        data: [{
          key: lab.id, organisation_name: '=Research Lab', billing_mode: 'internal', requests: 1, input_tokens: 100, output_tokens: 20,
          customer_price_micros: '3000', provider_cost_micros: '1200', margin_micros: null, token_classes: [], unclassified_requests: 1,
        }],
        totals: {
          requests: 1, input_tokens: 100, output_tokens: 20, customer_price_micros: '3000', provider_cost_micros: '1200', token_classes: [], unclassified_requests: 1,
        },
      },
    });

    const byModel = marginReportResponse.parse((await admin.request('GET', '/admin/v1/analytics/margin?group_by=model')).json);
    // Largest customer price first; a model sold below cost has a negative margin.
    expect(byModel.data.map((row) => [row.key, row.margin_micros, row.organisation_name])).toEqual([
      ['chat', (big - 1_000n).toString(), undefined], ['code', '-300', undefined],
    ]);
    expect(byModel.internal.data.map((row) => row.key)).toEqual(['chat']);

    const byDay = marginReportResponse.parse((await admin.request('GET', '/admin/v1/analytics/margin')).json);
    expect(byDay.group_by).toBe('day');
    expect(byDay.data.map((row) => row.key)).toEqual(['2023-11-15', '2023-11-16']);
    const window = marginReportResponse.parse((await admin.request('GET', `/admin/v1/analytics/margin?from=${baseMs + day}&to=${baseMs + 2n * day}`)).json);
    expect(window.data.map((row) => row.key)).toEqual(['2023-11-16']);
    expect(window.totals.customer_price_micros).toBe('500');
    expect(window.internal.totals.customer_price_micros).toBe('3000');

    const exported = await admin.request('GET', '/admin/v1/analytics/margin/export?group_by=organisation');
    expect(exported.status, exported.text).toBe(200);
    expect(exported.headers.get('content-disposition')).toMatch(/^attachment; filename="margin-by-organisation-\d{4}-\d{2}-\d{2}\.csv"$/);
    expect(parseCsv(exported.text)).toEqual({
      header: ['key', 'organisation_name', 'billing_mode', 'requests', 'input_tokens', 'output_tokens', 'customer_price_micros', 'provider_cost_micros', 'margin_micros'],
      rows: [
        [shop.id, 'Shop & Co', 'commercial', '2', '200', '40', (big + 500n).toString(), '1800', (big + 500n - 1_800n).toString()],
        [lab.id, '\'=Research Lab', 'internal', '1', '100', '20', '3000', '1200', ''],
      ],
    });
    const modelCsv = parseCsv((await admin.request('GET', '/admin/v1/analytics/margin/export?group_by=model')).text);
    expect(modelCsv.rows.find((row) => row[0] === 'code')).toEqual(['code', '', 'commercial', '1', '100', '20', '500', '800', '-300']);
  });

  it('sums customer price and provider cost per token class, over the window and per model, and counts requests without classes', async () => {
    const shop = await createOrganisation('Classy');
    const project = await createProject(shop.id, 'p');
    const tokenClass = (name: string, tokens: bigint, costMicros: bigint, providerCostMicros: bigint) => ({ tokenClass: name, tokens, costMicros, providerCostMicros });
    admin.ledger.usage.push(
      usageRecord({
        id: 'k-1', organisationId: shop.id, projectId: project.id, modelSlug: 'chat', costMicros: 1_700n, providerCostMicros: 850n, createdAtMs: baseMs,
        tokenClasses: [tokenClass('cached_input', 60n, 300n, 150n), tokenClass('input', 40n, 400n, 200n), tokenClass('output', 20n, 1_000n, 500n)],
      }),
      usageRecord({
        id: 'k-2', organisationId: shop.id, projectId: project.id, modelSlug: 'think', costMicros: 900n, providerCostMicros: 600n, createdAtMs: baseMs,
        tokenClasses: [tokenClass('input', 100n, 500n, 300n), tokenClass('reasoning', 8n, 400n, 300n)],
      }),
      usageRecord({ id: 'k-3', organisationId: shop.id, projectId: project.id, modelSlug: 'chat', costMicros: 5_000n, providerCostMicros: 2_000n, createdAtMs: baseMs }),
    );
    const byModel = marginReportResponse.parse((await admin.request('GET', '/admin/v1/analytics/margin?group_by=model')).json);
    expect(byModel.data.map((row) => [row.key, row.token_classes, row.unclassified_requests])).toEqual([
      ['chat', [
        { class: 'cached_input', tokens: 60, customer_price_micros: '300', provider_cost_micros: '150' },
        { class: 'input', tokens: 40, customer_price_micros: '400', provider_cost_micros: '200' },
        { class: 'output', tokens: 20, customer_price_micros: '1000', provider_cost_micros: '500' },
      ], 1],
      ['think', [
        { class: 'input', tokens: 100, customer_price_micros: '500', provider_cost_micros: '300' },
        { class: 'reasoning', tokens: 8, customer_price_micros: '400', provider_cost_micros: '300' },
      ], 0],
    ]);
    expect(byModel.totals).toMatchObject({
      requests: 3, customer_price_micros: '7600', provider_cost_micros: '3450', unclassified_requests: 1,
      token_classes: [
        { class: 'cached_input', tokens: 60, customer_price_micros: '300', provider_cost_micros: '150' },
        { class: 'input', tokens: 140, customer_price_micros: '900', provider_cost_micros: '500' },
        { class: 'output', tokens: 20, customer_price_micros: '1000', provider_cost_micros: '500' },
        { class: 'reasoning', tokens: 8, customer_price_micros: '400', provider_cost_micros: '300' },
      ],
    });
  });

  it('is a platform admin\'s alone; bad windows and groupings are 400', async () => {
    const organisation = await createOrganisation('Not platform');
    const token = await organisationToken(organisation.id);
    for (const path of ['/admin/v1/analytics/margin', '/admin/v1/analytics/margin/export']) {
      expectError(await admin.request('GET', path, undefined, { authorization: `Bearer ${token}` }), 403, 'permission_denied');
      expectError(await admin.request('GET', path, undefined, { authorization: 'Bearer gwadm_nope' }), 401, 'unauthenticated');
      expectError(await admin.request('GET', `${path}?group_by=project`), 400, 'invalid_request', 'group_by');
      expectError(await admin.request('GET', `${path}?from=2026-11-02T00:00:00%2B05:30&to=2026-11-01T00:00:00%2B05:30`), 400, 'invalid_request', 'to');
    }
    const empty = marginReportResponse.parse((await admin.request('GET', '/admin/v1/analytics/margin')).json);
    expect(empty.data).toEqual([]);
    expect(empty.totals).toEqual({
      requests: 0, input_tokens: 0, output_tokens: 0, customer_price_micros: '0', provider_cost_micros: '0', margin_micros: '0', token_classes: [], unclassified_requests: 0,
    });
  });

  it('reports requests, customer price, provider cost and margin per model and upstream deployment to platform admins only', async () => {
    const commercial = await createOrganisation('Deployments commercial');
    const internal = await createOrganisation('Deployments internal', 'internal');
    const project = await createProject(commercial.id, 'p');
    const internalProject = await createProject(internal.id, 'p');
    const seeded = [
      usageRecord({ id: 'd1', organisationId: commercial.id, projectId: project.id, deployment: 'primary', costMicros: 1_500n, providerCostMicros: 600n }),
      usageRecord({ id: 'd2', organisationId: commercial.id, projectId: project.id, deployment: 'primary', costMicros: 700n, providerCostMicros: 900n }),
      usageRecord({ id: 'd3', organisationId: commercial.id, projectId: project.id, deployment: 'backup-eu', costMicros: 1_000n, providerCostMicros: 250n }),
      // Internal usage earns nothing: its provider cost counts, its customer price does not.
      usageRecord({ id: 'd4', organisationId: internal.id, projectId: internalProject.id, deployment: 'backup-eu', billingMode: ledgerV1.BillingMode.BILLING_MODE_INTERNAL, costMicros: 5_000n, providerCostMicros: 100n, debitedMicros: 0n }),
      usageRecord({ id: 'd5', organisationId: commercial.id, projectId: project.id, deployment: '', modelSlug: 'older', costMicros: 10n, providerCostMicros: 3n, createdAtMs: baseMs + 10n }),
    ];
    admin.ledger.usage.push(...seeded);
    const response = await admin.request('GET', '/admin/v1/analytics/deployments');
    expect(response.status, response.text).toBe(200);
    expect(deploymentReportResponse.parse(response.json).data).toEqual([
      { gateway_model: 'chat', deployment: 'backup-eu', requests: 2, customer_price_micros: '1000', provider_cost_micros: '350', failed_attempt_provider_cost_micros: '0', margin_micros: '650', failed_attempts: 0 },
      { gateway_model: 'chat', deployment: 'primary', requests: 2, customer_price_micros: '2200', provider_cost_micros: '1500', failed_attempt_provider_cost_micros: '0', margin_micros: '700', failed_attempts: 0 },
      { gateway_model: 'older', deployment: '', requests: 1, customer_price_micros: '10', provider_cost_micros: '3', failed_attempt_provider_cost_micros: '0', margin_micros: '7', failed_attempts: 0 },
    ]);
    // The window: only the later record.
    const later = deploymentReportResponse.parse((await admin.request('GET', `/admin/v1/analytics/deployments?from=${baseMs + 5n}`)).json);
    expect(later.data.map((row) => [row.gateway_model, row.deployment])).toEqual([['older', '']]);

    // Organisations never see a deployment: not in the report, not in their usage listing.
    const token = await organisationToken(commercial.id);
    expectError(await admin.request('GET', '/admin/v1/analytics/deployments', undefined, { authorization: `Bearer ${token}` }), 403, 'permission_denied');
    const listed = await admin.request('GET', `/admin/v1/organisations/${commercial.id}/usage`, undefined, { authorization: `Bearer ${token}` });
    expect(listed.status, listed.text).toBe(200);
    expect(listed.text).not.toContain('backup-eu');
    expect(listed.text).not.toContain('deployment');
    expectError(await admin.request('GET', '/admin/v1/analytics/deployments?from=2026-11-02T00:00:00%2B05:30&to=2026-11-01T00:00:00%2B05:30'), 400, 'invalid_request', 'to');
  });
});
