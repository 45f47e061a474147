/**
 * The usage records' monthly partitions (docs/ledger.md, "Usage at volume"; migration 0012):
 * created ahead of need, kept free of strays in the DEFAULT partition, and with retention, old
 * months dropped whole. Months are calendar months in Asia/Kolkata, like every month of the ledger.
 */
import type { Database, Queryable } from '@gateway/db';
import { periodicVerifyLockKey } from './periodic-verify-lock.ts';

/** Month partitions by where they stand against the current month. */
export interface UsagePartitionCounts {
  past: number;
  current: number;
  ahead: number;
}

/** The name every month partition has: `usage_records_p` + year + `_` + month. */
const partitionNamePattern = /^usage_records_p(\d{4})_(\d{2})$/;

/** A month as the ledger writes it, e.g. '2026-11'. */
const monthPattern = /^(\d{4})-(\d{2})$/;

/**
 * How long a pass's DDL waits for a lock before giving up until the next pass, ms: while DROP
 * TABLE or ATTACH PARTITION waits, every Settle that writes a usage record queues behind it.
 */
const ddlLockTimeoutMs = 200;

/** What a step answers when a periodic verify holds its advisory lock: the step waits for the next pass. */
export const deferredForVerify = 'deferred';

/** The partition of a month, e.g. '2026-11' -> `usage_records_p2026_11`. */
export function usagePartitionName(month: string): string {
  const match = monthPattern.exec(month);
  if (!match) throw new Error(`not a month: ${month}`);
  return `usage_records_p${match[1]}_${match[2]}`;
}

/** A month `count` months after `month` (negative: before), e.g. ('2026-11', 2) -> '2027-01'. */
export function addMonths(month: string, count: number): string {
  const match = monthPattern.exec(month);
  if (!match) throw new Error(`not a month: ${month}`);
  const index = Number(match[1]) * 12 + Number(match[2]) - 1 + count;
  return `${String(Math.floor(index / 12)).padStart(4, '0')}-${String((index % 12) + 1).padStart(2, '0')}`;
}

/** The month partitions that exist, by month ('2026-11'), sorted. */
export async function monthPartitions(db: Queryable): Promise<string[]> {
  const { rows } = await db.query<{ name: string }>(
    `SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
     WHERE i.inhparent = 'usage_records'::regclass`,
  );
  return rows.flatMap((row) => {
    const match = partitionNamePattern.exec(row.name);
    return match ? [`${match[1]}-${match[2]}`] : [];
  }).sort();
}

/**
 * Runs `work` in a transaction that holds the partitions' advisory lock (replicas take turns) and
 * gives up on a busy table lock. It also takes the periodic verify's advisory lock, and when a
 * verify holds it answers 'deferred' without running `work`: a verify reads usage_retention from
 * its snapshot, so a month dropped under it would make every roll-up of that month a difference.
 * Holding it, the step keeps a verify from starting until the step commits (that verify skips its
 * turn as running elsewhere). DateStyle ISO: the bounds are rendered as text and read back, and
 * another style (SQL with Asia/Kolkata prints 'IST', which PostgreSQL reads as Israel time) would
 * shift them.
 */
async function underPartitionLock<T>(db: Database, work: (tx: Queryable) => Promise<T>): Promise<T | typeof deferredForVerify> {
  return db.transaction(async (tx) => {
    await tx.query(`SET LOCAL lock_timeout = '${ddlLockTimeoutMs}ms'`);
    await tx.query("SET LOCAL datestyle = 'ISO, YMD'");
    await tx.query("SELECT pg_advisory_xact_lock(hashtext('ledger usage partitions'))");
    const { rows } = await tx.query<{ locked: boolean }>('SELECT pg_try_advisory_xact_lock(hashtext($1)) AS locked', [periodicVerifyLockKey(db.schema)]);
    if (!rows[0]?.locked) return deferredForVerify;
    return work(tx);
  });
}

/**
 * Creates the partition of a month unless it exists: a copy of the DEFAULT partition (its columns,
 * checks, defaults and indexes, among them the UNIQUE reservation_id that guards IDEMPOTENCY within
 * the month), filled with the month's records the DEFAULT partition caught, then attached. Answers
 * how many records moved, undefined when the partition already existed, or 'deferred' when a
 * periodic verify was running (nothing done). Maintenance passes call it; so does the usage
 * benchmark for the past months it loads.
 */
