import { describe, expect, it } from 'vitest';
import type { ClientDuplexStream } from '@grpc/grpc-js';
import { ledgerV1 } from '@gateway/contracts';
import { testPostgresUrl } from '@gateway/testkit';
import { balancesOf, fundedOrganisation, uniqueId, type TestLedger } from './testing/start-test-ledger.ts';
import { useTestLedger } from './testing/ledger-test-setup.ts';

const serverUrl = testPostgresUrl();
const { AcquireGrantResult, AdjustGrantResult, BillingMode, SetProjectBudgetResult, SettleResult } = ledgerV1;

/** A grant's state as the budget and dead-owner rules see it. */
async function grantState(ledger: TestLedger, grantId: string) {
  const { rows } = await ledger.database.query<{ status: string; remaining_micros: bigint; recalled: boolean; answered: boolean; past_deadline: boolean }>(
    `SELECT status, remaining_micros, recalled_at IS NOT NULL AS recalled, recall_answered_at IS NOT NULL AS answered,
       expires_at <= now() AS past_deadline FROM grants WHERE id = $1`, [grantId],
  );
  return rows[0];
}

/**
 * A proxy replica as the ledger sees it: one Operate stream whose grant messages name its owner
 * id. It answers a pushed recall as the proxy does (carves nothing more, returns its uncarved
 * part U) unless told to stay silent, and keeps the order of what happened.
 */
function ownerStream(ledger: TestLedger, options: { answersRecalls: boolean }) {
  const stream: ClientDuplexStream<ledgerV1.OperationRequest, ledgerV1.OperationResponse> = ledger.client.operate();
  const ownerId = uniqueId('proxy');
  const answers = new Map<bigint, ledgerV1.OperationResponse>();
  const recalls: string[] = [];
  const uncarved = new Map<string, bigint>();
  let nextCallId = 1n;
  stream.on('error', () => {}); // cancelled by the test
  const send = async (message: Omit<ledgerV1.OperationRequest, 'callId' | 'requestId'>) => {
    const callId = nextCallId++;
    stream.write({ callId, requestId: '', ...message });
    await expect.poll(() => answers.has(callId), { timeout: 10_000 }).toBe(true);
    return answers.get(callId)!;
  };
  stream.on('data', (response: ledgerV1.OperationResponse) => {
    if (!response.recall) { answers.set(response.callId, response); return; }
    for (const grantId of response.recall.grantIds) {
      recalls.push(grantId);
      if (!options.answersRecalls) continue;
      const returnMicros = uncarved.get(grantId) ?? 0n;
      uncarved.set(grantId, 0n);
      void send({ adjustGrant: { adjustmentId: uniqueId('recall-answer'), grantId, returnMicros, close: false, extendTtlMs: 0n, reason: 'recalled' } });
    }
  });
  return {
    stream, ownerId, recalls,
    async acquire(organisationId: string, projectId: string, wantMicros: bigint, ttlMs = 600_000n) {
      const grantId = uniqueId('grant');
      const answer = await send({ acquireGrant: {
        grantId, organisationId, projectId, billingMode: BillingMode.BILLING_MODE_COMMERCIAL, minMicros: 1n, wantMicros, ttlMs, ownerId,
      } });
      expect(answer.acquireGrant?.result).toBe(AcquireGrantResult.ACQUIRE_GRANT_RESULT_OK);
      uncarved.set(grantId, answer.acquireGrant!.grantedMicros);
      return { grantId, grantedMicros: answer.acquireGrant!.grantedMicros };
    },
    /** Carves `reservedMicros` in memory (U shrinks); the Settle is sent later by the test. */
    carve(grantId: string, reservedMicros: bigint) {
      uncarved.set(grantId, uncarved.get(grantId)! - reservedMicros);
    },
  };
}

