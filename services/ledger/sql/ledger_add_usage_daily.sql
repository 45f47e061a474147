-- ledger_add_usage_daily: adds usage to its daily roll-up (usage_daily; docs/ledger.md "Usage at
-- volume"), in the transaction that writes the usage record: the day is that of the record's
-- created_at in Asia/Kolkata, the key its organisation, project, model and billing mode. Amounts
-- in µ₹, tokens and requests as counts; all must be >= 0 (the row's checks). The per-operation
-- paths call it (ledger_settle, ledger_settle_carved; the sweeper's provisional records are rolled up
-- by the usage_records_rollup_provisional trigger of migration 0012); the
-- set-based batch upserts its aggregate per key in one statement instead.
-- Lock order: it locks (or creates) the roll-up row last, after accounts and project spend.
-- plpgsql, not sql: a sql function's INSERT is planned again on every call, a plpgsql one's once per connection.
-- Decides: no law; the roll-ups are what Verify checks `usage` and `project_spend` against.
CREATE OR REPLACE FUNCTION ledger_add_usage_daily(p_created_at timestamptz, p_organisation text, p_project text,
  p_model text, p_billing_mode text, p_requests bigint, p_input_tokens bigint, p_output_tokens bigint, p_cost_micros bigint,
  p_provider_cost_micros bigint, p_debited_micros bigint) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO usage_daily AS d (day, organisation_id, project_id, model_slug, billing_mode, requests, input_tokens, output_tokens,
    cost_micros, provider_cost_micros, debited_micros)
  VALUES ((p_created_at AT TIME ZONE 'Asia/Kolkata')::date, p_organisation, p_project, p_model, p_billing_mode, p_requests,
    p_input_tokens, p_output_tokens, p_cost_micros, p_provider_cost_micros, p_debited_micros)
  ON CONFLICT (day, organisation_id, project_id, model_slug, billing_mode) DO UPDATE SET
    requests = d.requests + EXCLUDED.requests, input_tokens = d.input_tokens + EXCLUDED.input_tokens,
    output_tokens = d.output_tokens + EXCLUDED.output_tokens, cost_micros = d.cost_micros + EXCLUDED.cost_micros,
    provider_cost_micros = d.provider_cost_micros + EXCLUDED.provider_cost_micros,
    debited_micros = d.debited_micros + EXCLUDED.debited_micros;
END
$$;
