import { fileURLToPath } from 'node:url';
import { migrate, openDatabase, type Database } from '@gateway/db';
import { createTestDatabase, testPostgresUrl, type TestDatabase } from '@gateway/testkit';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyLedgerOperations, type LedgerOperation, type LedgerOperationAnswer } from './apply-ledger-operations.ts';
import { credit } from './credit.ts';
import { findBalanceDifferences } from './find-balance-differences.ts';
import { fingerprintOf } from './fingerprint.ts';
import { openAccount } from './open-account.ts';
import { release } from './release.ts';

const migrationsDir = fileURLToPath(new URL('../../migrations', import.meta.url));
const serverUrl = testPostgresUrl();

/** One operation of a generated batch, before ids are given to it. */
type PlannedOperation =
  | { kind: 'reserve'; organisation: number; internal: boolean; amountMicros: number; releasedFirst: boolean }
  | { kind: 'settle'; pick: number; costMicros: number; overrunOutputTokens: number };

/** Organisations per ledger side; index `organisationCount` stands for an organisation without an account. */
const organisationCount = 2;
const fundingMicros = 2_000n;

/** A Reserve as `reserve()` sends it. */
function reserveOperation(reservationId: string, organisationId: string, internal: boolean, amountMicros: bigint): LedgerOperation {
  const fields = {
    organisationId, projectId: `${organisationId}-p`, billingMode: internal ? 'internal' : 'commercial',
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
}

/** The jsonb a batch function takes, as `applyLedgerOperations` builds it. */
function payloadOf(operations: readonly LedgerOperation[]): string {
  return JSON.stringify(operations.map((operation) => ({ ...operation.fields, kind: operation.kind, reservationId: operation.reservationId, fingerprint: operation.fingerprint })));
}

/** A batch function's rows as answers. */
function answersOf({ rows }: { rows: BatchRow[] }): LedgerOperationAnswer[] {
  return rows.map((row) => ({
    ok: true, result: row.result, availableMicros: row.available_micros, expiresAtMs: row.expires_at_ms,
    debitedMicros: row.debited_micros, releasedMicros: row.released_micros, overrunMicros: row.overrun_micros, detail: row.detail,
  }));
}

/** An answer with the expiry reduced to whether there is one (the two sides reserve at different instants). */
function comparable(answer: LedgerOperationAnswer): unknown {
  if (!answer.ok) return { ok: false, message: answer.error.message };
  return { ...answer, expiresAtMs: answer.expiresAtMs > 0n };
}

/**
 * The set-based batch (migration 0004) must be indistinguishable from the operation-by-operation
 * loop of 0003 that it replaces on the common path: the same answers in arrival order and the
 * same rows. Two sides of one database run the same generated batches: side "set" through
 * `ledger_apply_batch` (every batch is of the common shape, so it takes the set-based path),
 * side "each" through `ledger_apply_batch_each`; a tripwire fails the test if a "set" batch
 * falls back to the loop or errors (batches of one take the direct single-operation path of
 * 0005 and are held to the same comparison). Some Reserves' ids are released (`release()`, the
 * Release RPC's code) before their batch runs, which leaves a tombstone (0006): both paths must
 * answer them RELEASED and hold nothing; Settles carry overrun output tokens. Then answers,
 * balances, movements, usage records, reservations, project spend and tombstones are compared.
 */
describe.skipIf(!serverUrl)('set-based ledger batches over PostgreSQL', () => {
  let testDatabase: TestDatabase;
  let db: Database;

  beforeAll(async () => {
    testDatabase = await createTestDatabase(serverUrl!);
    db = await openDatabase({ url: testDatabase.url, schema: 'ledger', poolSize: 4 });
    await migrate(db, migrationsDir);
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

  afterAll(async () => {
    await db?.close();
    await testDatabase?.drop();
  });

  it('answers and writes exactly what the operation-by-operation loop does, in arrival order', async () => {
    let run = 0;
    // The generators must reach the new cases, not only allow them.
    let releasedAnswers = 0;
    const plannedOperation: fc.Arbitrary<PlannedOperation> = fc.oneof(
      fc.record({
        kind: fc.constant('reserve' as const), organisation: fc.integer({ min: 0, max: organisationCount }),
        internal: fc.boolean(), amountMicros: fc.integer({ min: 1, max: 900 }),
        // Release before Reserve (ONE_OUTCOME): about one Reserve in four.
        releasedFirst: fc.integer({ min: 0, max: 3 }).map((roll) => roll === 0),
      }),
      fc.record({
        kind: fc.constant('settle' as const), pick: fc.nat(), costMicros: fc.integer({ min: 0, max: 1_200 }),
        // BOUNDED_OVERRUN: mostly none, sometimes some.
        overrunOutputTokens: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 5_000 })),
      }),
    );
    await fc.assert(fc.asyncProperty(fc.array(fc.array(plannedOperation, { minLength: 1, maxLength: 12 }), { minLength: 1, maxLength: 6 }), async (batches) => {
      run++;
      const organisationOf = (side: string, index: number) => `sb-${run}-${side}-${index}`;
      for (const side of ['set', 'each']) {
        for (let index = 0; index < organisationCount; index++) {
          await openAccount(db, organisationOf(side, index));
          await credit(db, { creditId: `fund-${organisationOf(side, index)}`, organisationId: organisationOf(side, index), amountMicros: fundingMicros, reason: '' });
        }
      }
      const held: string[] = [];
      let serial = 0;
      // What each reservation's fingerprint columns must hold: the fingerprint its operation sent.
      const sentFingerprints = new Map<string, string>();
      for (const batch of batches) {
        // Ids are distinct within a batch and settles pick reservations still held: the common shape.
        const sides: Record<string, LedgerOperation[]> = { set: [], each: [] };
        const settledNow = new Set<string>();
        const reservedNow: string[] = [];
        for (const planned of batch) {
          if (planned.kind === 'reserve') {
            const id = `r${serial++}`;
            reservedNow.push(id);
            for (const side of ['set', 'each']) {
              if (planned.releasedFirst) {
                // The Release overtook its Reserve: it finds no reservation and leaves a tombstone.
                const released = await release(db, { reservationId: `sb-${run}-${side}-${id}`, reason: 'upstream_not_called' });
                expect(released.result).toBe('reservation_unknown');
              }
              sides[side]!.push(reserveOperation(`sb-${run}-${side}-${id}`, organisationOf(side, planned.organisation), planned.internal, BigInt(planned.amountMicros)));
            }
          } else {
            const candidates = held.filter((id) => !settledNow.has(id));
            if (candidates.length === 0) continue;
            const id = candidates[planned.pick % candidates.length]!;
            settledNow.add(id);
            for (const side of ['set', 'each']) {
              sides[side]!.push(settleOperation(`sb-${run}-${side}-${id}`, BigInt(planned.costMicros), BigInt(planned.overrunOutputTokens)));
            }
          }
        }
        // A batch of one takes the direct single-operation path (0005), compared just the same.
        if (sides.set!.length < 1) continue;
        for (const operation of [...sides.set!, ...sides.each!]) sentFingerprints.set(`${operation.kind}:${operation.reservationId}`, operation.fingerprint);
        const setAnswers = await db.transaction(async (tx) => {
          await tx.query("SET LOCAL ledger_test.set_based_only = 'on'");
          return answersOf(await tx.query<BatchRow>('SELECT * FROM ledger_apply_batch($1::jsonb, false) ORDER BY ordinal', [payloadOf(sides.set!)]));
        });
        const eachAnswers = answersOf(await db.query<BatchRow>('SELECT * FROM ledger_apply_batch_each($1::jsonb, false) ORDER BY ordinal', [payloadOf(sides.each!)]));
        expect(setAnswers.map(comparable)).toEqual(eachAnswers.map(comparable));
        releasedAnswers += setAnswers.filter((answer) => answer.ok && answer.result === 'released').length;
        // Track what is held now, from the answers (equal on both sides).
        for (const id of settledNow) held.splice(held.indexOf(id), 1);
        let reserveIndex = 0;
        sides.set!.forEach((operation, index) => {
          if (operation.kind !== 'reserve') return;
          const id = reservedNow[reserveIndex++]!;
          if ((setAnswers[index] as { result?: string }).result === 'ok') held.push(id);
        });
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
              expires_at - created_at AS lifetime FROM reservations WHERE id LIKE $1 ORDER BY id`),
          usage: await read(`SELECT reservation_id, organisation_id, project_id, model_slug, input_tokens, output_tokens, cost_micros,
              provider_cost_micros, debited_micros, billing_mode, usage_source, request_id, provisional, overrun_output_tokens
              FROM usage_records WHERE reservation_id LIKE $1 ORDER BY id`),
          spend: await read('SELECT project_id, month, organisation_id, settled_micros FROM project_month_spend WHERE project_id LIKE $1 ORDER BY project_id'),
          tombstones: await read('SELECT reservation_id, reason FROM reservation_tombstones WHERE reservation_id LIKE $1 ORDER BY reservation_id'),
        };
      };
      expect(await rowsOf('set')).toEqual(await rowsOf('each'));
    }), { numRuns: 25 });
    expect(releasedAnswers).toBeGreaterThan(0);
    expect((await db.query("SELECT 1 FROM usage_records WHERE overrun_output_tokens > 0 AND reservation_id LIKE 'sb-%-set-%'")).rowCount).toBeGreaterThan(0);
    expect(await findBalanceDifferences(db)).toEqual([]);
  }, 120_000);

  /**
   * Migration 0005 decides on balances read without a lock and locks the accounts last; law 1
   * is the second decision, under the lock. Here another transaction spends most of the wallet
   * while the batch is between its read and its lock: the batch must not commit its stale
   * decision (SQLSTATE LR002, nothing written), and applyLedgerOperations, running it again,
   * must answer what the locked balance says.
   */
  it('never commits a decision made on a balance that changed before the lock (law 1 under the lock)', async () => {
    const organisationId = 'sb-stale';
    await openAccount(db, organisationId);
    await credit(db, { creditId: `fund-${organisationId}`, organisationId, amountMicros: fundingMicros, reason: '' });
    const spendMostOfIt = (id: string) => payloadOf([reserveOperation(id, organisationId, false, 1_500n)]).slice(1, -1);
    const batch = [reserveOperation('sb-stale-a', organisationId, false, 1_000n), reserveOperation('sb-stale-b', organisationId, true, 5n)];

    // While another transaction holds the account (and spends 1,500 of 2,000 µ₹), the batch
    // reads 2,000 unlocked, decides OK, writes its rows and waits for the lock.
    const raceWith = async <T>(id: string, run: () => Promise<T>): Promise<T> => {
      let pending: Promise<T> | undefined;
      await db.transaction(async (tx) => {
        await tx.query('SELECT ledger_reserve($1::jsonb)', [spendMostOfIt(id)]);
        pending = run();
        pending.catch(() => undefined);
        await new Promise((resolve) => setTimeout(resolve, 300));
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
