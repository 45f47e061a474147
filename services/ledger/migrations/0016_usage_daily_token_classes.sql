-- Daily roll-ups by token class (docs/ledger.md, "Usage at volume"): SummarizeUsage answers whole
-- days from usage_daily, so the roll-up keeps what usage records keep by token price class (0015).
-- - usage_daily_classes: one row per roll-up key (day, organisation, project, model, billing mode)
--   and token class, the sums of tokens, cost and provider cost of that class over the key's
--   records that carry classes. A child table rather than a jsonb on usage_daily: the trigger
--   adds each class with one upsert of plain integers (a jsonb would be rebuilt on every record),
--   and the summary sums integer columns instead of unpacking JSON.
-- - usage_daily.unclassified_requests: the key's records without classes (token_classes NULL).
-- Both are kept by one deferred row trigger on usage_records, so every write path keeps them
-- (settle batches, carved grant settles, expiry charges, the sweeper's provisional records, the
-- late settle that finalises one) without each SQL function repeating it. Deferred to the commit
-- like usage_records_rollup_provisional (0012), the roll-up rows are locked last (lock order:
-- ... spend -> roll-ups). A finalising UPDATE takes the old figures off and adds the new ones.
-- Retention's move of records out of the DEFAULT partition inserts into a table not yet attached,
-- which carries no trigger, so a move counts nothing twice; its partition drops fire no trigger.
-- CONSERVATION: Verify checks that each roll-up's classes equal the sums of its records' classes
-- (where raw records are kept) and that its cost is its classes' cost plus its unclassified
-- records' cost.
-- Backfill: from the raw records still kept. The days whose raw records retention already dropped
-- cannot be split by class: their records count as unclassified.

CREATE TABLE usage_daily_classes (
  day date NOT NULL,
  organisation_id text NOT NULL,
  project_id text NOT NULL,
  model_slug text NOT NULL,
  billing_mode text NOT NULL CHECK (billing_mode IN ('commercial', 'internal')),
  token_class text NOT NULL,
  tokens bigint NOT NULL CHECK (tokens >= 0),
  cost_micros bigint NOT NULL CHECK (cost_micros >= 0),
  provider_cost_micros bigint NOT NULL CHECK (provider_cost_micros >= 0),
  PRIMARY KEY (day, organisation_id, project_id, model_slug, billing_mode, token_class)
);
-- An organisation's days (SummarizeUsage of one organisation).
CREATE INDEX usage_daily_classes_organisation ON usage_daily_classes (organisation_id, day);
CREATE TRIGGER usage_daily_classes_never_deleted BEFORE DELETE OR TRUNCATE ON usage_daily_classes
  FOR EACH STATEMENT EXECUTE FUNCTION refuse_rollup_delete();

ALTER TABLE usage_daily ADD COLUMN unclassified_requests bigint NOT NULL DEFAULT 0 CHECK (unclassified_requests >= 0);

-- Backfill: every roll-up's records are unclassified but those of its kept raw records with classes.
UPDATE usage_daily d SET unclassified_requests = d.requests - coalesce((
  SELECT count(*) FROM usage_records r
  WHERE r.token_classes IS NOT NULL AND (r.created_at AT TIME ZONE 'Asia/Kolkata')::date = d.day
    AND r.organisation_id = d.organisation_id AND r.project_id = d.project_id AND r.model_slug = d.model_slug
    AND r.billing_mode = d.billing_mode
    AND r.created_at >= d.day::timestamp AT TIME ZONE 'Asia/Kolkata'
    AND r.created_at < (d.day + 1)::timestamp AT TIME ZONE 'Asia/Kolkata'), 0);
INSERT INTO usage_daily_classes (day, organisation_id, project_id, model_slug, billing_mode, token_class, tokens,
  cost_micros, provider_cost_micros)
SELECT (r.created_at AT TIME ZONE 'Asia/Kolkata')::date, r.organisation_id, r.project_id, r.model_slug, r.billing_mode,
  e->>'tokenClass', sum((e->>'tokens')::bigint), sum((e->>'costMicros')::bigint), sum((e->>'providerCostMicros')::bigint)
FROM usage_records r, jsonb_array_elements(r.token_classes) AS e
WHERE r.token_classes IS NOT NULL
GROUP BY 1, 2, 3, 4, 5, 6;

-- The trigger (a trigger function only: the SQL functions of services/ledger/sql are the ledger's
-- operations). It takes a finalising UPDATE's old version off (sign -1) and adds the new version
-- (sign 1): one record's classes, or its count as unclassified. A take-off always finds the row its
-- record was added to (the insert branches are for sign 1).
CREATE FUNCTION usage_record_rollup_classes() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  r usage_records;
  v_sign integer;
BEGIN
  FOR v_step IN 1..2 LOOP
    IF v_step = 1 THEN
      CONTINUE WHEN TG_OP <> 'UPDATE';
      r := OLD;
      v_sign := -1;
    ELSE
      r := NEW;
      v_sign := 1;
    END IF;
    IF r.token_classes IS NULL THEN
      INSERT INTO usage_daily AS d (day, organisation_id, project_id, model_slug, billing_mode, requests, input_tokens,
        output_tokens, cost_micros, provider_cost_micros, debited_micros, unclassified_requests)
      VALUES ((r.created_at AT TIME ZONE 'Asia/Kolkata')::date, r.organisation_id, r.project_id, r.model_slug, r.billing_mode,
        0, 0, 0, 0, 0, 0, 1)
      ON CONFLICT (day, organisation_id, project_id, model_slug, billing_mode) DO UPDATE SET
        unclassified_requests = d.unclassified_requests + v_sign;
    ELSE
      INSERT INTO usage_daily_classes AS c (day, organisation_id, project_id, model_slug, billing_mode, token_class, tokens,
        cost_micros, provider_cost_micros)
      SELECT (r.created_at AT TIME ZONE 'Asia/Kolkata')::date, r.organisation_id, r.project_id, r.model_slug, r.billing_mode,
        e->>'tokenClass', (e->>'tokens')::bigint, (e->>'costMicros')::bigint, (e->>'providerCostMicros')::bigint
      FROM jsonb_array_elements(r.token_classes) AS e
      ON CONFLICT (day, organisation_id, project_id, model_slug, billing_mode, token_class) DO UPDATE SET
        tokens = c.tokens + v_sign * EXCLUDED.tokens, cost_micros = c.cost_micros + v_sign * EXCLUDED.cost_micros,
        provider_cost_micros = c.provider_cost_micros + v_sign * EXCLUDED.provider_cost_micros;
    END IF;
  END LOOP;
  RETURN NULL;
END
$$;
CREATE CONSTRAINT TRIGGER usage_records_rollup_classes AFTER INSERT OR UPDATE ON usage_records
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION usage_record_rollup_classes();
