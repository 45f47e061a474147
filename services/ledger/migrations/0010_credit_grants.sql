-- Credit grants (docs/ledger.md, "Credit grants"; RFC 4006's pattern): a hold against an
-- organisation's available balance (and its project's budget headroom) owned by one proxy
-- replica for one (organisation, project), from which the proxy carves its requests' Reserves in
-- memory. A grant is a reservation in every law: its remaining hold counts in `held`
-- (CONSERVATION (holds)), in the project's held (PROJECT_BUDGET), and the sweeper expires it at
-- its deadline (EXPIRY). Schema only: the functions (ledger_acquire_grant, ledger_adjust_grant,
-- ledger_recall_grants, ledger_settle_carved, ledger_project_held and the carved paths of the
-- batches) live in services/ledger/sql/, applied after the migrations at every start.

CREATE TABLE grants (
  id text PRIMARY KEY CHECK (length(id) BETWEEN 1 AND 128),
  organisation_id text NOT NULL REFERENCES accounts (organisation_id),
  project_id text NOT NULL CHECK (length(project_id) BETWEEN 1 AND 128),
  billing_mode text NOT NULL CHECK (billing_mode IN ('commercial', 'internal')),
  -- The proxy replica (its PROXY_ID) that carves from it; recalls are pushed to its streams.
  owner_id text NOT NULL CHECK (length(owner_id) BETWEEN 1 AND 128),
  -- What the grant held when acquired, µ₹.
  granted_micros bigint NOT NULL CHECK (granted_micros > 0),
  -- What it holds now, µ₹: granted less what carved settles debited, promotions took, and
  -- returns gave back. Never grows.
  remaining_micros bigint NOT NULL CHECK (remaining_micros >= 0 AND remaining_micros <= granted_micros),
  status text NOT NULL DEFAULT 'held' CHECK (status IN ('held', 'closed', 'expired')),
  -- Database clock, like every deadline of the ledger; AdjustGrant may push it out.
  expires_at timestamptz NOT NULL,
  -- Set once when the ledger wants the grant back (its organisation or project runs low).
  recalled_at timestamptz,
  -- Hash of the AcquireGrant payload (IDEMPOTENCY on the grant id).
  fingerprint text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  resolved_at timestamptz,
  CONSTRAINT grants_resolved_once CHECK ((status = 'held') = (resolved_at IS NULL)),
  -- A closed or expired grant holds nothing: everything went back to available.
  CONSTRAINT grants_resolved_holds_nothing CHECK (status = 'held' OR remaining_micros = 0)
);
-- The sweeper's work list (EXPIRY), a project's held grants (PROJECT_BUDGET), an organisation's
-- held grants (recall), and the recall poller's probe per owner.
CREATE INDEX grants_due ON grants (expires_at) WHERE status = 'held';
CREATE INDEX grants_project_held ON grants (project_id) WHERE status = 'held';
CREATE INDEX grants_organisation_held ON grants (organisation_id) WHERE status = 'held';
CREATE INDEX grants_owner_recalled ON grants (owner_id) WHERE status = 'held' AND recalled_at IS NOT NULL;

-- A grant changes only in its state columns: remaining (down), status (held -> closed |
-- expired, once), deadline, recall mark (once) and resolution time. Never deleted.
CREATE FUNCTION grant_state_change_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'UPDATE' AND NEW.id = OLD.id AND NEW.organisation_id = OLD.organisation_id
     AND NEW.project_id = OLD.project_id AND NEW.billing_mode = OLD.billing_mode AND NEW.owner_id = OLD.owner_id
     AND NEW.granted_micros = OLD.granted_micros AND NEW.fingerprint = OLD.fingerprint
     AND NEW.created_at = OLD.created_at AND NEW.remaining_micros <= OLD.remaining_micros
     AND (OLD.status = 'held' OR (NEW.status = OLD.status AND NEW.resolved_at = OLD.resolved_at))
     AND (OLD.recalled_at IS NULL OR NEW.recalled_at = OLD.recalled_at) THEN
    RETURN NEW;
  END IF;
  RAISE EXCEPTION 'ledger table grants changes only in its state columns (% refused)', TG_OP USING ERRCODE = 'P0001';
END
$$;
CREATE TRIGGER grants_state_change_only BEFORE UPDATE OR DELETE ON grants
  FOR EACH ROW EXECUTE FUNCTION grant_state_change_only();

