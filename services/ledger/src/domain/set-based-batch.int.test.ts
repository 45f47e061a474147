import { testPostgresUrl } from '@gateway/testkit';
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { applyLedgerOperations, type LedgerOperation, type LedgerOperationAnswer } from './apply-ledger-operations.ts';
import { checkpoint } from './checkpoint.ts';
import { credit } from './credit.ts';
import { expireDueReservations } from './expire-due-reservations.ts';
import { findBalanceDifferences } from './find-balance-differences.ts';
import { fingerprintOf } from './fingerprint.ts';
import { openAccount } from './open-account.ts';
import { release } from './release.ts';
import { setProjectBudget } from './set-project-budget.ts';
import { useLedgerDatabase } from '../testing/ledger-test-setup.ts';

const serverUrl = testPostgresUrl();

/** One operation of a generated batch, before ids are given to it. */
type PlannedOperation =
  | { kind: 'reserve'; organisation: number; internal: boolean; budgeted: boolean; amountMicros: number; releasedFirst: boolean }
  | { kind: 'settle'; pick: number; costMicros: number; overrunOutputTokens: number }
  | { kind: 'replay'; pick: number }
  | { kind: 'conflict'; pick: number }
  | { kind: 'invalid'; reserve: boolean; pick: number };

/** What happens to one held reservation between two batches: it expires, after a checkpoint or not (EXPIRY). */
interface PlannedExpiry { pick: number; checkpointCostMicros: number | null }

/** Organisations per ledger side; index `organisationCount` stands for an organisation without an account. */
const organisationCount = 2;
const fundingMicros = 2_000n;
/** The monthly cap of every organisation's budgeted project (PROJECT_BUDGET), µ₹: some Reserves fit, some do not. */
const projectCapMicros = 600n;

/** The project a planned Reserve names: the organisation's budgeted one, or its unbudgeted one. */
const projectOf = (organisationId: string, budgeted: boolean) => `${organisationId}-${budgeted ? 'capped' : 'p'}`;

/** A Reserve as `reserve()` sends it. */
function reserveOperation(reservationId: string, organisationId: string, internal: boolean, amountMicros: bigint, budgeted = false): LedgerOperation {
  const fields = {
    organisationId, projectId: projectOf(organisationId, budgeted), billingMode: internal ? 'internal' : 'commercial',
    amountMicros: String(amountMicros), ttlMs: '600000', modelSlug: 'm',
  };
  return { kind: 'reserve', reservationId, fingerprint: fingerprintOf('reserve', fields), fields };
}

/** A Settle as `settle()` sends it (the overrun is in the fingerprint only when non-zero). */
function settleOperation(reservationId: string, costMicros: bigint, overrunOutputTokens: bigint): LedgerOperation {
  const fields = {
    inputTokens: '7', outputTokens: '3', costMicros: String(costMicros), providerCostMicros: '1', modelSlug: 'm',
    usageSource: 'upstream', requestId: `q-${reservationId}`,
  };
  const fingerprint = fingerprintOf('settle', { ...fields, ...(overrunOutputTokens !== 0n ? { overrunOutputTokens } : {}) });
  return { kind: 'settle', reservationId, fingerprint, fields: { ...fields, overrunOutputTokens: String(overrunOutputTokens) } };
}

/** An operation with input problems, as `reserve()` / `settle()` send it: only the key, the fingerprint and the problems travel. */
function invalidOperation(kind: 'reserve' | 'settle', reservationId: string): LedgerOperation {
  return { kind, reservationId, fingerprint: fingerprintOf(kind, { reservationId, invalid: true }), problems: 'cost_micros must not be negative' };
}

/** A row of the batch functions. */
interface BatchRow {
  ordinal: number;
  result: string;
  available_micros: bigint;
  expires_at_ms: bigint;
  debited_micros: bigint;
  released_micros: bigint;
  overrun_micros: bigint;
  detail: string;
  error_state: string | null;
  error_message: string | null;
}

/** The jsonb a batch function takes, as `applyLedgerOperations` builds it. */
function payloadOf(operations: readonly LedgerOperation[]): string {
  return JSON.stringify(operations.map((operation) => ({
    ...operation.fields, kind: operation.kind, reservationId: operation.reservationId, fingerprint: operation.fingerprint,
    ...(operation.problems !== undefined ? { problems: operation.problems } : {}),
  })));
}

