import { ledgerV1 } from '@gateway/contracts';
import { testPostgresUrl } from '@gateway/testkit';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expireDueReservations } from './domain/expire-due-reservations.ts';
import { startTestLedger, uniqueId, type TestLedger } from './testing/start-test-ledger.ts';

const { ReserveResult, CreditResult, RefundCreditResult, BillingMode } = ledgerV1;
const serverUrl = testPostgresUrl();
/** Runs per property; raise with LEDGER_PROPERTY_RUNS for a longer search. */
const numRuns = Number(process.env.LEDGER_PROPERTY_RUNS ?? '25');

/** One operation of a step; indexes pick an organisation, project or earlier reservation (modulo). */
type Operation =
  | { kind: 'credit'; organisation: number; amountMicros: bigint }
  | { kind: 'refund'; organisation: number; amountMicros: bigint }
  | { kind: 'reserve'; organisation: number; project: number; internal: boolean; amountMicros: bigint }
  | { kind: 'settle'; reservation: number; costPercent: number }
  | { kind: 'release'; reservation: number }
  | { kind: 'expire'; reservation: number }
  | { kind: 'checkpoint'; reservation: number; costPercent: number };

const operation: fc.Arbitrary<Operation> = fc.oneof(
  fc.record({ kind: fc.constant('credit' as const), organisation: fc.nat(2), amountMicros: fc.bigInt(1n, 3_000_000n) }),
  // A refund of part of the organisation's first credit (4,000,000 µ₹): beyond available, or beyond what is left of the credit, it is refused.
  fc.record({ kind: fc.constant('refund' as const), organisation: fc.nat(2), amountMicros: fc.bigInt(1n, 2_500_000n) }),
  fc.record({
    // Project 0 (the one with a budget) is picked half the time, so the cap is often contended.
    kind: fc.constant('reserve' as const), organisation: fc.nat(2), project: fc.constantFrom(0, 0, 0, 1, 2), internal: fc.boolean(),
    amountMicros: fc.bigInt(1n, 2_000_000n),
  }),
  fc.record({ kind: fc.constant('reserve' as const), organisation: fc.nat(2), project: fc.constantFrom(0, 1), internal: fc.constant(false), amountMicros: fc.bigInt(1n, 800_000n) }),
  // Up to 120 % of the Reserve: the bounded streaming overrun (BOUNDED_OVERRUN).
  fc.record({ kind: fc.constant('settle' as const), reservation: fc.nat(50), costPercent: fc.integer({ min: 0, max: 120 }) }),
  fc.record({ kind: fc.constant('release' as const), reservation: fc.nat(50) }),
  fc.record({ kind: fc.constant('expire' as const), reservation: fc.nat(50) }),
  fc.record({ kind: fc.constant('checkpoint' as const), reservation: fc.nat(50), costPercent: fc.integer({ min: 0, max: 110 }) }),
);

/** Steps of operations that run concurrently within a step. */
const scenario = fc.array(fc.array(operation, { minLength: 1, maxLength: 5 }), { minLength: 2, maxLength: 8 });

/** A reservation the model knows was held. */
interface Held {
  id: string;
  amountMicros: bigint;
  checkpointSequence: bigint;
}

