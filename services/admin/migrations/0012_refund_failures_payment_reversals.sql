-- Refunds that cannot strand money (docs/payments.md "Refunds"), and money the payer got back
-- outside the gateway (docs/payments.md "Refunds and disputes made outside the gateway").
--
-- Refunds gain three states:
--   provider_pending  the provider accepted the refund but has not processed it (refund status
--                     `pending`): no credit note until refund.processed (or the job's fetch) says so;
--   provider_refused  the provider refused it for good (a 400: payment too old, balance short,
--                     already refunded) or reported it failed: the ledger debit is to be reversed;
--   failed            (final) the money is back in the balance (ReverseRefund, reversal:<refund id>),
--                     failure_reason holds the provider's reason, platform admins were alerted.
ALTER TABLE refunds DROP CONSTRAINT refunds_state_check;
ALTER TABLE refunds ADD CONSTRAINT refunds_state_check CHECK (state IN (
  'requested', 'debited', 'provider_pending', 'provider_refunded', 'credit_noted', 'refused', 'provider_refused', 'failed'));
ALTER TABLE refunds ADD COLUMN failure_reason text CHECK (char_length(failure_reason) <= 500);
ALTER TABLE refunds ADD COLUMN provider_refused_at timestamptz;
ALTER TABLE refunds ADD COLUMN failed_at timestamptz;
ALTER TABLE refunds ADD CONSTRAINT refunds_failure_reason_state_check CHECK ((state IN ('provider_refused', 'failed')) = (failure_reason IS NOT NULL));
ALTER TABLE refunds ADD CONSTRAINT refunds_pending_provider_id_check CHECK (state <> 'provider_pending' OR provider_refund_id IS NOT NULL);
DROP INDEX refunds_unfinished;
CREATE INDEX refunds_unfinished ON refunds (next_attempt_at)
  WHERE state IN ('requested', 'debited', 'provider_pending', 'provider_refunded', 'provider_refused');

-- Alerts for platform admins about money: a refund that failed (its money returned to the
-- balance), and money the payer got back that the balance could not cover (a shortfall).
ALTER TABLE alerts DROP CONSTRAINT alerts_kind_check;
ALTER TABLE alerts ADD CONSTRAINT alerts_kind_check CHECK (kind IN ('budget_soft', 'low_balance', 'test', 'refund_failed', 'payment_shortfall'));

-- Money a payer got back outside the gateway: a refund made from the provider's dashboard
-- (refund.processed for a payment the gateway never refunded) or a dispute (chargeback). Each is
-- debited from the balance once (the ledger's RefundCredit with up_to_available, refund id = this
-- id, against the top-up's credit), never below zero: what could not be debited is the
-- shortfall, and an organisation with one is flagged to platform admins. A dispute's debit is a
-- hold: won (nothing deducted from the merchant), it is given back (ReverseRefund,
-- reversal:<id>); lost, it stays out.
--   to_debit → debited (final for a refund; a dispute waits for its outcome)
--   debited  → to_return → returned (a dispute won)        to_debit → closed (won before any debit)
CREATE TABLE payment_reversals (
  id text PRIMARY KEY CHECK (id ~ '^prv_[0-9a-f]{24}$'),
  organisation_id text NOT NULL REFERENCES organisations (id),
  topup_id text NOT NULL REFERENCES topups (id),
  kind text NOT NULL CHECK (kind IN ('refund', 'dispute')),
  -- The provider's refund (rfnd_…) or dispute (disp_…) id: one reversal each.
  provider_ref text NOT NULL UNIQUE,
  provider_payment_id text NOT NULL,
  -- What the payer got back or disputes, paise, GST included.
  amount_paise bigint NOT NULL CHECK (amount_paise > 0),
  -- What that is of the top-up's credit, µ₹ (credit_micros × amount_paise / price_paise, rounded down).
  debit_micros bigint NOT NULL CHECK (debit_micros >= 0),
  -- What the ledger took (set once debited) and what it could not (debit_micros − taken_micros).
  taken_micros bigint CHECK (taken_micros >= 0),
  shortfall_micros bigint CHECK (shortfall_micros >= 0),
  state text NOT NULL CHECK (state IN ('to_debit', 'debited', 'to_return', 'returned', 'closed')),
  -- Disputes: the provider's latest status (open, under_review, won, lost, closed).
  dispute_status text,
  -- The last failure of a step still to be carried forward; no secrets.
  last_error text,
  attempts integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
  next_attempt_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  updated_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  CHECK ((state = 'to_debit') = (taken_micros IS NULL) OR state = 'closed'),
  CHECK ((taken_micros IS NULL) = (shortfall_micros IS NULL))
);
CREATE INDEX payment_reversals_organisation ON payment_reversals (organisation_id, created_at);
CREATE INDEX payment_reversals_unfinished ON payment_reversals (next_attempt_at) WHERE state IN ('to_debit', 'to_return');
CREATE INDEX payment_reversals_shortfall ON payment_reversals (organisation_id) WHERE shortfall_micros > 0;
