/**
 * The request log's day partitions (docs/ledger.md, "Request log"; migration 0017): today's and
 * the next days' created ahead, rows the DEFAULT partition caught moved to their day's, and with
 * retention, days past it dropped whole. Days are Asia/Kolkata days, like every day of the ledger.
 * Not money: nothing here is checked by Verify, so no step waits for a periodic verify.
 */
import type { Database, Queryable } from '@gateway/db';
import type { Logger } from '@gateway/logger';

/** Days after today that must have a partition (a day's partition exists before its first record). */
const requestLogDaysAhead = 2;

/** The name every day partition has: `request_log_p` + year + `_` + month + `_` + day. */
const partitionNamePattern = /^request_log_p(\d{4})_(\d{2})_(\d{2})$/;

/** A day as the ledger writes it, e.g. '2026-11-28'. */
const dayPattern = /^(\d{4})-(\d{2})-(\d{2})$/;

/** How long a pass's DDL waits for a lock before giving up until the next pass, ms (RecordRequests queues behind it). */
const ddlLockTimeoutMs = 200;

/** The partition of a day, e.g. '2026-11-28' -> `request_log_p2026_11_28`. */
function requestLogPartitionName(day: string): string {
  const match = dayPattern.exec(day);
  if (!match) throw new Error(`not a day: ${day}`);
  return `request_log_p${match[1]}_${match[2]}_${match[3]}`;
}

/** The day partitions that exist, by day ('2026-11-28'), sorted. */
async function requestLogDayPartitions(db: Queryable): Promise<string[]> {
  const { rows } = await db.query<{ name: string }>(
    `SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'request_log'::regclass`,
  );
  return rows.flatMap((row) => {
    const match = partitionNamePattern.exec(row.name);
    return match ? [`${match[1]}-${match[2]}-${match[3]}`] : [];
  }).sort();
}

/** Runs `work` in a transaction holding the request log's advisory lock (replicas take turns), giving up on a busy table lock. */
async function underRequestLogLock<T>(db: Database, work: (tx: Queryable) => Promise<T>): Promise<T> {
  return db.transaction(async (tx) => {
    await tx.query(`SET LOCAL lock_timeout = '${ddlLockTimeoutMs}ms'`);
    // The bounds are rendered as text and read back: ISO keeps them unambiguous (see usage-partitions.ts).
    await tx.query("SET LOCAL datestyle = 'ISO, YMD'");
    await tx.query("SELECT pg_advisory_xact_lock(hashtext('ledger request log partitions'))");
    return work(tx);
  });
}

/**
 * Creates the partition of a day unless it exists: a copy of the DEFAULT partition (columns,
 * checks and indexes, among them the unique (request_id, started_at)), filled with the day's rows
 * the DEFAULT partition caught, then attached. Answers how many rows moved, or undefined when the
 * partition already existed.
 */
async function createRequestLogPartition(db: Database, day: string): Promise<bigint | undefined> {
  const name = requestLogPartitionName(day);
  return underRequestLogLock(db, async (tx) => {
    if ((await requestLogDayPartitions(tx)).includes(day)) return undefined;
    const bounds = await tx.query<{ from_at: string; to_at: string }>(
      `SELECT ($1::date::timestamp AT TIME ZONE 'Asia/Kolkata')::text AS from_at,
         (($1::date + 1)::timestamp AT TIME ZONE 'Asia/Kolkata')::text AS to_at`,
      [day],
    );
    const { from_at: fromAt, to_at: toAt } = bounds.rows[0]!;
    await tx.query(`CREATE TABLE ${name} (LIKE request_log_default INCLUDING ALL)`);
    const moved = await tx.query(
      `WITH moved AS (
         DELETE FROM request_log_default WHERE started_at >= $1::timestamptz AND started_at < $2::timestamptz RETURNING *
       ) INSERT INTO ${name} SELECT * FROM moved`,
      [fromAt, toAt],
    );
    await tx.query(`ALTER TABLE request_log ATTACH PARTITION ${name} FOR VALUES FROM ('${fromAt}') TO ('${toAt}')`);
    return BigInt(moved.rowCount);
  });
}

/** Drops the partition of a day (retention): its records go. Answers whether it existed. */
async function dropRequestLogPartition(db: Database, day: string): Promise<boolean> {
  const name = requestLogPartitionName(day);
  return underRequestLogLock(db, async (tx) => {
    if (!(await requestLogDayPartitions(tx)).includes(day)) return false;
    await tx.query(`DROP TABLE ${name}`);
    return true;
  });
}

