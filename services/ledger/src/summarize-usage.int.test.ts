import { ledgerV1 } from '@gateway/contracts';
import { testPostgresUrl } from '@gateway/testkit';
import { beforeAll, describe, expect, it } from 'vitest';
import { fundedOrganisation, uniqueId } from './testing/start-test-ledger.ts';
import { useTestLedger } from './testing/ledger-test-setup.ts';

const { BillingMode } = ledgerV1;
const serverUrl = testPostgresUrl();

/** One settled request the tests seed: who, which model, and its money (µ₹) and tokens. */
interface Seeded {
  organisationId: string;
  projectId: string;
  modelSlug: string;
  billingMode: ledgerV1.BillingMode;
  costMicros: bigint;
  providerCostMicros: bigint;
  inputTokens: bigint;
  outputTokens: bigint;
  createdAtMs: bigint;
}

/** The sums a summary row should carry for `records`. */
function sumsOf(records: readonly Seeded[]) {
  return {
    requests: BigInt(records.length),
    inputTokens: records.reduce((total, record) => total + record.inputTokens, 0n),
    outputTokens: records.reduce((total, record) => total + record.outputTokens, 0n),
    costMicros: records.reduce((total, record) => total + record.costMicros, 0n),
    providerCostMicros: records.reduce((total, record) => total + record.providerCostMicros, 0n),
    // Internal (sponsored) usage is recorded but never debited.
    debitedMicros: records.reduce((total, record) => total + (record.billingMode === BillingMode.BILLING_MODE_INTERNAL ? 0n : record.costMicros), 0n),
    // The seeded settles carry no token classes: every record is unclassified.
    tokenClasses: [],
    unclassifiedRequests: BigInt(records.length),
  };
}

/**
 * SummarizeUsage's grouping by project and across every organisation (platform analytics), over
 * real PostgreSQL with usage written by Reserve/Settle. Each ledger here has a database of its
 * own, so "every organisation" is exactly the organisations this file seeds.
 */
