import { ledgerV1 } from '@gateway/contracts';
import { ledgerScenarios, runLedgerScenario, testPostgresUrl, type LedgerScenarioTarget } from '@gateway/testkit';
import { describe, expect, it } from 'vitest';
import { waitForStatus, type TestBackend } from './testing/start-test-ledger.ts';
import { useTestLedger } from './testing/ledger-test-setup.ts';

const serverUrl = testPostgresUrl();

/**
 * The shared ledger scenario table (`@gateway/testkit`'s ledgerScenarios) against the real
 * ledger: the table is what the proxy's in-memory peer is held to, so the real ledger must pass
 * every row of it, over unary calls and over the Operate stream, on both databases.
 */
describe.each<TestBackend>(['postgres', 'pglite'])('the ledger scenario table over %s', (backend) => {
  const skip = backend === 'postgres' && !serverUrl;
  // CONSERVATION from the rows after each scenario: every balance it left agrees with its movements.
  const ledger = useTestLedger(backend, { serverUrl, sweepIntervalMs: 100, skip, conservation: 'after-each' });

  /** The real ledger as a scenario target: the admin's calls for setup, the database for moving a deadline. */
  const target = (transport: LedgerScenarioTarget['transport']): LedgerScenarioTarget => ({
    client: ledger.client,
    transport,
    async openAccount(organisationId, creditMicros) {
      expect((await ledger.openAccount(organisationId)).result).toBe(ledgerV1.OpenAccountResult.OPEN_ACCOUNT_RESULT_OK);
      if (creditMicros > 0n) expect((await ledger.credit({ organisationId, amountMicros: creditMicros })).result).toBe(ledgerV1.CreditResult.CREDIT_RESULT_OK);
    },
    async balance(organisationId) {
      const balance = await ledger.getBalance(organisationId);
      return balance.result === ledgerV1.GetBalanceResult.GET_BALANCE_RESULT_OK ? balance : undefined;
    },
    async setProjectCap(organisationId, projectId, capMicros) {
      const answer = await ledger.setProjectBudget({ organisationId, projectId, monthlyCapMicros: capMicros, softAlertPercent: 80 });
      expect(answer.result).toBe(ledgerV1.SetProjectBudgetResult.SET_PROJECT_BUDGET_RESULT_OK);
    },
    async expire(reservationId) {
      // EXPIRY without waiting out a ttl: the deadline moves into the past, then the sweeper's work is awaited as a state.
      await ledger.database.query("UPDATE reservations SET expires_at = now() - interval '1 second' WHERE id = $1", [reservationId]);
      await waitForStatus(ledger.database, reservationId, 'expired');
    },
  });

  for (const transport of ['unary', 'operate'] as const) {
    for (const scenario of ledgerScenarios) {
      it.skipIf(skip)(`${transport}: ${scenario.name} (${scenario.laws.join(', ')})`, async () => {
        await runLedgerScenario(scenario, target(transport));
      });
    }
  }
});
