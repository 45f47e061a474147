import type { Database, Queryable } from '@gateway/db';
import type { Balances } from './ledger-types.ts';

/** Which balance column a difference is about. */
export type BalanceName = 'credited' | 'available' | 'held' | 'debited';

/**
 * Which check found a difference:
 * - `conservation`: the account row breaks credited = available + held + debited;
 * - `movements`: a balance differs from the sum of its movement deltas;
 * - `credits`: credited differs from the sum of the credits table;
 * - `holds`: held differs from the Reserves of commercial reservations still held;
 * - `usage`: debited differs from the sum debited on usage records.
 */
export type BalanceCheck = 'conservation' | 'movements' | 'credits' | 'holds' | 'usage';

/** One disagreement between an account's stored balance and what the rows say it must be, µ₹. */
export interface BalanceDifference {
  organisationId: string;
  check: BalanceCheck;
  balance: BalanceName;
  /** What the accounts row holds (for conservation: credited). */
  accountMicros: bigint;
  /** What the rows add up to (for conservation: available + held + debited). */
  recomputedMicros: bigint;
}

/** A sum per organisation, as SQL returns it. */
interface SumRow {
  organisation_id: string;
  total: bigint;
}

/** Balances recomputed from movement rows, as SQL returns them. */
interface MovementSumRow {
  organisation_id: string;
  credited: bigint;
  available: bigint;
  held: bigint;
  debited: bigint;
}

const zeroBalances = (): Balances => ({ creditedMicros: 0n, availableMicros: 0n, heldMicros: 0n, debitedMicros: 0n });

/** Recomputes every organisation's balances from the movement rows alone (sums of their deltas), µ₹. */
export async function recomputeBalances(db: Queryable): Promise<Map<string, Balances>> {
  const { rows } = await db.query<MovementSumRow>(
    `SELECT organisation_id,
       coalesce(sum(credited_delta_micros), 0)::bigint AS credited,
       coalesce(sum(available_delta_micros), 0)::bigint AS available,
       coalesce(sum(held_delta_micros), 0)::bigint AS held,
       coalesce(sum(debited_delta_micros), 0)::bigint AS debited
     FROM movements GROUP BY organisation_id`,
  );
  return new Map(rows.map((row) => [row.organisation_id, {
    creditedMicros: row.credited, availableMicros: row.available, heldMicros: row.held, debitedMicros: row.debited,
  }]));
}

/**
 * Checks the ledger's laws against its rows, in one snapshot: for every account,
 * credited = available + held + debited, and each balance equals what the movements add up to;
 * credited also equals the credits, held the Reserves still held, debited the usage records'
 * debits. Returns every difference found; an empty list means the ledger agrees to the µ₹.
 */
export async function findBalanceDifferences(db: Database): Promise<BalanceDifference[]> {
  return db.transaction(async (tx) => {
    const accounts = await tx.query<{ organisation_id: string } & Record<'credited_micros' | 'available_micros' | 'held_micros' | 'debited_micros', bigint>>(
      'SELECT organisation_id, credited_micros, available_micros, held_micros, debited_micros FROM accounts',
    );
    const fromMovements = await recomputeBalances(tx);
    const credited = await sumsBy(tx, 'SELECT organisation_id, sum(amount_micros)::bigint AS total FROM credits GROUP BY organisation_id');
    const held = await sumsBy(tx, `SELECT organisation_id, sum(amount_micros)::bigint AS total FROM reservations
      WHERE status = 'held' AND billing_mode = 'commercial' GROUP BY organisation_id`);
    const debited = await sumsBy(tx, 'SELECT organisation_id, sum(debited_micros)::bigint AS total FROM usage_records GROUP BY organisation_id');

    const differences: BalanceDifference[] = [];
    const note = (organisationId: string, check: BalanceCheck, balance: BalanceName, accountMicros: bigint, recomputedMicros: bigint) => {
      if (accountMicros !== recomputedMicros) differences.push({ organisationId, check, balance, accountMicros, recomputedMicros });
    };
    const seen = new Set<string>();
    for (const account of accounts.rows) {
      const id = account.organisation_id;
      seen.add(id);
      note(id, 'conservation', 'credited', account.credited_micros,
        account.available_micros + account.held_micros + account.debited_micros);
      const moved = fromMovements.get(id) ?? zeroBalances();
      note(id, 'movements', 'credited', account.credited_micros, moved.creditedMicros);
      note(id, 'movements', 'available', account.available_micros, moved.availableMicros);
      note(id, 'movements', 'held', account.held_micros, moved.heldMicros);
      note(id, 'movements', 'debited', account.debited_micros, moved.debitedMicros);
      note(id, 'credits', 'credited', account.credited_micros, credited.get(id) ?? 0n);
      note(id, 'holds', 'held', account.held_micros, held.get(id) ?? 0n);
      note(id, 'usage', 'debited', account.debited_micros, debited.get(id) ?? 0n);
    }
    // Foreign keys forbid rows without an account; report them anyway rather than trust that.
    for (const [id, moved] of fromMovements) {
      if (seen.has(id)) continue;
      note(id, 'movements', 'credited', 0n, moved.creditedMicros);
      note(id, 'movements', 'available', 0n, moved.availableMicros);
      note(id, 'movements', 'held', 0n, moved.heldMicros);
      note(id, 'movements', 'debited', 0n, moved.debitedMicros);
    }
    return differences;
  }, { isolation: 'repeatable read' });
}

/** Runs a per-organisation sum query into a map. */
async function sumsBy(tx: Queryable, sql: string): Promise<Map<string, bigint>> {
  const { rows } = await tx.query<SumRow>(sql);
  return new Map(rows.map((row) => [row.organisation_id, row.total]));
}
