-- Money in: Top-up Packages (platform admins sell them), each organisation's billing profile
-- (who the invoice is made out to), and top-ups: one purchase of a package through the payment
-- provider, with its state machine. Money enters a balance only through the ledger's idempotent
-- Credit, whose id is `topup:<top-up id>`: at most one per top-up, whatever signals arrive.

CREATE TABLE topup_packages (
  id text PRIMARY KEY CHECK (id ~ '^pkg_[0-9a-f]{24}$'),
  name text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 200),
  -- What the buyer pays, integer paise (GST per GST_DOCUMENT_MODE and docs/payments.md).
  price_paise bigint NOT NULL CHECK (price_paise BETWEEN 100 AND 10000000000),
  -- What the balance is credited with, µ₹.
  credit_micros bigint NOT NULL CHECK (credit_micros > 0),
  active boolean NOT NULL DEFAULT true,
  -- Display order, smallest first.
  sort_order integer NOT NULL DEFAULT 0,
  created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  updated_at timestamptz NOT NULL DEFAULT clock_timestamp()
);

-- Who an organisation's invoices are made out to. Required before its first purchase.
CREATE TABLE billing_profiles (
  organisation_id text PRIMARY KEY REFERENCES organisations (id),
  legal_name text NOT NULL CHECK (char_length(legal_name) BETWEEN 1 AND 200),
  address text NOT NULL CHECK (char_length(address) BETWEEN 1 AND 1000),
  -- Two-digit GST state code of the place of supply (e.g. '29' Karnataka).
  state_code text NOT NULL CHECK (state_code ~ '^[0-9]{2}$'),
  -- NULL when the recipient is not GST-registered.
  gstin text CHECK (gstin ~ '^[0-9]{2}[A-Z0-9]{13}$'),
  -- Where invoices are emailed (optional).
  email text CHECK (email IS NULL OR char_length(email) <= 254),
  updated_at timestamptz NOT NULL DEFAULT clock_timestamp()
);

CREATE TABLE topups (
  id text PRIMARY KEY CHECK (id ~ '^top_[0-9a-f]{24}$'),
  organisation_id text NOT NULL REFERENCES organisations (id),
  package_id text NOT NULL REFERENCES topup_packages (id),
  -- The package's terms when bought (a later change of the package does not change the purchase).
  price_paise bigint NOT NULL CHECK (price_paise > 0),
  credit_micros bigint NOT NULL CHECK (credit_micros > 0),
  -- created -> pending_payment -> paid -> credited -> invoiced; failed; expired; refunded.
  state text NOT NULL CHECK (state IN ('created', 'pending_payment', 'paid', 'credited', 'invoiced', 'failed', 'expired', 'refunded')),
  provider text NOT NULL CHECK (provider IN ('razorpay', 'local')),
  provider_order_id text UNIQUE,
  -- The captured payment that paid it (the first one; a second capture of the same order is refunded).
  provider_payment_id text UNIQUE,
  -- The billing profile when bought (the invoice's recipient), as JSON.
  billing_snapshot jsonb NOT NULL,
  created_by_person_id text,
  created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  updated_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  paid_at timestamptz,
  credited_at timestamptz,
  expires_at timestamptz NOT NULL
);
CREATE INDEX topups_organisation_created ON topups (organisation_id, created_at, id);
CREATE INDEX topups_state_created ON topups (state, created_at);

-- Every transition of a top-up, with its cause ('checkout_callback', 'webhook:payment.captured',
-- 'reconciliation', 'expiry', 'refund', …) and the provider ids involved.
CREATE TABLE topup_transitions (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  topup_id text NOT NULL REFERENCES topups (id),
  from_state text,
  to_state text NOT NULL,
  cause text NOT NULL,
  details jsonb NOT NULL DEFAULT '{}'::jsonb,
  occurred_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX topup_transitions_topup ON topup_transitions (topup_id, id);

-- Provider webhook events already processed, by the provider's event id (x-razorpay-event-id).
CREATE TABLE payment_webhook_events (
  event_id text PRIMARY KEY CHECK (char_length(event_id) BETWEEN 1 AND 200),
  event_type text NOT NULL,
  received_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