describe.skipIf(!serverUrl)('SummarizeUsage: by project and across organisations', () => {
  const ledger = useTestLedger('postgres', { serverUrl, sweepIntervalMs: 60_000, conservation: 'after-each' });
  let commercialOrganisation: string;
  let internalOrganisation: string;
  const seeded: Seeded[] = [];

  beforeAll(async () => {
    commercialOrganisation = await fundedOrganisation(ledger, 100_000_000n);
    internalOrganisation = await fundedOrganisation(ledger, 0n);
    const plan: Array<[string, string, string, ledgerV1.BillingMode, bigint]> = [
      [commercialOrganisation, 'proj-alpha', 'model-a', BillingMode.BILLING_MODE_COMMERCIAL, 1_000n],
      [commercialOrganisation, 'proj-alpha', 'model-a', BillingMode.BILLING_MODE_COMMERCIAL, 2_500n],
      [commercialOrganisation, 'proj-beta', 'model-a', BillingMode.BILLING_MODE_COMMERCIAL, 700n],
      [commercialOrganisation, 'proj-beta', 'model-b', BillingMode.BILLING_MODE_COMMERCIAL, 90n],
      [internalOrganisation, 'proj-gamma', 'model-a', BillingMode.BILLING_MODE_INTERNAL, 4_000n],
      [internalOrganisation, 'proj-gamma', 'model-b', BillingMode.BILLING_MODE_INTERNAL, 333n],
    ];
    for (const [index, [organisationId, projectId, modelSlug, billingMode, costMicros]] of plan.entries()) {
      const reservationId = uniqueId('r');
      const reserved = await ledger.reserve({ reservationId, organisationId, projectId, modelSlug, billingMode, amountMicros: 10_000n });
      expect(reserved.result).toBe(ledgerV1.ReserveResult.RESERVE_RESULT_OK);
      const providerCostMicros = costMicros / 3n;
      const inputTokens = BigInt(10 + index);
      const outputTokens = BigInt(5 * (index + 1));
      await ledger.settle({ reservationId, modelSlug, costMicros, providerCostMicros, inputTokens, outputTokens, requestId: `req-${index}` });
      seeded.push({ organisationId, projectId, modelSlug, billingMode, costMicros, providerCostMicros, inputTokens, outputTokens, createdAtMs: 0n });
    }
    // The records' own timestamps, for the window case.
    for (const organisationId of [commercialOrganisation, internalOrganisation]) {
      const { records } = await ledger.listUsage({ organisationId, pageSize: 500 });
      const oldestFirst = [...records].reverse();
      const mine = seeded.filter((record) => record.organisationId === organisationId);
      for (const [index, record] of oldestFirst.entries()) mine[index]!.createdAtMs = record.createdAtMs;
    }
  });

  /** Every record lands on today's Asia/Kolkata day (seeded moments apart), unless it ran across midnight. */
  function onlyDay(rows: readonly ledgerV1.UsageSummaryRow[]): void {
    expect(new Set(rows.map((row) => row.day)).size).toBe(1);
  }

  it('groups one organisation\'s usage by project: rows carry the project, not the organisation or billing mode', async () => {
    const { rows } = await ledger.summarizeUsage({ organisationId: commercialOrganisation, groupByProject: true });
    onlyDay(rows);
    const mine = seeded.filter((record) => record.organisationId === commercialOrganisation);
    const expected = [
      { modelSlug: 'model-a', projectId: 'proj-alpha' },
      { modelSlug: 'model-a', projectId: 'proj-beta' },
      { modelSlug: 'model-b', projectId: 'proj-beta' },
    ].map((key) => ({
      ...key, organisationId: '', billingMode: BillingMode.BILLING_MODE_UNSPECIFIED,
      ...sumsOf(mine.filter((record) => record.modelSlug === key.modelSlug && record.projectId === key.projectId)),
    }));
    expect(rows.map(({ day: _day, ...row }) => row)).toEqual(expected);

    // Without group_by_project the projects fold together; one project's filter still works.
    const byModel = (await ledger.summarizeUsage({ organisationId: commercialOrganisation })).rows;
    expect(byModel.map((row) => [row.modelSlug, row.projectId, row.costMicros])).toEqual([['model-a', '', 4_200n], ['model-b', '', 90n]]);
    const beta = (await ledger.summarizeUsage({ organisationId: commercialOrganisation, projectId: 'proj-beta', groupByProject: true })).rows;
    expect(beta.map((row) => [row.modelSlug, row.projectId, row.costMicros])).toEqual([['model-a', 'proj-beta', 700n], ['model-b', 'proj-beta', 90n]]);
  });

  it('summarises every organisation: rows carry the organisation and the billing mode the usage was recorded under', async () => {
    const { rows } = await ledger.summarizeUsage({ allOrganisations: true });
    onlyDay(rows);
    const keys = [...new Set(seeded.map((record) => `${record.modelSlug}|${record.organisationId}`))].sort();
    const expected = keys.map((key) => {
      const [modelSlug, organisationId] = key.split('|') as [string, string];
      const records = seeded.filter((record) => record.modelSlug === modelSlug && record.organisationId === organisationId);
      return { modelSlug, organisationId, projectId: '', billingMode: records[0]!.billingMode, ...sumsOf(records) };
    });
    expect(rows.map(({ day: _day, ...row }) => row)).toEqual(expected);
    expect(rows.filter((row) => row.organisationId === internalOrganisation).every((row) => row.debitedMicros === 0n && row.billingMode === BillingMode.BILLING_MODE_INTERNAL)).toBe(true);

    // Across organisations and by project at once.
    const byProject = (await ledger.summarizeUsage({ allOrganisations: true, groupByProject: true })).rows;
    expect(byProject.map((row) => [row.modelSlug, row.organisationId === commercialOrganisation ? 'commercial' : 'internal', row.projectId, row.requests]))
      .toEqual(expect.arrayContaining([
        ['model-a', 'commercial', 'proj-alpha', 2n], ['model-a', 'commercial', 'proj-beta', 1n], ['model-b', 'commercial', 'proj-beta', 1n],
        ['model-a', 'internal', 'proj-gamma', 1n], ['model-b', 'internal', 'proj-gamma', 1n],
      ]));
    expect(byProject).toHaveLength(5);
    const totalCost = byProject.reduce((total, row) => total + row.costMicros, 0n);
    expect(totalCost).toBe(sumsOf(seeded).costMicros);
  });

  it('limits every organisation\'s summary to a window: from inclusive, to exclusive', async () => {
    const newest = seeded.reduce((latest, record) => (record.createdAtMs > latest.createdAtMs ? record : latest));
    const fromNewest = (await ledger.summarizeUsage({ allOrganisations: true, fromMs: newest.createdAtMs })).rows;
    const expectedRequests = seeded.filter((record) => record.createdAtMs >= newest.createdAtMs).length;
    expect(fromNewest.reduce((total, row) => total + row.requests, 0n)).toBe(BigInt(expectedRequests));
    const beforeNewest = (await ledger.summarizeUsage({ allOrganisations: true, toMs: newest.createdAtMs })).rows;
    expect(beforeNewest.reduce((total, row) => total + row.requests, 0n)).toBe(BigInt(seeded.length - expectedRequests));
    expect((await ledger.summarizeUsage({ allOrganisations: true, fromMs: 1n, toMs: 2n })).rows).toEqual([]);
  });

  it('refuses all_organisations with an organisation id, and an empty organisation id without it (INVALID_ARGUMENT)', async () => {
    await expect(ledger.summarizeUsage({ allOrganisations: true, organisationId: commercialOrganisation }))
      .rejects.toMatchObject({ code: 3, details: expect.stringContaining('organisation_id must be empty with all_organisations') });
    await expect(ledger.summarizeUsage({ allOrganisations: false, organisationId: '' })).rejects.toMatchObject({ code: 3 });
    await expect(ledger.summarizeUsage({ allOrganisations: true, fromMs: 5n, toMs: 5n })).rejects.toMatchObject({ code: 3 });
  });
});
