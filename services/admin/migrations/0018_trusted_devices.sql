-- Trusted devices (docs/people.md, "Sign-in throttling"): a browser that signed in with an
-- email's password gets a device cookie; the SHA-256 of its token is kept here, per email, until
-- it expires or the password is set anew. Sign-ins presenting one are counted per device, not
-- against the email's or the client address's limits, so other people's failures (behind one
-- ingress every client shares an address) never lock a person out of their own browser.
CREATE TABLE trusted_devices (
  id_hash text PRIMARY KEY,
  email text NOT NULL CHECK (char_length(email) <= 320),
  created_at timestamptz NOT NULL,
  expires_at timestamptz NOT NULL
);
CREATE INDEX trusted_devices_email ON trusted_devices (email);
CREATE INDEX trusted_devices_expiry ON trusted_devices (expires_at);

-- A failure made with a trusted device names it (counted for that device only); NULL: an
-- untrusted client, counted per email and per client address as before.
ALTER TABLE sign_in_failures ADD COLUMN device_id_hash text;
CREATE INDEX sign_in_failures_device ON sign_in_failures (device_id_hash, occurred_at) WHERE device_id_hash IS NOT NULL;