/** Random interleavings of every money operation, checked against the laws after every step. */
describe.skipIf(!serverUrl)('ledger properties', () => {
  let ledger: TestLedger;
  beforeAll(async () => { ledger = await startTestLedger('postgres', { serverUrl, sweepIntervalMs: 600_000 }); });
  afterAll(async () => { await ledger?.close(); });

  /** NO_OVERSPEND, CONSERVATION and PROJECT_BUDGET for the organisations and projects of one run, from the database in one snapshot. */
  async function checkLaws(organisations: string[], projects: string[], caps: Map<string, bigint>, creditedByModel: Map<string, bigint>) {
    for (const organisationId of organisations) {
      const balance = await ledger.getBalance(organisationId);
      // CONSERVATION, and the credits the model saw succeed.
      expect(balance.creditedMicros).toBe(balance.availableMicros + balance.heldMicros + balance.debitedMicros);
      expect(balance.creditedMicros).toBe(creditedByModel.get(organisationId));
      // NO_OVERSPEND: only recorded overruns (settle movements' negative available deltas) can take available below zero.
      const { rows } = await ledger.database.query<{ overrun: bigint }>(
        `SELECT coalesce(-sum(available_delta_micros), 0)::bigint AS overrun FROM movements WHERE organisation_id = $1 AND kind = 'settle'`,
        [organisationId]);
      expect(balance.availableMicros + rows[0]!.overrun).toBeGreaterThanOrEqual(0n);
      if (rows[0]!.overrun === 0n) expect(balance.availableMicros).toBeGreaterThanOrEqual(0n);
    }
    for (const projectId of projects) {
      const cap = caps.get(projectId);
      if (cap === undefined) continue;
      const spend = await ledger.getProjectSpend(projectId);
      // PROJECT_BUDGET: settled + held stays under the cap, except by what usage ran past its hold
      // (BOUNDED_OVERRUN): past its Reserve, or, for an expired reservation, past what its expiry charged
      // from the hold; a late settle's cost arrives after the hold was returned, so all of it is
      // overrun (docs/ledger.md, "Expiry and late settles"), and a Reserve admitted in between
      // was right to fit.
      const { rows } = await ledger.database.query<{ excess: bigint }>(
        `SELECT coalesce(sum(CASE WHEN r.status = 'expired'
             THEN greatest(u.cost_micros - least(coalesce(r.expiry_charged_micros, 0), r.amount_micros), 0)
             ELSE greatest(u.cost_micros - r.amount_micros, 0) END), 0)::bigint AS excess
         FROM usage_records u JOIN reservations r ON r.id = u.reservation_id WHERE u.project_id = $1`, [projectId]);
      expect(spend.settledMicros + spend.heldMicros).toBeLessThanOrEqual(cap + rows[0]!.excess);
    }
  }

  let heldTotal = 0n;
  let refundsApplied = 0;

  it('keeps CONSERVATION, NO_OVERSPEND and PROJECT_BUDGET after every step (refunds included), ONE_OUTCOME and NOTHING_FREE per reservation, and verifies clean', async () => {
    await fc.assert(fc.asyncProperty(scenario, fc.bigInt(500_000n, 3_000_000n), async (steps, projectCapMicros) => {
      const organisations = [uniqueId('prop-org'), uniqueId('prop-org'), uniqueId('prop-org')];
      const creditedByModel = new Map<string, bigint>();
      for (const organisationId of organisations) {
        await ledger.openAccount(organisationId);
        await ledger.credit({ organisationId, creditId: `first-credit:${organisationId}`, amountMicros: 4_000_000n });
        creditedByModel.set(organisationId, 4_000_000n);
      }
      // Project p belongs to organisation p; project 0 has a budget.
      const projects = organisations.map(() => uniqueId('prop-project'));
      const caps = new Map([[projects[0]!, projectCapMicros]]);
      await ledger.setProjectBudget({ organisationId: organisations[0]!, projectId: projects[0]!, monthlyCapMicros: projectCapMicros, softAlertPercent: 50 });
      const held: Held[] = [];
      const pick = (index: number) => (held.length === 0 ? undefined : held[index % held.length]);

      const run = async (op: Operation): Promise<void> => {
        switch (op.kind) {
          case 'credit': {
            const organisationId = organisations[op.organisation]!;
            const response = await ledger.credit({ organisationId, amountMicros: op.amountMicros });
            expect(response.result).toBe(CreditResult.CREDIT_RESULT_OK);
            creditedByModel.set(organisationId, creditedByModel.get(organisationId)! + op.amountMicros);
            return;
          }
          case 'refund': {
            const organisationId = organisations[op.organisation]!;
            const response = await ledger.refundCredit({ organisationId, creditId: `first-credit:${organisationId}`, amountMicros: op.amountMicros });
            expect([RefundCreditResult.REFUND_CREDIT_RESULT_OK, RefundCreditResult.REFUND_CREDIT_RESULT_INSUFFICIENT_BALANCE,
              RefundCreditResult.REFUND_CREDIT_RESULT_EXCEEDS_CREDIT]).toContain(response.result);
            if (response.result === RefundCreditResult.REFUND_CREDIT_RESULT_OK) {
              // NO_OVERSPEND: a refund never takes available below zero.
              expect(response.availableMicros).toBeGreaterThanOrEqual(0n);
              creditedByModel.set(organisationId, creditedByModel.get(organisationId)! - op.amountMicros);
              refundsApplied += 1;
            }
            if (response.result === RefundCreditResult.REFUND_CREDIT_RESULT_INSUFFICIENT_BALANCE) {
              expect(response.availableMicros).toBeLessThan(op.amountMicros);
            }
            return;
          }
          case 'reserve': {
            const id = uniqueId('prop-r');
            const response = await ledger.reserve({
              reservationId: id, organisationId: organisations[op.organisation]!, projectId: projects[op.project]!,
              amountMicros: op.amountMicros, billingMode: op.internal ? BillingMode.BILLING_MODE_INTERNAL : BillingMode.BILLING_MODE_COMMERCIAL,
            });
            expect([ReserveResult.RESERVE_RESULT_OK, ReserveResult.RESERVE_RESULT_INSUFFICIENT_BALANCE,
              ReserveResult.RESERVE_RESULT_PROJECT_BUDGET_EXCEEDED]).toContain(response.result);
            if (response.result === ReserveResult.RESERVE_RESULT_OK) held.push({ id, amountMicros: op.amountMicros, checkpointSequence: 0n });
            return;
          }
          case 'settle': {
            const target = pick(op.reservation);
            if (target) await ledger.settle({ reservationId: target.id, costMicros: (target.amountMicros * BigInt(op.costPercent)) / 100n });
            return;
          }
          case 'release': {
            const target = pick(op.reservation);
            if (target) await ledger.release({ reservationId: target.id });
            return;
          }
          case 'expire': {
            const target = pick(op.reservation);
            if (!target) return;
            await ledger.database.query("UPDATE reservations SET expires_at = now() - interval '1 second' WHERE id = $1 AND status = 'held'", [target.id]);
            await expireDueReservations(ledger.database, 500);
            return;
          }
          case 'checkpoint': {
            const target = pick(op.reservation);
            if (!target) return;
            target.checkpointSequence += 1n;
            // Running totals only grow: the sequence scales them.
            const costMicros = (target.amountMicros * BigInt(op.costPercent) * target.checkpointSequence) / 400n;
            await ledger.checkpoint({ reservationId: target.id, sequence: target.checkpointSequence, costMicros, outputTokens: target.checkpointSequence });
            return;
          }
        }
      };

      for (const step of steps) {
        await Promise.all(step.map(run));
        await checkLaws(organisations, projects, caps, creditedByModel);
      }
      // ONE_OUTCOME and NOTHING_FREE: one outcome each; a usage record exactly for settled ones and expiries that charged or were settled late.
      const { rows } = await ledger.database.query<{ status: string; settled: boolean; checkpointed: boolean; records: bigint }>(
        `SELECT r.status, r.settle_fingerprint IS NOT NULL AS settled, r.expiry_charged_micros IS NOT NULL AS checkpointed,
           (SELECT count(*) FROM usage_records u WHERE u.reservation_id = r.id) AS records
         FROM reservations r WHERE r.organisation_id = ANY($1)`, [organisations]);
      for (const row of rows) {
        const expectRecord = row.status === 'settled' || (row.status === 'expired' && (row.settled || row.checkpointed));
        expect(row.records).toBe(expectRecord ? 1n : 0n);
      }
      heldTotal += BigInt(held.length);
      const verification = await ledger.verify();
      expect(verification.differences).toEqual([]);
    }), { numRuns, endOnFailure: true });
    // The generator must actually exercise the ledger, not only its refusals.
    expect(heldTotal).toBeGreaterThan(BigInt(numRuns));
    expect(refundsApplied).toBeGreaterThan(0);
  }, 180_000);
});
