import { ledgerV1 } from '@gateway/contracts';
import type { Database } from '@gateway/db';
import { testPostgresUrl } from '@gateway/testkit';
import { describe, expect, it } from 'vitest';
import { applyLedgerOperations, type LedgerOperation } from './domain/apply-ledger-operations.ts';
import { fingerprintOf } from './domain/fingerprint.ts';
import { pruneReservationTombstones, tombstoneRetentionMs } from './domain/prune-reservation-tombstones.ts';
import { balancesOf, fundedOrganisation, uniqueId, type TestBackend } from './testing/start-test-ledger.ts';
import { useTestLedger } from './testing/ledger-test-setup.ts';

const { ReserveResult, ReleaseResult, BillingMode } = ledgerV1;
const serverUrl = testPostgresUrl();

/** The tombstones of some ids, as rows. */
async function tombstonesOf(database: Database, ids: string[]) {
  const { rows } = await database.query<{ reservation_id: string; reason: string }>(
    'SELECT reservation_id, reason FROM reservation_tombstones WHERE reservation_id = ANY($1) ORDER BY reservation_id', [ids]);
  return rows;
}

/** A valid Reserve as `reserve()` sends it to the batch function. */
function reserveOperation(reservationId: string, organisationId: string, amountMicros: bigint, internal = false): LedgerOperation {
  const fields = {
    organisationId, projectId: 'project-1', billingMode: internal ? 'internal' : 'commercial',
    amountMicros: String(amountMicros), ttlMs: '600000', modelSlug: 'model-a',
  };
  return { kind: 'reserve', reservationId, fingerprint: fingerprintOf('reserve', fields), fields };
}

/**
 * Release before Reserve (ONE_OUTCOME): a Release that overtakes its
 * queued Reserve leaves a tombstone, and the Reserve then holds nothing, on every path.
 */
