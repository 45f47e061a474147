-- Request ids on checkpoints (NOTHING_FREE, EXPIRY). docs/ledger.md, "Checkpoint" and "Expiry
-- and late settles".
--
-- A Reserve carries no request id, so the provisional usage record an expiry writes from a
-- checkpoint had request_id '' and could not be matched to its request (a SIGKILLed proxy's
-- streams were paired with such records by amount). Now:
-- 1. reservations.request_id: the gateway's request id, recorded by the first Checkpoint that
--    carries one ('' until then); the expiry writes it onto its provisional usage record.
-- 2. ledger_settle (services/ledger/sql/ledger_settle.sql): a late settle that finalises the
--    provisional record sets the settle's own request id when it carries one, whichever figures
--    stand (before, it did only when the actual totals replaced the charged ones), else keeps
--    the checkpoint's. usage_record_finalise_only (0002) compares no request id, so this update
--    passes it.
-- Schema only: the function lives in services/ledger/sql/, applied after the migrations at every
-- start; databases that ran this file's earlier text accept this one through
-- superseded-checksums.json.
-- Settles of held reservations (every other path, including the set-based batch) are unchanged:
-- their record carries the Settle's request id as before.

-- '' (not NULL) for "none recorded": the value the usage record takes as it is; an existing
-- constant default rewrites no rows.
ALTER TABLE reservations
  ADD COLUMN request_id text NOT NULL DEFAULT '' CHECK (length(request_id) <= 128);
