-- The owner's answer to a recall (issue 14; docs/ledger.md "Credit grants: recall"). A Reserve
-- refused while the organisation's grants are recalled answers grants_recalled = how many of them
-- their owners have not answered yet, so the proxy retries only while money may still come back
-- from a recall: once every owner has returned what it had not carved (or closed the grant), a
-- refusal is final at once instead of after PROXY_RECALL_WAIT_MS of retries. An adjustment of a
-- recalled grant answers the recall unless it only extends the deadline (ledger_adjust_grant).
ALTER TABLE grants ADD COLUMN recall_answered_at timestamptz;

-- A grant changes only in its state columns: remaining (down), status (held -> closed |
-- expired, once), deadline, recall mark (once), recall answer (once) and resolution time.
CREATE OR REPLACE FUNCTION grant_state_change_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'UPDATE' AND NEW.id = OLD.id AND NEW.organisation_id = OLD.organisation_id
     AND NEW.project_id = OLD.project_id AND NEW.billing_mode = OLD.billing_mode AND NEW.owner_id = OLD.owner_id
     AND NEW.granted_micros = OLD.granted_micros AND NEW.fingerprint = OLD.fingerprint
     AND NEW.created_at = OLD.created_at AND NEW.remaining_micros <= OLD.remaining_micros
     AND (OLD.status = 'held' OR (NEW.status = OLD.status AND NEW.resolved_at = OLD.resolved_at))
     AND (OLD.recalled_at IS NULL OR NEW.recalled_at = OLD.recalled_at)
     AND (OLD.recall_answered_at IS NULL OR NEW.recall_answered_at = OLD.recall_answered_at)
     AND (NEW.recall_answered_at IS NULL OR NEW.recalled_at IS NOT NULL) THEN
    RETURN NEW;
  END IF;
  RAISE EXCEPTION 'ledger table grants changes only in its state columns (% refused)', TG_OP USING ERRCODE = 'P0001';
END
$$;