describe.each<TestBackend>(['postgres', 'pglite'])('ONE_OUTCOME: release tombstones over %s', (backend) => {
  const skip = backend === 'postgres' && !serverUrl;
  const ledger = useTestLedger(backend, { serverUrl, sweepIntervalMs: 600_000, skip, conservation: 'after-each' });

  it.skipIf(skip)('a Release that arrives first leaves a tombstone, and the late Reserve holds nothing (single operation)', async () => {
    const organisationId = await fundedOrganisation(ledger, 1_000_000n);
    const reservationId = uniqueId('late');

    const released = await ledger.release({ reservationId, reason: 'upstream_not_called' });
    expect(released).toMatchObject({ result: ReleaseResult.RELEASE_RESULT_RESERVATION_UNKNOWN, releasedMicros: 0n, availableMicros: 0n });
    // Idempotent: a repeated Release answers the same and leaves the one tombstone.
    expect((await ledger.release({ reservationId, reason: 'again' })).result).toBe(ReleaseResult.RELEASE_RESULT_RESERVATION_UNKNOWN);
    expect(await tombstonesOf(ledger.database, [reservationId])).toEqual([{ reservation_id: reservationId, reason: 'upstream_not_called' }]);

    const before = await ledger.countRows();
    const reserved = await ledger.reserve({ reservationId, organisationId, amountMicros: 400_000n });
    expect(reserved).toMatchObject({ result: ReserveResult.RESERVE_RESULT_RELEASED, availableMicros: 0n, expiresAtMs: 0n });
    // Nothing held, nothing written, and a replay of the Reserve answers the same.
    expect((await ledger.reserve({ reservationId, organisationId, amountMicros: 400_000n })).result).toBe(ReserveResult.RESERVE_RESULT_RELEASED);
    expect(await ledger.countRows()).toEqual(before);
    expect(await balancesOf(ledger, organisationId)).toEqual({
      creditedMicros: 1_000_000n, availableMicros: 1_000_000n, heldMicros: 0n, debitedMicros: 0n,
    });
    // A Settle of it finds no reservation (the proxy never called the upstream for it).
    expect((await ledger.settle({ reservationId, costMicros: 1n })).result).toBe(ledgerV1.SettleResult.SETTLE_RESULT_RESERVATION_UNKNOWN);
    expect((await ledger.verify()).differences).toEqual([]);
  });

  it.skipIf(skip)('refuses the late Reserve in internal mode, for a budgeted project and an unknown organisation; INVALID_ARGUMENT still comes first', async () => {
    const organisationId = await fundedOrganisation(ledger, 1_000_000n);
    const projectId = uniqueId('budgeted');
    await ledger.setProjectBudget({ organisationId, projectId, monthlyCapMicros: 500_000n, softAlertPercent: 50 });
    const internal = uniqueId('late-internal');
    const budgeted = uniqueId('late-budgeted');
    const unknownOrganisation = uniqueId('late-no-account');
    const invalid = uniqueId('late-invalid');
    for (const reservationId of [internal, budgeted, unknownOrganisation, invalid]) {
      expect((await ledger.release({ reservationId })).result).toBe(ReleaseResult.RELEASE_RESULT_RESERVATION_UNKNOWN);
    }
    const before = await ledger.countRows();
    expect((await ledger.reserve({ reservationId: internal, organisationId, amountMicros: 400_000n, billingMode: BillingMode.BILLING_MODE_INTERNAL })).result)
      .toBe(ReserveResult.RESERVE_RESULT_RELEASED);
    // 900,000 µ₹ would pass the cap too: the tombstone is decided first.
    expect((await ledger.reserve({ reservationId: budgeted, organisationId, projectId, amountMicros: 900_000n })).result)
      .toBe(ReserveResult.RESERVE_RESULT_RELEASED);
    expect((await ledger.reserve({ reservationId: unknownOrganisation, organisationId: uniqueId('nobody'), amountMicros: 1n })).result)
      .toBe(ReserveResult.RESERVE_RESULT_RELEASED);
    expect((await ledger.reserve({ reservationId: invalid, organisationId, amountMicros: 0n })).result).toBe(ReserveResult.RESERVE_RESULT_INVALID_ARGUMENT);
    expect(await ledger.countRows()).toEqual(before);
    expect(await ledger.getProjectSpend(projectId)).toMatchObject({ settledMicros: 0n, heldMicros: 0n });
  });

  it.skipIf(skip)('a Reserve held before its Release behaves as before: the Release releases it and leaves no tombstone', async () => {
    const organisationId = await fundedOrganisation(ledger, 1_000_000n);
    const reservationId = uniqueId('first');
    expect((await ledger.reserve({ reservationId, organisationId, amountMicros: 300_000n })).result).toBe(ReserveResult.RESERVE_RESULT_OK);
    expect(await ledger.release({ reservationId })).toMatchObject({ result: ReleaseResult.RELEASE_RESULT_OK, releasedMicros: 300_000n, availableMicros: 1_000_000n });
    expect(await ledger.release({ reservationId })).toMatchObject({ result: ReleaseResult.RELEASE_RESULT_OK, detail: 'replay: reservation already released' });
    // IDEMPOTENCY: the Reserve's replay is a replay, not RELEASED.
    expect((await ledger.reserve({ reservationId, organisationId, amountMicros: 300_000n })).result).toBe(ReserveResult.RESERVE_RESULT_OK);
    expect(await tombstonesOf(ledger.database, [reservationId])).toEqual([]);
    expect(await balancesOf(ledger, organisationId)).toMatchObject({ availableMicros: 1_000_000n, heldMicros: 0n });
  });

  it.skipIf(skip)('refuses tombstoned Reserves inside a set-based batch and holds the others', async () => {
    const organisationId = await fundedOrganisation(ledger, 1_000_000n);
    const ids = ['a', 'b', 'c', 'd'].map((name) => uniqueId(`batch-${name}`));
    for (const reservationId of [ids[1]!, ids[3]!]) {
      expect((await ledger.release({ reservationId })).result).toBe(ReleaseResult.RELEASE_RESULT_RESERVATION_UNKNOWN);
    }
    const answers = await applyLedgerOperations(ledger.database, [
      reserveOperation(ids[0]!, organisationId, 100_000n), reserveOperation(ids[1]!, organisationId, 200_000n),
      reserveOperation(ids[2]!, organisationId, 300_000n), reserveOperation(ids[3]!, organisationId, 400_000n, true),
    ]);
    expect(answers.map((answer) => (answer.ok ? [answer.result, answer.availableMicros] : answer.error.message))).toEqual([
      ['ok', 900_000n], ['released', 0n], ['ok', 600_000n], ['released', 0n],
    ]);
    const { rows } = await ledger.database.query<{ id: string }>('SELECT id FROM reservations WHERE id = ANY($1) ORDER BY id', [ids]);
    expect(rows.map((row) => row.id)).toEqual([ids[0]!, ids[2]!].sort());
    expect(await balancesOf(ledger, organisationId)).toEqual({
      creditedMicros: 1_000_000n, availableMicros: 600_000n, heldMicros: 400_000n, debitedMicros: 0n,
    });
  });

  it.skipIf(skip)('the sweeper prunes tombstones only after their retention', async () => {
    const old = uniqueId('old');
    const fresh = uniqueId('fresh');
    await ledger.release({ reservationId: old });
    await ledger.release({ reservationId: fresh });
    await ledger.database.query(
      "UPDATE reservation_tombstones SET created_at = now() - $2::bigint * interval '1 millisecond' - interval '1 minute' WHERE reservation_id = $1",
      [old, tombstoneRetentionMs]);
    expect(await pruneReservationTombstones(ledger.database, tombstoneRetentionMs, 1_000)).toBe(1);
    expect((await tombstonesOf(ledger.database, [old, fresh])).map((row) => row.reservation_id)).toEqual([fresh]);
  });
});

