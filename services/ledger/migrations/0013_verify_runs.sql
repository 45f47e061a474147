-- When the periodic verify last ran to completion, cluster-wide (docs/ledger.md, "Periodic
-- verify"). Each replica's monitor wakes every LEDGER_VERIFY_INTERVAL_MS; after taking the
-- verify's advisory lock it skips its turn when this row says a run (any replica's) finished less
-- than an interval ago, so the database sees about one run per interval, not one per replica.
-- Written in the verify's own transaction; no row until the first run. One row at most.
CREATE TABLE verify_runs (
  only_row boolean PRIMARY KEY DEFAULT true CHECK (only_row),
  finished_at timestamptz NOT NULL
);
