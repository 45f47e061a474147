-- ledger_budget_change_lock_class: the class id (first key) of the two-key advisory lock that
-- orders a project's budget change (SetProjectBudget, exclusive) against the AcquireGrants of the
-- project (shared), the second key being hashtext(project_id). PROJECT_BUDGET: without it an
-- AcquireGrant that read "no cap" could commit its grant after a budget change recalled the
-- project's grants, and carve past the new cap. A constant apart from ledger_reservation_lock_bucket's.
CREATE OR REPLACE FUNCTION ledger_budget_change_lock_class() RETURNS integer LANGUAGE sql IMMUTABLE AS $$ SELECT 1819501667 $$;