/** A batch function's rows as answers. */
function answersOf({ rows }: { rows: BatchRow[] }): LedgerOperationAnswer[] {
  return rows.map((row) => (row.error_state !== null
    ? { ok: false, error: new Error(`${row.error_state}: ${row.error_message}`) }
    : {
      ok: true, result: row.result, availableMicros: row.available_micros, expiresAtMs: row.expires_at_ms,
      debitedMicros: row.debited_micros, releasedMicros: row.released_micros, overrunMicros: row.overrun_micros, detail: row.detail,
    }));
}

/** An answer with the expiry reduced to whether there is one (the two sides reserve at different instants). */
function comparable(answer: LedgerOperationAnswer): unknown {
  if (!answer.ok) return { ok: false, message: answer.error.message };
  return { ...answer, expiresAtMs: answer.expiresAtMs > 0n };
}

/** Where a reservation of the generated history stands (the same on both sides: their answers are compared). */
type ReservationState = 'held' | 'settled' | 'expired' | 'settled after expiry';

/**
 * The set-based batch must be indistinguishable from the per-operation path (ledger_reserve /
 * ledger_settle, as the isolated rerun runs them): the same answers in arrival order and the
 * same rows. Two sides of one database run the same generated history: side "set" through
 * `ledger_apply_batch($1, false)`, the production entry point (a batch of one runs its operation
 * directly; two or more of the common shape take the set-based path; any other batch falls back
 * to the loop), side "each" through `ledger_apply_batch($1, true)`, the isolated per-operation
 * path. The history reaches every path: budgeted projects whose Reserves fit or exceed the cap
 * (PROJECT_BUDGET), internal billing (INTERNAL_MODE), Reserves a Release reached first
 * (tombstones, ONE_OUTCOME), replays and conflicts (IDEMPOTENCY), invalid input, expiries with
 * and without a checkpoint followed by late settles (EXPIRY), overrun tokens (BOUNDED_OVERRUN).
 * A tripwire fails the test if a batch the database's own shape check admits (asked of the
 * rows before the batch runs) leaves the set-based path, and the test requires both kinds of
 * batch to have occurred. Then answers, balances, movements, usage records, reservations,
 * project spend, budget alerts and tombstones are compared.
 */
