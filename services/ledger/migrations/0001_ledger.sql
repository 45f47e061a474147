-- The ledger: wallet accounts, the append-only movements that change them, reservations,
-- credits and usage records. Every rule the service relies on for money is also a constraint
-- here, so a bug (or a second replica) cannot write a state that breaks the laws.

-- One wallet per organisation. The balances are maintained in the same transaction as the
-- movement rows that change them; `findBalanceDifferences` recomputes them from the rows.
CREATE TABLE accounts (
  organisation_id text PRIMARY KEY CHECK (length(organisation_id) BETWEEN 1 AND 128),
  credited_micros bigint NOT NULL DEFAULT 0 CHECK (credited_micros >= 0),
  -- May go below zero only through a recorded settlement overrun (a settle costing more than
  -- its Reserve, or a settle after expiry); reservations never take it below zero.
  available_micros bigint NOT NULL DEFAULT 0,
  held_micros bigint NOT NULL DEFAULT 0 CHECK (held_micros >= 0),
  debited_micros bigint NOT NULL DEFAULT 0 CHECK (debited_micros >= 0),
  created_at timestamptz NOT NULL DEFAULT now(),
  -- CONSERVATION holds on every committed row.
  CONSTRAINT accounts_conservation CHECK (credited_micros = available_micros + held_micros + debited_micros)
);

-- Credits (top-ups, manual credits); credit_id is the caller's idempotency key.
CREATE TABLE credits (
  credit_id text PRIMARY KEY CHECK (length(credit_id) BETWEEN 1 AND 128),
  organisation_id text NOT NULL REFERENCES accounts (organisation_id),
  amount_micros bigint NOT NULL CHECK (amount_micros > 0),
  reason text NOT NULL,
  -- Hash of the request payload: a replay with another payload is an idempotency conflict.
  fingerprint text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX credits_organisation ON credits (organisation_id);

-- Reservations: id is the caller's reservation id (also the idempotency key of Reserve and,
-- per reservation, of Settle). A reservation resolves exactly once: held -> settled |
-- released | expired. A settle arriving after expiry keeps status 'expired' (the hold was
-- already returned) and records its settlement in the settle_* columns.
CREATE TABLE reservations (
  id text PRIMARY KEY CHECK (length(id) BETWEEN 1 AND 128),
  organisation_id text NOT NULL REFERENCES accounts (organisation_id),
  project_id text NOT NULL,
  billing_mode text NOT NULL CHECK (billing_mode IN ('commercial', 'internal')),
  amount_micros bigint NOT NULL CHECK (amount_micros > 0),
  model_slug text NOT NULL,
  status text NOT NULL DEFAULT 'held' CHECK (status IN ('held', 'settled', 'released', 'expired')),
  created_at timestamptz NOT NULL DEFAULT now(),
  -- Set from the database clock (now() + ttl), never from a caller's clock.
  expires_at timestamptz NOT NULL,
  request_fingerprint text NOT NULL,
  resolved_at timestamptz,
  release_reason text,
  settle_fingerprint text,
  settle_debited_micros bigint CHECK (settle_debited_micros >= 0),
  settle_released_micros bigint CHECK (settle_released_micros >= 0),
  settle_overrun_micros bigint CHECK (settle_overrun_micros >= 0),
  settle_detail text,
  CONSTRAINT reservations_resolved_once CHECK ((status = 'held') = (resolved_at IS NULL)),
  CONSTRAINT reservations_settle_recorded CHECK (
    (settle_fingerprint IS NULL) = (settle_debited_micros IS NULL)
    AND (settle_fingerprint IS NULL) = (settle_released_micros IS NULL)
    AND (settle_fingerprint IS NULL) = (settle_overrun_micros IS NULL)
    AND (settle_fingerprint IS NULL) = (settle_detail IS NULL)),
  CONSTRAINT reservations_settled_has_settlement CHECK (status <> 'settled' OR settle_fingerprint IS NOT NULL),
  CONSTRAINT reservations_settlement_only_when_used CHECK (settle_fingerprint IS NULL OR status IN ('settled', 'expired')),
  CONSTRAINT reservations_release_reason CHECK ((status = 'released') = (release_reason IS NOT NULL))
);
-- The sweeper's work list: held reservations by deadline.
CREATE INDEX reservations_due ON reservations (expires_at) WHERE status = 'held';
CREATE INDEX reservations_organisation ON reservations (organisation_id) WHERE status = 'held';

