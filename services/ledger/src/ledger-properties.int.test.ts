import { ledgerV1 } from '@gateway/contracts';
import { testPostgresUrl } from '@gateway/testkit';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { expireDueGrants } from './domain/expire-due-grants.ts';
import { expireDueReservations } from './domain/expire-due-reservations.ts';
import { uniqueId, type TestLedger } from './testing/start-test-ledger.ts';
import { useTestLedger } from './testing/ledger-test-setup.ts';

const { ReserveResult, CreditResult, RefundCreditResult, BillingMode } = ledgerV1;
const serverUrl = testPostgresUrl();
/** Runs per property; raise with LEDGER_PROPERTY_RUNS for a longer search. */
const numRuns = Number(process.env.LEDGER_PROPERTY_RUNS ?? '25');

/**
 * CONSERVATION and NO_OVERSPEND for each organisation of a run, read from the database: credited
 * = available + held + debited and equals the credits the model saw succeed; only recorded
 * overruns (settle movements' negative available deltas, carves beyond their grant included)
 * take available below zero.
 */
async function checkOrganisationBalances(ledger: TestLedger, organisations: string[], creditedByModel: Map<string, bigint>): Promise<void> {
  for (const organisationId of organisations) {
    const balance = await ledger.getBalance(organisationId);
    expect(balance.creditedMicros).toBe(balance.availableMicros + balance.heldMicros + balance.debitedMicros);
    expect(balance.creditedMicros).toBe(creditedByModel.get(organisationId));
    const { rows } = await ledger.database.query<{ overrun: bigint }>(
      `SELECT coalesce(-sum(available_delta_micros), 0)::bigint AS overrun FROM movements WHERE organisation_id = $1 AND kind = 'settle'`,
      [organisationId]);
    expect(balance.availableMicros + rows[0]!.overrun).toBeGreaterThanOrEqual(0n);
    if (rows[0]!.overrun === 0n) expect(balance.availableMicros).toBeGreaterThanOrEqual(0n);
  }
}

/** One operation of a step; indexes pick an organisation, project or earlier reservation (modulo). */
type Operation =
  | { kind: 'credit'; organisation: number; amountMicros: bigint }
  | { kind: 'refund'; organisation: number; amountMicros: bigint }
  | { kind: 'reserve'; organisation: number; project: number; internal: boolean; amountMicros: bigint }
  | { kind: 'settle'; reservation: number; costPercent: number; failedAttempts: number }
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
  // With up to two failed attempts before the answering deployment (issue 29): they move no money.
  fc.record({ kind: fc.constant('settle' as const), reservation: fc.nat(50), costPercent: fc.integer({ min: 0, max: 120 }), failedAttempts: fc.nat(2) }),
  fc.record({ kind: fc.constant('release' as const), reservation: fc.nat(50) }),
  fc.record({ kind: fc.constant('expire' as const), reservation: fc.nat(50) }),
  fc.record({ kind: fc.constant('checkpoint' as const), reservation: fc.nat(50), costPercent: fc.integer({ min: 0, max: 110 }) }),
);

