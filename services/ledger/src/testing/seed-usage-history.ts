import type { Database } from '@gateway/db';

/**
 * Writes months of settled usage straight into a ledger's tables, set-based (generate_series), as
 * the settle paths would have left it: for each record a settled reservation, its usage record and
 * its daily roll-up and project-month spend; a commercial record also debits its organisation's
 * account (from available, one `settle` movement). Verify finds no difference in what it writes.
 * For the usage-at-volume benchmark and tests, which need history in past months (the settle
 * paths write at the database clock's now()) and millions of records in minutes.
 */
export interface UsageHistoryPlan {
  /** Organisations the records spread over; their accounts must exist and hold enough available for the commercial records. */
  organisations: readonly string[];
  /**
   * The first `heavy` organisations also take every other record between them (traffic is skewed:
   * a few organisations send most requests), spread over all their projects and models. 0: none.
   */
  heavy?: number;
  /** Projects of each organisation (`<organisation>-p<n>`). */
  projectsPerOrganisation: number;
  /** Model slugs the records spread over. */
  models: readonly string[];
  /** Calendar months (Asia/Kolkata) the records spread over, e.g. ['2026-07', '2026-08']. */
  months: readonly string[];
  /** The records are numbered; this plan writes numbers firstIndex .. firstIndex + count - 1 (a later plan can add more with no clash). */
  firstIndex: number;
  count: number;
  /** Every n-th record is commercial (debited, with its movement); the others are internal. 0: none is commercial. */
  commercialEvery: number;
  /** Prefix of the reservation ids, e.g. 'hist' -> 'hist-17'. */
  idPrefix: string;
  /** Records per transaction (default 500,000). */
  chunkSize?: number;
}

/** What a plan wrote, µ₹ and counts. */
export interface UsageHistoryTotals {
  records: bigint;
  costMicros: bigint;
  debitedMicros: bigint;
}

/**
 * Writes the plan's records. Record i, with k = i div 2 when `heavy` > 0 (else k = i): an odd i
 * (every i without heavy organisations) goes to organisation k mod O, project (k div O) mod P,
 * model (i div 7) mod M; an even i to heavy organisation k mod H, project (k div H) mod P, model
 * (k div (H·P)) mod M. Month (i div 3) mod the months; a moment spread over the month by i; cost
 * 1,000 + i mod 5,000 µ₹, provider cost half of it; tokens from i. Deterministic, so a test can
 * recompute any sum.
 */