-- Every change of a wallet balance is one row here, with its effect on each balance column.
-- Balances are the sums of the deltas; each row conserves money on its own, and its deltas
-- must have the shape of its kind. Internal billing mode moves no wallet money and so writes
-- no movements. Rows are never updated or deleted (trigger below).
CREATE TABLE movements (
  id bigserial PRIMARY KEY,
  organisation_id text NOT NULL REFERENCES accounts (organisation_id),
  kind text NOT NULL CHECK (kind IN ('credit', 'reserve', 'settle', 'release', 'expire')),
  amount_micros bigint NOT NULL CHECK (amount_micros > 0),
  credited_delta_micros bigint NOT NULL,
  available_delta_micros bigint NOT NULL,
  held_delta_micros bigint NOT NULL,
  debited_delta_micros bigint NOT NULL,
  reservation_id text REFERENCES reservations (id),
  credit_id text REFERENCES credits (credit_id),
  detail jsonb NOT NULL DEFAULT '{}'::jsonb,
  created_at timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT movements_conserve CHECK (credited_delta_micros = available_delta_micros + held_delta_micros + debited_delta_micros),
  CONSTRAINT movements_shape CHECK (CASE kind
    -- money arrives: credited and available grow by the amount
    WHEN 'credit' THEN credit_id IS NOT NULL AND reservation_id IS NULL
      AND credited_delta_micros = amount_micros AND available_delta_micros = amount_micros
      AND held_delta_micros = 0 AND debited_delta_micros = 0
    -- a Reserve moves the amount from available to held
    WHEN 'reserve' THEN reservation_id IS NOT NULL AND credit_id IS NULL
      AND credited_delta_micros = 0 AND available_delta_micros = -amount_micros
      AND held_delta_micros = amount_micros AND debited_delta_micros = 0
    -- a release or an expiry moves the amount from held back to available
    WHEN 'release' THEN reservation_id IS NOT NULL AND credit_id IS NULL
      AND credited_delta_micros = 0 AND available_delta_micros = amount_micros
      AND held_delta_micros = -amount_micros AND debited_delta_micros = 0
    WHEN 'expire' THEN reservation_id IS NOT NULL AND credit_id IS NULL
      AND credited_delta_micros = 0 AND available_delta_micros = amount_micros
      AND held_delta_micros = -amount_micros AND debited_delta_micros = 0
    -- a settlement debits the amount, from the hold first and beyond it (overrun) from available
    WHEN 'settle' THEN reservation_id IS NOT NULL AND credit_id IS NULL
      AND credited_delta_micros = 0 AND debited_delta_micros = amount_micros
      AND held_delta_micros <= 0 AND available_delta_micros <= 0
    END)
);
CREATE INDEX movements_organisation ON movements (organisation_id, id);
CREATE INDEX movements_reservation ON movements (reservation_id) WHERE reservation_id IS NOT NULL;

-- Exactly one usage record per settled reservation (NOTHING_FREE): the unique reservation_id makes a
-- second one impossible whatever the callers do.
CREATE TABLE usage_records (
  id bigserial PRIMARY KEY,
  reservation_id text NOT NULL UNIQUE REFERENCES reservations (id),
  organisation_id text NOT NULL REFERENCES accounts (organisation_id),
  project_id text NOT NULL,
  model_slug text NOT NULL,
  input_tokens bigint NOT NULL CHECK (input_tokens >= 0),
  output_tokens bigint NOT NULL CHECK (output_tokens >= 0),
  cost_micros bigint NOT NULL CHECK (cost_micros >= 0),
  provider_cost_micros bigint NOT NULL CHECK (provider_cost_micros >= 0),
  debited_micros bigint NOT NULL CHECK (debited_micros >= 0),
  billing_mode text NOT NULL CHECK (billing_mode IN ('commercial', 'internal')),
  usage_source text NOT NULL CHECK (usage_source IN ('upstream', 'gateway_estimate')),
  request_id text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT usage_records_internal_not_debited CHECK (billing_mode = 'commercial' OR debited_micros = 0),
  CONSTRAINT usage_records_debit_is_cost CHECK (billing_mode = 'internal' OR debited_micros = cost_micros)
);
-- ListUsage: newest first per organisation, keyset on (created_at, id).
CREATE INDEX usage_records_listing ON usage_records (organisation_id, created_at DESC, id DESC);

-- Append-only: the history that balances are recomputed from can only grow.
CREATE FUNCTION refuse_history_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'ledger table % is append-only (% refused)', TG_TABLE_NAME, TG_OP USING ERRCODE = 'P0001';
END
$$;
CREATE TRIGGER movements_append_only BEFORE UPDATE OR DELETE ON movements
  FOR EACH ROW EXECUTE FUNCTION refuse_history_change();
CREATE TRIGGER credits_append_only BEFORE UPDATE OR DELETE ON credits
  FOR EACH ROW EXECUTE FUNCTION refuse_history_change();
CREATE TRIGGER usage_records_append_only BEFORE UPDATE OR DELETE ON usage_records
  FOR EACH ROW EXECUTE FUNCTION refuse_history_change();