describe.skipIf(!serverUrl)('set-based ledger batches over PostgreSQL', () => {
  const db = useLedgerDatabase('postgres', { poolSize: 4 });

  beforeAll(async () => {
    // A tripwire on the operation-by-operation loop: with ledger_test.set_based_only on, any
    // batch that leaves the set-based path (a fallback, or an error and the isolated rerun) fails.
    await db.exec(`
      ALTER FUNCTION ledger.ledger_apply_batch_each(jsonb, boolean) RENAME TO test_apply_batch_each_inner;
      CREATE FUNCTION ledger.ledger_apply_batch_each(ops jsonb, p_isolate boolean)
      RETURNS TABLE (ordinal integer, result text, available_micros bigint, expires_at_ms bigint, debited_micros bigint,
        released_micros bigint, overrun_micros bigint, detail text, error_state text, error_message text)
      LANGUAGE plpgsql AS $$
      BEGIN
        IF current_setting('ledger_test.set_based_only', true) = 'on' THEN
          RAISE EXCEPTION 'the batch left the set-based path';
        END IF;
        RETURN QUERY SELECT * FROM ledger.test_apply_batch_each_inner(ops, p_isolate);
      END $$;
    `);
  }, 60_000);


  /**
   * Whether ledger_apply_batch_set takes this batch (its shape check, asked of the rows as they
   * are now): two or more valid Reserves of new ids and Settles of held reservations never
   * settled, ids distinct, no project with a budget cap.
   */
  async function setBasedShape(operations: readonly LedgerOperation[]): Promise<boolean> {
    if (operations.length < 2 || operations.some((operation) => operation.problems !== undefined)) return false;
    if (new Set(operations.map((operation) => operation.reservationId)).size !== operations.length) return false;
    const reserveIds = operations.filter((operation) => operation.kind === 'reserve').map((operation) => operation.reservationId);
    const settleIds = operations.filter((operation) => operation.kind === 'settle').map((operation) => operation.reservationId);
    const reserveProjects = operations.filter((operation) => operation.kind === 'reserve').map((operation) => operation.fields!.projectId!);
    const { rows } = await db.query<{ fits: boolean }>(
      `SELECT NOT EXISTS (SELECT 1 FROM reservations WHERE id = ANY ($1::text[]))
         AND (SELECT count(*) FROM reservations WHERE id = ANY ($2::text[]) AND status = 'held' AND settle_fingerprint IS NULL) = cardinality($2::text[])
         AND NOT EXISTS (SELECT 1 FROM project_budgets WHERE monthly_cap_micros > 0 AND (project_id = ANY ($3::text[])
           OR project_id IN (SELECT project_id FROM reservations WHERE id = ANY ($2::text[])))) AS fits`,
      [reserveIds, settleIds, reserveProjects],
    );
    return rows[0]!.fits;
  }

  it('answers and writes exactly what the per-operation path does, in arrival order, on every path', async () => {
    let run = 0;
    // The generators must reach the cases, not only allow them.
    const reached = { setBased: 0, fallback: 0, released: 0, budgetExceeded: 0, budgetFit: 0, lateSettles: 0, checkpointedLateSettles: 0, replays: 0, conflicts: 0, invalid: 0, internal: 0 };
    const plannedOperation: fc.Arbitrary<PlannedOperation> = fc.oneof(
      { weight: 6, arbitrary: fc.record({
        kind: fc.constant('reserve' as const), organisation: fc.integer({ min: 0, max: organisationCount }),
        internal: fc.boolean(), amountMicros: fc.integer({ min: 1, max: 900 }),
        // PROJECT_BUDGET: about one Reserve in four names the organisation's budgeted project.
        budgeted: fc.integer({ min: 0, max: 3 }).map((roll) => roll === 0),
        // Release before Reserve (ONE_OUTCOME): about one Reserve in four.
        releasedFirst: fc.integer({ min: 0, max: 3 }).map((roll) => roll === 0),
      }) },
      { weight: 6, arbitrary: fc.record({
        kind: fc.constant('settle' as const), pick: fc.nat(), costMicros: fc.integer({ min: 0, max: 1_200 }),
        // BOUNDED_OVERRUN: mostly none, sometimes some.
        overrunOutputTokens: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 5_000 })),
      }) },
      { weight: 1, arbitrary: fc.record({ kind: fc.constant('replay' as const), pick: fc.nat() }) },
      { weight: 1, arbitrary: fc.record({ kind: fc.constant('conflict' as const), pick: fc.nat() }) },
      { weight: 1, arbitrary: fc.record({ kind: fc.constant('invalid' as const), reserve: fc.boolean(), pick: fc.nat() }) },
    );
    const plannedExpiry: fc.Arbitrary<PlannedExpiry | null> = fc.option(fc.record({
      pick: fc.nat(), checkpointCostMicros: fc.option(fc.integer({ min: 0, max: 1_200 }), { nil: null }),
    }), { nil: null, freq: 2 });
    // About half the batches are kept to the set-based path's shape (no replays, conflicts, invalid
    // input, budgeted projects or late settles), so that path is exercised as much as the fallback.
    const plannedStep = fc.record({ batch: fc.array(plannedOperation, { minLength: 1, maxLength: 12 }), expiry: plannedExpiry, plain: fc.boolean() });

    await fc.assert(fc.asyncProperty(fc.array(plannedStep, { minLength: 1, maxLength: 6 }), async (steps) => {
      run++;
      const sideNames = ['set', 'each'] as const;
      const organisationOf = (side: string, index: number) => `sb-${run}-${side}-${index}`;
      const idOf = (side: string, id: string) => `sb-${run}-${side}-${id}`;
      for (const side of sideNames) {
        for (let index = 0; index < organisationCount; index++) {
          const organisationId = organisationOf(side, index);
          await openAccount(db, organisationId);
          await credit(db, { creditId: `fund-${organisationId}`, organisationId, amountMicros: fundingMicros, reason: '' });
          const budget = await setProjectBudget(db, {
            requestId: `budget-${organisationId}`, organisationId, projectId: projectOf(organisationId, true),
            monthlyCapMicros: projectCapMicros, softAlertPercent: 50,
          });
          expect(budget.result).toBe('ok');
        }
      }
      const states = new Map<string, ReservationState>();
      /** Every operation sent so far, by side, for replays and conflicts. */
      const sent: Array<{ make: (side: string) => LedgerOperation; vary: (side: string) => LedgerOperation }> = [];
      let serial = 0;
      // What each reservation's fingerprint columns must hold: the fingerprint its first accepted operation sent.
      const sentFingerprints = new Map<string, string>();
      for (const step of steps) {
        const makers: Array<{ id: string; make: (side: string) => LedgerOperation; vary: (side: string) => LedgerOperation }> = [];
        const settledNow = new Set<string>();
        for (const planned of step.batch) {
          if (step.plain && (planned.kind === 'replay' || planned.kind === 'conflict' || planned.kind === 'invalid')) continue;
          if (planned.kind === 'reserve') {
            const id = `r${serial++}`;
            const make = (side: string, amountMicros = BigInt(planned.amountMicros)) =>
              reserveOperation(idOf(side, id), organisationOf(side, planned.organisation), planned.internal, amountMicros, planned.budgeted && !step.plain);
            if (planned.releasedFirst) {
              for (const side of sideNames) {
                // The Release overtook its Reserve: it finds no reservation and leaves a tombstone.
                const released = await release(db, { reservationId: idOf(side, id), reason: 'upstream_not_called' });
                expect(released.result).toBe('reservation_unknown');
              }
            }
            if (planned.internal) reached.internal++;
            makers.push({ id, make: (side) => make(side), vary: (side) => make(side, BigInt(planned.amountMicros) + 1n) });
          } else if (planned.kind === 'settle') {
            // Held reservations settle; expired ones settle late.
            const candidates = [...states].filter(([id, state]) => (state === 'held' || (state === 'expired' && !step.plain)) && !settledNow.has(id)).map(([id]) => id);
            if (candidates.length === 0) continue;
            const id = candidates[planned.pick % candidates.length]!;
            settledNow.add(id);
            const make = (side: string, costMicros = BigInt(planned.costMicros)) => settleOperation(idOf(side, id), costMicros, BigInt(planned.overrunOutputTokens));
            makers.push({ id, make: (side) => make(side), vary: (side) => make(side, BigInt(planned.costMicros) + 1n) });
          } else if (planned.kind === 'replay' || planned.kind === 'conflict') {
            if (sent.length === 0) continue;
            const earlier = sent[planned.pick % sent.length]!;
            makers.push({ id: '', make: planned.kind === 'replay' ? earlier.make : earlier.vary, vary: earlier.vary });
          } else {
            const heldIds = [...states].filter(([, state]) => state === 'held').map(([id]) => id);
            const id = planned.reserve || heldIds.length === 0 ? `r${serial++}` : heldIds[planned.pick % heldIds.length]!;
            const kind = planned.reserve || heldIds.length === 0 ? 'reserve' : 'settle';
            makers.push({ id, make: (side) => invalidOperation(kind, idOf(side, id)), vary: (side) => invalidOperation(kind, idOf(side, id)) });
          }
        }
        if (makers.length > 0) {
          const sides = { set: makers.map((maker) => maker.make('set')), each: makers.map((maker) => maker.make('each')) };
          const setBased = await setBasedShape(sides.set);
          if (setBased) reached.setBased++; else reached.fallback++;
          const setAnswers = await db.transaction(async (tx) => {
            if (setBased) await tx.query("SET LOCAL ledger_test.set_based_only = 'on'");
            return answersOf(await tx.query<BatchRow>('SELECT * FROM ledger_apply_batch($1::jsonb, false) ORDER BY ordinal', [payloadOf(sides.set)]));
          });
          const eachAnswers = answersOf(await db.query<BatchRow>('SELECT * FROM ledger_apply_batch($1::jsonb, true) ORDER BY ordinal', [payloadOf(sides.each)]));
          expect(setAnswers.map(comparable)).toEqual(eachAnswers.map(comparable));

          // Follow the history from the answers (equal on both sides).
          setAnswers.forEach((answer, index) => {
            const operation = sides.set[index]!;
            const id = operation.reservationId.slice(idOf('set', '').length);
            if (!answer.ok) throw answer.error;
            if (answer.result === 'released') reached.released++;
            if (answer.result === 'project_budget_exceeded') reached.budgetExceeded++;
            if (answer.result === 'idempotency_conflict') reached.conflicts++;
            if (answer.result === 'invalid_argument') reached.invalid++;
            if (answer.detail.startsWith('replay')) reached.replays++;
            if (answer.result !== 'ok' || operation.problems !== undefined) return;
            for (const side of sideNames) {
              const key = `${operation.kind}:${idOf(side, id)}`;
              if (!sentFingerprints.has(key)) sentFingerprints.set(key, sides[side][index]!.fingerprint);
            }
            if (operation.kind === 'reserve' && !answer.detail.startsWith('replay')) {
              states.set(id, 'held');
              if (operation.fields!.projectId!.endsWith('-capped')) reached.budgetFit++;
            }
            if (operation.kind === 'settle' && states.get(id) === 'held') states.set(id, 'settled');
            if (operation.kind === 'settle' && states.get(id) === 'expired') {
              states.set(id, 'settled after expiry');
              reached.lateSettles++;
            }
          });
          sent.push(...makers);
        }

        if (step.expiry) {
          // EXPIRY: one held reservation's deadline passes on both sides, after a checkpoint or not; the sweeper runs.
          const heldIds = [...states].filter(([, state]) => state === 'held').map(([id]) => id);
          if (heldIds.length > 0) {
            const id = heldIds[step.expiry.pick % heldIds.length]!;
            for (const side of sideNames) {
              if (step.expiry.checkpointCostMicros !== null) {
                const checkpointed = await checkpoint(db, {
                  reservationId: idOf(side, id), sequence: 1n, inputTokens: 4n, outputTokens: 2n,
                  costMicros: BigInt(step.expiry.checkpointCostMicros), providerCostMicros: 1n, extendTtlMs: 0n, requestId: `q-${idOf(side, id)}`,
                });
                expect(checkpointed.result).toBe('ok');
              }
              await db.query("UPDATE reservations SET expires_at = now() - interval '1 second' WHERE id = $1", [idOf(side, id)]);
            }
            expect((await expireDueReservations(db, 1_000)).expiredCount).toBe(2);
            states.set(id, 'expired');
            if (step.expiry.checkpointCostMicros !== null) reached.checkpointedLateSettles++;
          }
        }
      }

      // The same rows, side by side (names with the side stripped).
      const rowsOf = async (side: string) => {
        const prefix = `sb-${run}-${side}-`;
        const strip = (value: unknown) => (typeof value === 'string' ? value.split(prefix).join('') : value);
        // Fingerprints cover side-specific names, so each is compared with the one its operation sent.
        const fingerprintMatch = (row: Record<string, unknown>, column: string, kind: string) =>
          (row[column] === null ? null : row[column] === sentFingerprints.get(`${kind}:${String(row.id)}`));
        const read = async (sql: string) => (await db.query<Record<string, unknown>>(sql, [`${prefix}%`])).rows
          .map((row) => ('request_fingerprint' in row
            ? { ...row, request_fingerprint: fingerprintMatch(row, 'request_fingerprint', 'reserve'), settle_fingerprint: fingerprintMatch(row, 'settle_fingerprint', 'settle') }
            : row))
          .map((row) => Object.fromEntries(Object.entries(row).map(([key, value]) => [key, strip(value)])));
        return {
          accounts: await read('SELECT organisation_id, credited_micros, available_micros, held_micros, debited_micros FROM accounts WHERE organisation_id LIKE $1 ORDER BY organisation_id'),
          movements: await read(`SELECT organisation_id, kind, amount_micros, credited_delta_micros, available_delta_micros, held_delta_micros,
              debited_delta_micros, reservation_id, detail::text AS detail FROM movements WHERE organisation_id LIKE $1 AND kind <> 'credit' ORDER BY id`),
          reservations: await read(`SELECT id, organisation_id, project_id, billing_mode, amount_micros, model_slug, status, request_fingerprint,
              settle_fingerprint, settle_debited_micros, settle_released_micros, settle_overrun_micros, settle_detail, resolved_at IS NULL AS open,
              expiry_charged_micros, checkpoint_cost_micros,
              -- The test moved the deadlines of the expired ones itself.
              CASE WHEN status = 'expired' THEN NULL ELSE expires_at - created_at END AS lifetime FROM reservations WHERE id LIKE $1 ORDER BY id`),
          usage: await read(`SELECT reservation_id, organisation_id, project_id, model_slug, input_tokens, output_tokens, cost_micros,
              provider_cost_micros, debited_micros, billing_mode, usage_source, request_id, provisional, overrun_output_tokens
              FROM usage_records WHERE reservation_id LIKE $1 ORDER BY reservation_id`),
          spend: await read('SELECT project_id, month, organisation_id, settled_micros FROM project_month_spend WHERE project_id LIKE $1 ORDER BY project_id'),
          alerts: await read(`SELECT organisation_id, project_id, month, spent_micros, monthly_cap_micros, soft_alert_percent
              FROM budget_alerts WHERE project_id LIKE $1 ORDER BY project_id`),
          tombstones: await read('SELECT reservation_id, reason FROM reservation_tombstones WHERE reservation_id LIKE $1 ORDER BY reservation_id'),
        };
      };
      const [setRows, eachRows] = [await rowsOf('set'), await rowsOf('each')];
      expect(setRows).toEqual(eachRows);
      // Enough histories that every path above is reached (asserted below), not only allowed.
    }), { numRuns: 40 });
    for (const [path, count] of Object.entries(reached)) expect({ path, count }).not.toEqual({ path, count: 0 });
    expect((await db.query("SELECT 1 FROM usage_records WHERE overrun_output_tokens > 0 AND reservation_id LIKE 'sb-%-set-%'")).rowCount).toBeGreaterThan(0);
    expect(await findBalanceDifferences(db)).toEqual([]);
  }, 240_000);

  /**
   * The set-based batch (sql/ledger_apply_batch_set.sql) decides on balances read without a
   * lock and locks the accounts last; NO_OVERSPEND is the second decision, under the lock. Here another transaction spends most of the wallet
   * while the batch is between its read and its lock: the batch must not commit its stale
   * decision (SQLSTATE LR002, nothing written), and applyLedgerOperations, running it again,
   * must answer what the locked balance says.
   */
  it('never commits a decision made on a balance that changed before the lock (NO_OVERSPEND under the lock)', async () => {
    const organisationId = 'sb-stale';
    await openAccount(db, organisationId);
    await credit(db, { creditId: `fund-${organisationId}`, organisationId, amountMicros: fundingMicros, reason: '' });
    const spendMostOfIt = (id: string) => payloadOf([reserveOperation(id, organisationId, false, 1_500n)]).slice(1, -1);
    const batch = [reserveOperation('sb-stale-a', organisationId, false, 1_000n), reserveOperation('sb-stale-b', organisationId, true, 5n)];

    // The batch has read the balance unlocked, decided, written its rows and now waits for the
    // account row lock that the other transaction holds: seen from another connection.
    const untilBatchWaitsForLock = async () => {
      for (const deadline = Date.now() + 15_000; ;) {
        const { rowCount } = await db.query(`SELECT 1 FROM pg_stat_activity WHERE datname = current_database()
          AND pid <> pg_backend_pid() AND wait_event_type = 'Lock' AND query LIKE '%ledger_apply_batch%'`);
        if (rowCount > 0) return;
        if (Date.now() > deadline) throw new Error('the batch never waited for the account lock');
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
    };
    // While another transaction holds the account (and spends 1,500 of 2,000 µ₹), the batch
    // reads 2,000 unlocked, decides OK, writes its rows and waits for the lock.
    const raceWith = async <T>(id: string, run: () => Promise<T>): Promise<T> => {
      let pending: Promise<T> | undefined;
      await db.transaction(async (tx) => {
        await tx.query('SELECT ledger_reserve($1::jsonb)', [spendMostOfIt(id)]);
        pending = run();
        pending.catch(() => undefined);
        await untilBatchWaitsForLock();
      });
      return pending!;
    };
    await expect(raceWith('sb-stale-x', () => db.query('SELECT * FROM ledger_apply_batch($1::jsonb, false)', [payloadOf(batch)])))
      .rejects.toMatchObject({ code: 'LR002' });
    expect((await db.query("SELECT 1 FROM reservations WHERE id IN ('sb-stale-a', 'sb-stale-b')")).rowCount).toBe(0);

    // 500 µ₹ left; once more with a second 1,500 would go below zero: refused, the internal Reserve holds nothing.
    await db.query("UPDATE accounts SET available_micros = available_micros + 1500, credited_micros = credited_micros + 1500 WHERE organisation_id = $1", [organisationId]);
    await db.query(`INSERT INTO credits (credit_id, organisation_id, amount_micros, reason, fingerprint) VALUES ('top-up-stale', $1, 1500, '', 'f')`, [organisationId]);
    await db.query(`INSERT INTO movements (organisation_id, kind, amount_micros, credited_delta_micros, available_delta_micros, held_delta_micros, debited_delta_micros, credit_id)
      VALUES ($1, 'credit', 1500, 1500, 1500, 0, 0, 'top-up-stale')`, [organisationId]);
    const answers = await raceWith('sb-stale-y', () => applyLedgerOperations(db, batch));
    expect(answers.map((answer) => (answer.ok ? [answer.result, answer.availableMicros] : answer.error.message))).toEqual([
      ['insufficient_balance', 500n], ['ok', 500n],
    ]);
    const { rows } = await db.query<{ available_micros: bigint; held_micros: bigint }>(
      'SELECT available_micros, held_micros FROM accounts WHERE organisation_id = $1', [organisationId]);
    expect(rows[0]).toEqual({ available_micros: 500n, held_micros: 3_000n });
    expect(await findBalanceDifferences(db)).toEqual([]);
  }, 30_000);
});
