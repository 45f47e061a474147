import { ledgerV1 } from '@gateway/contracts';
import { testPostgresUrl } from '@gateway/testkit';
import { describe, expect, it } from 'vitest';
import { expireDueReservations } from './domain/expire-due-reservations.ts';
import { balancesOf, fundedOrganisation, uniqueId } from './testing/start-test-ledger.ts';
import { useTestLedger } from './testing/ledger-test-setup.ts';

const { ReserveResult, SettleResult, ReleaseResult, CreditResult } = ledgerV1;
const serverUrl = testPostgresUrl();

/** Counts how often each result occurs. */
function tally<T extends { result: number }>(responses: T[]): Map<number, number> {
  const counts = new Map<number, number>();
  for (const { result } of responses) counts.set(result, (counts.get(result) ?? 0) + 1);
  return counts;
}

/** Correctness comes from the database, not the process: these races go through real connections. */
describe.skipIf(!serverUrl)('concurrency', () => {
  const ledger = useTestLedger('postgres', { serverUrl, sweepIntervalMs: 60_000, conservation: 'after-each' });

  it('NO_OVERSPEND: lets exactly 10 of 50 concurrent Reserves through a balance that fits 10', async () => {
    const organisationId = await fundedOrganisation(ledger, 10n * 333_333n);
    const responses = await Promise.all(Array.from({ length: 50 }, () => ledger.reserve({ organisationId, amountMicros: 333_333n })));
    const counts = tally(responses);
    expect(counts.get(ReserveResult.RESERVE_RESULT_OK)).toBe(10);
    expect(counts.get(ReserveResult.RESERVE_RESULT_INSUFFICIENT_BALANCE)).toBe(40);
    expect(await balancesOf(ledger, organisationId)).toEqual({
      creditedMicros: 3_333_330n, availableMicros: 0n, heldMicros: 3_333_330n, debitedMicros: 0n,
    });
    const held = await ledger.database.query('SELECT 1 FROM reservations WHERE organisation_id = $1', [organisationId]);
    expect(held.rowCount).toBe(10);
  });

  it('IDEMPOTENCY: holds once when the same Reserve arrives 20 times at once', async () => {
    const organisationId = await fundedOrganisation(ledger, 1_000_000n);
    const request = { reservationId: uniqueId('dup'), organisationId, amountMicros: 400_000n };
    const responses = await Promise.all(Array.from({ length: 20 }, () => ledger.reserve(request)));
    expect(tally(responses).get(ReserveResult.RESERVE_RESULT_OK)).toBe(20);
    expect(new Set(responses.map((response) => response.expiresAtMs)).size).toBe(1);
    expect(await balancesOf(ledger, organisationId)).toMatchObject({ availableMicros: 600_000n, heldMicros: 400_000n });
  });

  it('IDEMPOTENCY: credits once when the same credit arrives 20 times at once', async () => {
    const organisationId = await fundedOrganisation(ledger, 0n);
    const request = { creditId: uniqueId('pay'), organisationId, amountMicros: 2_500_000n };
    const responses = await Promise.all(Array.from({ length: 20 }, () => ledger.credit(request)));
    expect(tally(responses).get(CreditResult.CREDIT_RESULT_OK)).toBe(20);
    expect(await balancesOf(ledger, organisationId)).toMatchObject({ creditedMicros: 2_500_000n, availableMicros: 2_500_000n });
  });

  it('ONE_OUTCOME: lets exactly one of a racing Settle and Release win, every time', async () => {
    const organisationId = await fundedOrganisation(ledger, 10_000_000n);
    let settledWins = 0;
    for (let round = 0; round < 15; round++) {
      const reservationId = uniqueId('race');
      await ledger.reserve({ reservationId, organisationId, amountMicros: 500_000n });
      const [settled, released] = await Promise.all([
        ledger.settle({ reservationId, costMicros: 123_456n }),
        ledger.release({ reservationId }),
      ]);
      const settleWon = settled.result === SettleResult.SETTLE_RESULT_OK;
      const releaseWon = released.result === ReleaseResult.RELEASE_RESULT_OK;
      expect(settleWon !== releaseWon).toBe(true);
      if (settleWon) {
        settledWins++;
        expect(released.result).toBe(ReleaseResult.RELEASE_RESULT_ALREADY_RESOLVED);
      } else {
        expect(settled.result).toBe(SettleResult.SETTLE_RESULT_ALREADY_RESOLVED);
      }
    }
    expect(await balancesOf(ledger, organisationId)).toEqual({
      creditedMicros: 10_000_000n, availableMicros: 10_000_000n - BigInt(settledWins) * 123_456n, heldMicros: 0n,
      debitedMicros: BigInt(settledWins) * 123_456n,
    });
    const usage = await ledger.database.query('SELECT 1 FROM usage_records WHERE organisation_id = $1', [organisationId]);
    expect(usage.rowCount).toBe(settledWins);
  });

  it('ONE_OUTCOME and NOTHING_FREE: lets one of two different Settles win and writes one usage record', async () => {
    const organisationId = await fundedOrganisation(ledger, 1_000_000n);
    const reservationId = uniqueId('res');
    await ledger.reserve({ reservationId, organisationId, amountMicros: 1_000_000n });
    const responses = await Promise.all([
      ledger.settle({ reservationId, costMicros: 100n }), ledger.settle({ reservationId, costMicros: 200n }),
      ledger.settle({ reservationId, costMicros: 100n }), ledger.settle({ reservationId, costMicros: 200n }),
    ]);
    const winners = responses.filter((response) => response.result === SettleResult.SETTLE_RESULT_OK);
    const losers = responses.filter((response) => response.result === SettleResult.SETTLE_RESULT_IDEMPOTENCY_CONFLICT);
    expect(winners).toHaveLength(2);
    expect(losers).toHaveLength(2);
    expect(winners[0]).toEqual(winners[1]);
    const cost = winners[0]!.debitedMicros;
    expect(await balancesOf(ledger, organisationId)).toEqual({
      creditedMicros: 1_000_000n, availableMicros: 1_000_000n - cost, heldMicros: 0n, debitedMicros: cost,
    });
    const usage = await ledger.database.query<{ cost_micros: bigint }>('SELECT cost_micros FROM usage_records WHERE reservation_id = $1', [reservationId]);
    expect(usage.rows).toEqual([{ cost_micros: cost }]);
  });

  it('ONE_OUTCOME: resolves a Settle racing the sweeper of another replica one way or the other, never both', async () => {
    const organisationId = await fundedOrganisation(ledger, 10_000_000n);
    const reservations: string[] = [];
    for (let index = 0; index < 8; index++) {
      const reservationId = uniqueId('due');
      reservations.push(reservationId);
      await ledger.reserve({ reservationId, organisationId, amountMicros: 1_000_000n, ttlMs: 1_000n });
    }
    // Every deadline passes now: moved into the past rather than waited out (the app's own sweeper is idle).
    await ledger.database.query("UPDATE reservations SET expires_at = now() - interval '1 second' WHERE organisation_id = $1", [organisationId]);

    const [settles] = await Promise.all([
      Promise.all(reservations.map((reservationId) => ledger.settle({ reservationId, costMicros: 250_000n }))),
      expireDueReservations(ledger.database, 3).then(() => expireDueReservations(ledger.database, 500)),
    ]);
    for (const response of settles) expect(response.result).toBe(SettleResult.SETTLE_RESULT_OK);

    const rows = await ledger.database.query<{ status: string; expire_count: bigint; settle_released: bigint; settle_overrun: bigint }>(
      `SELECT r.status, r.settle_released_micros AS settle_released, r.settle_overrun_micros AS settle_overrun,
         (SELECT count(*) FROM movements m WHERE m.reservation_id = r.id AND m.kind = 'expire') AS expire_count
       FROM reservations r WHERE r.organisation_id = $1`, [organisationId]);
    for (const row of rows.rows) {
      if (row.status === 'settled') {
        expect(row).toMatchObject({ expire_count: 0n, settle_released: 750_000n, settle_overrun: 0n });
      } else {
        expect(row).toMatchObject({ status: 'expired', expire_count: 1n, settle_released: 0n, settle_overrun: 250_000n });
      }
    }
    // Whichever way each went, every usage was debited exactly once and every hold returned.
    expect(await balancesOf(ledger, organisationId)).toEqual({
      creditedMicros: 10_000_000n, availableMicros: 8_000_000n, heldMicros: 0n, debitedMicros: 2_000_000n,
    });
  });

  it('CONSERVATION: keeps every balance agreeing with its rows, and no hold left, through a mixed concurrent workload across organisations', async () => {
    const organisations = await Promise.all(Array.from({ length: 4 }, () => fundedOrganisation(ledger, 2_000_000n)));
    // A fixed pseudo-random sequence, so a failure reproduces.
    let seed = 42;
    const next = (limit: number) => { seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648; return seed % limit; };
    const flows = Array.from({ length: 60 }, async (_, index) => {
      const organisationId = organisations[next(organisations.length)]!;
      const reservationId = `mixed-${index}-${uniqueId('r')}`;
      const amountMicros = BigInt(1 + next(400_000));
      const ending = next(4);
      const costMicros = BigInt(next(500_000));
      const reserved = await ledger.reserve({ reservationId, organisationId, amountMicros });
      if (ending === 3) await ledger.credit({ organisationId, amountMicros: BigInt(1 + next(100_000)) });
      if (reserved.result !== ReserveResult.RESERVE_RESULT_OK) return;
      if (ending === 0) await ledger.release({ reservationId });
      else await Promise.all([ledger.settle({ reservationId, costMicros }), ledger.settle({ reservationId, costMicros })]);
    });
    await Promise.all(flows);
    for (const organisationId of organisations) {
      const balances = await balancesOf(ledger, organisationId);
      expect(balances.heldMicros).toBe(0n);
      expect(balances.creditedMicros).toBe(balances.availableMicros + balances.heldMicros + balances.debitedMicros);
    }
  });
});
