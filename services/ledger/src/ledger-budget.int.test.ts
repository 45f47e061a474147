import { ledgerV1 } from '@gateway/contracts';
import { testPostgresUrl } from '@gateway/testkit';
import { describe, expect, it } from 'vitest';
import { balancesOf, fundedOrganisation, uniqueId } from './testing/start-test-ledger.ts';
import { useTestLedger } from './testing/ledger-test-setup.ts';

const { ReserveResult, SetProjectBudgetResult, BillingMode } = ledgerV1;
const serverUrl = testPostgresUrl();

/** PROJECT_BUDGET and the budget RPCs, over real PostgreSQL. */
describe.skipIf(!serverUrl)('PROJECT_BUDGET: project budgets', () => {
  const ledger = useTestLedger('postgres', { serverUrl, sweepIntervalMs: 60_000, conservation: 'after-each' });

  it('holds a Reserve only under the cap: settled this month + held + amount <= cap, in both billing modes', async () => {
    const organisationId = await fundedOrganisation(ledger, 100_000_000n);
    const projectId = uniqueId('proj');
    expect(await ledger.setProjectBudget({ organisationId, projectId, monthlyCapMicros: 10_000_000n, softAlertPercent: 80 }))
      .toEqual({ result: SetProjectBudgetResult.SET_PROJECT_BUDGET_RESULT_OK, detail: '' });

    const first = uniqueId('r');
    expect((await ledger.reserve({ reservationId: first, organisationId, projectId, amountMicros: 6_000_000n })).result)
      .toBe(ReserveResult.RESERVE_RESULT_OK);
    await ledger.settle({ reservationId: first, costMicros: 3_000_000n });
    // settled 3 + held 0 + 7 = 10: exactly at the cap fits.
    const second = uniqueId('r');
    expect((await ledger.reserve({ reservationId: second, organisationId, projectId, amountMicros: 7_000_000n })).result)
      .toBe(ReserveResult.RESERVE_RESULT_OK);

    const before = await ledger.countRows();
    const refused = await ledger.reserve({ organisationId, projectId, amountMicros: 1n });
    expect(refused).toMatchObject({ result: ReserveResult.RESERVE_RESULT_PROJECT_BUDGET_EXCEEDED, expiresAtMs: 0n, availableMicros: 90_000_000n });
    expect(refused.detail).toContain('monthly cap');
    const internal = await ledger.reserve({ organisationId, projectId, amountMicros: 1n, billingMode: BillingMode.BILLING_MODE_INTERNAL });
    expect(internal.result).toBe(ReserveResult.RESERVE_RESULT_PROJECT_BUDGET_EXCEEDED);
    expect(await ledger.countRows()).toEqual(before);

    // Another project of the same organisation is not limited by this budget.
    expect((await ledger.reserve({ organisationId, projectId: uniqueId('other'), amountMicros: 50_000_000n })).result)
      .toBe(ReserveResult.RESERVE_RESULT_OK);

    expect(await ledger.getProjectSpend(projectId)).toMatchObject({
      settledMicros: 3_000_000n, heldMicros: 7_000_000n, monthlyCapMicros: 10_000_000n, softAlertPercent: 80, softAlertRaised: true,
    });
    // Releasing the hold makes room again; raising the budget too.
    await ledger.release({ reservationId: second });
    expect((await ledger.reserve({ organisationId, projectId, amountMicros: 7_000_000n })).result).toBe(ReserveResult.RESERVE_RESULT_OK);
    expect((await ledger.reserve({ organisationId, projectId, amountMicros: 1n })).result).toBe(ReserveResult.RESERVE_RESULT_PROJECT_BUDGET_EXCEEDED);
    await ledger.setProjectBudget({ organisationId, projectId, monthlyCapMicros: 0n, softAlertPercent: 0 });
    expect((await ledger.reserve({ organisationId, projectId, amountMicros: 1n })).result).toBe(ReserveResult.RESERVE_RESULT_OK);
  });

  it('answers INSUFFICIENT_BALANCE before PROJECT_BUDGET_EXCEEDED when both apply', async () => {
    const organisationId = await fundedOrganisation(ledger, 1_000n);
    const projectId = uniqueId('proj');
    await ledger.setProjectBudget({ organisationId, projectId, monthlyCapMicros: 500n, softAlertPercent: 50 });
    expect((await ledger.reserve({ organisationId, projectId, amountMicros: 2_000n })).result).toBe(ReserveResult.RESERVE_RESULT_INSUFFICIENT_BALANCE);
    expect((await ledger.reserve({ organisationId, projectId, amountMicros: 600n })).result).toBe(ReserveResult.RESERVE_RESULT_PROJECT_BUDGET_EXCEEDED);
    expect((await ledger.reserve({ organisationId: uniqueId('nobody'), projectId, amountMicros: 600n })).result)
      .toBe(ReserveResult.RESERVE_RESULT_ORGANISATION_UNKNOWN);
  });

  it('lets exactly 10 of 60 concurrent Reserves through a budget that fits 10', async () => {
    const organisationId = await fundedOrganisation(ledger, 1_000_000_000n);
    const projectId = uniqueId('proj');
    await ledger.setProjectBudget({ organisationId, projectId, monthlyCapMicros: 10n * 123_457n, softAlertPercent: 100 });
    const responses = await Promise.all(Array.from({ length: 60 }, (_, index) => ledger.reserve({
      organisationId, projectId, amountMicros: 123_457n,
      billingMode: index % 2 === 0 ? BillingMode.BILLING_MODE_COMMERCIAL : BillingMode.BILLING_MODE_INTERNAL,
    })));
    const ok = responses.filter((response) => response.result === ReserveResult.RESERVE_RESULT_OK);
    expect(ok).toHaveLength(10);
    expect(responses.filter((response) => response.result === ReserveResult.RESERVE_RESULT_PROJECT_BUDGET_EXCEEDED)).toHaveLength(50);
    expect(await ledger.getProjectSpend(projectId)).toMatchObject({ settledMicros: 0n, heldMicros: 1_234_570n, softAlertRaised: true });
  });

  it('raises one soft alert per project and month, listed after a cursor and streamed to watchers', async () => {
    const organisationId = await fundedOrganisation(ledger, 100_000_000n);
    const projectId = uniqueId('proj');
    const { alerts: earlier } = await ledger.listBudgetAlerts({ limit: 500 });
    const cursor = earlier.at(-1)?.id ?? '';

    const watcher = ledger.clientAs('admin');
    const stream = watcher.watchBudgetAlerts({ afterId: cursor });
    const streamed: ledgerV1.BudgetAlert[] = [];
    const firstStreamed = new Promise<void>((resolve) => stream.on('data', (alert: ledgerV1.BudgetAlert) => {
      if (alert.projectId === projectId) { streamed.push(alert); resolve(); }
    }));
    stream.on('error', () => undefined);

    await ledger.setProjectBudget({ organisationId, projectId, monthlyCapMicros: 1_000_000n, softAlertPercent: 75 });
    const below = uniqueId('r');
    await ledger.reserve({ reservationId: below, organisationId, projectId, amountMicros: 700_000n });
    await ledger.settle({ reservationId: below, costMicros: 749_999n });
    expect((await ledger.getProjectSpend(projectId)).softAlertRaised).toBe(false);
    expect((await ledger.listBudgetAlerts({ afterId: cursor, organisationId })).alerts).toEqual([]);

    // 749,999 + 1 = 750,000 = 75 % of the cap: the alert is raised by the settle that reaches it.
    const reaching = uniqueId('r');
    await ledger.reserve({ reservationId: reaching, organisationId, projectId, amountMicros: 100_000n });
    expect((await ledger.getProjectSpend(projectId)).softAlertRaised).toBe(true);
    await ledger.settle({ reservationId: reaching, costMicros: 1n });
    await ledger.reserve({ organisationId, projectId, amountMicros: 200_000n });

    const { alerts } = await ledger.listBudgetAlerts({ afterId: cursor, organisationId });
    expect(alerts).toHaveLength(1);
    expect(alerts[0]).toMatchObject({
      organisationId, projectId, spentMicros: 849_999n, monthlyCapMicros: 1_000_000n, softAlertPercent: 75,
      month: (await ledger.getProjectSpend(projectId)).month,
    });
    expect(alerts[0]!.month).toMatch(/^\d{4}-\d{2}$/);
    await firstStreamed;
    expect(streamed).toEqual(alerts);
    expect((await ledger.listBudgetAlerts({ afterId: alerts[0]!.id, organisationId })).alerts).toEqual([]);
    stream.cancel();
    watcher.close();
  });

  it('makes SetProjectBudget idempotent and refuses bad input without writing', async () => {
    const organisationId = await fundedOrganisation(ledger, 0n);
    const projectId = uniqueId('proj');
    const request = { requestId: uniqueId('set'), organisationId, projectId, monthlyCapMicros: 5_000n, softAlertPercent: 90 };
    expect((await ledger.setProjectBudget(request)).result).toBe(SetProjectBudgetResult.SET_PROJECT_BUDGET_RESULT_OK);
    const otherOrganisation = await fundedOrganisation(ledger, 0n);
    const before = await ledger.countRows();
    expect(await ledger.setProjectBudget(request)).toEqual({
      result: SetProjectBudgetResult.SET_PROJECT_BUDGET_RESULT_OK, detail: 'replay: budget change already applied',
    });
    expect((await ledger.setProjectBudget({ ...request, monthlyCapMicros: 6_000n })).result)
      .toBe(SetProjectBudgetResult.SET_PROJECT_BUDGET_RESULT_IDEMPOTENCY_CONFLICT);
    for (const bad of [
      { monthlyCapMicros: -1n }, { monthlyCapMicros: 2n ** 62n + 1n }, { softAlertPercent: 0 }, { softAlertPercent: 101 },
      { projectId: '' }, { organisationId: 'has space' }, { requestId: '' },
    ]) {
      const response = await ledger.setProjectBudget({ ...request, requestId: uniqueId('set'), ...bad });
      expect(response.result, JSON.stringify(bad, (_, v) => (typeof v === 'bigint' ? v.toString() : v)))
        .toBe(SetProjectBudgetResult.SET_PROJECT_BUDGET_RESULT_INVALID_ARGUMENT);
    }
    expect((await ledger.setProjectBudget({ ...request, requestId: uniqueId('set'), organisationId: uniqueId('nobody') })).result)
      .toBe(SetProjectBudgetResult.SET_PROJECT_BUDGET_RESULT_ORGANISATION_UNKNOWN);
    const stolen = await ledger.setProjectBudget({ ...request, requestId: uniqueId('set'), organisationId: otherOrganisation });
    expect(stolen).toMatchObject({ result: SetProjectBudgetResult.SET_PROJECT_BUDGET_RESULT_INVALID_ARGUMENT });
    expect(await ledger.countRows()).toEqual(before);
    expect(await ledger.getProjectSpend(projectId)).toMatchObject({ monthlyCapMicros: 5_000n, softAlertPercent: 90 });
    await expect(ledger.getProjectSpend('')).rejects.toMatchObject({ code: 3 });
    await expect(ledger.listBudgetAlerts({ afterId: 'x1' })).rejects.toMatchObject({ code: 3 });
    await expect(ledger.listBudgetAlerts({ limit: 501 })).rejects.toMatchObject({ code: 3 });
  });

  it('summarises usage by day and model and verifies clean, then reports a tampered balance', async () => {
    const organisationId = await fundedOrganisation(ledger, 10_000_000n);
    for (const [model, cost] of [['model-a', 100n], ['model-b', 250n], ['model-a', 7n]] as const) {
      const reservationId = uniqueId('r');
      await ledger.reserve({ reservationId, organisationId, amountMicros: 1_000n, modelSlug: model });
      await ledger.settle({ reservationId, costMicros: cost, providerCostMicros: cost / 2n, inputTokens: 10n, outputTokens: 5n, modelSlug: model });
    }
    const { rows } = await ledger.summarizeUsage({ organisationId });
    expect(rows.map((row) => row.modelSlug)).toEqual(['model-a', 'model-b']);
    expect(rows[0]).toMatchObject({ requests: 2n, inputTokens: 20n, outputTokens: 10n, costMicros: 107n, providerCostMicros: 53n, debitedMicros: 107n });
    expect(rows[0]!.day).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    expect((await ledger.summarizeUsage({ organisationId, fromMs: 1n, toMs: 2n })).rows).toEqual([]);
    await expect(ledger.summarizeUsage({ organisationId, fromMs: 5n, toMs: 5n })).rejects.toMatchObject({ code: 3 });

    const clean = await ledger.verify();
    expect(clean.differences).toEqual([]);
    expect(clean.accountsChecked).toBeGreaterThan(0n);
    // Break a balance behind the ledger's back (conservation still holds): Verify names it.
    await ledger.database.query('UPDATE accounts SET available_micros = available_micros - 1, debited_micros = debited_micros + 1 WHERE organisation_id = $1', [organisationId]);
    try {
      const broken = await ledger.verify();
      expect(broken.differences).toEqual(expect.arrayContaining([
        { organisationId, check: 'movements', balance: 'available', accountMicros: 9_999_642n, recomputedMicros: 9_999_643n },
        { organisationId, check: 'usage', balance: 'debited', accountMicros: 358n, recomputedMicros: 357n },
      ]));
    } finally {
      await ledger.database.query('UPDATE accounts SET available_micros = available_micros + 1, debited_micros = debited_micros - 1 WHERE organisation_id = $1', [organisationId]);
    }
    expect(await balancesOf(ledger, organisationId)).toEqual({
      creditedMicros: 10_000_000n, availableMicros: 9_999_643n, heldMicros: 0n, debitedMicros: 357n,
    });
  });
});
