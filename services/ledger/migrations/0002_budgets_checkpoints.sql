-- Project Budgets (PROJECT_BUDGET), checkpoints of long streams (EXPIRY) and budget alerts.
-- Months are calendar months in Asia/Kolkata, always computed by the database clock.

-- Running usage of a long stream, recorded by Checkpoint: an expiry charges these totals
-- instead of nothing. sequence 0 means no checkpoint was ever recorded.
ALTER TABLE reservations
  ADD COLUMN checkpoint_sequence bigint NOT NULL DEFAULT 0 CHECK (checkpoint_sequence >= 0),
  ADD COLUMN checkpoint_input_tokens bigint NOT NULL DEFAULT 0 CHECK (checkpoint_input_tokens >= 0),
  ADD COLUMN checkpoint_output_tokens bigint NOT NULL DEFAULT 0 CHECK (checkpoint_output_tokens >= 0),
  ADD COLUMN checkpoint_cost_micros bigint NOT NULL DEFAULT 0 CHECK (checkpoint_cost_micros >= 0),
  ADD COLUMN checkpoint_provider_cost_micros bigint NOT NULL DEFAULT 0 CHECK (checkpoint_provider_cost_micros >= 0),
  -- What the expiry charged from the last checkpoint, µ₹ (NULL unless expired with a checkpoint).
  ADD COLUMN expiry_charged_micros bigint CHECK (expiry_charged_micros >= 0),
  ADD CONSTRAINT reservations_expiry_charge_only_when_expired CHECK (expiry_charged_micros IS NULL OR status = 'expired');
-- A project's open reservations (both billing modes) count against its budget.
CREATE INDEX reservations_project_held ON reservations (project_id) WHERE status = 'held';

-- A usage record written by an expiry from a checkpoint is provisional: the late settle of the
-- same reservation (if it ever comes) finalises it once with the actual totals. Every other
-- change to a usage record is refused, so there is still exactly one record per reservation.
ALTER TABLE usage_records ADD COLUMN provisional boolean NOT NULL DEFAULT false;

CREATE FUNCTION usage_record_finalise_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'UPDATE' AND OLD.provisional AND NOT NEW.provisional
     AND NEW.id = OLD.id AND NEW.reservation_id = OLD.reservation_id
     AND NEW.organisation_id = OLD.organisation_id AND NEW.project_id = OLD.project_id
     AND NEW.billing_mode = OLD.billing_mode AND NEW.created_at = OLD.created_at
     AND NEW.cost_micros >= OLD.cost_micros AND NEW.debited_micros >= OLD.debited_micros THEN
    RETURN NEW;
  END IF;
  RAISE EXCEPTION 'ledger table usage_records is append-only (% refused)', TG_OP USING ERRCODE = 'P0001';
END
$$;
DROP TRIGGER usage_records_append_only ON usage_records;
CREATE TRIGGER usage_records_finalise_only BEFORE UPDATE OR DELETE ON usage_records
  FOR EACH ROW EXECUTE FUNCTION usage_record_finalise_only();

-- The current budget of a project. A cap of 0 means no budget. Reserves of the project lock
-- this row, so concurrent Reserves (on any replica) check the cap one after another.
CREATE TABLE project_budgets (
  project_id text PRIMARY KEY CHECK (length(project_id) BETWEEN 1 AND 128),
  organisation_id text NOT NULL REFERENCES accounts (organisation_id),
  monthly_cap_micros bigint NOT NULL CHECK (monthly_cap_micros >= 0),
  soft_alert_percent integer NOT NULL CHECK (soft_alert_percent BETWEEN 0 AND 100),
  updated_at timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT project_budgets_percent_when_capped CHECK (monthly_cap_micros = 0 OR soft_alert_percent >= 1)
);

-- Every SetProjectBudget call that changed something (append-only); request_id is its
-- idempotency key.
CREATE TABLE project_budget_changes (
  request_id text PRIMARY KEY CHECK (length(request_id) BETWEEN 1 AND 128),
  organisation_id text NOT NULL REFERENCES accounts (organisation_id),
  project_id text NOT NULL,
  monthly_cap_micros bigint NOT NULL CHECK (monthly_cap_micros >= 0),
  soft_alert_percent integer NOT NULL,
  fingerprint text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);

-- Customer-price cost settled per project and month (both billing modes), maintained in the
-- transaction that writes or finalises the usage record; Verify recomputes it from usage_records.
-- The month is that of the usage record's created_at in Asia/Kolkata.
CREATE TABLE project_month_spend (
  project_id text NOT NULL,
  month text NOT NULL CHECK (month ~ '^[0-9]{4}-[0-9]{2}$'),
  organisation_id text NOT NULL REFERENCES accounts (organisation_id),
  settled_micros bigint NOT NULL CHECK (settled_micros >= 0),
  PRIMARY KEY (project_id, month)
);

-- Soft budget alerts: at most one per project and month. id is the cursor of
-- ListBudgetAlerts/WatchBudgetAlerts; inserts take a transaction-scoped advisory lock so ids
-- commit in increasing order and a reader never skips one.
CREATE TABLE budget_alerts (
  id bigserial PRIMARY KEY,
  organisation_id text NOT NULL REFERENCES accounts (organisation_id),
  project_id text NOT NULL,
  month text NOT NULL,
  spent_micros bigint NOT NULL,
  monthly_cap_micros bigint NOT NULL CHECK (monthly_cap_micros > 0),
  soft_alert_percent integer NOT NULL CHECK (soft_alert_percent BETWEEN 1 AND 100),
  raised_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (project_id, month)
);
CREATE INDEX budget_alerts_organisation ON budget_alerts (organisation_id, id);

CREATE TRIGGER project_budget_changes_append_only BEFORE UPDATE OR DELETE ON project_budget_changes
  FOR EACH ROW EXECUTE FUNCTION refuse_history_change();
CREATE TRIGGER budget_alerts_append_only BEFORE UPDATE OR DELETE ON budget_alerts
  FOR EACH ROW EXECUTE FUNCTION refuse_history_change();

-- Reports: usage by project and time.
CREATE INDEX usage_records_project ON usage_records (project_id, created_at);
