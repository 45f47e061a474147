-- ledger_tombstone_unknown_reservation: Release of an id with no reservation (ledger_release.sql): under
-- the exclusive tombstone lock, looks again (a Reserve that held the bucket has committed by now)
-- and, if there is still no reservation, leaves the tombstone (a repeated Release finds it and
-- changes nothing). Returns false when a reservation exists after all: the caller releases it as
-- usual.
-- Decides: ONE_OUTCOME (a Release that overtook its Reserve: the Reserve will hold nothing).
CREATE OR REPLACE FUNCTION ledger_tombstone_unknown_reservation(p_id text, p_reason text) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_advisory_xact_lock(1819501666, ledger_reservation_lock_bucket(p_id));
  IF EXISTS (SELECT 1 FROM reservations WHERE id = p_id) THEN RETURN false; END IF;
  INSERT INTO reservation_tombstones (reservation_id, reason) VALUES (p_id, p_reason) ON CONFLICT (reservation_id) DO NOTHING;
  RETURN true;
END
$$;
