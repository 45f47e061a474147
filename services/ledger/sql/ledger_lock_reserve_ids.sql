-- ledger_lock_reserve_ids: takes the Reserve side (shared) of the tombstone lock for these ids
-- (see ledger_reservation_lock_bucket), before any row lock. 1819501666 is an arbitrary
-- constant naming this use of the two-key advisory lock space.
-- Decides: ONE_OUTCOME (a Reserve and a Release of an unknown id on the same id take turns).
CREATE OR REPLACE FUNCTION ledger_lock_reserve_ids(p_ids text[]) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_advisory_xact_lock_shared(1819501666, b.bucket)
  FROM (SELECT DISTINCT ledger_reservation_lock_bucket(i) AS bucket FROM unnest(p_ids) AS i) AS b;
END
$$;
