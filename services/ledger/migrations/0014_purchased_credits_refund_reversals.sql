-- Refunds that cannot strand money, and refunds of bought money only (RefundCredit and
-- ReverseRefund; the functions are services/ledger/sql/ledger_refund_credit.sql and
-- ledger_reverse_refund.sql).
--
-- 1. A credit says whether it is purchased (a top-up) or not (a manual or promotional credit).
--    Only purchased, unspent credit is refundable: a refund fits when
--    available − Σ credits not purchased ≥ amount (purchased money is spent first, so money that
--    was never paid for can never leave as cash). Credits already made with the admin's top-up
--    ids (`topup:<id>`) were purchases.
ALTER TABLE credits ADD COLUMN purchased boolean NOT NULL DEFAULT false;
ALTER TABLE credits DISABLE TRIGGER credits_append_only;
UPDATE credits SET purchased = true WHERE credit_id LIKE 'topup:%';
ALTER TABLE credits ENABLE TRIGGER credits_append_only;

-- 2. A refund records what was asked beside what it took: with up_to_available (money the payer
--    got back outside the gateway) it takes what available allows, and the caller records the rest.
ALTER TABLE refunds ADD COLUMN requested_micros bigint CHECK (requested_micros IS NULL OR requested_micros >= amount_micros);

-- 3. Reversals: a refund whose money goes back to the balance (the payment provider refused the
--    refund; a dispute was won). At most one per refund; reversal_id is the caller's idempotency
--    key. CONSERVATION (credits) reads credited = Σ credits − Σ refunds + Σ reversals, and the
--    refunds of a credit count net of their reversals.
CREATE TABLE refund_reversals (
  reversal_id text PRIMARY KEY CHECK (length(reversal_id) BETWEEN 1 AND 128),
  refund_id text NOT NULL UNIQUE REFERENCES refunds (refund_id),
  organisation_id text NOT NULL REFERENCES accounts (organisation_id),
  amount_micros bigint NOT NULL CHECK (amount_micros > 0),
  reason text NOT NULL,
  -- Hash of the request payload: a replay with another payload is an idempotency conflict.
  fingerprint text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX refund_reversals_organisation ON refund_reversals (organisation_id);
CREATE TRIGGER refund_reversals_append_only BEFORE UPDATE OR DELETE ON refund_reversals
  FOR EACH ROW EXECUTE FUNCTION refuse_history_change();

-- The old signature; the new one (with up_to_available) is in sql/ledger_refund_credit.sql.
DROP FUNCTION IF EXISTS ledger_refund_credit(text, text, text, bigint, text, text, text);

ALTER TABLE movements DROP CONSTRAINT movements_kind_check;
ALTER TABLE movements ADD CONSTRAINT movements_kind_check
  CHECK (kind IN ('credit', 'reserve', 'settle', 'release', 'expire', 'refund', 'refund_reversal', 'grant', 'grant_return'));

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
  -- money comes back: a reversal returns what its refund (refund_id) took to available and credited
  WHEN 'refund_reversal' THEN refund_id IS NOT NULL AND reservation_id IS NULL AND credit_id IS NULL AND grant_id IS NULL
    AND credited_delta_micros = amount_micros AND available_delta_micros = amount_micros
    AND held_delta_micros = 0 AND debited_delta_micros = 0
  END);
