-- ledger_carve_records: the usage records of carves (migration 0021: a carve has no reservation
-- row; its record names its grant and keeps its settlement) among `p_ids`, looked for from
-- `p_since` on: the created_at of the carves' grant (or the oldest of their grants). Every carve's
-- record is written after its grant was created, so this finds it in whatever month's partition it
-- is (each partition's unique index on reservation_id; the older months are pruned), and a caller
-- holding the grant's row lock sees every record a concurrent copy committed first. The one place
-- that says how a carve's record is found: Settles of carves (IDEMPOTENCY), promotions of carves
-- (ONE_OUTCOME), and the failed attempts of carved Settles.
-- A single-SELECT SQL function, so the planner inlines it into each caller's statement.
-- Decides: no law; its callers do.
CREATE OR REPLACE FUNCTION ledger_carve_records(p_ids text[], p_since timestamptz)
RETURNS SETOF usage_records LANGUAGE sql STABLE AS $$
  SELECT u.* FROM usage_records u
  WHERE u.reservation_id = ANY (p_ids) AND u.created_at >= p_since AND u.grant_id IS NOT NULL
$$;
