-- ledger_refusal_liftable: whether a refused Reserve (insufficient_balance, or
-- project_budget_exceeded when p_budget) could fit once the money now held comes back, i.e.
-- whether any Settle, Release, expiry or grant recall could lift the refusal
-- (ReserveResponse.liftable). Decides no movement; it serves NO_OVERSPEND's promise that a 402 is
-- never caused by money idling in a hold, without making a refusal wait when no hold could help.
-- Holds only move money from held back to available (or into debited): whatever they do,
-- available + held never grows without a credit, so for the balance a refusal is liftable iff
-- amount <= available + held of the organisation (= credited - debited). For PROJECT_BUDGET,
-- holds only leave held(p) (released, or settled into spend), so it is liftable iff this month's
-- settled(p) + amount <= cap; a project with no cap any more is liftable (try again).
-- Reads without a lock, after the refusal committed: a credit or cap change racing it can only
-- make a later try fit, which the caller's next request sees.
CREATE OR REPLACE FUNCTION ledger_refusal_liftable(p_organisation text, p_project text, p_amount bigint, p_budget boolean)
RETURNS boolean LANGUAGE sql STABLE AS $$
  SELECT CASE WHEN p_budget THEN
      coalesce((SELECT coalesce((SELECT s.settled_micros FROM project_month_spend s
                                 WHERE s.project_id = p_project AND s.month = ledger_current_month()), 0) + p_amount <= b.monthly_cap_micros
                FROM project_budgets b WHERE b.project_id = p_project AND b.monthly_cap_micros > 0), true)
    ELSE
      coalesce((SELECT a.available_micros::numeric + a.held_micros >= p_amount FROM accounts a WHERE a.organisation_id = p_organisation), false)
    END
$$;
