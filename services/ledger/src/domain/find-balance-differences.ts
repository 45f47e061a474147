import type { Database, Queryable } from '@gateway/db';
import type { Balances } from './ledger-types.ts';

/** Which balance column a difference is about. */
export type BalanceName = 'credited' | 'available' | 'held' | 'debited' | 'project_settled' | 'orphan_row' | 'grant_remaining';

/**
 * Which check found a difference:
 * - `conservation`: the account row breaks credited = available + held + debited;
 * - `movements`: a balance differs from the sum of its movement deltas;
 * - `credits`: credited differs from the sum of the credits table less the sum of the refunds table;
 * - `holds`: held differs from the Reserves of commercial reservations still held plus what
 *   commercial credit grants still held hold (a grant is a reservation in every law);
 * - `grants`: a commercial grant's remaining differs from the sum of its movements' held deltas
 *   (granted, less carved settles' debits, promotions, returns and expiry: CONSERVATION (grants));
 * - `usage`: debited differs from the sum debited on usage records;
 * - `project_spend`: a project's settled spend of a month differs from its usage records' cost;
 * - `orphans`: a reservation, movement or usage record names an account, reservation, credit or refund
 *   that does not exist (the hot tables have no foreign keys since migration 0005: the ledger
 *   functions that write them lock the parent first, and this check proves it held).
 */
export type BalanceCheck = 'conservation' | 'movements' | 'credits' | 'holds' | 'usage' | 'project_spend' | 'orphans' | 'grants';

/** One disagreement between an account's stored balance and what the rows say it must be, µ₹. */
export interface BalanceDifference {
  organisationId: string;
  check: BalanceCheck;
  balance: BalanceName;
  /** What the accounts row holds (for conservation: credited). */
  accountMicros: bigint;
  /** What the rows add up to (for conservation: available + held + debited). */
  recomputedMicros: bigint;
  /** For `project_spend`: which project and month (Asia/Kolkata). */
  projectMonth?: { projectId: string; month: string };
  /** For `orphans`: the row (its table and id) and which parent it names but does not have. */
  orphan?: OrphanRow;
  /** For `grants`: which grant. */
  grantId?: string;
}

