import { testPostgresUrl } from '@gateway/testkit';
import { describe, expect, it } from 'vitest';
import { fundedOrganisation, uniqueId } from './testing/start-test-ledger.ts';
import { useTestLedger } from './testing/ledger-test-setup.ts';

const serverUrl = testPostgresUrl();

/** ListProjectSpends: every project's month spend against its budget in one call, equal to GetProjectSpend per project. */
describe.skipIf(!serverUrl)('ListProjectSpends', () => {
  const ledger = useTestLedger('postgres', { serverUrl, sweepIntervalMs: 60_000, conservation: 'after-each' });

  it('lists each project with a budget, spend or hold exactly as GetProjectSpend reads it, and no other organisation\'s', async () => {
    const organisationId = await fundedOrganisation(ledger, 100_000_000n);
    const other = await fundedOrganisation(ledger, 100_000_000n);
    const [budgeted, spending, holding] = [uniqueId('pa'), uniqueId('pb'), uniqueId('pc')];
    await ledger.setProjectBudget({ organisationId, projectId: budgeted, monthlyCapMicros: 30_000n, softAlertPercent: 50 });
    const first = uniqueId('r');
    await ledger.reserve({ reservationId: first, organisationId, projectId: budgeted, amountMicros: 1_000n });
    await ledger.settle({ reservationId: first, costMicros: 290n });
    const second = uniqueId('r');
    await ledger.reserve({ reservationId: second, organisationId, projectId: spending, amountMicros: 5_000n });
    await ledger.settle({ reservationId: second, costMicros: 41n });
    await ledger.reserve({ organisationId, projectId: holding, amountMicros: 7_000n });
    await ledger.reserve({ organisationId: other, projectId: uniqueId('po'), amountMicros: 9n });

    const listed = await ledger.listProjectSpends(organisationId);
    expect(listed.projects.map((entry) => entry.projectId)).toEqual([budgeted, spending, holding].sort());
    for (const entry of listed.projects) expect(entry.spend).toEqual(await ledger.getProjectSpend(entry.projectId));
    const byId = new Map(listed.projects.map((entry) => [entry.projectId, entry.spend]));
    expect(byId.get(budgeted)).toMatchObject({ settledMicros: 290n, heldMicros: 0n, monthlyCapMicros: 30_000n, softAlertPercent: 50, softAlertRaised: false });
    expect(byId.get(spending)).toMatchObject({ settledMicros: 41n, heldMicros: 0n, monthlyCapMicros: 0n, softAlertPercent: 0 });
    expect(byId.get(holding)).toMatchObject({ settledMicros: 0n, heldMicros: 7_000n });
    expect(listed.month).toMatch(/^\d{4}-\d{2}$/);
  });

  it('answers an empty list with the month for an organisation with no projects, and refuses a bad id', async () => {
    const organisationId = await fundedOrganisation(ledger, 1_000n);
    const listed = await ledger.listProjectSpends(organisationId);
    expect(listed.projects).toEqual([]);
    expect(listed.month).toMatch(/^\d{4}-\d{2}$/);
    await expect(ledger.listProjectSpends('')).rejects.toMatchObject({ code: 3 });
  });
});
