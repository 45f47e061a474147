-- A leaner hot path for Reserve and Settle (docs/ledger.md, "Hot path: 0005"): the schema half.
-- The set-based batch that takes the hot rows last, the one entry point with three paths and the
-- one-snapshot budget reads this step also brought are functions, now in services/ledger/sql/
-- (ledger_apply_batch_set.sql, ledger_apply_batch.sql, ledger_raise_soft_alert_if_due.sql,
-- ledger_reserve.sql), applied after the migrations at every start; databases that ran this
-- file's earlier text accept this one through superseded-checksums.json.
--
-- 1. Foreign keys off the tables every Reserve and Settle writes. Each was a per-row trigger
--    (an index lookup and a KEY SHARE lock on the parent, ≈ 9 µs, 9 per pair) re-proving what
--    the only writers already know: every row below is written by a ledger function (or a
--    ledger transaction in TypeScript) that has just found and locked its parent account or
--    reservation in the same transaction, and accounts and reservations are never deleted
--    (nothing in the service deletes them, and reservations have no DELETE path at all).
--    Verify (find-balance-differences.ts) now also reports orphans: a reservation, movement or
--    usage record whose account, reservation or credit does not exist.
--    Kept: the foreign keys of credits, budgets, budget changes, alerts and project spend (their
--    rows are written rarely: once per credit, budget change, alert or project and month).
ALTER TABLE reservations DROP CONSTRAINT reservations_organisation_id_fkey;
ALTER TABLE movements DROP CONSTRAINT movements_organisation_id_fkey;
ALTER TABLE movements DROP CONSTRAINT movements_reservation_id_fkey;
ALTER TABLE movements DROP CONSTRAINT movements_credit_id_fkey;
ALTER TABLE usage_records DROP CONSTRAINT usage_records_reservation_id_fkey;
ALTER TABLE usage_records DROP CONSTRAINT usage_records_organisation_id_fkey;

-- What the dropped keys also guaranteed, that a parent cannot vanish under its rows, the schema
-- still enforces: accounts and reservations refuse DELETE and TRUNCATE (statement triggers, so
-- the hot path's inserts and updates pay nothing for them).
CREATE FUNCTION refuse_parent_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'ledger table % is never deleted from: other rows name its rows (% refused)', TG_TABLE_NAME, TG_OP
    USING ERRCODE = 'P0001';
END
$$;
CREATE TRIGGER accounts_never_deleted BEFORE DELETE OR TRUNCATE ON accounts
  FOR EACH STATEMENT EXECUTE FUNCTION refuse_parent_delete();
CREATE TRIGGER reservations_never_deleted BEFORE DELETE OR TRUNCATE ON reservations
  FOR EACH STATEMENT EXECUTE FUNCTION refuse_parent_delete();

-- 2. Indexes no query of the service uses (each cost one index insert per row): movements are
--    read per organisation (movements_organisation) or in full (verify); held reservations are
--    read by deadline (reservations_due), by project (reservations_project_held) or in full.
DROP INDEX movements_reservation;
DROP INDEX reservations_organisation;
