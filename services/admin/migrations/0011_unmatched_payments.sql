-- Payments the provider reported that match nothing the gateway sold: a captured payment with no
-- order (a payment link, a QR code, another integration on the same account), an order no top-up
-- has, an authorised payment left uncaptured, a signed webhook body that could not be read. Each
-- is acknowledged to the provider (a refused webhook would be retried for 24 hours and then the
-- endpoint disabled) and recorded here once, for platform admins to decide about: no credit is
-- made from it. dedupe_key is `<reason>:<payment id>`, or `event:<event id>` when there is no payment.
CREATE TABLE unmatched_payments (
  id bigserial PRIMARY KEY,
  dedupe_key text NOT NULL UNIQUE CHECK (char_length(dedupe_key) BETWEEN 1 AND 300),
  -- The signal that first brought it: a webhook, the payments sweep, or reconciliation.
  source text NOT NULL CHECK (source IN ('webhook', 'sweep', 'reconciliation')),
  reason text NOT NULL CHECK (reason IN ('no_order', 'unknown_order', 'authorized_not_captured', 'unreadable_event')),
  event_id text,
  event_type text NOT NULL,
  payment_id text,
  order_id text,
  -- Integer paise as the provider reported it (null when the body could not be read).
  amount_paise bigint,
  currency text,
  payment_status text,
  method text,
  first_seen_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  last_seen_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  seen_count integer NOT NULL DEFAULT 1 CHECK (seen_count >= 1)
);