describe.skipIf(!serverUrl)('project budgets and credit grants (PROJECT_BUDGET while proxies hold grants)', () => {
  const ledger = useTestLedger('postgres', { serverUrl, sweepIntervalMs: 100, conservation: 'after-all' });

  it('lowering a cap below what the project holds recalls its grants and answers only once their owners have answered', async () => {
    const organisationId = await fundedOrganisation(ledger, 1_000_000n);
    const projectId = uniqueId('project');
    const owner = ownerStream(ledger, { answersRecalls: true });
    // No budget yet: the grant is sized by the balance alone (10 % of 1,000,000).
    const { grantId, grantedMicros } = await owner.acquire(organisationId, projectId, 50_000n);
    expect(grantedMicros).toBe(50_000n);
    owner.carve(grantId, 400n);

    const answer = await ledger.setProjectBudget({ organisationId, projectId, monthlyCapMicros: 1n, softAlertPercent: 80 });
    // What is true the moment the change answers: the grant's owner was told and has answered
    // (it carves nothing more), and what it had not carved is back in the wallet.
    const atAnswer = await grantState(ledger, grantId);
    expect(answer.result).toBe(SetProjectBudgetResult.SET_PROJECT_BUDGET_RESULT_OK);
    expect(owner.recalls).toEqual([grantId]);
    expect(atAnswer).toMatchObject({ status: 'held', recalled: true, answered: true, remaining_micros: 400n });
    expect(await balancesOf(ledger, organisationId)).toEqual({ creditedMicros: 1_000_000n, availableMicros: 999_600n, heldMicros: 400n, debitedMicros: 0n });

    // The carve in flight at the change settles into its grant as after any recall.
    const settled = await ledger.settle({ reservationId: uniqueId('carve'), grantId, reservedMicros: 400n, costMicros: 300n, inputTokens: 1n, outputTokens: 1n });
    expect(settled).toMatchObject({ result: SettleResult.SETTLE_RESULT_OK, debitedMicros: 300n, overrunMicros: 0n });
    // A new grant is sized within the new cap: nothing fits under 1 µ₹.
    const refused = await ledger.acquireGrant({ organisationId, projectId, minMicros: 1n, wantMicros: 10_000n, ownerId: owner.ownerId });
    expect(refused.result).toBe(AcquireGrantResult.ACQUIRE_GRANT_RESULT_NOT_GRANTED);
    owner.stream.end();
  });

  it('raising or clearing a cap recalls nothing (every grant already fits under it)', async () => {
    const organisationId = await fundedOrganisation(ledger, 1_000_000n);
    const projectId = uniqueId('project');
    await ledger.setProjectBudget({ organisationId, projectId, monthlyCapMicros: 500_000n, softAlertPercent: 80 });
    const owner = ownerStream(ledger, { answersRecalls: true });
    // 10 % of the headroom of 500,000.
    const { grantId, grantedMicros } = await owner.acquire(organisationId, projectId, 80_000n);
    expect(grantedMicros).toBe(50_000n);
    await ledger.setProjectBudget({ organisationId, projectId, monthlyCapMicros: 900_000n, softAlertPercent: 80 });
    await ledger.setProjectBudget({ organisationId, projectId, monthlyCapMicros: 0n, softAlertPercent: 0 });
    expect(await grantState(ledger, grantId)).toMatchObject({ status: 'held', recalled: false });
    expect(owner.recalls).toEqual([]);
    owner.stream.end();
  });

  it('an owner that never answers holds the change up only until its grant\'s deadline, after which it carves nothing', async () => {
    const organisationId = await fundedOrganisation(ledger, 1_000_000n);
    const projectId = uniqueId('project');
    const owner = ownerStream(ledger, { answersRecalls: false });
    const { grantId } = await owner.acquire(organisationId, projectId, 50_000n, 1_500n);
    const answer = await ledger.setProjectBudget({ organisationId, projectId, monthlyCapMicros: 1n, softAlertPercent: 80 });
    expect(answer.result).toBe(SetProjectBudgetResult.SET_PROJECT_BUDGET_RESULT_OK);
    // A proxy never carves from a grant past its deadline (its own deadline is never later than the ledger's).
    expect(owner.recalls).toEqual([grantId]);
    expect(await grantState(ledger, grantId)).toMatchObject({ recalled: true, answered: false, past_deadline: true });
    owner.stream.end();
  });
});

describe.skipIf(!serverUrl)('a dead owner\'s grants (its Operate stream ended)', () => {
  const ledger = useTestLedger('postgres', { serverUrl, sweepIntervalMs: 600_000, conservation: 'after-all' });

  it('returns to the wallet at once when the owner\'s stream ends, not at the grant\'s deadline; a carve settled later is debited from available', async () => {
    const organisationId = await fundedOrganisation(ledger, 100_000n);
    const owner = ownerStream(ledger, { answersRecalls: true });
    const { grantId, grantedMicros } = await owner.acquire(organisationId, uniqueId('project'), 5_000n);
    expect(grantedMicros).toBe(5_000n);
    owner.carve(grantId, 1_000n);
    expect(await balancesOf(ledger, organisationId)).toMatchObject({ availableMicros: 95_000n, heldMicros: 5_000n });

    // The owner dies: its connection is gone (a SIGKILLed process's socket is closed by the kernel).
    owner.stream.cancel();
    await expect.poll(() => grantState(ledger, grantId), { timeout: 10_000 }).toMatchObject({ status: 'closed', remaining_micros: 0n });
    expect(await balancesOf(ledger, organisationId)).toEqual({ creditedMicros: 100_000n, availableMicros: 100_000n, heldMicros: 0n, debitedMicros: 0n });

    // Its carve in flight (if the owner was only cut off, its outbox replays the Settle): all of
    // the cost from available, recorded as overrun, as any carve settled after its grant was resolved.
    const late = await ledger.settle({ reservationId: uniqueId('carve'), grantId, reservedMicros: 1_000n, costMicros: 700n, inputTokens: 1n, outputTokens: 1n });
    expect(late).toMatchObject({ result: SettleResult.SETTLE_RESULT_OK, debitedMicros: 700n, overrunMicros: 700n });
    expect(await balancesOf(ledger, organisationId)).toEqual({ creditedMicros: 100_000n, availableMicros: 99_300n, heldMicros: 0n, debitedMicros: 700n });
    const closes = await ledger.adjustGrant({ grantId, close: true, reason: 'shutdown' });
    expect(closes.result).toBe(AdjustGrantResult.ADJUST_GRANT_RESULT_ALREADY_RESOLVED);
  });
});
