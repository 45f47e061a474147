-- One slug, many upstreams (issue 29, docs/admin-api.md "Upstream deployments"): a gateway model
-- may be served by further upstream deployments besides its own upstream (the deployment named
-- "primary" on the config stream). The proxy tries deployments by priority (lower first) and,
-- within one priority, shares requests by weight. Existing models keep priority 0 and weight 1,
-- so nothing changes for them until an admin adds a deployment.
ALTER TABLE gateway_models
  ADD COLUMN upstream_priority integer NOT NULL DEFAULT 0 CHECK (upstream_priority BETWEEN 0 AND 100),
  ADD COLUMN upstream_weight integer NOT NULL DEFAULT 1 CHECK (upstream_weight BETWEEN 1 AND 1000);

-- A further upstream deployment of a gateway model: its own provider, base URL, credential,
-- upstream model name and provider costs. Never shown to customers (names are metric labels and
-- usage-record fields for operators only). Gateway models are never deleted, so no cascade.
-- At most 15 per model (16 with the model's own upstream): the admin checks it under the model's row lock.
CREATE TABLE upstream_deployments (
  id text PRIMARY KEY CHECK (id ~ '^udep_[0-9a-f]{24}$'),
  gateway_model_slug text NOT NULL REFERENCES gateway_models (slug),
  -- "primary" is the model's own upstream: reserved.
  name text NOT NULL CHECK (name ~ '^[a-z0-9][a-z0-9-]{0,31}$' AND name <> 'primary'),
  provider_kind text NOT NULL CHECK (provider_kind IN (
    'openai_compatible', 'openai', 'azure_openai', 'vllm', 'ollama', 'groq', 'together', 'anthropic'
  )),
  upstream_base_url text NOT NULL,
  upstream_model text NOT NULL,
  -- The provider credential, AES-256-GCM (CredentialCipher), bound to the row's id: as
  -- gateway_models.upstream_api_key_encrypted. NULL: none.
  upstream_api_key_encrypted text CHECK (upstream_api_key_encrypted ~ '^(v1:|v2:[0-9a-f]{8}:)'),
  -- The deployment's own SSRF exception, as gateway_models.upstream_allow_private_network.
  upstream_allow_private_network boolean NOT NULL DEFAULT false,
  priority integer NOT NULL DEFAULT 0 CHECK (priority BETWEEN 0 AND 100),
  weight integer NOT NULL DEFAULT 1 CHECK (weight BETWEEN 1 AND 1000),
  -- What this deployment's provider charges, micro-rupees per million tokens (recorded, never
  -- billed). Reasoning NULL: as output.
  provider_input_cost_micros_per_mtok bigint NOT NULL CHECK (provider_input_cost_micros_per_mtok >= 0),
  provider_output_cost_micros_per_mtok bigint NOT NULL CHECK (provider_output_cost_micros_per_mtok >= 0),
  provider_cached_input_cost_micros_per_mtok bigint NOT NULL CHECK (provider_cached_input_cost_micros_per_mtok >= 0),
  provider_cache_write_5m_cost_micros_per_mtok bigint NOT NULL CHECK (provider_cache_write_5m_cost_micros_per_mtok >= 0),
  provider_cache_write_1h_cost_micros_per_mtok bigint NOT NULL CHECK (provider_cache_write_1h_cost_micros_per_mtok >= 0),
  provider_reasoning_cost_micros_per_mtok bigint CHECK (provider_reasoning_cost_micros_per_mtok >= 0),
  provider_audio_input_cost_micros_per_mtok bigint NOT NULL CHECK (provider_audio_input_cost_micros_per_mtok >= 0),
  provider_image_input_cost_micros_per_mtok bigint NOT NULL CHECK (provider_image_input_cost_micros_per_mtok >= 0),
  created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  updated_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  UNIQUE (gateway_model_slug, name)
);
COMMENT ON COLUMN upstream_deployments.upstream_api_key_encrypted IS
  'The provider credential, AES-256-GCM (CredentialCipher) with AAD upstream_deployments:<id>: v2:<key id>:<iv>:<tag>:<ciphertext>, or v1 without the key id. NULL: none.';
