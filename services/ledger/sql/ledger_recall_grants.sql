-- ledger_recall_grants: the pull-back (docs/ledger.md, "Credit grants: recall"). When an
-- organisation runs low (AcquireGrant answered not_granted, or an exact Reserve was refused
-- insufficient_balance / project_budget_exceeded), money may be idling in other replicas'
-- grants; when a budget change sets or lowers a project's cap (SetProjectBudget, in its own
-- transaction, after the budget row: PROJECT_BUDGET), a grant may hold more than the project may
-- still spend: every held grant in scope is marked recalled (once; recalled_at) so its owner returns
-- what it has not carved. Grants whose owner has answered the recall (recall_answered_at: it
-- returned what it had not carved) are not returned: no more money can come back from them by
-- recalling, so a refusal counts only recalls still unanswered. Scope: p_organisation's commercial held grants (the balance ran low),
-- and/or p_project's held grants of both modes (the budget ran low). Returns every held grant in
-- scope that is recalled (newly or before) and not yet answered, with its owner, so the caller answers how many
-- (ReserveResponse.grants_recalled) and pushes the new ones to the owners it serves.
-- Decides: no balance (recalling moves no money: the owner's AdjustGrant does); it serves
-- NO_OVERSPEND's promise that a refusal is not caused by money idling in another grant.
-- Locks grant rows only (sorted), in a statement of its own after the refusal committed, so it
-- never holds a grant lock while waiting for an account (the global order: grants -> accounts).
CREATE OR REPLACE FUNCTION ledger_recall_grants(p_organisation text, p_project text)
RETURNS TABLE (grant_id text, owner_id text, newly_recalled boolean)
LANGUAGE plpgsql AS $$
BEGIN
  RETURN QUERY
  WITH scope AS (
    SELECT g.id FROM grants g
    WHERE g.status = 'held'
      AND ((p_organisation IS NOT NULL AND g.organisation_id = p_organisation AND g.billing_mode = 'commercial')
        OR (p_project IS NOT NULL AND g.project_id = p_project))
    ORDER BY g.id
    FOR UPDATE
  ), marked AS (
    UPDATE grants g SET recalled_at = now()
    FROM scope WHERE g.id = scope.id AND g.recalled_at IS NULL AND g.status = 'held'
    RETURNING g.id
  )
  SELECT g.id, g.owner_id, g.id IN (SELECT m.id FROM marked m)
  FROM grants g JOIN scope ON scope.id = g.id
  WHERE g.status = 'held' AND g.recall_answered_at IS NULL;
END
$$;
