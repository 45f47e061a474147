-- The complete control plane: organisation-scoped tokens, the audit log, and the change log that
-- lets the config stream send deltas instead of full snapshots.

-- One table for every admin-API bearer token. organisation_id NULL: a platform-admin token;
-- set: a token that sees and changes only that organisation.
ALTER TABLE platform_admin_tokens RENAME TO admin_tokens;
ALTER TABLE admin_tokens ADD COLUMN name text NOT NULL DEFAULT '' CHECK (char_length(name) <= 200);
ALTER TABLE admin_tokens ADD COLUMN organisation_id text REFERENCES organisations (id);
-- origin: 'bootstrap_env', 'bootstrap_issued', 'cli' or 'api'.
CREATE INDEX admin_tokens_organisation_created_at ON admin_tokens (organisation_id, created_at, id);

-- Every mutation made through the admin API (or its command line): who, what, when, and the
-- before/after of changed fields. Never a secret: keys and credentials appear as hints or flags.
CREATE TABLE audit_events (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  occurred_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  -- 'platform_admin', 'organisation_token', 'cli' or 'system'.
  actor_kind text NOT NULL,
  -- The admin token that made the call; NULL for the command line and the system.
  actor_token_id text,
  -- The organisation the change concerns; NULL for platform-wide resources (gateway models, platform tokens).
  organisation_id text,
  -- e.g. 'organisation.update', 'project.rotate_key'.
  action text NOT NULL,
  resource_type text NOT NULL,
  resource_id text NOT NULL,
  -- {"field": {"before": ..., "after": ...}} for each changed field.
  changes jsonb NOT NULL DEFAULT '{}'::jsonb
);
CREATE INDEX audit_events_organisation_id ON audit_events (organisation_id, id);

-- Which entities changed at which config version. A delta from version S to V carries the
-- state at V of every entity changed in (S, V]; entities that no longer exist become removals.
CREATE TABLE config_changes (
  version bigint NOT NULL,
  -- 'organisation', 'project', 'api_key' or 'gateway_model'.
  kind text NOT NULL CHECK (kind IN ('organisation', 'project', 'api_key', 'gateway_model')),
  -- Organisation, project or key id, or gateway model slug.
  ref text NOT NULL,
  recorded_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  PRIMARY KEY (version, kind, ref)
);
CREATE INDEX config_changes_recorded_at ON config_changes (recorded_at);

-- Changes up to and including this version are no longer in config_changes (pruned, or made
-- before the change log existed): a stream behind it gets a full snapshot instead of a delta.
ALTER TABLE config_state ADD COLUMN pruned_through bigint NOT NULL DEFAULT 0;
UPDATE config_state SET pruned_through = version;
