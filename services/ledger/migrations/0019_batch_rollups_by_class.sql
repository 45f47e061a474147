-- Roll-ups by class, per batch (docs/ledger.md, "Usage at volume"). The set-based batch
-- (sql/ledger_apply_batch_set.sql) already upserts usage_daily once per key per batch; the class
-- roll-ups of migration 0016 were still kept by a row trigger, one upsert per usage record on the
-- key's one hot row: in a 2-minute `pnpm bench soak` (pg_stat_statements) that was 261,494
-- upserts, 14% of the ledger's statement time, and as many dead versions of one usage_daily row
-- (the row every request of a key rewrites). The batch now adds its records' classes and
-- unclassified count in its own per-key upserts, and the trigger skips the records it wrote: the
-- batch sets the transaction-local setting ledger.rollups_written to 'on' around its INSERT. A
-- constraint trigger's WHEN is evaluated when the row is inserted, not at the commit, so the
-- records of every other path (per-operation settles, carved settles, expiry charges, the
-- sweeper's provisional records and the late settles that finalise them) are still rolled up by
-- the trigger, and a record whose setting was off is never skipped.
-- CONSERVATION: unchanged; Verify's usage_rollups check compares the roll-ups with the records.
DROP TRIGGER usage_records_rollup_classes ON usage_records;
CREATE CONSTRAINT TRIGGER usage_records_rollup_classes AFTER INSERT OR UPDATE ON usage_records
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
  WHEN (current_setting('ledger.rollups_written', true) IS DISTINCT FROM 'on')
  EXECUTE FUNCTION usage_record_rollup_classes();