/** `count` failed attempts a provider may have billed, on deployments "d1", "d2", ... (issue 29). */
function failedAttempts(count: number): ledgerV1.ProviderAttempt[] {
  return Array.from({ length: count }, (_, index) => ({
    attempt: index + 1, deployment: `d${index + 1}`, outcome: 'timeout', inputTokens: 10n, outputTokens: 0n, providerCostMicros: 7n,
  }));
}

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
  const ledger = useTestLedger('postgres', { serverUrl, sweepIntervalMs: 600_000 });

  /** NO_OVERSPEND, CONSERVATION and PROJECT_BUDGET for the organisations and projects of one run, from the database in one snapshot. */
  async function checkLaws(organisations: string[], projects: string[], caps: Map<string, bigint>, creditedByModel: Map<string, bigint>) {
    await checkOrganisationBalances(ledger, organisations, creditedByModel);
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
      // Credits not purchased (every credit after the first): never refundable.
      const notPurchasedByModel = new Map<string, bigint>();
      for (const organisationId of organisations) {
        await ledger.openAccount(organisationId);
        await ledger.credit({ organisationId, creditId: `first-credit:${organisationId}`, amountMicros: 4_000_000n, purchased: true });
        creditedByModel.set(organisationId, 4_000_000n);
        notPurchasedByModel.set(organisationId, 0n);
      }
      // Project p belongs to organisation p; project 0 has a budget.
      const projects = organisations.map(() => uniqueId('prop-project'));
      const caps = new Map([[projects[0]!, projectCapMicros]]);
      await ledger.setProjectBudget({ organisationId: organisations[0]!, projectId: projects[0]!, monthlyCapMicros: projectCapMicros, softAlertPercent: 50 });
      const held: Held[] = [];
      const pick = (index: number) => (held.length === 0 ? undefined : held[index % held.length]);
      // The failed attempts each reservation's resolving call sent: the Settle answered OK, or the
      // Release (every Release of a reservation sends the same: one per held index parity).
      const attemptsSent = new Map<string, { settled: number | undefined; released: number }>();

      const run = async (op: Operation): Promise<void> => {
        switch (op.kind) {
          case 'credit': {
            const organisationId = organisations[op.organisation]!;
            const response = await ledger.credit({ organisationId, amountMicros: op.amountMicros });
            expect(response.result).toBe(CreditResult.CREDIT_RESULT_OK);
            creditedByModel.set(organisationId, creditedByModel.get(organisationId)! + op.amountMicros);
            notPurchasedByModel.set(organisationId, notPurchasedByModel.get(organisationId)! + op.amountMicros);
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
              // Only purchased, unspent credit is refundable: what is available beyond the credits not purchased.
              expect(response.availableMicros - notPurchasedByModel.get(organisationId)!).toBeLessThan(op.amountMicros);
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
            if (!target) return;
            const answer = await ledger.settle({
              reservationId: target.id, costMicros: (target.amountMicros * BigInt(op.costPercent)) / 100n,
              deployment: `d${op.failedAttempts + 1}`, failedAttempts: failedAttempts(op.failedAttempts),
            });
            if (answer.result === ledgerV1.SettleResult.SETTLE_RESULT_OK) {
              attemptsSent.set(target.id, { settled: op.failedAttempts, released: attemptsSent.get(target.id)?.released ?? 0 });
            }
            return;
          }
          case 'release': {
            const target = pick(op.reservation);
            if (!target) return;
            const releasedAttempts = held.indexOf(target) % 2;
            await ledger.release({ reservationId: target.id, failedAttempts: failedAttempts(releasedAttempts) });
            attemptsSent.set(target.id, { settled: attemptsSent.get(target.id)?.settled, released: releasedAttempts });
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
      // Failed attempts (issue 29): kept exactly once, and only as the call that resolved the
      // reservation sent them: a settled one's from its Settle, a released one's from its Release.
      const attempts = await ledger.database.query<{ id: string; status: string; settled: boolean; attempts: bigint; deployment: string | null }>(
        `SELECT r.id, r.status, r.settle_fingerprint IS NOT NULL AS settled,
           (SELECT count(*) FROM provider_attempts p WHERE p.reservation_id = r.id) AS attempts,
           (SELECT u.deployment FROM usage_records u WHERE u.reservation_id = r.id) AS deployment
         FROM reservations r WHERE r.organisation_id = ANY($1)`, [organisations]);
      for (const row of attempts.rows) {
        const sent = attemptsSent.get(row.id);
        const expected = row.settled ? sent?.settled ?? 0 : row.status === 'released' ? sent?.released ?? 0 : 0;
        expect(row.attempts).toBe(BigInt(expected));
        if (row.settled) expect(row.deployment).toBe(`d${(sent?.settled ?? 0) + 1}`);
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

/** One operation of a grant step; indexes pick an organisation, project, grant, reservation or earlier call (modulo). */
type GrantOperation =
  | { kind: 'acquire'; organisation: number; project: number; internal: boolean; minMicros: bigint; wantMicros: bigint }
  | { kind: 'carve'; grant: number; reservedMicros: bigint; costPercent: number; late: boolean }
  | { kind: 'promote'; grant: number; reservedMicros: bigint }
  | { kind: 'reserve'; organisation: number; project: number; amountMicros: bigint }
  | { kind: 'settle'; reservation: number; costPercent: number }
  | { kind: 'checkpoint'; reservation: number; costPercent: number }
  | { kind: 'adjust'; grant: number; action: 'return' | 'extend' | 'close'; returnPercent: number }
  | { kind: 'expireGrant'; grant: number }
  | { kind: 'expireReservation'; reservation: number }
  | { kind: 'credit'; organisation: number; amountMicros: bigint }
  | { kind: 'replay'; call: number }
  | { kind: 'conflict'; call: number }
  | { kind: 'budget'; capMicros: bigint };

const grantOperation: fc.Arbitrary<GrantOperation> = fc.oneof(
  { weight: 4, arbitrary: fc.record({
    // Project 0 of organisation 0 has a budget (PROJECT_BUDGET sizing); wants above 10 % of the
    // balance are cut to the share (NO_OVERSPEND), mins above it are NOT_GRANTED.
    kind: fc.constant('acquire' as const), organisation: fc.nat(1), project: fc.nat(1), internal: fc.boolean(),
    minMicros: fc.oneof(fc.bigInt(1n, 60_000n), fc.bigInt(300_000n, 700_000n)), wantMicros: fc.bigInt(1n, 600_000n),
  }) },
  // Carved settles below, at and above the carve (BOUNDED_OVERRUN); a late one ignores what the
  // proxy would still carve (its settle arrives after a return, close or expiry).
  { weight: 8, arbitrary: fc.record({
    kind: fc.constant('carve' as const), grant: fc.nat(30), reservedMicros: fc.bigInt(1n, 40_000n),
    costPercent: fc.oneof(fc.integer({ min: 0, max: 99 }), fc.constant(100), fc.integer({ min: 101, max: 150 })), late: fc.integer({ min: 0, max: 2 }).map((roll) => roll === 0),
  }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('promote' as const), grant: fc.nat(30), reservedMicros: fc.bigInt(1n, 40_000n) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('reserve' as const), organisation: fc.nat(1), project: fc.nat(1), amountMicros: fc.bigInt(1n, 5_000_000n) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('settle' as const), reservation: fc.nat(30), costPercent: fc.integer({ min: 0, max: 120 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('checkpoint' as const), reservation: fc.nat(30), costPercent: fc.integer({ min: 0, max: 110 }) }) },
  { weight: 3, arbitrary: fc.record({
    kind: fc.constant('adjust' as const), grant: fc.nat(30), action: fc.constantFrom('return' as const, 'extend' as const, 'close' as const),
    returnPercent: fc.integer({ min: 0, max: 120 }),
  }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('expireGrant' as const), grant: fc.nat(30) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('expireReservation' as const), reservation: fc.nat(30) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('credit' as const), organisation: fc.nat(1), amountMicros: fc.bigInt(1n, 1_000_000n) }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('replay' as const), call: fc.nat(200) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('conflict' as const), call: fc.nat(200) }) },
  // A budget change of project 0 (set lower or higher; from tight to roomy), racing the step's carves, settles and recalls.
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('budget' as const), capMicros: fc.oneof(fc.bigInt(1n, 200_000n), fc.bigInt(200_000n, 3_000_000n)) }) },
);

/** Steps of grant operations that run concurrently within a step. */
const grantScenario = fc.array(fc.array(grantOperation, { minLength: 1, maxLength: 6 }), { minLength: 2, maxLength: 8 });

/** A grant the model knows was held, and what the proxy would still carve from it (µ₹). */
interface ModelGrant {
  id: string;
  organisationId: string;
  projectId: string;
  internal: boolean;
  /** The proxy's uncarved remainder U: carves take from it, a sent settle gives r − c back, a return takes it. */
  uncarvedMicros: bigint;
  /** The proxy answered a recall of it: it carves nothing more (settles of earlier carves still come). */
  recalled: boolean;
}

/**
 * A call whose first answer was stored (IDEMPOTENCY): `again` sends it once more and must get
 * `expected`; `vary` sends the same key with another payload and must be refused as a conflict.
 */
interface StoredCall {
  label: string;
  again: () => Promise<unknown>;
  expected: unknown;
  vary: () => Promise<{ result: number }>;
  conflict: number;
}

/** Grant steps (acquire, carve, promote, adjust, expire, replay) interleaved with Reserves and Settles, checked against the laws after every step. */
describe.skipIf(!serverUrl)('ledger properties with credit grants', () => {
  const { AcquireGrantResult, AdjustGrantResult, SettleResult } = ledgerV1;
  /** Runs of this property: a run is short (two organisations), and rarer paths (a carve beyond its grant, after a close) need a few dozen. */
  const grantRuns = numRuns * 3;
  /** LEDGER_GRANT_MAX_SHARE_PERCENT of the test ledger (its default). */
  const sharePercent = 10n;
  const ledger = useTestLedger('postgres', { serverUrl, sweepIntervalMs: 600_000 });

  /** What the runs reached (the generator must exercise the rules, not only allow them). */
  const reached = {
    granted: 0, notGranted: 0, budgetBound: 0, internal: 0, carvesBelow: 0, carvesAbove: 0, carvesBeyondGrant: 0, carvesAfterResolve: 0,
    promoted: 0, promotedSettled: 0, returned: 0, closed: 0, extended: 0, alreadyResolved: 0, expired: 0, replays: 0, conflicts: 0, recalled: 0,
    budgetTightened: 0, budgetRecallAnswered: 0,
  };

  /** NO_OVERSPEND, CONSERVATION, PROJECT_BUDGET and the grants' own rules, from the database, then Verify. */
  async function checkGrantLaws(organisations: string[], budgetedProject: string, budget: { capMicros: bigint; ceilingMicros: bigint }, creditedByModel: Map<string, bigint>) {
    await checkOrganisationBalances(ledger, organisations, creditedByModel);
    // A grant's remaining never goes below zero nor above what it was granted; a resolved one holds nothing.
    const grants = await ledger.database.query<{ id: string; granted_micros: bigint; remaining_micros: bigint; status: string }>(
      'SELECT id, granted_micros, remaining_micros, status FROM grants WHERE organisation_id = ANY ($1)', [organisations]);
    for (const grant of grants.rows) {
      expect(grant.remaining_micros).toBeGreaterThanOrEqual(0n);
      expect(grant.remaining_micros).toBeLessThanOrEqual(grant.granted_micros);
      if (grant.status !== 'held') expect(grant.remaining_micros).toBe(0n);
    }
    // PROJECT_BUDGET: settled + held(p) (grants' remaining included) stays under the cap, except by
    // usage beyond its hold: a Reserve's past its amount (or past what its expiry charged), a carve's past what its grant gave it.
    const spend = await ledger.getProjectSpend(budgetedProject);
    // The model's cap is the ledger's (budget changes are applied in the order the model saw them answer).
    expect(spend.monthlyCapMicros).toBe(budget.capMicros);
    // Carves are summed per grant (a batch writes one settle movement per grant for its carves):
    // their costs less what the settle movements naming the project's grants took from those grants.
    const { rows } = await ledger.database.query<{ excess: bigint }>(
      `SELECT coalesce(sum(CASE
           WHEN u.grant_id IS NOT NULL OR r.request_fingerprint LIKE 'carved:%' THEN u.cost_micros
           WHEN r.status = 'expired' THEN greatest(u.cost_micros - least(coalesce(r.expiry_charged_micros, 0), r.amount_micros), 0)
           ELSE greatest(u.cost_micros - r.amount_micros, 0) END), 0)::bigint
         + (SELECT coalesce(sum(m.held_delta_micros), 0) FROM movements m JOIN grants g ON g.id = m.grant_id
            WHERE m.kind = 'settle' AND g.project_id = $1)::bigint AS excess
       FROM usage_records u LEFT JOIN reservations r ON r.id = u.reservation_id WHERE u.project_id = $1`, [budgetedProject]);
    // A lowered cap leaves what was admitted before it (ceilingMicros: settled + held when the change answered).
    const capMicros = budget.capMicros;
    const bound = (budget.ceilingMicros > capMicros ? budget.ceilingMicros : capMicros) + rows[0]!.excess;
    expect(spend.settledMicros + spend.heldMicros).toBeLessThanOrEqual(bound);
    // PROJECT_BUDGET (grants): while settled + held is past the cap, no grant of the project can
    // still be carved from (every one is resolved or its owner answered a recall), so no carve
    // taken now passes the cap.
    if (spend.settledMicros + spend.heldMicros > capMicros + rows[0]!.excess) {
      const carvable = await ledger.database.query<{ id: string }>(
        // Past its deadline a grant is carved from by no proxy, swept or not (a sweep skips a row another call holds locked).
        `SELECT id FROM grants WHERE project_id = $1 AND status = 'held' AND recall_answered_at IS NULL AND remaining_micros > 0
           AND expires_at > now()`, [budgetedProject]);
      expect({ capMicros, spent: spend.settledMicros + spend.heldMicros, carvable: carvable.rows.map((row) => row.id) })
        .toEqual({ capMicros, spent: spend.settledMicros + spend.heldMicros, carvable: [] });
    }
    // CONSERVATION (history, holds, grants, rows): Verify finds nothing.
    expect((await ledger.verify()).differences).toEqual([]);
  }

  it('keeps NO_OVERSPEND, CONSERVATION, PROJECT_BUDGET, ONE_OUTCOME and IDEMPOTENCY through acquires, carved settles, promotions, returns, closes, expiries and budget changes', async () => {
    const property = fc.asyncProperty(grantScenario, fc.bigInt(300_000n, 3_000_000n), async (steps, capMicros) => {
      const organisations = [uniqueId('gprop-org'), uniqueId('gprop-org')];
      const creditedByModel = new Map<string, bigint>();
      for (const organisationId of organisations) {
        await ledger.openAccount(organisationId);
        await ledger.credit({ organisationId, amountMicros: 4_000_000n });
        creditedByModel.set(organisationId, 4_000_000n);
      }
      // Project j of organisation i is projects[i][j]; projects[0][0] has a budget.
      const projects = organisations.map(() => [uniqueId('gprop-project'), uniqueId('gprop-project')]);
      const budgetedProject = projects[0]![0]!;
      await ledger.setProjectBudget({ organisationId: organisations[0]!, projectId: budgetedProject, monthlyCapMicros: capMicros, softAlertPercent: 50 });
      const budget = { capMicros, ceilingMicros: 0n };
      /**
       * Budget changes of one step run one after another (each still racing the step's other
       * operations): two changes in flight at once take the ledger's lock in one order and may
       * answer this model in the other, so the model's cap would not be the ledger's.
       */
      let budgetChanges: Promise<void> = Promise.resolve();
      const grants: ModelGrant[] = [];
      /** Grants a recall named before the model knew them (their AcquireGrant answer still on its way): closed unused, like the proxy. */
      const recalledBeforeKnown = new Set<string>();
      const held: Held[] = [];
      const stored: StoredCall[] = [];
      const movedDeadlines = new Set<string>();
      const pickGrant = (index: number) => (grants.length === 0 ? undefined : grants[index % grants.length]);
      const pickHeld = (index: number) => (held.length === 0 ? undefined : held[index % held.length]);
      const billing = (internal: boolean) => (internal ? BillingMode.BILLING_MODE_INTERNAL : BillingMode.BILLING_MODE_COMMERCIAL);

      const run = async (op: GrantOperation): Promise<void> => {
        switch (op.kind) {
          case 'acquire': {
            const organisationId = organisations[op.organisation]!;
            const projectId = projects[op.organisation]![op.project]!;
            const budgeted = projectId === budgetedProject;
            const request = {
              grantId: uniqueId('gprop-grant'), organisationId, projectId, billingMode: billing(op.internal),
              minMicros: op.minMicros, wantMicros: op.wantMicros + op.minMicros, ttlMs: 600_000n, ownerId: 'proxy-prop',
            };
            const response = await ledger.acquireGrant(request);
            if (response.result === AcquireGrantResult.ACQUIRE_GRANT_RESULT_OK) {
              reached.granted++;
              expect(response.grantedMicros).toBeGreaterThanOrEqual(request.minMicros);
              expect(response.grantedMicros).toBeLessThanOrEqual(request.wantMicros);
              if (op.internal) {
                reached.internal++;
                // INTERNAL_MODE: without a budget the grant is `want` (it holds only unlimited headroom).
                if (!budgeted) expect(response.grantedMicros).toBe(request.wantMicros);
              } else {
                // Sizing under the account lock: available before = after + granted; min(want, share of it), lower only by the budget.
                const byBalance = ((response.availableMicros + response.grantedMicros) * sharePercent) / 100n;
                const sized = request.wantMicros < byBalance ? request.wantMicros : byBalance;
                if (budgeted) expect(response.grantedMicros).toBeLessThanOrEqual(sized);
                else expect(response.grantedMicros).toBe(sized);
                if (response.grantedMicros < sized) reached.budgetBound++;
              }
              const early = recalledBeforeKnown.has(request.grantId);
              grants.push({ id: request.grantId, organisationId, projectId, internal: op.internal, uncarvedMicros: early ? 0n : response.grantedMicros, recalled: early });
              stored.push({
                label: 'acquire', again: async () => {
                  const again = await ledger.acquireGrant(request);
                  return { result: again.result, grantedMicros: again.grantedMicros, expiresAtMs: again.expiresAtMs };
                },
                expected: { result: response.result, grantedMicros: response.grantedMicros, expiresAtMs: response.expiresAtMs },
                vary: () => ledger.acquireGrant({ ...request, wantMicros: request.wantMicros + 1n }),
                conflict: AcquireGrantResult.ACQUIRE_GRANT_RESULT_IDEMPOTENCY_CONFLICT,
              });
            } else {
              expect(response.result).toBe(AcquireGrantResult.ACQUIRE_GRANT_RESULT_NOT_GRANTED);
              reached.notGranted++;
              expect(response.grantedMicros).toBe(0n);
              // NOT_GRANTED only when a bound gives less than min: the balance's share (unbudgeted commercial: exactly that).
              if (!op.internal && !budgeted) {
                const available = response.availableMicros > 0n ? response.availableMicros : 0n;
                expect((available * sharePercent) / 100n).toBeLessThan(request.minMicros);
              }
              if (op.internal && !budgeted) throw new Error('an internal grant without a budget is never refused');
              // Nothing written under this id.
              const rows = await ledger.database.query('SELECT 1 FROM grants WHERE id = $1', [request.grantId]);
              expect(rows.rowCount).toBe(0);
            }
            return;
          }
          case 'carve': {
            const grant = pickGrant(op.grant);
            if (!grant) return;
            // The proxy's discipline (design, "Carve"): take r out of U before the call; a late settle ignores it.
            let reservedMicros = op.reservedMicros;
            if (!op.late) {
              if (grant.uncarvedMicros <= 0n || grant.recalled) return;
              if (reservedMicros > grant.uncarvedMicros) reservedMicros = grant.uncarvedMicros;
              grant.uncarvedMicros -= reservedMicros;
            }
            const costMicros = (reservedMicros * BigInt(op.costPercent)) / 100n;
            if (!op.late && !grant.recalled) grant.uncarvedMicros += reservedMicros - costMicros;
            const request = {
              reservationId: uniqueId('gprop-carve'), grantId: grant.id, reservedMicros, costMicros, inputTokens: 3n, outputTokens: 2n,
            };
            const before = await ledger.database.query<{ remaining_micros: bigint; status: string }>('SELECT remaining_micros, status FROM grants WHERE id = $1', [grant.id]);
            const response = await ledger.settle(request);
            expect(response.result).toBe(SettleResult.SETTLE_RESULT_OK);
            // Debit is the cost (commercial), nothing is released (r − c stays in the grant), and the overrun is c − r while the grant held, else all of c.
            expect(response.debitedMicros).toBe(grant.internal ? 0n : costMicros);
            expect(response.releasedMicros).toBe(0n);
            const overAbove = costMicros > reservedMicros ? costMicros - reservedMicros : 0n;
            if (grant.internal) expect(response.overrunMicros).toBe(0n);
            else expect([overAbove, costMicros]).toContain(response.overrunMicros);
            if (!grant.internal && response.overrunMicros === costMicros && costMicros > overAbove) reached.carvesAfterResolve++;
            else if (before.rows[0]!.status === 'held' && before.rows[0]!.remaining_micros < costMicros) reached.carvesBeyondGrant++;
            if (costMicros > reservedMicros) reached.carvesAbove++; else reached.carvesBelow++;
            const first = { result: response.result, debitedMicros: response.debitedMicros, releasedMicros: response.releasedMicros, overrunMicros: response.overrunMicros };
            stored.push({
              label: 'carve', again: async () => {
                const again = await ledger.settle(request);
                return { result: again.result, debitedMicros: again.debitedMicros, releasedMicros: again.releasedMicros, overrunMicros: again.overrunMicros };
              },
              expected: first,
              vary: () => ledger.settle({ ...request, costMicros: costMicros + 1n }),
              conflict: SettleResult.SETTLE_RESULT_IDEMPOTENCY_CONFLICT,
            });
            return;
          }
          case 'promote': {
            const grant = pickGrant(op.grant);
            if (!grant || grant.uncarvedMicros <= 0n) return;
            // A carved stream outlived a checkpoint interval: its carve becomes its own reservation.
            const amountMicros = op.reservedMicros < grant.uncarvedMicros ? op.reservedMicros : grant.uncarvedMicros;
            grant.uncarvedMicros -= amountMicros;
            const request = {
              reservationId: uniqueId('gprop-promoted'), organisationId: grant.organisationId, projectId: grant.projectId,
              billingMode: billing(grant.internal), amountMicros, grantId: grant.id,
            };
            const response = await ledger.reserve(request);
            expect([ReserveResult.RESERVE_RESULT_OK, ReserveResult.RESERVE_RESULT_GRANT_NOT_HELD]).toContain(response.result);
            if (response.result !== ReserveResult.RESERVE_RESULT_OK) return;
            reached.promoted++;
            held.push({ id: request.reservationId, amountMicros, checkpointSequence: 0n });
            stored.push({
              label: 'promote', again: async () => {
                const again = await ledger.reserve(request);
                // A Reserve's replay answers its deadline as it stands; only this test moves one (to expire it).
                return { result: again.result, expiresAtMs: movedDeadlines.has(request.reservationId) ? response.expiresAtMs : again.expiresAtMs };
              },
              expected: { result: response.result, expiresAtMs: response.expiresAtMs },
              vary: () => ledger.reserve({ ...request, amountMicros: amountMicros + 1n }),
              conflict: ReserveResult.RESERVE_RESULT_IDEMPOTENCY_CONFLICT,
            });
            return;
          }
          case 'reserve': {
            // An exact Reserve: refused INSUFFICIENT_BALANCE / PROJECT_BUDGET_EXCEEDED it recalls the grants in the way.
            const id = uniqueId('gprop-r');
            const response = await ledger.reserve({
              reservationId: id, organisationId: organisations[op.organisation]!, projectId: projects[op.organisation]![op.project]!, amountMicros: op.amountMicros,
            });
            expect([ReserveResult.RESERVE_RESULT_OK, ReserveResult.RESERVE_RESULT_INSUFFICIENT_BALANCE,
              ReserveResult.RESERVE_RESULT_PROJECT_BUDGET_EXCEEDED]).toContain(response.result);
            if (response.result === ReserveResult.RESERVE_RESULT_OK) held.push({ id, amountMicros: op.amountMicros, checkpointSequence: 0n });
            else if ((response.grantsRecalled ?? 0) > 0) reached.recalled++;
            return;
          }
          case 'settle': {
            const target = pickHeld(op.reservation);
            if (!target) return;
            const response = await ledger.settle({ reservationId: target.id, costMicros: (target.amountMicros * BigInt(op.costPercent)) / 100n });
            if (response.result === SettleResult.SETTLE_RESULT_OK && target.id.startsWith('gprop-promoted')) reached.promotedSettled++;
            return;
          }
          case 'checkpoint': {
            const target = pickHeld(op.reservation);
            if (!target) return;
            target.checkpointSequence += 1n;
            const costMicros = (target.amountMicros * BigInt(op.costPercent) * target.checkpointSequence) / 400n;
            await ledger.checkpoint({ reservationId: target.id, sequence: target.checkpointSequence, costMicros, outputTokens: target.checkpointSequence });
            return;
          }
          case 'adjust': {
            const grant = pickGrant(op.grant);
            if (!grant) return;
            // The proxy returns only what it has not carved (U); close returns everything left.
            const returnMicros = op.action === 'return' ? (grant.uncarvedMicros * BigInt(op.returnPercent)) / 100n : 0n;
            const request = {
              adjustmentId: uniqueId('gprop-adj'), grantId: grant.id, returnMicros: returnMicros > 0n ? returnMicros : 0n,
              close: op.action === 'close', extendTtlMs: op.action === 'extend' ? 600_000n : 0n, reason: op.action,
            };
            if (op.action === 'close') grant.uncarvedMicros = 0n;
            else grant.uncarvedMicros -= request.returnMicros;
            const before = await ledger.database.query<{ remaining_micros: bigint }>('SELECT remaining_micros FROM grants WHERE id = $1', [grant.id]);
            const response = await ledger.adjustGrant(request);
            expect([AdjustGrantResult.ADJUST_GRANT_RESULT_OK, AdjustGrantResult.ADJUST_GRANT_RESULT_ALREADY_RESOLVED]).toContain(response.result);
            if (response.result === AdjustGrantResult.ADJUST_GRANT_RESULT_ALREADY_RESOLVED) {
              reached.alreadyResolved++;
              expect(response.returnedMicros).toBe(0n);
              return;
            }
            // Never more than asked (a close: than the grant held), never more than it held.
            expect(response.returnedMicros).toBeLessThanOrEqual(before.rows[0]!.remaining_micros);
            if (!request.close) expect(response.returnedMicros).toBeLessThanOrEqual(request.returnMicros);
            else { expect(response.remainingMicros).toBe(0n); reached.closed++; }
            expect(response.remainingMicros).toBeGreaterThanOrEqual(0n);
            if (response.returnedMicros > 0n) reached.returned++;
            if (op.action === 'extend') reached.extended++;
            // The pull side of a recall, as the proxy does it: an answer that says the grant is
            // recalled (a budget change marked it while it was past its deadline, and this
            // extension revived it) stops its carving and is answered by returning U.
            if (response.recalled && !grant.recalled && !request.close) {
              // U as the proxy counts it: a carve that cost more than it reserved leaves nothing to return, never less.
              const returnUncarved = grant.uncarvedMicros > 0n ? grant.uncarvedMicros : 0n;
              grant.recalled = true;
              grant.uncarvedMicros = 0n;
              const answer = await ledger.adjustGrant({ grantId: grant.id, returnMicros: returnUncarved, close: false, reason: 'recalled' });
              // Closed or expired meanwhile by another operation of this step: nothing left to answer.
              expect([AdjustGrantResult.ADJUST_GRANT_RESULT_OK, AdjustGrantResult.ADJUST_GRANT_RESULT_ALREADY_RESOLVED], answer.detail).toContain(answer.result);
            }
            const first = { result: response.result, returnedMicros: response.returnedMicros, remainingMicros: response.remainingMicros, expiresAtMs: response.expiresAtMs };
            stored.push({
              label: 'adjust', again: async () => {
                const again = await ledger.adjustGrant(request);
                return { result: again.result, returnedMicros: again.returnedMicros, remainingMicros: again.remainingMicros, expiresAtMs: again.expiresAtMs };
              },
              expected: first,
              vary: () => ledger.adjustGrant({ ...request, returnMicros: request.returnMicros + 1n }),
              conflict: AdjustGrantResult.ADJUST_GRANT_RESULT_IDEMPOTENCY_CONFLICT,
            });
            return;
          }
          case 'expireGrant': {
            const grant = pickGrant(op.grant);
            if (!grant) return;
            // EXPIRY: its deadline passes (moved, not waited out) and the sweeper runs.
            grant.uncarvedMicros = 0n;
            await ledger.database.query("UPDATE grants SET expires_at = now() - interval '1 second' WHERE id = $1 AND status = 'held'", [grant.id]);
            const swept = await expireDueGrants(ledger.database, 500);
            reached.expired += swept.expiredCount;
            return;
          }
          case 'expireReservation': {
            const target = pickHeld(op.reservation);
            if (!target) return;
            movedDeadlines.add(target.id);
            await ledger.database.query("UPDATE reservations SET expires_at = now() - interval '1 second' WHERE id = $1 AND status = 'held'", [target.id]);
            await expireDueReservations(ledger.database, 500);
            return;
          }
          case 'credit': {
            const organisationId = organisations[op.organisation]!;
            expect((await ledger.credit({ organisationId, amountMicros: op.amountMicros })).result).toBe(CreditResult.CREDIT_RESULT_OK);
            creditedByModel.set(organisationId, creditedByModel.get(organisationId)! + op.amountMicros);
            return;
          }
          case 'replay': {
            // IDEMPOTENCY: the same call again (maybe racing others of this step) answers its first answer.
            if (stored.length === 0) return;
            const call = stored[op.call % stored.length]!;
            expect({ label: call.label, answer: await call.again() }).toEqual({ label: call.label, answer: call.expected });
            reached.replays++;
            return;
          }
          case 'conflict':
            return; // run alone after the step, so "nothing changed" can be seen
          case 'budget': {
            const change = budgetChanges.then(async () => {
              // The proxies' side of a recall while the change waits for it: carve nothing more,
              // return U (a grant not yet known is closed unused when its answer comes).
              let changing = true;
              const answering = (async () => {
                while (changing) {
                  const recalled = await ledger.database.query<{ id: string }>(
                    `SELECT id FROM grants WHERE project_id = $1 AND status = 'held' AND recalled_at IS NOT NULL AND recall_answered_at IS NULL`, [budgetedProject]);
                  for (const { id } of recalled.rows) {
                    const grant = grants.find((g) => g.id === id);
                    if (grant === undefined) recalledBeforeKnown.add(id);
                    const returnMicros = grant === undefined || grant.uncarvedMicros < 0n ? 0n : grant.uncarvedMicros;
                    if (grant !== undefined) { grant.recalled = true; grant.uncarvedMicros = 0n; }
                    await ledger.adjustGrant({ grantId: id, returnMicros, close: grant === undefined, reason: 'recalled' });
                    reached.budgetRecallAnswered++;
                  }
                  await new Promise((resolve) => setTimeout(resolve, 5));
                }
              })();
              const response = await ledger.setProjectBudget({
                organisationId: organisations[0]!, projectId: budgetedProject, monthlyCapMicros: op.capMicros, softAlertPercent: 50,
              }).finally(() => { changing = false; });
              await answering;
              expect(response.result).toBe(ledgerV1.SetProjectBudgetResult.SET_PROJECT_BUDGET_RESULT_OK);
              if (op.capMicros < budget.capMicros) {
                reached.budgetTightened++;
                const spend = await ledger.getProjectSpend(budgetedProject);
                budget.ceilingMicros = spend.settledMicros + spend.heldMicros;
              }
              budget.capMicros = op.capMicros;
            });
            budgetChanges = change.catch(() => undefined);
            await change;
            return;
          }
        }
      };

      for (const step of steps) {
        await Promise.all(step.map(run));
        // IDEMPOTENCY: the same key with another payload is refused and changes nothing (alone, so the row counts show it).
        for (const op of step) {
          if (op.kind !== 'conflict' || stored.length === 0) continue;
          const call = stored[op.call % stored.length]!;
          const before = await ledger.countRows();
          expect({ label: call.label, result: (await call.vary()).result }).toEqual({ label: call.label, result: call.conflict });
          expect(await ledger.countRows()).toEqual(before);
          reached.conflicts++;
        }
        await checkGrantLaws(organisations, budgetedProject, budget, creditedByModel);
      }
      // ONE_OUTCOME and NOTHING_FREE: one outcome per reservation (carves are written settled), a usage record exactly for the settled and charged ones.
      const { rows } = await ledger.database.query<{ status: string; settled: boolean; checkpointed: boolean; records: bigint }>(
        `SELECT r.status, r.settle_fingerprint IS NOT NULL AS settled, r.expiry_charged_micros IS NOT NULL AS checkpointed,
           (SELECT count(*) FROM usage_records u WHERE u.reservation_id = r.id) AS records
         FROM reservations r WHERE r.organisation_id = ANY($1)`, [organisations]);
      for (const row of rows) {
        const expectRecord = row.status === 'settled' || (row.status === 'expired' && (row.settled || row.checkpointed));
        expect(row.records).toBe(expectRecord ? 1n : 0n);
      }
      // ONE_OUTCOME for grants: one hold, at most one expiry, and resolved (closed or expired) at most once.
      const outcomes = await ledger.database.query<{ id: string; status: string; billing_mode: string; holds: bigint; expiries: bigint; closes: bigint }>(
        `SELECT g.id, g.status, g.billing_mode,
           (SELECT count(*) FROM movements m WHERE m.grant_id = g.id AND m.kind = 'grant') AS holds,
           (SELECT count(*) FROM movements m WHERE m.grant_id = g.id AND m.kind = 'expire') AS expiries,
           (SELECT count(*) FROM grant_adjustments a WHERE a.grant_id = g.id AND a.closed) AS closes
         FROM grants g WHERE g.organisation_id = ANY ($1)`, [organisations]);
      for (const grant of outcomes.rows) {
        expect(grant.holds).toBe(grant.billing_mode === 'commercial' ? 1n : 0n);
        expect(grant.expiries).toBeLessThanOrEqual(1n);
        expect(grant.closes).toBeLessThanOrEqual(1n);
        if (grant.status === 'closed') expect(grant.closes).toBe(1n);
        if (grant.status === 'held') expect(grant.closes + grant.expiries).toBe(0n);
        if (grant.expiries === 1n) expect([grant.status, grant.closes]).toEqual(['expired', 0n]);
      }
    });
    // Rarer paths (a carve beyond its grant or after a close, a recall) come up a handful of times
    // per grantRuns; a seed that happens to miss one gets more runs (new random cases), not a pass.
    for (let round = 0; round < 8; round += 1) {
      await fc.assert(property, { numRuns: grantRuns, endOnFailure: true });
      if (Object.values(reached).every((count) => count > 0)) break;
    }
    for (const [rule, count] of Object.entries(reached)) expect({ rule, count }).not.toEqual({ rule, count: 0 });
  }, 600_000);
});
