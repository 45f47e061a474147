-- The admin's control-plane state: who may administer, organisations, projects and their keys,
-- gateway models, manual credits, and the config version pushed to proxies.
-- Balances are not here: every rupee lives in the ledger.

-- Platform-admin bearer tokens (gwadm_...). Only the SHA-256 of a token is stored.
CREATE TABLE platform_admin_tokens (
  id text PRIMARY KEY,
  token_hash text NOT NULL UNIQUE CHECK (token_hash ~ '^[0-9a-f]{64}$'),
  hint text NOT NULL,
  -- 'bootstrap_env' (ADMIN_BOOTSTRAP_TOKEN) or 'bootstrap_issued' (printed once at first start).
  origin text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  revoked_at timestamptz
);

CREATE TABLE organisations (
  id text PRIMARY KEY CHECK (id ~ '^org_[0-9a-f]{24}$'),
  name text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 200),
  status text NOT NULL CHECK (status IN ('active', 'suspended')),
  billing_mode text NOT NULL CHECK (billing_mode IN ('commercial', 'internal')),
  rpm_limit integer NOT NULL CHECK (rpm_limit BETWEEN 1 AND 1000000),
  created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  updated_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
-- Cursor paging walks organisations in creation order.
CREATE INDEX organisations_created_at_id ON organisations (created_at, id);

CREATE TABLE gateway_models (
  slug text PRIMARY KEY CHECK (slug ~ '^[a-z0-9][a-z0-9._:/-]{0,127}$'),
  display_name text NOT NULL,
  default_max_tokens integer NOT NULL CHECK (default_max_tokens BETWEEN 1 AND 1000000),
  max_context_tokens integer NOT NULL CHECK (max_context_tokens BETWEEN 1 AND 10000000),
  -- Prices and costs in micro-rupees per million tokens.
  input_price_micros_per_mtok bigint NOT NULL CHECK (input_price_micros_per_mtok >= 0),
  output_price_micros_per_mtok bigint NOT NULL CHECK (output_price_micros_per_mtok >= 0),
  provider_input_cost_micros_per_mtok bigint NOT NULL CHECK (provider_input_cost_micros_per_mtok >= 0),
  provider_output_cost_micros_per_mtok bigint NOT NULL CHECK (provider_output_cost_micros_per_mtok >= 0),
  provider_kind text NOT NULL CHECK (provider_kind IN ('openai_compatible')),
  upstream_base_url text NOT NULL,
  upstream_model text NOT NULL,
  -- The provider credential, AES-256-GCM encrypted: 'v1:<iv>:<tag>:<ciphertext>' (base64). NULL: none.
  upstream_api_key_encrypted text CHECK (upstream_api_key_encrypted ~ '^v1:'),
  created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  CHECK (max_context_tokens >= default_max_tokens)
);

CREATE TABLE organisation_allowed_models (
  organisation_id text NOT NULL REFERENCES organisations (id),
  gateway_model_slug text NOT NULL REFERENCES gateway_models (slug),
  PRIMARY KEY (organisation_id, gateway_model_slug)
);

CREATE TABLE projects (
  id text PRIMARY KEY CHECK (id ~ '^proj_[0-9a-f]{24}$'),
  organisation_id text NOT NULL REFERENCES organisations (id),
  name text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 200),
  status text NOT NULL CHECK (status IN ('active', 'disabled')),
  created_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX projects_organisation_created_at_id ON projects (organisation_id, created_at, id);

CREATE TABLE api_keys (
  id text PRIMARY KEY CHECK (id ~ '^key_[0-9a-f]{24}$'),
  project_id text NOT NULL REFERENCES projects (id),
  -- Hex SHA-256 of the whole key: what proxies compare against. The secret is never stored.
  key_hash text NOT NULL UNIQUE CHECK (key_hash ~ '^[0-9a-f]{64}$'),
  hint text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  revoked_at timestamptz
);
-- One active key per project (the specification's rule; rotation revokes the old one).
CREATE UNIQUE INDEX api_keys_one_active_per_project ON api_keys (project_id) WHERE revoked_at IS NULL;

-- Manual credits made through the admin API, keyed by the ledger credit id
-- ('manual:<organisation id>:<Idempotency-Key>'). The stored response makes a replay return
-- exactly what the first successful call returned.
CREATE TABLE manual_credits (
  credit_id text PRIMARY KEY,
  organisation_id text NOT NULL REFERENCES organisations (id),
  idempotency_key text NOT NULL,
  amount_micros bigint NOT NULL CHECK (amount_micros > 0),
  reason text NOT NULL,
  -- NULL until the ledger accepted the credit.
  response jsonb,
  created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  completed_at timestamptz
);

-- The version of the configuration pushed to proxies. Every committed change to what proxies
-- serve increments it in the same transaction, so it only grows, across restarts too.
CREATE TABLE config_state (
  singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
  version bigint NOT NULL CHECK (version >= 1)
);
INSERT INTO config_state (singleton, version) VALUES (true, 1);
