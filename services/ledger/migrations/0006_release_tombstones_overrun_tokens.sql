-- Release tombstones (ONE_OUTCOME) and overrun output tokens on usage records (BOUNDED_OVERRUN).
-- docs/ledger.md, "Release before Reserve: tombstones" and "Overrun output tokens".
--
-- 1. A Release that finds no reservation leaves a tombstone, and every Reserve path answers
--    'released' for a tombstoned id and writes nothing that moves money. Why: after a ledger
--    freeze, a proxy's Release overtook its queued Reserve, was answered "unknown", and the
--    Reserve then held money for a request that had already failed, until its deadline.
-- 2. usage_records.overrun_output_tokens, written by every settle path and compared as part of
--    the settle's idempotency payload.
-- Schema only: the functions that check and leave tombstones and write the overrun tokens
-- (ledger_reserve, ledger_settle, ledger_apply_batch_set, ledger_apply_batch and the lock-bucket
-- functions ledger_reservation_lock_bucket, ledger_lock_reserve_ids,
-- ledger_tombstone_unknown_reservation) live in services/ledger/sql/, applied after the
-- migrations at every start; databases that ran this file's earlier text accept this one
-- through superseded-checksums.json.

-- One row per reservation id that was released before any Reserve of it arrived. Not part of
-- the money history (it moves nothing and is pruned), so no append-only trigger.
CREATE TABLE reservation_tombstones (
  reservation_id text PRIMARY KEY CHECK (length(reservation_id) BETWEEN 1 AND 128),
  -- The Release's reason, e.g. "upstream_not_called" (may be empty).
  reason text NOT NULL,
  -- Database clock, like every deadline of the ledger; the sweeper prunes by it.
  created_at timestamptz NOT NULL DEFAULT now()
);
-- The sweeper's pruning list, oldest first.
CREATE INDEX reservation_tombstones_created ON reservation_tombstones (created_at);

-- Output tokens the upstream produced beyond the Reserve: neither delivered nor billed, their
-- provider cost inside provider_cost_micros. Non-zero flags the record.
ALTER TABLE usage_records
  ADD COLUMN overrun_output_tokens bigint NOT NULL DEFAULT 0 CHECK (overrun_output_tokens >= 0);
