-- ledger_reserve_detail: the detail text of a Reserve's answer, by its result
-- (ledger_reserve_decision), so both Reserve paths word each outcome the same way.
-- Decides: no law (the words of the answers that IDEMPOTENCY, ONE_OUTCOME, NO_OVERSPEND and
-- PROJECT_BUDGET decide). p_problems: the input problems (invalid_argument); p_budget_detail:
-- the figures of a project_budget_exceeded refusal. Inlined like ledger_reserve_decision.
CREATE OR REPLACE FUNCTION ledger_reserve_detail(p_result text, p_problems text, p_budget_detail text)
RETURNS text LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE p_result
    WHEN 'idempotency_conflict' THEN 'reservation_id was already used with a different payload'
    WHEN 'replay' THEN 'replay: reservation already exists'
    WHEN 'invalid_argument' THEN p_problems
    WHEN 'released' THEN 'a Release of this reservation_id arrived first; nothing is held'
    WHEN 'organisation_unknown' THEN 'organisation has no account'
    WHEN 'insufficient_balance' THEN 'available balance is below amount_micros'
    WHEN 'project_budget_exceeded' THEN p_budget_detail
    ELSE ''
  END
$$;
