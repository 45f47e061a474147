-- ledger_project_held: what a project holds right now, µ₹ (both billing modes): its held
-- reservations plus what its held credit grants still hold. The one definition of held(p) for
-- PROJECT_BUDGET (ledger_reserve, ledger_acquire_grant, ledger_raise_soft_alert_if_due,
-- GetProjectSpend): a grant is a reservation in every law.
-- STABLE: it reads with the snapshot of the statement that calls it, so a caller that reads
-- settled and held in one statement still reads one snapshot.
CREATE OR REPLACE FUNCTION ledger_project_held(p_project text) RETURNS numeric LANGUAGE sql STABLE AS $$
  SELECT coalesce((SELECT sum(r.amount_micros) FROM reservations r WHERE r.project_id = p_project AND r.status = 'held'), 0)
    + coalesce((SELECT sum(g.remaining_micros) FROM grants g WHERE g.project_id = p_project AND g.status = 'held'), 0)
$$;
