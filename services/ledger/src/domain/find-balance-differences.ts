import type { Database, Queryable } from '@gateway/db';
import type { Balances } from './ledger-types.ts';

/** Which balance column a difference is about. */
export type BalanceName = 'credited' | 'available' | 'held' | 'debited' | 'project_settled' | 'orphan_row' | 'grant_remaining'
  | 'usage_rollup' | 'usage_record';

/**
 * Which check found a difference:
 * - `conservation`: the account row breaks credited = available + held + debited;
 * - `movements`: a balance differs from the sum of its movement deltas;
 * - `credits`: credited differs from the sum of the credits table less the refunds table plus the refund_reversals table;
 * - `holds`: held differs from the Reserves of commercial reservations still held plus what
 *   commercial credit grants still held hold (a grant is a reservation in every law);
 * - `grants`: a commercial grant's remaining differs from the sum of its movements' held deltas
 *   (granted, less carved settles' debits, promotions, returns and expiry: CONSERVATION (grants));
 * - `usage`: debited differs from the sum debited on the daily usage roll-ups (kept for every day,
 *   also after retention dropped a month's raw records);
 * - `usage_rollups`: a daily roll-up differs from the raw usage records it adds up (checked for
 *   every day whose raw records are kept: from usage_retention's day on, or every day);
 * - `duplicates`: a reservation has more than one usage record (NOTHING_FREE: each month's
 *   partition refuses a second one; across months the reservation row is the guard, or for a carve its
 *   grant's row lock and the record itself (migration 0021), and this proves it held);
 * - `project_spend`: a project's settled spend of a month differs from the cost on its daily roll-ups;
 * - `orphans`: a reservation, movement or usage record names an account, reservation, credit, refund
 *   or grant that does not exist (the hot tables have no foreign keys since migration 0005: the ledger
 *   functions that write them lock the parent first, and this check proves it held).
 */
export type BalanceCheck = 'conservation' | 'movements' | 'credits' | 'holds' | 'usage' | 'usage_rollups' | 'duplicates'
  | 'project_spend' | 'orphans' | 'grants';

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
  /**
   * For `usage_rollups`: which roll-up and which of its columns; accountMicros is the roll-up's
   * value and recomputedMicros the raw records' sum, in the column's unit (µ₹, tokens or requests).
   */
  usageRollup?: UsageRollupKey;
  /** For `duplicates`: the reservation; accountMicros is 1 (records it may have) and recomputedMicros how many it has. */
  reservationId?: string;
}

/** One daily usage roll-up (its key) and the column that disagrees. */
interface UsageRollupKey {
  /** Asia/Kolkata, e.g. '2026-11-21'. */
  day: string;
  projectId: string;
  modelSlug: string;
  billingMode: string;
  /**
   * 'unclassified_requests': records without token classes; 'cost_micros_by_class': the cost against
   * its classes' cost plus its unclassified records' cost; '<class>.tokens' (or .cost_micros,
   * .provider_cost_micros): one token class's sum against its records' (CONSERVATION).
   */
  column: 'requests' | 'input_tokens' | 'output_tokens' | 'cost_micros' | 'provider_cost_micros' | 'debited_micros'
    | 'unclassified_requests' | 'cost_micros_by_class' | `${string}.${'tokens' | 'cost_micros' | 'provider_cost_micros'}`;
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
 * credited also equals the credits less the refunds, held the Reserves still held, debited the daily
 * usage roll-ups' debits, each roll-up its raw usage records where they are kept (so, through the
 * roll-ups, the usage records agree with the movements), no reservation has two usage records,
 * PROJECT_BUDGET's spend rows equal their roll-ups, and every row has its parent.
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

/**
 * Runs every check of findBalanceDifferences in one snapshot and also reports how many accounts
 * it checked. The snapshot is taken by the first query, so the usage records' lock comes before
 * it: a month that retention drops is then either gone from the snapshot together with its
 * usage_retention update, or waits for the verify to end (else its roll-ups would all differ).
 */
