-- Refunds of a top-up's unspent balance (the wallet is closed: no other way out). A refund is a
-- resumable state machine, each step idempotent on the refund id, so a crash or a failed call
-- anywhere is carried forward by the refund job and nothing happens twice:
--   requested        → the ledger's RefundCredit (refund_id = this id) debits available balance;
--   debited          → the provider's refund of the payment (X-Refund-Idempotency = this id);
--   provider_refunded → the credit note (idempotent per refund id) references the top-up's invoice;
--   credit_noted     (final); refused (final: the ledger refused, nothing moved).
CREATE TABLE refunds (
  id text PRIMARY KEY CHECK (id ~ '^rfd_[0-9a-f]{24}$'),
  organisation_id text NOT NULL REFERENCES organisations (id),
  topup_id text NOT NULL REFERENCES topups (id),
  -- What goes back to the payer, GST included, integer paise.
  amount_paise bigint NOT NULL CHECK (amount_paise > 0),
  -- What leaves the balance, µ₹: credit_micros × amount_paise / price_paise, rounded down.
  debit_micros bigint NOT NULL CHECK (debit_micros > 0),
  state text NOT NULL CHECK (state IN ('requested', 'debited', 'provider_refunded', 'credit_noted', 'refused')),
  -- The caller's Idempotency-Key: one refund per key and top-up.
  idempotency_key text NOT NULL CHECK (char_length(idempotency_key) BETWEEN 1 AND 255),
  provider_refund_id text UNIQUE,
  credit_note_id text REFERENCES tax_documents (id),
  -- Why the ledger refused (refused only): shown to the caller as the 409's message.
  refusal_reason text,
  -- The last failure of a step still to be carried forward (cleared when a step succeeds); no secrets.
  last_error text,
  -- Failed attempts of the current step, and when the job tries again (doubling waits).
  attempts integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
  next_attempt_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  -- Who asked (a person or an admin token), for the record.
  created_by_person_id text,
  created_by_token_id text,
  created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  updated_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  debited_at timestamptz,
  provider_refunded_at timestamptz,
  -- When the provider's refund.processed webhook said the money reached the payer.
  provider_processed_at timestamptz,
  credit_noted_at timestamptz,
  UNIQUE (topup_id, idempotency_key),
  CHECK ((state = 'refused') = (refusal_reason IS NOT NULL)),
  CHECK (state NOT IN ('provider_refunded', 'credit_noted') OR provider_refund_id IS NOT NULL),
  CHECK ((state = 'credit_noted') = (credit_note_id IS NOT NULL))
);
CREATE INDEX refunds_topup ON refunds (topup_id, created_at);
-- The refund job's work list: refunds not yet at a final state, by when they are due.
CREATE INDEX refunds_unfinished ON refunds (next_attempt_at) WHERE state IN ('requested', 'debited', 'provider_refunded');
