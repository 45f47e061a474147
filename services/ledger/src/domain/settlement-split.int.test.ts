import { testPostgresUrl } from '@gateway/testkit';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { maxAmountMicros } from './ledger-types.ts';
import { useLedgerDatabase } from '../testing/ledger-test-setup.ts';

const serverUrl = testPostgresUrl();

/** One row of ledger_settlement_split, µ₹. */
interface Split {
  held: bigint;
  cost: bigint;
  debited_micros: bigint;
  from_hold_micros: bigint;
  released_micros: bigint;
  overrun_micros: bigint;
}

/**
 * The settlement split is decided once, in sql/ledger_settlement_split.sql, for ledger_settle,
 * the set-based batch and the expiry sweeper alike (CONSERVATION, BOUNDED_OVERRUN, EXPIRY).
 */
describe.skipIf(!serverUrl)('ledger_settlement_split', () => {
  const db = useLedgerDatabase('postgres', { poolSize: 2 });

  const splits = async (pairs: ReadonlyArray<readonly [bigint, bigint]>): Promise<Split[]> => (await db.query<Split>(
    `SELECT x.held, x.cost, s.* FROM unnest($1::bigint[], $2::bigint[]) WITH ORDINALITY AS x (held, cost, n)
     CROSS JOIN LATERAL ledger_settlement_split(x.held, x.cost) AS s ORDER BY x.n`,
    [pairs.map(([held]) => held.toString()), pairs.map(([, cost]) => cost.toString())],
  )).rows;

  it('returns the unused hold below the Reserve, reports the part beyond it as overrun, and makes a settle with no hold all overrun', async () => {
    const [below, beyond, noHold] = await splits([[1_000_000n, 250_001n], [1_000_000n, 1_000_007n], [0n, 42n]]);
    expect(below).toMatchObject({ debited_micros: 250_001n, from_hold_micros: 250_001n, released_micros: 749_999n, overrun_micros: 0n });
    expect(beyond).toMatchObject({ debited_micros: 1_000_007n, from_hold_micros: 1_000_000n, released_micros: 0n, overrun_micros: 7n });
    expect(noHold).toMatchObject({ debited_micros: 42n, from_hold_micros: 0n, released_micros: 0n, overrun_micros: 42n });
  });

  it('conserves money for every hold and cost (CONSERVATION)', async () => {
    const amount = fc.bigInt({ min: 0n, max: maxAmountMicros });
    await fc.assert(fc.asyncProperty(fc.array(fc.tuple(amount, amount), { minLength: 1, maxLength: 200 }), async (pairs) => {
      for (const split of await splits(pairs)) {
        expect(split.from_hold_micros + split.released_micros).toBe(split.held);
        expect(split.from_hold_micros + split.overrun_micros).toBe(split.cost);
        expect(split.debited_micros).toBe(split.cost);
        expect(split.released_micros === 0n || split.overrun_micros === 0n).toBe(true);
        // What the account sees: available moves by held - cost, held drops by the whole hold.
        expect(split.released_micros - split.overrun_micros).toBe(split.held - split.cost);
      }
    }), { numRuns: 50 });
  });
});
