-- People: accounts that sign in to the dashboard with an email and a password, separate from API
-- keys and admin tokens. A person is a platform admin, or a member of organisations with one
-- role in each; sessions live here (server side), and so do the one-time links that set a
-- password (invitation, reset, first-start setup). No secret is stored: passwords as argon2id
-- hashes, session ids, CSRF tokens and link tokens as SHA-256 hashes.

CREATE TABLE people (
  id text PRIMARY KEY CHECK (id ~ '^per_[0-9a-f]{24}$'),
  -- Stored lower-cased and trimmed; the sign-in name.
  email text NOT NULL UNIQUE CHECK (char_length(email) BETWEEN 3 AND 254 AND email = lower(email)),
  display_name text NOT NULL DEFAULT '' CHECK (char_length(display_name) <= 200),
  -- argon2id PHC string; NULL until the person has followed an invitation or setup link.
  password_hash text,
  platform_admin boolean NOT NULL DEFAULT false,
  -- A disabled person cannot sign in and every session of theirs ends.
  status text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'disabled')),
  created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  password_changed_at timestamptz
);

CREATE TABLE memberships (
  person_id text NOT NULL REFERENCES people (id),
  organisation_id text NOT NULL REFERENCES organisations (id),
  role text NOT NULL CHECK (role IN ('viewer', 'developer', 'owner')),
  created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  PRIMARY KEY (person_id, organisation_id)
);
CREATE INDEX memberships_organisation ON memberships (organisation_id, created_at);

-- One-time links: 'invitation' (joins an organisation with a role, and sets the password of a
-- person who has none), 'password_reset' and 'setup' (the first platform admin). Shown once to
-- whoever issued it; used at most once; expires.
CREATE TABLE person_links (
  id text PRIMARY KEY CHECK (id ~ '^inv_[0-9a-f]{24}$'),
  token_hash text NOT NULL UNIQUE CHECK (token_hash ~ '^[0-9a-f]{64}$'),
  kind text NOT NULL CHECK (kind IN ('invitation', 'password_reset', 'setup')),
  person_id text NOT NULL REFERENCES people (id),
  -- Set for an invitation: the organisation and role it grants.
  organisation_id text REFERENCES organisations (id),
  role text CHECK (role IN ('viewer', 'developer', 'owner')),
  -- Who issued it: a person, a token or the system (first start).
  issued_by_kind text NOT NULL,
  issued_by_id text,
  created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  expires_at timestamptz NOT NULL,
  used_at timestamptz,
  revoked_at timestamptz,
  CHECK ((kind = 'invitation') = (organisation_id IS NOT NULL AND role IS NOT NULL))
);
CREATE INDEX person_links_organisation ON person_links (organisation_id, created_at);

CREATE TABLE sessions (
  -- SHA-256 of the cookie value: a copy of this table does not sign anyone in.
  id_hash text PRIMARY KEY CHECK (id_hash ~ '^[0-9a-f]{64}$'),
  person_id text NOT NULL REFERENCES people (id),
  -- SHA-256 of the CSRF token the dashboard sends in X-CSRF-Token on every state change.
  csrf_token_hash text NOT NULL CHECK (csrf_token_hash ~ '^[0-9a-f]{64}$'),
  created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  last_seen_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  -- Idle expiry moves with use; the absolute one does not.
  idle_expires_at timestamptz NOT NULL,
  absolute_expires_at timestamptz NOT NULL,
  revoked_at timestamptz,
  -- For the person's own list of sessions: never used to authorize.
  user_agent text NOT NULL DEFAULT '' CHECK (char_length(user_agent) <= 300),
  client_address text NOT NULL DEFAULT ''
);
CREATE INDEX sessions_person ON sessions (person_id);

-- Failed sign-ins, for throttling per account (email) and per client address. Old rows are pruned.
CREATE TABLE sign_in_failures (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  email text NOT NULL,
  client_address text NOT NULL,
  occurred_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX sign_in_failures_email ON sign_in_failures (email, occurred_at);
CREATE INDEX sign_in_failures_address ON sign_in_failures (client_address, occurred_at);

-- Who made a change: a person, beside the token column that names an admin token.
ALTER TABLE audit_events ADD COLUMN actor_person_id text;
