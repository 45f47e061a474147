-- ledger_reservation_lock_bucket: the advisory lock that orders a Reserve and a Release of an
-- unknown id on the same id, in one of 256 buckets of the id's hash (two-key form, its own key
-- space: no clash with the budget-alert lock). Why a lock at all: under READ COMMITTED a Release
-- that finds no reservation and a Reserve that finds no tombstone could both commit (neither
-- sees the other's uncommitted row) and leave a held reservation beside a tombstone. Every
-- Reserve takes its bucket SHARED before it looks for a tombstone (Reserves never wait for each
-- other), and a Release of an unknown id takes it EXCLUSIVE before it looks again and writes the
-- tombstone: whichever comes second sees the first one's committed row. Buckets bound the locks
-- a batch holds (≤ 256, whatever its size) at the price of a Release of an unknown id (rare)
-- sometimes waiting for an unrelated Reserve of its bucket to commit. Reserves take their buckets
-- before any row lock, and a Release waiting for its bucket holds nothing, so this adds no deadlock.
-- Decides: ONE_OUTCOME (with ledger_lock_reserve_ids and ledger_tombstone_unknown_reservation).
CREATE OR REPLACE FUNCTION ledger_reservation_lock_bucket(p_id text) RETURNS integer LANGUAGE sql IMMUTABLE AS $$
  SELECT hashtext(p_id) & 255
$$;
