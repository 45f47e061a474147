-- Usage at volume (docs/ledger.md, "Usage at volume"): one usage record per request is 86 million
-- rows a day at 1,000 requests per second. Three changes:
-- 1. usage_records is partitioned by month (PostgreSQL declarative range partitioning on
--    created_at, calendar months in Asia/Kolkata like every month of the ledger). The service
--    creates the months ahead (services/ledger/src/usage-maintenance.ts); a DEFAULT partition
--    takes any row whose month has no partition yet (a row is never refused for that), and the
--    maintenance moves such rows into their month. Reads prune to the months they ask for.
-- 2. usage_daily: the roll-up of usage records by day (Asia/Kolkata), organisation, project, model
--    and billing mode, written in the transaction that writes (or finalises) the records. The
--    summaries read it instead of the raw rows; budgets read project_month_spend, the monthly
--    roll-up they always had.
-- 3. usage_retention: from which day raw records are still kept. With
--    LEDGER_USAGE_RETENTION_MONTHS > 0 the maintenance drops whole monthly partitions older than
--    that (never a roll-up, never a movement) and records the day here, so Verify compares the
--    roll-ups with the raw rows only where raw rows exist.
--
-- IDEMPOTENCY (one usage record per reservation, NOTHING_FREE): a unique index on a partitioned
-- table must include the partition key, so UNIQUE (reservation_id) cannot span the months.
-- - Within a month the schema still refuses a second record: every partition has its own UNIQUE
--   index on reservation_id. The DEFAULT partition carries it, and every month partition is
--   created as a copy of the DEFAULT partition (CREATE TABLE ... (LIKE usage_records_default
--   INCLUDING ALL), then ATTACH), so no partition can lack it.
-- - Across months the guard is the reservation row, as it already was for every path: each path
--   that writes a usage record first locks its reservation (or, for a carve, inserts it: the
--   reservations primary key) and writes the record in the same transaction as the one-way
--   change of that row (held -> settled or expired; settle_fingerprint set once), and a second
--   Settle finds the settlement and is answered as a replay.
-- - Verify reports any reservation with more than one usage record (check `duplicates`).

