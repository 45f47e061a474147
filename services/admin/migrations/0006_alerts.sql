-- Alerts delivered: the budget and low-balance alerts an organisation is told about, on the
-- dashboard, at its webhook (signed, retried) and by email. A delivery is one alert to one
-- channel; every attempt is logged. No secret is stored in the clear: the webhook's signing
-- secret is sealed with ADMIN_ENCRYPTION_KEY (the credential cipher).

-- Where a poller of the ledger stands, so a restart neither re-delivers nor skips.
CREATE TABLE alert_cursors (
  name text PRIMARY KEY,
  -- The last ledger id taken ('' before the first); ledger ids are increasing decimals.
  position text NOT NULL DEFAULT '' CHECK (position = '' OR position ~ '^[0-9]{1,30}$'),
  updated_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
INSERT INTO alert_cursors (name) VALUES ('ledger_budget_alerts');

CREATE TABLE alerts (
  id text PRIMARY KEY CHECK (id ~ '^alrt_[0-9a-f]{24}$'),
  -- Increasing: the order and cursor of the alerts list.
  seq bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
  organisation_id text NOT NULL REFERENCES organisations (id),
  project_id text,
  -- 'test' alerts (POST .../webhook/test) are delivered but never listed.
  kind text NOT NULL CHECK (kind IN ('budget_soft', 'low_balance', 'test')),
  -- What makes an alert once-only: 'ledger_budget_alert:<ledger id>' for a budget alert; NULL otherwise.
  source_key text UNIQUE,
  occurred_at timestamptz NOT NULL,
  message text NOT NULL CHECK (char_length(message) <= 1000),
  -- Kind-specific facts; money as decimal strings of µ₹.
  details jsonb NOT NULL DEFAULT '{}'::jsonb,
  created_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX alerts_organisation_seq ON alerts (organisation_id, seq);

-- The low-balance threshold of an organisation and whether its alert has fired for the current
-- crossing (re-armed once the balance is back at or above the threshold).
CREATE TABLE alert_settings (
  organisation_id text PRIMARY KEY REFERENCES organisations (id),
  -- µ₹; NULL: no low-balance alert.
  low_balance_threshold_micros bigint CHECK (low_balance_threshold_micros > 0),
  low_balance_alerted boolean NOT NULL DEFAULT false,
  updated_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX alert_settings_low_balance ON alert_settings (organisation_id) WHERE low_balance_threshold_micros IS NOT NULL;

CREATE TABLE alert_webhooks (
  organisation_id text PRIMARY KEY REFERENCES organisations (id),
  url text NOT NULL CHECK (char_length(url) <= 2000),
  format text NOT NULL CHECK (format IN ('json', 'slack')),
  -- The signing secret, sealed (CredentialCipher, bound to the organisation id).
  secret_sealed text NOT NULL,
  -- Prefix and last four characters of the secret, for the dashboard.
  secret_hint text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  updated_at timestamptz NOT NULL DEFAULT clock_timestamp()
);

-- One alert to one channel. Claimed by a worker with FOR UPDATE SKIP LOCKED and leased until
-- next_attempt_at, so two admin replicas never make the same attempt.
CREATE TABLE alert_deliveries (
  id text PRIMARY KEY CHECK (id ~ '^whd_[0-9a-f]{24}$'),
  seq bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
  alert_id text NOT NULL REFERENCES alerts (id),
  organisation_id text NOT NULL REFERENCES organisations (id),
  channel text NOT NULL CHECK (channel IN ('webhook', 'email')),
  state text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'delivered', 'failed')),
  -- Due time of the next attempt while pending (a claimed attempt's lease end while it runs).
  next_attempt_at timestamptz,
  -- Changes with every claim; only the holder of the current lease records its attempt.
  lease_token text,
  attempts integer NOT NULL DEFAULT 0,
  first_attempt_at timestamptz,
  finished_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  CHECK ((state = 'pending') = (next_attempt_at IS NOT NULL))
);
CREATE INDEX alert_deliveries_due ON alert_deliveries (next_attempt_at) WHERE state = 'pending';
CREATE INDEX alert_deliveries_organisation_seq ON alert_deliveries (organisation_id, seq);

-- The delivery log: every attempt, never the secret or the URL.
CREATE TABLE alert_delivery_attempts (
  delivery_id text NOT NULL REFERENCES alert_deliveries (id),
  attempt integer NOT NULL CHECK (attempt >= 1),
  attempted_at timestamptz NOT NULL,
  duration_ms integer NOT NULL CHECK (duration_ms >= 0),
  -- The receiver's HTTP status; NULL when none came (timeout, connection error, email).
  status_code integer,
  -- NULL when the attempt succeeded; else e.g. 'http_status', 'timeout', 'connection_refused'.
  error_class text,
  -- When the next attempt is due; NULL when this one ended the delivery.
  next_attempt_at timestamptz,
  PRIMARY KEY (delivery_id, attempt)
);
