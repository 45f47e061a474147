import type { Queryable } from '@gateway/db';
import type { Balances } from './ledger-types.ts';

/** An account row as the ledger reads it. */
interface AccountRow {
  credited_micros: bigint;
  available_micros: bigint;
  held_micros: bigint;
  debited_micros: bigint;
}

/** Reads the balances of one account, µ₹, or undefined when the organisation has none. */
export async function readBalances(db: Queryable, organisationId: string): Promise<Balances | undefined> {
  const { rows } = await db.query<AccountRow>(
    'SELECT credited_micros, available_micros, held_micros, debited_micros FROM accounts WHERE organisation_id = $1',
    [organisationId],
  );
  const row = rows[0];
  if (!row) return undefined;
  return {
    creditedMicros: row.credited_micros,
    availableMicros: row.available_micros,
    heldMicros: row.held_micros,
    debitedMicros: row.debited_micros,
  };
}