-- AdjustGrant's idempotency (adjustment_id) and its first answer, replayed as it was.
CREATE TABLE grant_adjustments (
  adjustment_id text PRIMARY KEY CHECK (length(adjustment_id) BETWEEN 1 AND 128),
  grant_id text NOT NULL REFERENCES grants (id),
  fingerprint text NOT NULL,
  returned_micros bigint NOT NULL CHECK (returned_micros >= 0),
  remaining_micros bigint NOT NULL CHECK (remaining_micros >= 0),
  expires_at timestamptz NOT NULL,
  closed boolean NOT NULL,
  reason text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE TRIGGER grant_adjustments_append_only BEFORE UPDATE OR DELETE ON grant_adjustments
  FOR EACH ROW EXECUTE FUNCTION refuse_history_change();

-- A carve's reservation (written settled at once by its carved Settle) and a promoted carve's
-- reservation name the grant they came from (no foreign key, like the other hot-path columns;
-- Verify reports a reservation whose grant does not exist, CONSERVATION (rows)).
ALTER TABLE reservations ADD COLUMN grant_id text;

-- Movements of a grant's hold name the grant: `grant` (available -> held, AcquireGrant),
-- `grant_return` (held -> available: AdjustGrant's return and close, and a promotion's hand-over
-- to its reservation), `expire` (the sweeper) and a carved `settle` (debit from the grant's
-- hold, beyond it from available). So a commercial grant's remaining is the sum of the held
-- deltas of its movements, which Verify checks (CONSERVATION (grants)).
ALTER TABLE movements ADD COLUMN grant_id text;

ALTER TABLE movements DROP CONSTRAINT movements_kind_check;
ALTER TABLE movements ADD CONSTRAINT movements_kind_check
  CHECK (kind IN ('credit', 'reserve', 'settle', 'release', 'expire', 'refund', 'grant', 'grant_return'));

ALTER TABLE movements DROP CONSTRAINT movements_shape;
ALTER TABLE movements ADD CONSTRAINT movements_shape CHECK (CASE kind
  -- money arrives: credited and available grow by the amount
  WHEN 'credit' THEN credit_id IS NOT NULL AND reservation_id IS NULL AND refund_id IS NULL AND grant_id IS NULL
    AND credited_delta_micros = amount_micros AND available_delta_micros = amount_micros
    AND held_delta_micros = 0 AND debited_delta_micros = 0
  -- a Reserve moves the amount from available to held
  WHEN 'reserve' THEN reservation_id IS NOT NULL AND credit_id IS NULL AND refund_id IS NULL AND grant_id IS NULL
    AND credited_delta_micros = 0 AND available_delta_micros = -amount_micros
    AND held_delta_micros = amount_micros AND debited_delta_micros = 0
  -- a grant moves the amount from available to held
  WHEN 'grant' THEN grant_id IS NOT NULL AND reservation_id IS NULL AND credit_id IS NULL AND refund_id IS NULL
    AND credited_delta_micros = 0 AND available_delta_micros = -amount_micros
    AND held_delta_micros = amount_micros AND debited_delta_micros = 0
  -- a release, a grant's return or an expiry moves the amount from held back to available
  WHEN 'release' THEN reservation_id IS NOT NULL AND credit_id IS NULL AND refund_id IS NULL AND grant_id IS NULL
    AND credited_delta_micros = 0 AND available_delta_micros = amount_micros
    AND held_delta_micros = -amount_micros AND debited_delta_micros = 0
  WHEN 'grant_return' THEN grant_id IS NOT NULL AND reservation_id IS NULL AND credit_id IS NULL AND refund_id IS NULL
    AND credited_delta_micros = 0 AND available_delta_micros = amount_micros
    AND held_delta_micros = -amount_micros AND debited_delta_micros = 0
  WHEN 'expire' THEN (reservation_id IS NULL) <> (grant_id IS NULL) AND credit_id IS NULL AND refund_id IS NULL
    AND credited_delta_micros = 0 AND available_delta_micros = amount_micros
    AND held_delta_micros = -amount_micros AND debited_delta_micros = 0
  -- a settlement debits the amount, from the hold (the reservation's, or a carve's grant's) first
  -- and beyond it (overrun) from available
  WHEN 'settle' THEN reservation_id IS NOT NULL AND credit_id IS NULL AND refund_id IS NULL
    AND credited_delta_micros = 0 AND debited_delta_micros = amount_micros
    AND held_delta_micros <= 0 AND available_delta_micros <= 0
  -- money leaves: a refund takes the amount out of available and credited, never out of held
  WHEN 'refund' THEN refund_id IS NOT NULL AND reservation_id IS NULL AND credit_id IS NULL AND grant_id IS NULL
    AND credited_delta_micros = -amount_micros AND available_delta_micros = -amount_micros
    AND held_delta_micros = 0 AND debited_delta_micros = 0
  END);
