import { describe, expect, it } from 'vitest';
import type { ClientDuplexStream } from '@grpc/grpc-js';
import { ledgerV1 } from '@gateway/contracts';
import { testPostgresUrl } from '@gateway/testkit';
import { applyLedgerOperations, type LedgerOperation } from './domain/apply-ledger-operations.ts';
import { reserve } from './domain/reserve.ts';
import { settle } from './domain/settle.ts';
import { balancesOf, fundedOrganisation, uniqueId, type TestBackend, type TestLedger } from './testing/start-test-ledger.ts';
import { useTestLedger } from './testing/ledger-test-setup.ts';

const serverUrl = testPostgresUrl();
const { AcquireGrantResult, AdjustGrantResult, BillingMode, ReserveResult, SettleResult, UsageSource } = ledgerV1;

/** Grant-scoped rows and money of one organisation, for exact assertions. */
async function grantRow(ledger: TestLedger, grantId: string) {
  const { rows } = await ledger.database.query<{ remaining_micros: bigint; status: string; recalled: boolean }>(
    'SELECT remaining_micros, status, recalled_at IS NOT NULL AS recalled FROM grants WHERE id = $1', [grantId],
  );
  return rows[0];
}

/** A carved Settle: the proxy carved `reservedMicros` from `grantId` in memory and reports cost `costMicros`. */
function carvedSettle(ledger: TestLedger, grantId: string, reservedMicros: bigint, costMicros: bigint, reservationId = uniqueId('carve')) {
  return ledger.settle({ reservationId, grantId, reservedMicros, costMicros, inputTokens: 1n, outputTokens: 1n });
}