/** What one request-log maintenance pass did. */
interface RequestLogMaintenanceReport {
  /** Day partitions created, e.g. `request_log_p2026_11_30`. */
  created: string[];
  /** Rows moved out of the DEFAULT partition into their day's partition. */
  movedFromDefault: bigint;
  /** Day partitions dropped by retention. */
  dropped: string[];
}

/**
 * One pass: partitions for today (Asia/Kolkata) and the `requestLogDaysAhead` days after it, and
 * for any day a row in the DEFAULT partition belongs to (moving those rows there); then, with
 * `retentionDays` > 0, drops the partitions of days before today by more than that (today and the
 * `retentionDays` days before it are kept). Each step is its own short transaction; a step that
 * cannot get its lock in time fails the pass and leaves everything as it was (the next pass retries).
 */
async function maintainRequestLogPartitions(db: Database, retentionDays: number): Promise<RequestLogMaintenanceReport> {
  const { rows: [today] } = await db.query<{ day: string }>(
    "SELECT to_char((now() AT TIME ZONE 'Asia/Kolkata')::date, 'YYYY-MM-DD') AS day",
  );
  const { rows: wantedRows } = await db.query<{ day: string }>(
    `SELECT to_char($1::date + step, 'YYYY-MM-DD') AS day FROM generate_series(0, $2::integer) AS step
     UNION SELECT DISTINCT to_char((started_at AT TIME ZONE 'Asia/Kolkata')::date, 'YYYY-MM-DD') FROM request_log_default`,
    [today!.day, requestLogDaysAhead],
  );
  const report: RequestLogMaintenanceReport = { created: [], movedFromDefault: 0n, dropped: [] };
  const existing = new Set(await requestLogDayPartitions(db));
  for (const day of wantedRows.map((row) => row.day).sort()) {
    if (existing.has(day)) continue;
    const moved = await createRequestLogPartition(db, day);
    if (moved === undefined) continue;
    report.created.push(requestLogPartitionName(day));
    report.movedFromDefault += moved;
  }
  if (retentionDays > 0) {
    const { rows: [oldest] } = await db.query<{ day: string }>("SELECT to_char($1::date - $2::integer, 'YYYY-MM-DD') AS day", [today!.day, retentionDays]);
    for (const day of await requestLogDayPartitions(db)) {
      if (day >= oldest!.day) break;
      if (await dropRequestLogPartition(db, day)) report.dropped.push(requestLogPartitionName(day));
    }
  }
  return report;
}

/** How the request log's periodic maintenance runs. */
interface RequestLogMaintenanceOptions {
  database: Database;
  logger: Logger;
  /** Days of records kept before today; 0 keeps every day (LEDGER_REQUEST_LOG_RETENTION_DAYS). */
  retentionDays: number;
  /** Pause between passes, ms (default one hour: days are created two ahead). */
  intervalMs?: number;
}

/** A running request-log maintenance. */
interface RequestLogMaintenance {
  /**
   * The first pass (never rejects). The ledger serves after it, so on a new database today's
   * partition exists before the first RecordRequests: a row in DEFAULT moved by a pass while a
   * query planned before its ATTACH runs is briefly invisible to that query.
   */
  firstPass: Promise<void>;
  /** Runs one pass now (after a pass in progress); resolves with its report, or undefined when it failed (logged). */
  runNow(): Promise<RequestLogMaintenanceReport | undefined>;
  /** Stops the timer and waits for a pass in progress. */
  stop(): Promise<void>;
}

/** Starts the request log's maintenance: one pass at once and then every `intervalMs`; passes never overlap within a process. */
export function startRequestLogMaintenance(options: RequestLogMaintenanceOptions): RequestLogMaintenance {
  const { database, logger } = options;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<RequestLogMaintenanceReport | undefined> = Promise.resolve(undefined);
  const pass = async (): Promise<RequestLogMaintenanceReport | undefined> => {
    try {
      const report = await maintainRequestLogPartitions(database, options.retentionDays);
      if (report.created.length > 0 || report.dropped.length > 0) {
        logger.info({ created: report.created, movedFromDefault: report.movedFromDefault.toString(), dropped: report.dropped }, 'request log partitions maintained');
      }
      return report;
    } catch (error) {
      logger.warn({ err: error }, 'request log partition maintenance failed; the next pass retries');
      return undefined;
    }
  };
  const runNow = () => {
    running = running.then(pass);
    return running;
  };
  const schedule = () => {
    if (stopped) return;
    timer = setTimeout(() => { void runNow().then(schedule); }, options.intervalMs ?? 60 * 60 * 1000);
    timer.unref();
  };
  const firstPass = runNow();
  void firstPass.then(schedule);
  return {
    firstPass: firstPass.then(() => undefined),
    runNow,
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      await running;
    },
  };
}