-- The old table keeps its rows until they are copied; its indexes go first (their names are
-- the new table's).
DROP INDEX usage_records_listing;
DROP INDEX usage_records_project;
ALTER TABLE usage_records RENAME TO usage_records_before_0012;

-- The same columns in the same order, the same checks; no primary key on id (a unique key on a
-- partitioned table must include created_at, and nothing looks a record up by id alone: ids come
-- from one sequence, and the listing pages on (created_at, id)).
CREATE TABLE usage_records (
  id bigint NOT NULL DEFAULT nextval('usage_records_id_seq'),
  reservation_id text NOT NULL,
  organisation_id text NOT NULL,
  project_id text NOT NULL,
  model_slug text NOT NULL,
  input_tokens bigint NOT NULL CHECK (input_tokens >= 0),
  output_tokens bigint NOT NULL CHECK (output_tokens >= 0),
  cost_micros bigint NOT NULL CHECK (cost_micros >= 0),
  provider_cost_micros bigint NOT NULL CHECK (provider_cost_micros >= 0),
  debited_micros bigint NOT NULL CHECK (debited_micros >= 0),
  billing_mode text NOT NULL CHECK (billing_mode IN ('commercial', 'internal')),
  usage_source text NOT NULL CHECK (usage_source IN ('upstream', 'gateway_estimate')),
  request_id text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  provisional boolean NOT NULL DEFAULT false,
  overrun_output_tokens bigint NOT NULL DEFAULT 0 CHECK (overrun_output_tokens >= 0),
  CONSTRAINT usage_records_internal_not_debited CHECK (billing_mode = 'commercial' OR debited_micros = 0),
  CONSTRAINT usage_records_debit_is_cost CHECK (billing_mode = 'internal' OR debited_micros = cost_micros)
) PARTITION BY RANGE (created_at);
ALTER SEQUENCE usage_records_id_seq OWNED BY usage_records.id;
-- ListUsage: newest first per organisation, keyset on (created_at, id); one index per partition.
CREATE INDEX usage_records_listing ON usage_records (organisation_id, created_at DESC, id DESC);
-- Only the finalising of a provisional record changes a record (0002); nothing deletes one.
-- Retention drops whole partitions (DROP TABLE), which no row trigger sees.
CREATE TRIGGER usage_records_finalise_only BEFORE UPDATE OR DELETE ON usage_records
  FOR EACH ROW EXECUTE FUNCTION usage_record_finalise_only();

-- The safety net, and the template every month partition is copied from.
CREATE TABLE usage_records_default PARTITION OF usage_records DEFAULT;
CREATE UNIQUE INDEX usage_records_default_reservation ON usage_records_default (reservation_id);

-- A partition for every month that has records, and for this month and the next, each a copy of
-- the DEFAULT partition (as usage-maintenance.ts creates them), named usage_records_pYYYY_MM.
DO $$
DECLARE
  v_month date;
BEGIN
  FOR v_month IN
    SELECT DISTINCT date_trunc('month', created_at AT TIME ZONE 'Asia/Kolkata')::date FROM usage_records_before_0012
    UNION
    SELECT (date_trunc('month', now() AT TIME ZONE 'Asia/Kolkata') + step * interval '1 month')::date
    FROM generate_series(0, 1) AS step
    ORDER BY 1
  LOOP
    EXECUTE format('CREATE TABLE %I (LIKE usage_records_default INCLUDING ALL)', 'usage_records_p' || to_char(v_month, 'YYYY_MM'));
    EXECUTE format('ALTER TABLE usage_records ATTACH PARTITION %I FOR VALUES FROM (%L) TO (%L)',
      'usage_records_p' || to_char(v_month, 'YYYY_MM'),
      v_month::timestamp AT TIME ZONE 'Asia/Kolkata', (v_month + interval '1 month')::timestamp AT TIME ZONE 'Asia/Kolkata');
  END LOOP;
END
$$;

INSERT INTO usage_records (id, reservation_id, organisation_id, project_id, model_slug, input_tokens, output_tokens,
  cost_micros, provider_cost_micros, debited_micros, billing_mode, usage_source, request_id, created_at, provisional,
  overrun_output_tokens)
SELECT id, reservation_id, organisation_id, project_id, model_slug, input_tokens, output_tokens,
  cost_micros, provider_cost_micros, debited_micros, billing_mode, usage_source, request_id, created_at, provisional,
  overrun_output_tokens
FROM usage_records_before_0012;
DROP TABLE usage_records_before_0012;

-- Usage by day (Asia/Kolkata), organisation, project, model and billing mode: what SummarizeUsage
-- answers with and Verify checks the balances and project spend against. Kept forever (one row
-- per active combination and day, however many requests); never deleted (trigger below).
CREATE TABLE usage_daily (
  day date NOT NULL,
  organisation_id text NOT NULL,
  project_id text NOT NULL,
  model_slug text NOT NULL,
  billing_mode text NOT NULL CHECK (billing_mode IN ('commercial', 'internal')),
  requests bigint NOT NULL CHECK (requests >= 0),
  input_tokens bigint NOT NULL CHECK (input_tokens >= 0),
  output_tokens bigint NOT NULL CHECK (output_tokens >= 0),
  cost_micros bigint NOT NULL CHECK (cost_micros >= 0),
  provider_cost_micros bigint NOT NULL CHECK (provider_cost_micros >= 0),
  debited_micros bigint NOT NULL CHECK (debited_micros >= 0),
  PRIMARY KEY (day, organisation_id, project_id, model_slug, billing_mode),
  -- The laws of the records they add up.
  CONSTRAINT usage_daily_internal_not_debited CHECK (billing_mode = 'commercial' OR debited_micros = 0),
  CONSTRAINT usage_daily_debit_is_cost CHECK (billing_mode = 'internal' OR debited_micros = cost_micros)
);
-- An organisation's days (SummarizeUsage of one organisation).
CREATE INDEX usage_daily_organisation ON usage_daily (organisation_id, day);

INSERT INTO usage_daily (day, organisation_id, project_id, model_slug, billing_mode, requests, input_tokens, output_tokens,
  cost_micros, provider_cost_micros, debited_micros)
SELECT (created_at AT TIME ZONE 'Asia/Kolkata')::date, organisation_id, project_id, model_slug, billing_mode, count(*),
  sum(input_tokens), sum(output_tokens), sum(cost_micros), sum(provider_cost_micros), sum(debited_micros)
FROM usage_records
GROUP BY 1, 2, 3, 4, 5;

-- Roll-ups only grow and change in place; a DELETE or TRUNCATE (statement triggers: the upserts
-- pay nothing) would lose history that retention may already have dropped from the raw rows.
CREATE FUNCTION refuse_rollup_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'ledger table % keeps every roll-up (% refused)', TG_TABLE_NAME, TG_OP USING ERRCODE = 'P0001';
END
$$;
CREATE TRIGGER usage_daily_never_deleted BEFORE DELETE OR TRUNCATE ON usage_daily
  FOR EACH STATEMENT EXECUTE FUNCTION refuse_rollup_delete();

-- The one usage record written outside the SQL functions, the sweeper's provisional record
-- (domain/expire-due-reservations.ts), is rolled up by this trigger, so a replica of any release
-- (an old one during a rolling update too) keeps the roll-ups whole. Deferred to the commit, the
-- roll-up row is locked last, as on every other path (lock order: ... spend -> roll-ups). The
-- settle paths write their records' roll-ups themselves (provisional = false: the WHEN skips them
-- at no cost), and a late settle that finalises a provisional record moves its figures (ledger_settle).
-- Created after the copy above, whose provisional records the INSERT INTO usage_daily already counted.
CREATE FUNCTION usage_record_rollup_provisional() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO usage_daily AS d (day, organisation_id, project_id, model_slug, billing_mode, requests, input_tokens,
    output_tokens, cost_micros, provider_cost_micros, debited_micros)
  VALUES ((NEW.created_at AT TIME ZONE 'Asia/Kolkata')::date, NEW.organisation_id, NEW.project_id, NEW.model_slug,
    NEW.billing_mode, 1, NEW.input_tokens, NEW.output_tokens, NEW.cost_micros, NEW.provider_cost_micros, NEW.debited_micros)
  ON CONFLICT (day, organisation_id, project_id, model_slug, billing_mode) DO UPDATE SET
    requests = d.requests + 1, input_tokens = d.input_tokens + EXCLUDED.input_tokens,
    output_tokens = d.output_tokens + EXCLUDED.output_tokens, cost_micros = d.cost_micros + EXCLUDED.cost_micros,
    provider_cost_micros = d.provider_cost_micros + EXCLUDED.provider_cost_micros,
    debited_micros = d.debited_micros + EXCLUDED.debited_micros;
  RETURN NULL;
END
$$;
CREATE CONSTRAINT TRIGGER usage_records_rollup_provisional AFTER INSERT ON usage_records
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW WHEN (NEW.provisional) EXECUTE FUNCTION usage_record_rollup_provisional();

-- From which day (Asia/Kolkata) raw usage records are kept: no row until retention first drops a
-- month. One row at most.
CREATE TABLE usage_retention (
  only_row boolean PRIMARY KEY DEFAULT true CHECK (only_row),
  raw_from_day date NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT now()
);