for (const backend of ['postgres', 'pglite'] as TestBackend[]) {
  describe.skipIf(backend === 'postgres' && !serverUrl)(`credit grants over ${backend}`, () => {
    const ledger = useTestLedger(backend, { serverUrl, sweepIntervalMs: 100, conservation: 'after-all' });

    it('sizes a grant as min(want, 10% of available) (NO_OVERSPEND), holds it in held (CONSERVATION (holds)), replays and conflicts (IDEMPOTENCY)', async () => {
      const organisationId = await fundedOrganisation(ledger, 10_000n);
      const grantId = uniqueId('grant');
      const first = await ledger.acquireGrant({ grantId, organisationId, minMicros: 100n, wantMicros: 5_000n });
      expect(first).toMatchObject({ result: AcquireGrantResult.ACQUIRE_GRANT_RESULT_OK, grantedMicros: 1_000n, availableMicros: 9_000n });
      expect(await balancesOf(ledger, organisationId)).toEqual({ creditedMicros: 10_000n, availableMicros: 9_000n, heldMicros: 1_000n, debitedMicros: 0n });
      const replay = await ledger.acquireGrant({ grantId, organisationId, minMicros: 100n, wantMicros: 5_000n });
      expect(replay).toMatchObject({ result: AcquireGrantResult.ACQUIRE_GRANT_RESULT_OK, grantedMicros: 1_000n, expiresAtMs: first.expiresAtMs });
      const before = await ledger.countRows();
      expect((await ledger.acquireGrant({ grantId, organisationId, minMicros: 100n, wantMicros: 6_000n })).result)
        .toBe(AcquireGrantResult.ACQUIRE_GRANT_RESULT_IDEMPOTENCY_CONFLICT);
      expect((await ledger.acquireGrant({ organisationId, minMicros: 0n, wantMicros: 5n })).result)
        .toBe(AcquireGrantResult.ACQUIRE_GRANT_RESULT_INVALID_ARGUMENT);
      expect((await ledger.acquireGrant({ organisationId: uniqueId('nobody'), minMicros: 1n, wantMicros: 5n })).result)
        .toBe(AcquireGrantResult.ACQUIRE_GRANT_RESULT_ORGANISATION_UNKNOWN);
      expect(await ledger.countRows()).toEqual(before);
      // Small wants are granted whole: 900 fits 10% of 9,000.
      expect((await ledger.acquireGrant({ organisationId, minMicros: 100n, wantMicros: 300n })).grantedMicros).toBe(300n);
    });

    it('NOT_GRANTED writes no grant and recalls the organisation\'s held grants; the recall is pushed to the owner\'s Operate stream', async () => {
      const organisationId = await fundedOrganisation(ledger, 10_000n);
      // The owner's stream learns its owner from an AcquireGrant message it carries.
      const stream: ClientDuplexStream<ledgerV1.OperationRequest, ledgerV1.OperationResponse> = ledger.client.operate();
      const recalls: string[][] = [];
      const answers = new Map<bigint, ledgerV1.OperationResponse>();
      const recalled = new Promise<void>((resolve) => {
        stream.on('data', (response: ledgerV1.OperationResponse) => {
          if (response.recall) { recalls.push(response.recall.grantIds); resolve(); } else answers.set(response.callId, response);
        });
      });
      const ownerId = uniqueId('proxy');
      const heldGrant = uniqueId('grant');
      stream.write({ callId: 1n, requestId: '', acquireGrant: {
        grantId: heldGrant, organisationId, projectId: 'p', billingMode: BillingMode.BILLING_MODE_COMMERCIAL,
        minMicros: 500n, wantMicros: 1_000n, ttlMs: 60_000n, ownerId,
      } });
      await expect.poll(() => answers.get(1n)?.acquireGrant?.result).toBe(AcquireGrantResult.ACQUIRE_GRANT_RESULT_OK);
      const before = await ledger.countRows();
      // 10% of 9,000 = 900 < 950: not granted.
      const refused = await ledger.acquireGrant({ organisationId, projectId: 'p', minMicros: 950n, wantMicros: 2_000n, ownerId: 'other' });
      expect(refused).toMatchObject({ result: AcquireGrantResult.ACQUIRE_GRANT_RESULT_NOT_GRANTED, grantedMicros: 0n, availableMicros: 9_000n });
      await recalled;
      expect(recalls).toEqual([[heldGrant]]);
      const after = await ledger.countRows();
      // Nothing held or written but the recall mark (columnTotal moves by exactly 1).
      expect({ ...after, columnTotal: after.columnTotal! - 1n }).toEqual(before);
      expect(await grantRow(ledger, heldGrant)).toMatchObject({ status: 'held', recalled: true, remaining_micros: 1_000n });
      // The pull side: AdjustGrant answers recalled too; returning all closes nothing but gives the money back.
      const returned = await ledger.adjustGrant({ grantId: heldGrant, returnMicros: 5_000n, reason: 'recalled' });
      expect(returned).toMatchObject({ result: AdjustGrantResult.ADJUST_GRANT_RESULT_OK, returnedMicros: 1_000n, remainingMicros: 0n, recalled: true });
      expect(await balancesOf(ledger, organisationId)).toEqual({ creditedMicros: 10_000n, availableMicros: 10_000n, heldMicros: 0n, debitedMicros: 0n });
      stream.end();
    });

    it('an exact Reserve refused INSUFFICIENT_BALANCE recalls the other grants and says how many', async () => {
      const organisationId = await fundedOrganisation(ledger, 1_000n);
      const grantId = uniqueId('grant');
      await ledger.acquireGrant({ grantId, organisationId, minMicros: 100n, wantMicros: 100n });
      const refused = await ledger.reserve({ organisationId, amountMicros: 950n });
      expect(refused).toMatchObject({ result: ReserveResult.RESERVE_RESULT_INSUFFICIENT_BALANCE, grantsRecalled: 1, availableMicros: 900n });
      expect((await grantRow(ledger, grantId))?.recalled).toBe(true);
      await ledger.adjustGrant({ grantId, close: true, reason: 'recalled' });
      expect((await ledger.reserve({ organisationId, amountMicros: 950n })).result).toBe(ReserveResult.RESERVE_RESULT_OK);
      const none = await ledger.reserve({ organisationId, amountMicros: 950n });
      expect(none).toMatchObject({ result: ReserveResult.RESERVE_RESULT_INSUFFICIENT_BALANCE, grantsRecalled: 0 });
    });

    it('a refusal no returning hold could lift (amount > available + held) says so (liftable false) and recalls nothing; one a hold could lift says liftable true (NO_OVERSPEND)', async () => {
      const organisationId = await fundedOrganisation(ledger, 1_000n);
      const grantId = uniqueId('grant');
      await ledger.acquireGrant({ grantId, organisationId, minMicros: 100n, wantMicros: 100n });
      // available 900 + held 100 = 1,000 < 1,001: nothing the grant or any Settle returns can make it fit.
      const final = await ledger.reserve({ organisationId, amountMicros: 1_001n });
      expect(final).toMatchObject({ result: ReserveResult.RESERVE_RESULT_INSUFFICIENT_BALANCE, liftable: false, grantsRecalled: 0, availableMicros: 900n });
      expect((await grantRow(ledger, grantId))?.recalled).toBe(false);
      // 1,000 ≤ 900 + 100: the grant's return could make it fit, so it is recalled.
      const liftable = await ledger.reserve({ organisationId, amountMicros: 1_000n });
      expect(liftable).toMatchObject({ result: ReserveResult.RESERVE_RESULT_INSUFFICIENT_BALANCE, liftable: true, grantsRecalled: 1 });
      expect((await grantRow(ledger, grantId))?.recalled).toBe(true);
      // PROJECT_BUDGET: settled 0 + 1,001 > cap 1,000 is final; 1,000 with 100 held in a grant is not.
      const projectId = uniqueId('budgeted');
      await ledger.setProjectBudget({ organisationId, projectId, monthlyCapMicros: 1_000n, softAlertPercent: 90 });
      const budgetGrant = uniqueId('grant');
      await ledger.acquireGrant({ grantId: budgetGrant, organisationId, projectId, billingMode: BillingMode.BILLING_MODE_INTERNAL, minMicros: 100n, wantMicros: 100n });
      const overCap = await ledger.reserve({ organisationId, projectId, billingMode: BillingMode.BILLING_MODE_INTERNAL, amountMicros: 1_001n });
      expect(overCap).toMatchObject({ result: ReserveResult.RESERVE_RESULT_PROJECT_BUDGET_EXCEEDED, liftable: false, grantsRecalled: 0 });
      expect((await grantRow(ledger, budgetGrant))?.recalled).toBe(false);
      const underCap = await ledger.reserve({ organisationId, projectId, billingMode: BillingMode.BILLING_MODE_INTERNAL, amountMicros: 1_000n });
      expect(underCap).toMatchObject({ result: ReserveResult.RESERVE_RESULT_PROJECT_BUDGET_EXCEEDED, liftable: true, grantsRecalled: 1 });
    });

    it('counts a recall in grants_recalled only until its owner answers it: a bare extension does not answer, a return (even of 0) does', async () => {
      const organisationId = await fundedOrganisation(ledger, 1_000n);
      const grantId = uniqueId('grant');
      await ledger.acquireGrant({ grantId, organisationId, minMicros: 100n, wantMicros: 100n });
      expect(await ledger.reserve({ organisationId, amountMicros: 950n })).toMatchObject({ grantsRecalled: 1 });
      await ledger.adjustGrant({ grantId, extendTtlMs: 60_000n, reason: 'extend' });
      expect(await ledger.reserve({ organisationId, amountMicros: 950n })).toMatchObject({ grantsRecalled: 1 });
      // The owner has carved everything (nothing to give back): a return of 0 is its answer.
      await ledger.adjustGrant({ grantId, returnMicros: 0n, reason: 'recalled' });
      const refused = await ledger.reserve({ organisationId, amountMicros: 950n });
      expect(refused).toMatchObject({ result: ReserveResult.RESERVE_RESULT_INSUFFICIENT_BALANCE, grantsRecalled: 0, availableMicros: 900n });
      // Still held (its carves are outstanding) and still counted in held, but no longer waited for.
      expect(await grantRow(ledger, grantId)).toMatchObject({ status: 'held', remaining_micros: 100n });
      expect(await balancesOf(ledger, organisationId)).toMatchObject({ availableMicros: 900n, heldMicros: 100n });
    });

    it('carved settles debit the grant\'s hold, the unused part stays in the grant, beyond the grant from available (BOUNDED_OVERRUN); replay and conflict (IDEMPOTENCY)', async () => {
      const organisationId = await fundedOrganisation(ledger, 10_000n);
      const grantId = uniqueId('grant');
      await ledger.acquireGrant({ grantId, organisationId, minMicros: 500n, wantMicros: 500n });
      const carveId = uniqueId('carve');
      const first = await carvedSettle(ledger, grantId, 200n, 150n, carveId);
      expect(first).toMatchObject({ result: SettleResult.SETTLE_RESULT_OK, debitedMicros: 150n, releasedMicros: 0n, overrunMicros: 0n, availableMicros: 9_500n });
      expect(await grantRow(ledger, grantId)).toMatchObject({ remaining_micros: 350n, status: 'held' });
      expect(await balancesOf(ledger, organisationId)).toEqual({ creditedMicros: 10_000n, availableMicros: 9_500n, heldMicros: 350n, debitedMicros: 150n });
      // Replay: same answer, nothing moves. Conflict: another cost.
      const before = await ledger.countRows();
      expect(await carvedSettle(ledger, grantId, 200n, 150n, carveId)).toMatchObject({ result: SettleResult.SETTLE_RESULT_OK, debitedMicros: 150n });
      expect((await carvedSettle(ledger, grantId, 200n, 151n, carveId)).result).toBe(SettleResult.SETTLE_RESULT_IDEMPOTENCY_CONFLICT);
      expect((await carvedSettle(ledger, grantId, 201n, 150n, carveId)).result).toBe(SettleResult.SETTLE_RESULT_IDEMPOTENCY_CONFLICT);
      expect(await ledger.countRows()).toEqual(before);
      // No reservation row for a carve: its usage record names the grant and keeps the settlement (migration 0021).
      expect((await ledger.database.query('SELECT 1 FROM reservations WHERE id = $1', [carveId])).rowCount).toBe(0);
      const { rows: [record] } = await ledger.database.query<{ grant_id: string; fingerprint: boolean; overrun: string; detail: string }>(
        `SELECT grant_id, settle_fingerprint IS NOT NULL AS fingerprint, settle_overrun_micros::text AS overrun, settle_detail AS detail
         FROM usage_records WHERE reservation_id = $1`, [carveId]);
      expect(record).toEqual({ grant_id: grantId, fingerprint: true, overrun: '0', detail: '' });
      // ONE_OUTCOME: a settled carve cannot be promoted afterwards (a Reserve of a used id), and nothing moves.
      const promoted = await ledger.reserve({ reservationId: carveId, organisationId, amountMicros: 200n, grantId });
      expect(promoted.result).toBe(ReserveResult.RESERVE_RESULT_IDEMPOTENCY_CONFLICT);
      expect(await ledger.countRows()).toEqual(before);
      expect(await grantRow(ledger, grantId)).toMatchObject({ remaining_micros: 350n });
      // Cost 400 on a carve of 300 with 350 left in the grant: 350 from the grant, 50 from available; overrun = 400 − 300.
      const beyond = await carvedSettle(ledger, grantId, 300n, 400n);
      expect(beyond).toMatchObject({ debitedMicros: 400n, overrunMicros: 100n, releasedMicros: 0n, availableMicros: 9_450n });
      expect(await grantRow(ledger, grantId)).toMatchObject({ remaining_micros: 0n, status: 'held' });
      // Closed grant: the cost comes from available, all of it recorded as overrun.
      await ledger.adjustGrant({ grantId, close: true, reason: 'idle' });
      const lateId = uniqueId('carve');
      const late = await carvedSettle(ledger, grantId, 100n, 70n, lateId);
      expect(late).toMatchObject({ result: SettleResult.SETTLE_RESULT_OK, debitedMicros: 70n, overrunMicros: 70n, availableMicros: 9_380n });
      // Its replay answers the recorded settlement (overrun and detail from the record, not recomputed on a grant that moved on).
      expect(await carvedSettle(ledger, grantId, 100n, 70n, lateId)).toMatchObject({ result: SettleResult.SETTLE_RESULT_OK, debitedMicros: 70n, overrunMicros: 70n, detail: late.detail });
      expect(late.detail).toMatch(/settled after its grant was closed/);
      expect(await balancesOf(ledger, organisationId)).toEqual({ creditedMicros: 10_000n, availableMicros: 9_380n, heldMicros: 0n, debitedMicros: 620n });
      const usage = await ledger.listUsage({ organisationId });
      expect(usage.records.map((record) => record.costMicros).sort()).toEqual([150n, 400n, 70n].sort());
      expect((await ledger.settle({ reservationId: uniqueId('carve'), grantId: uniqueId('no-grant'), reservedMicros: 5n, costMicros: 1n })).result)
        .toBe(SettleResult.SETTLE_RESULT_RESERVATION_UNKNOWN);
      expect((await ledger.settle({ reservationId: uniqueId('carve'), grantId, reservedMicros: 0n, costMicros: 1n })).result)
        .toBe(SettleResult.SETTLE_RESULT_INVALID_ARGUMENT);
      expect((await ledger.verify()).differences).toEqual([]);
    });

    it('promotion: a Reserve with grant_id is held out of the grant; its Settle returns the unused part to the wallet; GRANT_NOT_HELD otherwise', async () => {
      const organisationId = await fundedOrganisation(ledger, 10_000n);
      const grantId = uniqueId('grant');
      await ledger.acquireGrant({ grantId, organisationId, projectId: 'p', minMicros: 1_000n, wantMicros: 1_000n });
      const reservationId = uniqueId('promoted');
      const promoted = await ledger.reserve({ reservationId, organisationId, projectId: 'p', amountMicros: 400n, grantId });
      expect(promoted.result).toBe(ReserveResult.RESERVE_RESULT_OK);
      expect(await grantRow(ledger, grantId)).toMatchObject({ remaining_micros: 600n });
      expect(await balancesOf(ledger, organisationId)).toEqual({ creditedMicros: 10_000n, availableMicros: 9_000n, heldMicros: 1_000n, debitedMicros: 0n });
      expect((await ledger.reserve({ organisationId, projectId: 'p', amountMicros: 601n, grantId })).result).toBe(ReserveResult.RESERVE_RESULT_GRANT_NOT_HELD);
      expect((await ledger.reserve({ organisationId, projectId: 'other', amountMicros: 1n, grantId })).result).toBe(ReserveResult.RESERVE_RESULT_GRANT_NOT_HELD);
      const settled = await ledger.settle({ reservationId, grantId, reservedMicros: 400n, costMicros: 100n });
      expect(settled).toMatchObject({ debitedMicros: 100n, releasedMicros: 300n });
      expect(await balancesOf(ledger, organisationId)).toEqual({ creditedMicros: 10_000n, availableMicros: 9_300n, heldMicros: 600n, debitedMicros: 100n });
      await ledger.adjustGrant({ grantId, close: true, reason: 'shutdown' });
      expect((await ledger.reserve({ organisationId, projectId: 'p', amountMicros: 1n, grantId })).result).toBe(ReserveResult.RESERVE_RESULT_GRANT_NOT_HELD);
    });

    it('AdjustGrant: return (capped), extend, close, replay and conflict, ALREADY_RESOLVED, GRANT_UNKNOWN', async () => {
      const organisationId = await fundedOrganisation(ledger, 10_000n);
      const grantId = uniqueId('grant');
      const held = await ledger.acquireGrant({ grantId, organisationId, minMicros: 800n, wantMicros: 800n, ttlMs: 5_000n });
      const adjustmentId = uniqueId('adj');
      const extended = await ledger.adjustGrant({ adjustmentId, grantId, returnMicros: 300n, extendTtlMs: 600_000n });
      expect(extended).toMatchObject({ result: AdjustGrantResult.ADJUST_GRANT_RESULT_OK, returnedMicros: 300n, remainingMicros: 500n, recalled: false });
      expect(extended.expiresAtMs).toBeGreaterThan(held.expiresAtMs + 500_000n);
      expect(await ledger.adjustGrant({ adjustmentId, grantId, returnMicros: 300n, extendTtlMs: 600_000n })).toMatchObject({ returnedMicros: 300n, remainingMicros: 500n });
      expect((await ledger.adjustGrant({ adjustmentId, grantId, returnMicros: 301n, extendTtlMs: 600_000n })).result).toBe(AdjustGrantResult.ADJUST_GRANT_RESULT_IDEMPOTENCY_CONFLICT);
      expect(await ledger.adjustGrant({ grantId, returnMicros: 0n, close: true })).toMatchObject({ returnedMicros: 500n, remainingMicros: 0n });
      expect((await ledger.adjustGrant({ grantId, returnMicros: 1n })).result).toBe(AdjustGrantResult.ADJUST_GRANT_RESULT_ALREADY_RESOLVED);
      expect((await ledger.adjustGrant({ grantId: uniqueId('none') })).result).toBe(AdjustGrantResult.ADJUST_GRANT_RESULT_GRANT_UNKNOWN);
      expect(await balancesOf(ledger, organisationId)).toEqual({ creditedMicros: 10_000n, availableMicros: 10_000n, heldMicros: 0n, debitedMicros: 0n });
    });

    it('EXPIRY: the sweeper expires a grant past its deadline, everything it holds returns; a carved settle after that debits available', async () => {
      const organisationId = await fundedOrganisation(ledger, 10_000n);
      const grantId = uniqueId('grant');
      await ledger.acquireGrant({ grantId, organisationId, minMicros: 600n, wantMicros: 600n, ttlMs: 1_000n });
      await carvedSettle(ledger, grantId, 100n, 100n);
      await expect.poll(async () => (await grantRow(ledger, grantId))?.status, { timeout: 15_000 }).toBe('expired');
      expect(await balancesOf(ledger, organisationId)).toEqual({ creditedMicros: 10_000n, availableMicros: 9_900n, heldMicros: 0n, debitedMicros: 100n });
      expect(await carvedSettle(ledger, grantId, 100n, 60n)).toMatchObject({ debitedMicros: 60n, overrunMicros: 60n, availableMicros: 9_840n });
      expect((await ledger.adjustGrant({ grantId, close: true })).result).toBe(AdjustGrantResult.ADJUST_GRANT_RESULT_ALREADY_RESOLVED);
    });

    it('INTERNAL_MODE and PROJECT_BUDGET: an internal grant without a budget is `want`; with a budget it is a share of the headroom and counts in held(p)', async () => {
      const organisationId = await fundedOrganisation(ledger, 0n);
      const free = await ledger.acquireGrant({ organisationId, projectId: uniqueId('p'), billingMode: BillingMode.BILLING_MODE_INTERNAL, minMicros: 1n, wantMicros: 7_000n });
      expect(free).toMatchObject({ result: AcquireGrantResult.ACQUIRE_GRANT_RESULT_OK, grantedMicros: 7_000n });
      const projectId = uniqueId('budgeted');
      await ledger.setProjectBudget({ organisationId, projectId, monthlyCapMicros: 10_000n, softAlertPercent: 90 });
      const grantId = uniqueId('grant');
      const capped = await ledger.acquireGrant({ grantId, organisationId, projectId, billingMode: BillingMode.BILLING_MODE_INTERNAL, minMicros: 1n, wantMicros: 7_000n });
      expect(capped.grantedMicros).toBe(1_000n);
      expect((await ledger.getProjectSpend(projectId)).heldMicros).toBe(1_000n);
      // A carve of 300 costing 200: spend 200, grant 800 left, held(p) 800.
      await carvedSettle(ledger, grantId, 300n, 200n);
      expect(await ledger.getProjectSpend(projectId)).toMatchObject({ settledMicros: 200n, heldMicros: 800n });
      // 8,950 + 200 + 800 > 10,000: refused, and the project's grant recalled.
      const refused = await ledger.reserve({ organisationId, projectId, billingMode: BillingMode.BILLING_MODE_INTERNAL, amountMicros: 9_001n });
      expect(refused).toMatchObject({ result: ReserveResult.RESERVE_RESULT_PROJECT_BUDGET_EXCEEDED, grantsRecalled: 1 });
      expect(await balancesOf(ledger, organisationId)).toEqual({ creditedMicros: 0n, availableMicros: 0n, heldMicros: 0n, debitedMicros: 0n });
    });

    it('settle_batch on the Operate stream: one answer per Settle, in order, each exactly a Settle', async () => {
      const organisationId = await fundedOrganisation(ledger, 10_000n);
      const grantId = uniqueId('grant');
      await ledger.acquireGrant({ grantId, organisationId, minMicros: 1_000n, wantMicros: 1_000n });
      const stream: ClientDuplexStream<ledgerV1.OperationRequest, ledgerV1.OperationResponse> = ledger.client.operate();
      const answer = new Promise<ledgerV1.OperationResponse>((resolve) => { stream.on('data', resolve); });
      const settles = [10n, 20n, 30n, 0n].map((costMicros) => ledgerV1.SettleRequest.fromPartial({
        reservationId: uniqueId('carve'), costMicros, modelSlug: 'm', usageSource: UsageSource.USAGE_SOURCE_UPSTREAM, grantId, reservedMicros: 25n,
      }));
      stream.write({ callId: 7n, requestId: '', settleBatch: { settles } });
      const response = await answer;
      expect(response.callId).toBe(7n);
      expect(response.settleBatch?.settles.map((s) => [s.result, s.debitedMicros, s.overrunMicros]))
        .toEqual([[1, 10n, 0n], [1, 20n, 0n], [1, 30n, 5n], [1, 0n, 0n]]);
      expect(await grantRow(ledger, grantId)).toMatchObject({ remaining_micros: 940n });
      stream.end();
    });

    // Two connections at once: PostgreSQL only (PGlite has one).
    if (backend === 'postgres') it('ONE_OUTCOME: a carve promoted while its set-based batch waited for the grant is settled as the promoted reservation, not as a carve', async () => {
      const organisationId = await fundedOrganisation(ledger, 100_000n);
      const grantId = uniqueId('grant');
      await ledger.acquireGrant({ grantId, organisationId, minMicros: 1_000n, wantMicros: 1_000n });
      const { rows: [grant] } = await ledger.database.query<{ project_id: string; billing_mode: string }>('SELECT project_id, billing_mode FROM grants WHERE id = $1', [grantId]);
      const [promotedId, carvedId] = [uniqueId('promoted'), uniqueId('carve')];
      // The operations as the domain builds them (validated and fingerprinted), sent as the batcher sends them.
      const collect = (into: LedgerOperation[]) => ({ run: (operation: LedgerOperation) => { into.push(operation); return new Promise<never>(() => {}); } });
      const payload = (operations: LedgerOperation[]) => JSON.stringify(operations.map((operation) => ({
        ...operation.fields, kind: operation.kind, reservationId: operation.reservationId, fingerprint: operation.fingerprint,
      })));
      const settles: LedgerOperation[] = [];
      for (const reservationId of [promotedId, carvedId]) {
        void settle(collect(settles), { reservationId, inputTokens: 1n, outputTokens: 1n, costMicros: 100n, providerCostMicros: 0n, modelSlug: 'm', usageSource: 'upstream', requestId: '', overrunOutputTokens: 0n, grantId, reservedMicros: 300n });
      }
      const promotion: LedgerOperation[] = [];
      void reserve(collect(promotion), { reservationId: promotedId, organisationId, projectId: grant!.project_id, billingMode: grant!.billing_mode as 'commercial', amountMicros: 300n, ttlMs: 60_000n, modelSlug: 'm', grantId });

      // The promotion holds the grant's row lock while the batch of Settles reaches it (having found no reservation of either id), then commits.
      let batch: Promise<unknown> | undefined;
      await ledger.database.transaction(async (tx) => {
        await tx.query('SELECT 1 FROM grants WHERE id = $1 FOR UPDATE', [grantId]);
        batch = applyLedgerOperations(ledger.database, settles);
        for (let waited = 0; ; waited += 10) {
          const { rows } = await ledger.database.query<{ waiting: string }>(
            "SELECT count(*)::text AS waiting FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%ledger_apply_batch%'");
          if (rows[0]!.waiting !== '0') break;
          if (waited > 10_000) throw new Error('the batch never waited for the grant lock');
          await new Promise((resolve) => setTimeout(resolve, 10));
        }
        const { rows } = await tx.query<{ result: string }>('SELECT result FROM ledger_apply_batch($1::jsonb, false)', [payload(promotion)]);
        expect(rows.map((row) => row.result)).toEqual(['ok']);
      });
      const answers = await batch! as Array<{ ok: boolean; result?: string }>;
      expect(answers.map((answer) => answer.ok && answer.result)).toEqual(['ok', 'ok']);
      // The promoted one is settled as its reservation (one outcome, one record), the other as a carve.
      const { rows: reservations } = await ledger.database.query<{ id: string; status: string }>('SELECT id, status FROM reservations WHERE id = ANY ($1)', [[promotedId, carvedId]]);
      expect(reservations).toEqual([{ id: promotedId, status: 'settled' }]);
      const { rows: records } = await ledger.database.query<{ reservation_id: string; grant_id: string | null }>(
        'SELECT reservation_id, grant_id FROM usage_records WHERE reservation_id = ANY ($1) ORDER BY reservation_id = $2 DESC', [[promotedId, carvedId], promotedId]);
      expect(records).toEqual([{ reservation_id: promotedId, grant_id: null }, { reservation_id: carvedId, grant_id: grantId }]);
      expect((await balancesOf(ledger, organisationId)).debitedMicros).toBe(200n);
      expect((await ledger.verify()).differences).toEqual([]);
    });

    it('the set-based batch takes carved settles (and mixes them with Reserves and ordinary Settles) with exact money', async () => {
      const organisationId = await fundedOrganisation(ledger, 100_000n);
      const grantId = uniqueId('grant');
      await ledger.acquireGrant({ grantId, organisationId, minMicros: 1_000n, wantMicros: 1_000n });
      const held = uniqueId('res');
      await ledger.reserve({ reservationId: held, organisationId, amountMicros: 500n });
      const carves = Array.from({ length: 20 }, (_, index) => ({ id: uniqueId('carve'), cost: BigInt(index * 10) }));
      // Build the operations as the domain does (settle() validates and fingerprints), one batch.
      const operations: Parameters<typeof applyLedgerOperations>[1][number][] = [];
      const capture = { run: async (operation: (typeof operations)[number]) => { operations.push(operation); return { ok: true as const, result: 'ok', availableMicros: 0n, expiresAtMs: 0n, debitedMicros: 0n, releasedMicros: 0n, overrunMicros: 0n, detail: '' }; } };
      for (const carve of carves) {
        await settle(capture, { reservationId: carve.id, inputTokens: 1n, outputTokens: 1n, costMicros: carve.cost, providerCostMicros: 0n, modelSlug: 'm', usageSource: 'upstream', requestId: '', overrunOutputTokens: 0n, grantId, reservedMicros: 100n });
      }
      await settle(capture, { reservationId: held, inputTokens: 1n, outputTokens: 1n, costMicros: 600n, providerCostMicros: 0n, modelSlug: 'm', usageSource: 'upstream', requestId: '', overrunOutputTokens: 0n });
      const answers = await applyLedgerOperations(ledger.database, operations);
      expect(answers.every((answer) => answer.ok && answer.result === 'ok')).toBe(true);
      // Carves cost 0+10+…+190 = 1,900 against a grant of 1,000: 1,000 from the grant, 900 from available.
      expect(await grantRow(ledger, grantId)).toMatchObject({ remaining_micros: 0n });
      expect(await balancesOf(ledger, organisationId)).toEqual({ creditedMicros: 100_000n, availableMicros: 100_000n - 1_900n - 600n, heldMicros: 0n, debitedMicros: 2_500n });
      // One settle movement for the batch's carves of the grant (their sums), none per carve; the ordinary Settle keeps its own.
      const { rows: settleMovements } = await ledger.database.query<{ reservation_id: string | null; grant_id: string | null; amount: string; available: string; held: string; carves: string | null }>(
        `SELECT reservation_id, grant_id, amount_micros::text AS amount, available_delta_micros::text AS available,
           held_delta_micros::text AS held, detail->>'carves' AS carves
         FROM movements WHERE organisation_id = $1 AND kind = 'settle' ORDER BY id`, [organisationId]);
      expect(settleMovements).toEqual([
        { reservation_id: null, grant_id: grantId, amount: '1900', available: '-900', held: '-1000', carves: '20' },
        { reservation_id: held, grant_id: null, amount: '600', available: '-100', held: '-500', carves: null },
      ]);
      const last = answers[answers.length - 1]!;
      expect(last.ok && [last.debitedMicros, last.overrunMicros]).toEqual([600n, 100n]);
      // A replay of the whole batch answers the same and moves nothing.
      const before = await ledger.countRows();
      const replay = await applyLedgerOperations(ledger.database, operations);
      expect(replay.map((answer) => answer.ok && answer.debitedMicros)).toEqual(answers.map((answer) => answer.ok && answer.debitedMicros));
      expect(await ledger.countRows()).toEqual(before);
      expect((await ledger.verify()).differences).toEqual([]);
    });
  });
}