export async function verifyLedger(db: Database): Promise<LedgerVerification> {
  return db.transaction(async (tx): Promise<LedgerVerification> => {
    await tx.query('LOCK TABLE usage_records IN ACCESS SHARE MODE');
    const accounts = await tx.query<{ organisation_id: string } & Record<'credited_micros' | 'available_micros' | 'held_micros' | 'debited_micros', bigint>>(
      'SELECT organisation_id, credited_micros, available_micros, held_micros, debited_micros FROM accounts',
    );
    const fromMovements = await recomputeBalances(tx);
    // CONSERVATION (credits): what was credited less what was refunded, plus refunds reversed.
    const credited = await sumsBy(tx, `SELECT organisation_id, sum(amount_micros)::bigint AS total FROM (
        SELECT organisation_id, amount_micros FROM credits
        UNION ALL SELECT organisation_id, -amount_micros FROM refunds
        UNION ALL SELECT organisation_id, amount_micros FROM refund_reversals
      ) money_in GROUP BY organisation_id`);
    // CONSERVATION (holds): requests' holds and grants' remaining holds.
    const held = await sumsBy(tx, `SELECT organisation_id, sum(amount)::bigint AS total FROM (
        SELECT organisation_id, amount_micros AS amount FROM reservations WHERE status = 'held' AND billing_mode = 'commercial'
        UNION ALL SELECT organisation_id, remaining_micros FROM grants WHERE status = 'held' AND billing_mode = 'commercial'
      ) holds GROUP BY organisation_id`);
    // The roll-ups cover every day (retention drops raw records, never roll-ups).
    const debited = await sumsBy(tx, 'SELECT organisation_id, sum(debited_micros)::bigint AS total FROM usage_daily GROUP BY organisation_id');

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
    differences.push(...await usageRollupDifferences(tx));
    differences.push(...await duplicateUsageDifferences(tx));
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

/** Compares every project_month_spend counter with the cost on the daily roll-ups of that project and month. */
async function projectSpendDifferences(tx: Queryable): Promise<BalanceDifference[]> {
  const { rows } = await tx.query<ProjectSpendRow>(
    // Project ids are global (the admin issues them), so spend is keyed by project and month. The
    // roll-ups' days are Asia/Kolkata days, so a day's month is the month of its records.
    `WITH recomputed AS (
       SELECT min(organisation_id) AS organisation_id, project_id, to_char(day, 'YYYY-MM') AS month, sum(cost_micros) AS total
       FROM usage_daily GROUP BY 2, 3 HAVING sum(cost_micros) > 0
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

/** A roll-up column as stored and as its raw records add up, as SQL returns it. */
interface UsageRollupSqlRow {
  organisation_id: string;
  day: string;
  project_id: string;
  model_slug: string;
  billing_mode: string;
  column_name: UsageRollupKey['column'];
  stored: string | null;
  recomputed: string | null;
}

/** Most roll-up and duplicate differences reported by one verification (each is a bug; the first ones say enough). */
const maxUsageDifferencesReported = 1_000;

/**
 * Compares every daily roll-up with the raw usage records of its day, organisation, project, model
 * and billing mode, for the days whose raw records are kept (usage_retention: retention dropped
 * the months before that day). One pass over the kept raw records.
 */
async function usageRollupDifferences(tx: Queryable): Promise<BalanceDifference[]> {
  // The aggregate has one group per roll-up row; give it room instead of spilling to disk.
  await tx.query("SET LOCAL work_mem = '64MB'");
  const { rows } = await tx.query<UsageRollupSqlRow>(
    `WITH kept AS (SELECT (SELECT raw_from_day FROM usage_retention) AS from_day),
     raw AS (
       SELECT (u.created_at AT TIME ZONE 'Asia/Kolkata')::date AS day, u.organisation_id, u.project_id, u.model_slug,
         u.billing_mode, count(*)::numeric AS requests, sum(u.input_tokens) AS input_tokens, sum(u.output_tokens) AS output_tokens,
         sum(u.cost_micros) AS cost_micros, sum(u.provider_cost_micros) AS provider_cost_micros, sum(u.debited_micros) AS debited_micros,
         count(*) FILTER (WHERE u.token_classes IS NULL)::numeric AS unclassified_requests,
         coalesce(sum(u.cost_micros) FILTER (WHERE u.token_classes IS NULL), 0) AS unclassified_cost_micros
       FROM usage_records u, kept
       WHERE kept.from_day IS NULL OR u.created_at >= kept.from_day::timestamp AT TIME ZONE 'Asia/Kolkata'
       GROUP BY 1, 2, 3, 4, 5
     ),
     rollup AS (
       SELECT d.*, coalesce((SELECT sum(k.cost_micros) FROM usage_daily_classes k WHERE k.day = d.day
           AND k.organisation_id = d.organisation_id AND k.project_id = d.project_id AND k.model_slug = d.model_slug
           AND k.billing_mode = d.billing_mode), 0) AS classes_cost_micros
       FROM usage_daily d, kept WHERE kept.from_day IS NULL OR d.day >= kept.from_day
     ),
     -- CONSERVATION by token class: each roll-up's classes are the sums of its records' classes.
     raw_classes AS (
       SELECT (u.created_at AT TIME ZONE 'Asia/Kolkata')::date AS day, u.organisation_id, u.project_id, u.model_slug,
         u.billing_mode, e->>'tokenClass' AS token_class, sum((e->>'tokens')::numeric) AS tokens,
         sum((e->>'costMicros')::numeric) AS cost_micros, sum((e->>'providerCostMicros')::numeric) AS provider_cost_micros
       FROM usage_records u CROSS JOIN kept CROSS JOIN LATERAL jsonb_array_elements(u.token_classes) AS e
       WHERE u.token_classes IS NOT NULL
         AND (kept.from_day IS NULL OR u.created_at >= kept.from_day::timestamp AT TIME ZONE 'Asia/Kolkata')
       GROUP BY 1, 2, 3, 4, 5, 6
     ),
     class_compared AS (
       SELECT coalesce(r.organisation_id, k.organisation_id) AS organisation_id, coalesce(r.day, k.day) AS day,
         coalesce(r.project_id, k.project_id) AS project_id, coalesce(r.model_slug, k.model_slug) AS model_slug,
         coalesce(r.billing_mode, k.billing_mode) AS billing_mode, coalesce(r.token_class, k.token_class) AS token_class,
         ARRAY[k.tokens::numeric, k.cost_micros, k.provider_cost_micros] AS stored,
         ARRAY[r.tokens, r.cost_micros, r.provider_cost_micros] AS recomputed
       FROM raw_classes r
       FULL JOIN (SELECT k.* FROM usage_daily_classes k, kept WHERE kept.from_day IS NULL OR k.day >= kept.from_day) k
         ON k.day = r.day AND k.organisation_id = r.organisation_id AND k.project_id = r.project_id
         AND k.model_slug = r.model_slug AND k.billing_mode = r.billing_mode AND k.token_class = r.token_class
     ),
     compared AS (
       SELECT coalesce(r.organisation_id, d.organisation_id) AS organisation_id, coalesce(r.day, d.day) AS day,
         coalesce(r.project_id, d.project_id) AS project_id, coalesce(r.model_slug, d.model_slug) AS model_slug,
         coalesce(r.billing_mode, d.billing_mode) AS billing_mode,
         -- The last figure: the roll-up's cost against its classes' cost plus its unclassified records' cost.
         ARRAY[d.requests::numeric, d.input_tokens, d.output_tokens, d.cost_micros, d.provider_cost_micros, d.debited_micros,
           d.unclassified_requests, d.cost_micros] AS stored,
         ARRAY[r.requests, r.input_tokens, r.output_tokens, r.cost_micros, r.provider_cost_micros, r.debited_micros,
           r.unclassified_requests, d.classes_cost_micros + coalesce(r.unclassified_cost_micros, 0)] AS recomputed
       FROM raw r FULL JOIN rollup d ON d.day = r.day AND d.organisation_id = r.organisation_id AND d.project_id = r.project_id
         AND d.model_slug = r.model_slug AND d.billing_mode = r.billing_mode
     )
     SELECT c.organisation_id, to_char(c.day, 'YYYY-MM-DD') AS day, c.project_id, c.model_slug, c.billing_mode,
       x.column_name, coalesce(x.stored, 0)::text AS stored, coalesce(x.recomputed, 0)::text AS recomputed
     FROM compared c
     CROSS JOIN LATERAL unnest(ARRAY['requests', 'input_tokens', 'output_tokens', 'cost_micros', 'provider_cost_micros', 'debited_micros',
       'unclassified_requests', 'cost_micros_by_class'], c.stored, c.recomputed) AS x (column_name, stored, recomputed)
     WHERE coalesce(x.stored, 0) <> coalesce(x.recomputed, 0)
     UNION ALL
     SELECT c.organisation_id, to_char(c.day, 'YYYY-MM-DD'), c.project_id, c.model_slug, c.billing_mode,
       c.token_class || '.' || x.column_name, coalesce(x.stored, 0)::text, coalesce(x.recomputed, 0)::text
     FROM class_compared c
     CROSS JOIN LATERAL unnest(ARRAY['tokens', 'cost_micros', 'provider_cost_micros'], c.stored, c.recomputed)
       AS x (column_name, stored, recomputed)
     WHERE coalesce(x.stored, 0) <> coalesce(x.recomputed, 0)
     ORDER BY 1, 2, 3, 4, 5, 6
     LIMIT ${maxUsageDifferencesReported}`,
  );
  return rows.map((row) => ({
    organisationId: row.organisation_id, check: 'usage_rollups', balance: 'usage_rollup',
    accountMicros: BigInt(row.stored ?? '0'), recomputedMicros: BigInt(row.recomputed ?? '0'),
    usageRollup: { day: row.day, projectId: row.project_id, modelSlug: row.model_slug, billingMode: row.billing_mode, column: row.column_name },
  }));
}

/**
 * Every reservation with more than one usage record. A month's partition refuses a second record
 * by its unique index, so a duplicate would sit in two months: one pass over the raw records.
 */
async function duplicateUsageDifferences(tx: Queryable): Promise<BalanceDifference[]> {
  const { rows } = await tx.query<{ organisation_id: string; reservation_id: string; records: bigint }>(
    `SELECT min(organisation_id) AS organisation_id, reservation_id, count(*) AS records
     FROM usage_records GROUP BY reservation_id HAVING count(*) > 1
     ORDER BY reservation_id LIMIT ${maxUsageDifferencesReported}`,
  );
  return rows.map((row) => ({
    organisationId: row.organisation_id, check: 'duplicates', balance: 'usage_record', accountMicros: 1n,
    recomputedMicros: row.records, reservationId: row.reservation_id,
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
 * Every reservation, movement and usage record whose account, reservation, credit, refund or grant
 * does not exist (anti-joins on primary keys; one pass over each table, as the sums above already
 * do). A carve's usage record has no reservation (migration 0021): its parent is its grant.
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
     FROM usage_records u WHERE u.grant_id IS NULL AND NOT EXISTS (SELECT 1 FROM reservations r WHERE r.id = u.reservation_id)
     UNION ALL
     SELECT 'usage_records', u.id::text, 'grant', u.organisation_id, u.cost_micros
     FROM usage_records u WHERE u.grant_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM grants g WHERE g.id = u.grant_id)
     LIMIT ${maxOrphansReported}`,
  );
  return rows.map((row) => ({
    organisationId: row.organisation_id, check: 'orphans', balance: 'orphan_row', accountMicros: 0n,
    recomputedMicros: BigInt(row.micros), orphan: { table: row.table_name, rowId: row.row_id, missing: row.missing },
  }));
}
