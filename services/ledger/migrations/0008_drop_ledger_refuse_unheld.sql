-- ledger_refuse_unheld (0003) named why a Reserve held nothing; ledger_reserve_decision
-- (services/ledger/sql/ledger_reserve_decision.sql) now decides every Reserve result in one
-- place, for the per-operation and the set-based paths alike, so the helper goes. Functions live
-- in services/ledger/sql/ and are applied after the migrations; a function that no source file
-- defines any more is dropped by a migration, so every database has the same set.
DROP FUNCTION IF EXISTS ledger_refuse_unheld(text, bigint, text);
