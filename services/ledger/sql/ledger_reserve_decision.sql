-- ledger_reserve_decision: the result of a Reserve, in precedence order. The one place that
-- decides it, for the per-operation path (ledger_reserve: batches of one, isolated reruns) and
-- the set-based batch (ledger_apply_batch_set) alike.
-- Decides: IDEMPOTENCY (replay, conflict), ONE_OUTCOME (a Release came first: released),
-- NO_OVERSPEND (a commercial Reserve must fit in available), PROJECT_BUDGET (settled this month +
-- held + the Reserve must stay within the cap), INTERNAL_MODE (no wallet check, the budget still
-- applies).
--
-- Precedence (TigerBeetle style, the first that holds is the answer):
--   idempotency_conflict  an earlier Reserve of this id had another payload
--   replay                an earlier Reserve of this id had this payload (answered as it was)
--   invalid_argument      the input has problems
--   released              a Release of this id arrived first (tombstone)
--   organisation_unknown  no account
--   insufficient_balance  commercial and available < amount
--   project_budget_exceeded  settled + held + amount > monthly cap
--   ok
-- A fact not yet known is passed as the value that lets it pass (NULL fingerprint, problems,
-- balance, spend or cap; false tombstone; true account), so a caller can ask as it learns, in
-- precedence order, and stop at the first refusal. µ₹ throughout.
--
-- LANGUAGE sql IMMUTABLE with one expression: the planner inlines it, so calling it per row in a
-- set-based statement, in a WHERE, or as a PL/pgSQL expression costs no function call.
CREATE OR REPLACE FUNCTION ledger_reserve_decision(
  p_earlier_fingerprint text,
  p_fingerprint text,
  p_problems text,
  p_tombstoned boolean,
  p_has_account boolean,
  p_available_micros bigint,
  p_commercial boolean,
  p_amount_micros bigint,
  p_project_spent_micros numeric,
  p_monthly_cap_micros bigint
) RETURNS text LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE
    WHEN p_earlier_fingerprint IS NOT NULL AND p_earlier_fingerprint <> p_fingerprint THEN 'idempotency_conflict'
    WHEN p_earlier_fingerprint IS NOT NULL THEN 'replay'
    WHEN p_problems IS NOT NULL THEN 'invalid_argument'
    WHEN p_tombstoned THEN 'released'
    WHEN NOT p_has_account THEN 'organisation_unknown'
    WHEN p_commercial AND p_available_micros < p_amount_micros THEN 'insufficient_balance'
    WHEN p_project_spent_micros + p_amount_micros > p_monthly_cap_micros THEN 'project_budget_exceeded'
    ELSE 'ok'
  END
$$;
