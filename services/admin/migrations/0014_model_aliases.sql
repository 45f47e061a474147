-- Model aliases: names a client may send as `model` besides a gateway model's slug (an agent's
-- built-in model name, say), each reaching one gateway model. The platform's apply to every
-- organisation; an organisation's own override the platform's of the same name. The proxy
-- resolves a slug first, then the organisation's alias, then the platform's
-- (docs/model-aliases.md). An alias never equals an existing slug when it is set, and a gateway
-- model is never created with a slug some alias already uses (the admin checks both).
CREATE TABLE platform_model_aliases (
  alias text PRIMARY KEY CHECK (alias ~ '^[A-Za-z0-9][A-Za-z0-9._:/@-]{0,127}$'),
  gateway_model_slug text NOT NULL REFERENCES gateway_models (slug),
  created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  updated_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX platform_model_aliases_slug ON platform_model_aliases (gateway_model_slug);

CREATE TABLE organisation_model_aliases (
  organisation_id text NOT NULL REFERENCES organisations (id),
  alias text NOT NULL CHECK (alias ~ '^[A-Za-z0-9][A-Za-z0-9._:/@-]{0,127}$'),
  gateway_model_slug text NOT NULL REFERENCES gateway_models (slug),
  created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  updated_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  PRIMARY KEY (organisation_id, alias)
);
CREATE INDEX organisation_model_aliases_alias ON organisation_model_aliases (alias);

-- A platform alias is its own entry of the change log (an organisation's aliases travel with
-- the organisation, which is always sent whole).
ALTER TABLE config_changes DROP CONSTRAINT config_changes_kind_check;
ALTER TABLE config_changes ADD CONSTRAINT config_changes_kind_check
  CHECK (kind IN ('organisation', 'project', 'api_key', 'gateway_model', 'platform_model_alias'));
