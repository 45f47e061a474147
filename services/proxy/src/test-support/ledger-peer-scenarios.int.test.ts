import { ledgerV1 } from '@gateway/contracts';
import { channelCredentials } from '@gateway/grpc';
import { ledgerScenarios, runLedgerScenario, type LedgerScenarioTarget } from '@gateway/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLedgerPeer, type LedgerPeer } from './ledger-peer.ts';

/**
 * The shared ledger scenario table (`@gateway/testkit`'s ledgerScenarios, which the real ledger
 * passes in services/ledger/src/ledger-scenarios.int.test.ts) against the proxy's in-memory
 * ledger peer, over unary calls and the Operate stream: the peer the proxy's tests trust must
 * answer every row as the ledger does. Rows marked realLedgerOnly model what the peer does not.
 */
describe('the ledger peer runs the ledger scenario table', () => {
  let peer: LedgerPeer;
  let client: ledgerV1.LedgerServiceClient;

  beforeAll(async () => {
    peer = await startLedgerPeer();
    client = new ledgerV1.LedgerServiceClient(peer.address, channelCredentials(peer.proxySecurity));
  });
  afterAll(async () => {
    client?.close();
    await peer?.close();
  });

  /** The peer as a scenario target: its own methods for setup and its account view for the money. */
  const target = (transport: LedgerScenarioTarget['transport']): LedgerScenarioTarget => ({
    client,
    transport,
    async openAccount(organisationId, creditMicros) { peer.credit(organisationId, creditMicros); },
    async balance(organisationId) { return peer.account(organisationId); },
    async setProjectCap(_organisationId, projectId, capMicros) { peer.setProjectCap(projectId, capMicros); },
  });

  // Rows the peer does not model run only against the real ledger (ledger-scenarios.int.test.ts);
  // they are left out here, not skipped, so a skip in this suite always means something is missing.
  const modelled = ledgerScenarios.filter((scenario) => scenario.realLedgerOnly === undefined);

  it('leaves out exactly the rows known to need the real ledger, each with its reason', () => {
    // A new real-ledger-only row is a decision to make here, not something the peer quietly stops checking.
    const leftOut = ledgerScenarios.filter((scenario) => scenario.realLedgerOnly !== undefined);
    expect(leftOut.map((scenario) => scenario.name)).toEqual([
      'an expired reservation is charged its last checkpoint; a late Settle still records the usage and charges the rest',
    ]);
    for (const scenario of leftOut) expect(scenario.realLedgerOnly!.length).toBeGreaterThan(20);
  });

  for (const transport of ['unary', 'operate'] as const) {
    for (const scenario of modelled) {
      const name = `${transport}: ${scenario.name} (${scenario.laws.join(', ')})`;
      it(name, async () => {
        await runLedgerScenario(scenario, target(transport));
      });
    }
  }
});