export async function seedUsageHistory(db: Database, plan: UsageHistoryPlan): Promise<UsageHistoryTotals> {
  const chunkSize = plan.chunkSize ?? 500_000;
  const totals: UsageHistoryTotals = { records: 0n, costMicros: 0n, debitedMicros: 0n };
  for (let first = plan.firstIndex; first < plan.firstIndex + plan.count; first += chunkSize) {
    const last = Math.min(first + chunkSize, plan.firstIndex + plan.count) - 1;
    const chunk = await db.transaction(async (tx) => {
      await tx.query('DROP TABLE IF EXISTS pg_temp.seed_usage');
      await tx.query(
        `CREATE TEMP TABLE seed_usage ON COMMIT DROP AS
         SELECT $7::text || '-' || i AS reservation_id, o.organisation_id,
           o.organisation_id || '-p' || o.project AS project_id, ($2::text[])[1 + o.model] AS model_slug,
           CASE WHEN $6::integer > 0 AND i % $6::integer = 0 THEN 'commercial' ELSE 'internal' END AS billing_mode,
           (100 + i % 900)::bigint AS input_tokens, (10 + i % 90)::bigint AS output_tokens,
           (1000 + i % 5000)::bigint AS cost_micros, ((1000 + i % 5000) / 2)::bigint AS provider_cost_micros,
           CASE WHEN $6::integer > 0 AND i % $6::integer = 0 THEN (1000 + i % 5000)::bigint ELSE 0::bigint END AS debited_micros,
           m.starts_at + ((i::bigint * 7919) % m.seconds) * interval '1 second' + (i % 1000) * interval '1 millisecond' AS created_at
         FROM generate_series($4::bigint, $5::bigint) AS i
         CROSS JOIN LATERAL (
           SELECT ($1::text[])[1 + CASE WHEN h.heavy THEN h.k % $10::integer ELSE h.k % $9::integer END] AS organisation_id,
             CASE WHEN h.heavy THEN (h.k / $10::integer) % $3::integer ELSE (h.k / $9::integer) % $3::integer END AS project,
             CASE WHEN h.heavy THEN (h.k / ($10::integer * $3::integer)) % cardinality($2::text[])
               ELSE (i / 7) % cardinality($2::text[]) END AS model
           FROM (SELECT $10::integer > 0 AND i % 2 = 0 AS heavy, CASE WHEN $10::integer > 0 THEN i / 2 ELSE i END AS k) AS h
         ) AS o
         CROSS JOIN LATERAL (
           SELECT (month::timestamp AT TIME ZONE 'Asia/Kolkata') AS starts_at,
             extract(epoch FROM ((month + interval '1 month')::timestamp AT TIME ZONE 'Asia/Kolkata')
               - (month::timestamp AT TIME ZONE 'Asia/Kolkata'))::bigint - 1 AS seconds
           FROM (SELECT (($8::text[])[1 + (i / 3) % cardinality($8::text[])] || '-01')::date AS month) AS x
         ) AS m`,
        [plan.organisations, plan.models, plan.projectsPerOrganisation, first, last, plan.commercialEvery, plan.idPrefix,
          plan.months, plan.organisations.length, plan.heavy ?? 0],
      );
      await tx.query(
        `INSERT INTO reservations (id, organisation_id, project_id, billing_mode, amount_micros, model_slug, status, created_at,
           expires_at, request_fingerprint, resolved_at, settle_fingerprint, settle_debited_micros, settle_released_micros,
           settle_overrun_micros, settle_detail)
         SELECT reservation_id, organisation_id, project_id, billing_mode, cost_micros, model_slug, 'settled', created_at,
           created_at + interval '10 minutes', 'seeded', created_at, 'seeded', debited_micros, 0, 0, ''
         FROM seed_usage`,
      );
      await tx.query(
        `INSERT INTO usage_records (reservation_id, organisation_id, project_id, model_slug, input_tokens, output_tokens,
           cost_micros, provider_cost_micros, debited_micros, billing_mode, usage_source, request_id, created_at)
         SELECT reservation_id, organisation_id, project_id, model_slug, input_tokens, output_tokens, cost_micros,
           provider_cost_micros, debited_micros, billing_mode, 'upstream', reservation_id, created_at
         FROM seed_usage`,
      );
      await tx.query(
        `INSERT INTO movements (organisation_id, kind, amount_micros, credited_delta_micros, available_delta_micros,
           held_delta_micros, debited_delta_micros, reservation_id, detail, created_at)
         SELECT organisation_id, 'settle', debited_micros, 0, -debited_micros, 0, debited_micros, reservation_id,
           '{"seeded": true}'::jsonb, created_at
         FROM seed_usage WHERE debited_micros > 0`,
      );
      await tx.query(
        `INSERT INTO usage_daily AS d (day, organisation_id, project_id, model_slug, billing_mode, requests, input_tokens,
           output_tokens, cost_micros, provider_cost_micros, debited_micros)
         SELECT (created_at AT TIME ZONE 'Asia/Kolkata')::date, organisation_id, project_id, model_slug, billing_mode, count(*),
           sum(input_tokens), sum(output_tokens), sum(cost_micros), sum(provider_cost_micros), sum(debited_micros)
         FROM seed_usage GROUP BY 1, 2, 3, 4, 5
         ON CONFLICT (day, organisation_id, project_id, model_slug, billing_mode) DO UPDATE SET
           requests = d.requests + EXCLUDED.requests, input_tokens = d.input_tokens + EXCLUDED.input_tokens,
           output_tokens = d.output_tokens + EXCLUDED.output_tokens, cost_micros = d.cost_micros + EXCLUDED.cost_micros,
           provider_cost_micros = d.provider_cost_micros + EXCLUDED.provider_cost_micros,
           debited_micros = d.debited_micros + EXCLUDED.debited_micros`,
      );
      await tx.query(
        `INSERT INTO project_month_spend AS s (project_id, month, organisation_id, settled_micros)
         SELECT project_id, to_char(created_at AT TIME ZONE 'Asia/Kolkata', 'YYYY-MM'), min(organisation_id), sum(cost_micros)
         FROM seed_usage GROUP BY 1, 2
         ON CONFLICT (project_id, month) DO UPDATE SET settled_micros = s.settled_micros + EXCLUDED.settled_micros`,
      );
      await tx.query(
        `UPDATE accounts a SET available_micros = a.available_micros - t.debited, debited_micros = a.debited_micros + t.debited
         FROM (SELECT organisation_id, sum(debited_micros)::bigint AS debited FROM seed_usage GROUP BY 1) AS t
         WHERE a.organisation_id = t.organisation_id AND t.debited > 0`,
      );
      const { rows } = await tx.query<{ records: bigint; cost: string; debited: string }>(
        'SELECT count(*) AS records, sum(cost_micros)::text AS cost, sum(debited_micros)::text AS debited FROM seed_usage',
      );
      return rows[0]!;
    }, { retries: 0 });
    totals.records += chunk.records;
    totals.costMicros += BigInt(chunk.cost);
    totals.debitedMicros += BigInt(chunk.debited);
  }
  return totals;
}
