/**
 * GET /admin/v1/organisations/{id}/overview over real PostgreSQL with the fake ledger peer: every
 * project with its month spend from ONE ListProjectSpends (no GetProjectSpend per project), exact
 * µ₹, the window's usage and the recent records; bad windows and foreign organisations refused.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testPostgresUrl } from '@gateway/testkit';
import { errorResponse } from './common/http/response-schemas.ts';
import type { AdminHarness } from './test-support/admin-harness.ts';
import { startPostgresAdmin, type PostgresAdmin } from './test-support/postgres-admin.ts';

const serverUrl = testPostgresUrl();

describe.skipIf(!serverUrl)('the Overview endpoint', () => {
  let postgres: PostgresAdmin | undefined;
  let admin: AdminHarness;

  beforeAll(async () => {
    postgres = await startPostgresAdmin(serverUrl!);
    ({ admin } = postgres);
  });
  afterAll(async () => {
    await postgres?.close();
  });

  it('answers balance, every project with its exact month spend from one ledger call, and the usage of the window', async () => {
    const organisation = (await admin.request('POST', '/admin/v1/organisations', { name: 'Overview Org' })).json as { id: string };
    const projectIds: string[] = [];
    for (let i = 1; i <= 40; i++) {
      const created = await admin.request('POST', `/admin/v1/organisations/${organisation.id}/projects`, { name: `P${i}` });
      expect(created.status, created.text).toBe(201);
      projectIds.push((created.json as { project: { id: string } }).project.id);
    }
    admin.ledger.budgets.set(projectIds[0]!, { organisationId: organisation.id, monthlyCapMicros: 30_000n, softAlertPercent: 1 });
    admin.ledger.spend.set(projectIds[0]!, { settledMicros: 290n, heldMicros: 1n, softAlertRaised: true });

    const callsBefore = admin.ledger.calls.length;
    const response = await admin.request('GET', `/admin/v1/organisations/${organisation.id}/overview?from=2026-11-01T00:00:00%2B05:30&to=2026-11-29T00:00:00%2B05:30`);
    expect(response.status, response.text).toBe(200);
    const calls = admin.ledger.calls.slice(callsBefore);
    expect(calls.filter((method) => method === 'listProjectSpends')).toHaveLength(1);
    expect(calls).not.toContain('getProjectSpend');

    const body = response.json as Record<string, any>;
    expect(body).toMatchObject({ object: 'organisation_overview', from: '2026-10-31T18:30:00.000Z', to: '2026-11-28T18:30:00.000Z' });
    expect(body.balance.organisation_id).toBe(organisation.id);
    expect((body.projects as Array<{ project: { id: string } }>).map((entry) => entry.project.id)).toEqual(projectIds);
    expect(body.projects[0].budget).toMatchObject({
      project_id: projectIds[0], monthly_cap_micros: '30000', soft_alert_percent: 1, settled_micros: '290', held_micros: '1', spent_micros: '291', soft_alert_raised: true,
    });
    expect(body.projects[39].budget).toMatchObject({ project_id: projectIds[39], monthly_cap_micros: null, spent_micros: '0' });
    expect(body.usage_by_day).toEqual([]);
    expect(body.usage_by_project).toEqual([]);
    expect(body.recent).toEqual([]);
  });

  it('refuses a window that ends before it starts (400) and an organisation that does not exist (404)', async () => {
    const organisation = (await admin.request('POST', '/admin/v1/organisations', { name: 'Overview Two' })).json as { id: string };
    const backwards = await admin.request('GET', `/admin/v1/organisations/${organisation.id}/overview?from=2026-11-29T00:00:00Z&to=2026-11-01T00:00:00Z`);
    expect(backwards.status).toBe(400);
    expect(errorResponse.parse(backwards.json).error.code).toBe('invalid_request');
    const unknown = await admin.request('GET', '/admin/v1/organisations/org_000000000000000000000000/overview');
    expect(unknown.status).toBe(404);
  });
});