export async function createUsagePartition(db: Database, month: string): Promise<bigint | undefined | typeof deferredForVerify> {
  const name = usagePartitionName(month);
  return underPartitionLock(db, async (tx) => {
    if ((await monthPartitions(tx)).includes(month)) return undefined;
    // The month's bounds as the database's Asia/Kolkata has them (text with an offset, so any session time zone reads them back alike).
    const bounds = await tx.query<{ from_at: string; to_at: string }>(
      `SELECT (m::timestamp AT TIME ZONE 'Asia/Kolkata')::text AS from_at,
         ((m + interval '1 month')::timestamp AT TIME ZONE 'Asia/Kolkata')::text AS to_at
       FROM (SELECT ($1 || '-01')::date AS m) AS month`,
      [month],
    );
    const { from_at: fromAt, to_at: toAt } = bounds.rows[0]!;
    await tx.query(`CREATE TABLE ${name} (LIKE usage_records_default INCLUDING ALL)`);
    const strays = await tx.query<{ count: bigint }>(
      'SELECT count(*) AS count FROM usage_records_default WHERE created_at >= $1::timestamptz AND created_at < $2::timestamptz',
      [fromAt, toAt],
    );
    const moved = strays.rows[0]!.count;
    if (moved > 0n) {
      // A move, not a change: the records leave the DEFAULT partition for their month's in this one
      // transaction. The append-only trigger is off for this transaction's DELETE alone (the
      // ALTER holds the DEFAULT partition's lock until commit, so no other writer sees it off).
      await tx.query('ALTER TABLE usage_records_default DISABLE TRIGGER usage_records_finalise_only');
      await tx.query(
        `WITH moved AS (
           DELETE FROM usage_records_default WHERE created_at >= $1::timestamptz AND created_at < $2::timestamptz RETURNING *
         ) INSERT INTO ${name} SELECT * FROM moved`,
        [fromAt, toAt],
      );
      await tx.query('ALTER TABLE usage_records_default ENABLE TRIGGER usage_records_finalise_only');
    }
    await tx.query(`ALTER TABLE usage_records ATTACH PARTITION ${name} FOR VALUES FROM ('${fromAt}') TO ('${toAt}')`);
    return moved;
  });
}

/**
 * Drops the partition of a month (retention): its raw records go, its roll-ups and every money
 * movement stay, and usage_retention records that raw records are kept only from the next month
 * on. Answers how many records it held (from the roll-ups), undefined when it did not exist, or
 * 'deferred' when a periodic verify was running (nothing dropped).
 */
export async function dropMonthPartition(db: Database, month: string): Promise<bigint | undefined | typeof deferredForVerify> {
  const name = usagePartitionName(month);
  return underPartitionLock(db, async (tx) => {
    if (!(await monthPartitions(tx)).includes(month)) return undefined;
    const { rows } = await tx.query<{ requests: string }>(
      `SELECT coalesce(sum(requests), 0)::text AS requests FROM usage_daily
       WHERE day >= ($1 || '-01')::date AND day < (($1 || '-01')::date + interval '1 month')::date`,
      [month],
    );
    await tx.query(`DROP TABLE ${name}`);
    await tx.query(
      `INSERT INTO usage_retention (raw_from_day) VALUES ((($1 || '-01')::date + interval '1 month')::date)
       ON CONFLICT (only_row) DO UPDATE SET raw_from_day = greatest(usage_retention.raw_from_day, EXCLUDED.raw_from_day), updated_at = now()`,
      [month],
    );
    return BigInt(rows[0]!.requests);
  });
}
/** The month partitions that exist now, by where they stand against the current month (read-only: two catalogue reads). */
export async function countUsagePartitions(db: Queryable): Promise<UsagePartitionCounts> {
  const { rows: [now] } = await db.query<{ month: string }>('SELECT ledger_current_month() AS month');
  const current = now!.month;
  const counts: UsagePartitionCounts = { past: 0, current: 0, ahead: 0 };
  for (const month of await monthPartitions(db)) {
    if (month < current) counts.past++;
    else if (month === current) counts.current++;
    else counts.ahead++;
  }
  return counts;
}
