-- ledger_raise_soft_alert_if_due: raises this month's soft alert of a project when settled + held
-- has reached the threshold (spent × 100 ≥ cap × percent, exact) and none was raised yet.
-- Settled and held are read in one statement, so one snapshot (see ledger_reserve). The advisory
-- lock makes alert ids commit in order, so readers can use them as a cursor.
-- Decides: PROJECT_BUDGET (the soft threshold: one alert per project per month).
CREATE OR REPLACE FUNCTION ledger_raise_soft_alert_if_due(p_project text) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
  budget record;
  v_month text := ledger_current_month();
  v_spent numeric;
BEGIN
  SELECT organisation_id, monthly_cap_micros, soft_alert_percent INTO budget
  FROM project_budgets WHERE project_id = p_project;
  IF NOT FOUND OR budget.monthly_cap_micros <= 0 THEN RETURN false; END IF;
  -- One statement, one snapshot (see ledger_reserve).
  SELECT coalesce((SELECT s.settled_micros FROM project_month_spend s WHERE s.project_id = p_project AND s.month = v_month), 0)
    + ledger_project_held(p_project)
  INTO v_spent;
  IF v_spent * 100 < budget.monthly_cap_micros::numeric * budget.soft_alert_percent THEN RETURN false; END IF;
  IF EXISTS (SELECT 1 FROM budget_alerts WHERE project_id = p_project AND month = v_month) THEN RETURN false; END IF;
  PERFORM pg_advisory_xact_lock(hashtext('ledger.budget_alerts'));
  INSERT INTO budget_alerts (organisation_id, project_id, month, spent_micros, monthly_cap_micros, soft_alert_percent)
  VALUES (budget.organisation_id, p_project, v_month, v_spent, budget.monthly_cap_micros, budget.soft_alert_percent)
  ON CONFLICT (project_id, month) DO NOTHING;
  RETURN FOUND;
END
$$;