/** A row whose parent does not exist; for `orphans` differences, accountMicros is 0 and recomputedMicros the row's amount, µ₹. */
interface OrphanRow {
  table: 'reservations' | 'movements' | 'usage_records';
  /** The row's id (a reservation id, or a movement / usage record serial as decimal). */
  rowId: string;
  missing: 'account' | 'reservation' | 'credit' | 'refund' | 'grant';
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
 * Checks CONSERVATION against the rows, in one snapshot: for every account,
 * credited = available + held + debited, and each balance equals what the movements add up to;
 * credited also equals the credits less the refunds, held the Reserves still held, debited the usage records'
 * debits (and PROJECT_BUDGET's spend rows their usage records, and every row its parent).
 * Returns every difference found; an empty list means the ledger agrees to the µ₹.
 */
export async function findBalanceDifferences(db: Database): Promise<BalanceDifference[]> {
  return (await verifyLedger(db)).differences;
}

/** What a verification found: how many accounts it checked, and every difference. */
export interface LedgerVerification {
  accountsChecked: bigint;
  differences: BalanceDifference[];
}

/** Runs every check of findBalanceDifferences in one snapshot and also reports how many accounts it checked. */
export async function verifyLedger(db: Database): Promise<LedgerVerification> {
  return db.transaction(async (tx): Promise<LedgerVerification> => {
    const accounts = await tx.query<{ organisation_id: string } & Record<'credited_micros' | 'available_micros' | 'held_micros' | 'debited_micros', bigint>>(
      'SELECT organisation_id, credited_micros, available_micros, held_micros, debited_micros FROM accounts',
    );
    const fromMovements = await recomputeBalances(tx);
    // CONSERVATION (credits): what was credited less what was refunded.
    const credited = await sumsBy(tx, `SELECT organisation_id, sum(amount_micros)::bigint AS total FROM (
        SELECT organisation_id, amount_micros FROM credits
        UNION ALL SELECT organisation_id, -amount_micros FROM refunds
      ) money_in GROUP BY organisation_id`);
    // CONSERVATION (holds): requests' holds and grants' remaining holds.
    const held = await sumsBy(tx, `SELECT organisation_id, sum(amount)::bigint AS total FROM (
        SELECT organisation_id, amount_micros AS amount FROM reservations WHERE status = 'held' AND billing_mode = 'commercial'
        UNION ALL SELECT organisation_id, remaining_micros FROM grants WHERE status = 'held' AND billing_mode = 'commercial'
      ) holds GROUP BY organisation_id`);
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
    differences.push(...await grantDifferences(tx));
    differences.push(...await projectSpendDifferences(tx));
    differences.push(...await orphanDifferences(tx));
    return { accountsChecked: BigInt(accounts.rows.length), differences };
  }, { isolation: 'repeatable read' });
}

/** Runs a per-organisation sum query into a map. */
async function sumsBy(tx: Queryable, sql: string): Promise<Map<string, bigint>> {
  const { rows } = await tx.query<SumRow>(sql);
  return new Map(rows.map((row) => [row.organisation_id, row.total]));
}

/**
 * CONSERVATION (grants): every commercial grant's remaining equals the sum of the held deltas of
 * the movements naming it (its `grant` hold, less carved settles' debits from it, promotions'
 * and returns' `grant_return`, and its `expire`).
 */
async function grantDifferences(tx: Queryable): Promise<BalanceDifference[]> {
  const { rows } = await tx.query<{ organisation_id: string; id: string; remaining_micros: bigint; recomputed: bigint }>(
    `SELECT g.organisation_id, g.id, g.remaining_micros, coalesce(m.total, 0)::bigint AS recomputed
     FROM grants g
     LEFT JOIN (SELECT grant_id, sum(held_delta_micros) AS total FROM movements WHERE grant_id IS NOT NULL GROUP BY grant_id) m
       ON m.grant_id = g.id
     WHERE g.billing_mode = 'commercial' AND g.remaining_micros IS DISTINCT FROM coalesce(m.total, 0)`,
  );
  return rows.map((row) => ({
    organisationId: row.organisation_id, check: 'grants', balance: 'grant_remaining', accountMicros: row.remaining_micros,
    recomputedMicros: row.recomputed, grantId: row.id,
  }));
}

/** A project month's settled spend, as the counter holds it and as its usage records add up. */
interface ProjectSpendRow {
  organisation_id: string;
  project_id: string;
  month: string;
  counter: bigint | null;
  recomputed: string | null;
}

/** Compares every project_month_spend counter with the cost of the usage records of that project and month. */
async function projectSpendDifferences(tx: Queryable): Promise<BalanceDifference[]> {
  const { rows } = await tx.query<ProjectSpendRow>(
    // Project ids are global (the admin issues them), so spend is keyed by project and month.
    `WITH recomputed AS (
       SELECT min(organisation_id) AS organisation_id, project_id,
         to_char(created_at AT TIME ZONE 'Asia/Kolkata', 'YYYY-MM') AS month, sum(cost_micros) AS total
       FROM usage_records GROUP BY 2, 3 HAVING sum(cost_micros) > 0
     )
     SELECT coalesce(s.organisation_id, r.organisation_id) AS organisation_id, coalesce(s.project_id, r.project_id) AS project_id,
       coalesce(s.month, r.month) AS month, s.settled_micros AS counter, r.total::text AS recomputed
     FROM project_month_spend s FULL JOIN recomputed r ON r.project_id = s.project_id AND r.month = s.month
     WHERE s.settled_micros IS DISTINCT FROM r.total`,
  );
  return rows.map((row) => ({
    organisationId: row.organisation_id, check: 'project_spend', balance: 'project_settled',
    accountMicros: row.counter ?? 0n, recomputedMicros: row.recomputed === null ? 0n : BigInt(row.recomputed),
    projectMonth: { projectId: row.project_id, month: row.month },
  }));
}

/** An orphan row as SQL returns it. */
interface OrphanSqlRow {
  table_name: OrphanRow['table'];
  row_id: string;
  missing: OrphanRow['missing'];
  organisation_id: string;
  micros: bigint;
}

/** Most orphan rows reported by one verification (each is a bug; the first ones say enough). */
const maxOrphansReported = 1_000;

/**
 * Every reservation, movement and usage record whose account, reservation, credit or refund does not
 * exist (anti-joins on primary keys; one pass over each table, as the sums above already do).
 */
async function orphanDifferences(tx: Queryable): Promise<BalanceDifference[]> {
  const { rows } = await tx.query<OrphanSqlRow>(
    `SELECT 'reservations' AS table_name, r.id AS row_id, 'account' AS missing, r.organisation_id, r.amount_micros AS micros
     FROM reservations r WHERE NOT EXISTS (SELECT 1 FROM accounts a WHERE a.organisation_id = r.organisation_id)
     UNION ALL
     SELECT 'movements', m.id::text, 'account', m.organisation_id, m.amount_micros
     FROM movements m WHERE NOT EXISTS (SELECT 1 FROM accounts a WHERE a.organisation_id = m.organisation_id)
     UNION ALL
     SELECT 'movements', m.id::text, 'reservation', m.organisation_id, m.amount_micros
     FROM movements m WHERE m.reservation_id IS NOT NULL
       AND NOT EXISTS (SELECT 1 FROM reservations r WHERE r.id = m.reservation_id)
     UNION ALL
     SELECT 'movements', m.id::text, 'credit', m.organisation_id, m.amount_micros
     FROM movements m WHERE m.credit_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM credits c WHERE c.credit_id = m.credit_id)
     UNION ALL
     SELECT 'movements', m.id::text, 'refund', m.organisation_id, m.amount_micros
     FROM movements m WHERE m.refund_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM refunds f WHERE f.refund_id = m.refund_id)
     UNION ALL
     SELECT 'reservations', r.id, 'grant', r.organisation_id, r.amount_micros
     FROM reservations r WHERE r.grant_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM grants g WHERE g.id = r.grant_id)
     UNION ALL
     SELECT 'movements', m.id::text, 'grant', m.organisation_id, m.amount_micros
     FROM movements m WHERE m.grant_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM grants g WHERE g.id = m.grant_id)
     UNION ALL
     SELECT 'usage_records', u.id::text, 'account', u.organisation_id, u.cost_micros
     FROM usage_records u WHERE NOT EXISTS (SELECT 1 FROM accounts a WHERE a.organisation_id = u.organisation_id)
     UNION ALL
     SELECT 'usage_records', u.id::text, 'reservation', u.organisation_id, u.cost_micros
     FROM usage_records u WHERE NOT EXISTS (SELECT 1 FROM reservations r WHERE r.id = u.reservation_id)
     LIMIT ${maxOrphansReported}`,
  );
  return rows.map((row) => ({
    organisationId: row.organisation_id, check: 'orphans', balance: 'orphan_row', accountMicros: 0n,
    recomputedMicros: BigInt(row.micros), orphan: { table: row.table_name, rowId: row.row_id, missing: row.missing },
  }));
}
