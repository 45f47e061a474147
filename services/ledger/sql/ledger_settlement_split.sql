-- ledger_settlement_split: how one commercial settlement of p_cost_micros moves money against a
-- hold of p_held_micros (the Reserve while it is held; 0 once it expired, so a late settle is all
-- overrun). The one place that decides it, for ledger_settle, the set-based batch
-- (ledger_apply_batch_set) and the expiry sweeper's charge from a checkpoint
-- (services/ledger/src/domain/expire-due-reservations.ts).
-- Decides: CONSERVATION (from_hold + released = held, from_hold + overrun = cost = debited, so
-- available + held + debited is unchanged), BOUNDED_OVERRUN (the part beyond the hold is
-- recorded as overrun, taken from available, which may go below zero by it only), EXPIRY (what
-- an expiry charges from a checkpoint is split the same way). µ₹ throughout.
--
-- LANGUAGE sql IMMUTABLE returning one row: the planner inlines it where it is called in FROM
-- (UPDATE ... FROM, LATERAL), so set-based statements pay no function call per row.
CREATE OR REPLACE FUNCTION ledger_settlement_split(p_held_micros bigint, p_cost_micros bigint)
RETURNS TABLE (debited_micros bigint, from_hold_micros bigint, released_micros bigint, overrun_micros bigint)
LANGUAGE sql IMMUTABLE AS $$
  SELECT p_cost_micros, least(p_cost_micros, p_held_micros), p_held_micros - least(p_cost_micros, p_held_micros),
    p_cost_micros - least(p_cost_micros, p_held_micros)
$$;