/**
 * The race the tombstone lock closes (PostgreSQL, READ COMMITTED): a Release of an unknown id
 * and a Reserve of that id in flight at once must not both commit (a hold beside a tombstone).
 * Each side is held open in a transaction while the other runs; the other must wait for it.
 */
describe.skipIf(!serverUrl)('ONE_OUTCOME: release tombstones under concurrency', () => {
  const ledger = useTestLedger('postgres', { serverUrl, sweepIntervalMs: 600_000, conservation: 'after-each' });

  /**
   * Waits (polling) until some backend of this database waits for an advisory lock, or until
   * `call` has answered (without the lock it answers at once, and the assertions say what went wrong).
   */
  async function waitForAdvisoryLockWaiter(call: Promise<unknown>): Promise<void> {
    const pollGapMs = 20; // between reads of pg_locks: the state is polled, no time is assumed
    let answered = false;
    void call.then(() => { answered = true; }, () => { answered = true; });
    while (!answered) {
      const { rows } = await ledger.database.query<{ waiting: bigint }>(
        `SELECT count(*) AS waiting FROM pg_locks
         WHERE locktype = 'advisory' AND NOT granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`);
      if (rows[0]!.waiting > 0n) return;
      await new Promise((resolve) => setTimeout(resolve, pollGapMs));
    }
  }

  it('a Release that finds no reservation while its Reserve is uncommitted waits, then releases it', async () => {
    const organisationId = await fundedOrganisation(ledger, 1_000_000n);
    const reservationId = uniqueId('race-reserve-first');
    let releasing: Promise<ledgerV1.ReleaseResponse> | undefined;
    await ledger.database.transaction(async (tx) => {
      const operation = reserveOperation(reservationId, organisationId, 250_000n);
      const held = await tx.query<{ result: string }>('SELECT (ledger_reserve($1::jsonb)).result',
        [JSON.stringify({ ...operation.fields, kind: 'reserve', reservationId, fingerprint: operation.fingerprint })]);
      expect(held.rows[0]!.result).toBe('ok');
      releasing = ledger.release({ reservationId });
      await waitForAdvisoryLockWaiter(releasing);
    });
    expect(await releasing!).toMatchObject({ result: ReleaseResult.RELEASE_RESULT_OK, releasedMicros: 250_000n });
    expect(await tombstonesOf(ledger.database, [reservationId])).toEqual([]);
    expect(await balancesOf(ledger, organisationId)).toMatchObject({ availableMicros: 1_000_000n, heldMicros: 0n });
  });

  it('a Reserve that arrives while an unknown-id Release is uncommitted waits, then holds nothing', async () => {
    const organisationId = await fundedOrganisation(ledger, 1_000_000n);
    const reservationId = uniqueId('race-release-first');
    let reserving: Promise<ledgerV1.ReserveResponse> | undefined;
    await ledger.database.transaction(async (tx) => {
      const tombstoned = await tx.query<{ tombstoned: boolean }>(
        "SELECT ledger_tombstone_unknown_reservation($1, 'upstream_not_called') AS tombstoned", [reservationId]);
      expect(tombstoned.rows[0]!.tombstoned).toBe(true);
      reserving = ledger.reserve({ reservationId, organisationId, amountMicros: 250_000n });
      await waitForAdvisoryLockWaiter(reserving);
    });
    expect((await reserving!).result).toBe(ReserveResult.RESERVE_RESULT_RELEASED);
    expect((await ledger.database.query('SELECT 1 FROM reservations WHERE id = $1', [reservationId])).rowCount).toBe(0);
    expect(await balancesOf(ledger, organisationId)).toMatchObject({ availableMicros: 1_000_000n, heldMicros: 0n });
  });
});
