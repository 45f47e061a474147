-- Refunds of unspent balance (RefundCredit; the function is services/ledger/sql/ledger_refund_credit.sql).
-- A refund returns part of a credit's money to the payer: it takes the amount from available
-- (never from held, and only when available covers it: NO_OVERSPEND) and out of credited, so
-- CONSERVATION keeps its form, credited = available + held + debited, with credited now net of
-- refunds: CONSERVATION (credits) reads credited = Σ credits − Σ refunds.

-- Refunds; refund_id is the caller's idempotency key. Each names the credit it returns money
-- of, and the refunds of one credit never add up to more than it (checked under the account lock).
CREATE TABLE refunds (
  refund_id text PRIMARY KEY CHECK (length(refund_id) BETWEEN 1 AND 128),
  organisation_id text NOT NULL REFERENCES accounts (organisation_id),
  credit_id text NOT NULL REFERENCES credits (credit_id),
  amount_micros bigint NOT NULL CHECK (amount_micros > 0),
  reason text NOT NULL,
  -- Hash of the request payload: a replay with another payload is an idempotency conflict.
  fingerprint text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX refunds_organisation ON refunds (organisation_id);
CREATE INDEX refunds_credit ON refunds (credit_id);
CREATE TRIGGER refunds_append_only BEFORE UPDATE OR DELETE ON refunds
  FOR EACH ROW EXECUTE FUNCTION refuse_history_change();

-- A `refund` movement names its refund (no foreign key, like the other parents of movements
-- since 0005; Verify reports a movement whose refund does not exist, CONSERVATION (rows)).
ALTER TABLE movements ADD COLUMN refund_id text;

ALTER TABLE movements DROP CONSTRAINT movements_kind_check;
ALTER TABLE movements ADD CONSTRAINT movements_kind_check
  CHECK (kind IN ('credit', 'reserve', 'settle', 'release', 'expire', 'refund'));

ALTER TABLE movements DROP CONSTRAINT movements_shape;
ALTER TABLE movements ADD CONSTRAINT movements_shape CHECK (CASE kind
  -- money arrives: credited and available grow by the amount
  WHEN 'credit' THEN credit_id IS NOT NULL AND reservation_id IS NULL AND refund_id IS NULL
    AND credited_delta_micros = amount_micros AND available_delta_micros = amount_micros
    AND held_delta_micros = 0 AND debited_delta_micros = 0
  -- a Reserve moves the amount from available to held
  WHEN 'reserve' THEN reservation_id IS NOT NULL AND credit_id IS NULL AND refund_id IS NULL
    AND credited_delta_micros = 0 AND available_delta_micros = -amount_micros
    AND held_delta_micros = amount_micros AND debited_delta_micros = 0
  -- a release or an expiry moves the amount from held back to available
  WHEN 'release' THEN reservation_id IS NOT NULL AND credit_id IS NULL AND refund_id IS NULL
    AND credited_delta_micros = 0 AND available_delta_micros = amount_micros
    AND held_delta_micros = -amount_micros AND debited_delta_micros = 0
  WHEN 'expire' THEN reservation_id IS NOT NULL AND credit_id IS NULL AND refund_id IS NULL
    AND credited_delta_micros = 0 AND available_delta_micros = amount_micros
    AND held_delta_micros = -amount_micros AND debited_delta_micros = 0
  -- a settlement debits the amount, from the hold first and beyond it (overrun) from available
  WHEN 'settle' THEN reservation_id IS NOT NULL AND credit_id IS NULL AND refund_id IS NULL
    AND credited_delta_micros = 0 AND debited_delta_micros = amount_micros
    AND held_delta_micros <= 0 AND available_delta_micros <= 0
  -- money leaves: a refund takes the amount out of available and credited, never out of held
  WHEN 'refund' THEN refund_id IS NOT NULL AND reservation_id IS NULL AND credit_id IS NULL
    AND credited_delta_micros = -amount_micros AND available_delta_micros = -amount_micros
    AND held_delta_micros = 0 AND debited_delta_micros = 0
  END);
