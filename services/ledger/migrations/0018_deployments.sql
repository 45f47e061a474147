-- Upstream deployments (issue 29; docs/ledger.md, "Deployments and failed attempts"): a gateway
-- model may be served by several upstream deployments, and the proxy may try more than one for a
-- request under its one Reserve. None of this moves money: the usage record keeps which
-- deployment answered (platform analytics: provider cost and margin per deployment), and the
-- attempts a provider may have billed before the request failed over are kept beside it.
-- - usage_records.deployment: the deployment's name within the model, as the Settle gave it;
--   NULL for records settled before deployments existed, by an older proxy, or by an expiry of a
--   stream that never checkpointed one. Added to the partitioned parent, so every partition
--   (and the DEFAULT one new partitions copy) has it.
-- - reservations.deployment: what a stream's first checkpoint that carries one recorded ('' none),
--   so the provisional usage record an expiry writes names it.
-- - provider_attempts: one row per failed attempt, keyed (reservation_id, attempt) so a replayed or
--   duplicated Settle or Release writes nothing twice. Written only with the outcome it came with:
--   the Settle that settled the reservation (its fingerprint) or the Release that released it.
ALTER TABLE usage_records ADD COLUMN deployment text;
ALTER TABLE reservations ADD COLUMN deployment text NOT NULL DEFAULT '';

CREATE TABLE provider_attempts (
  reservation_id text NOT NULL,
  attempt integer NOT NULL CHECK (attempt >= 1),
  organisation_id text NOT NULL,
  model_slug text NOT NULL,
  deployment text NOT NULL CHECK (deployment ~ '^[a-z0-9][a-z0-9-]{0,31}$'),
  outcome text NOT NULL CHECK (outcome IN ('timeout', 'stream_broken')),
  input_tokens bigint NOT NULL CHECK (input_tokens >= 0),
  output_tokens bigint NOT NULL CHECK (output_tokens >= 0),
  provider_cost_micros bigint NOT NULL CHECK (provider_cost_micros >= 0),
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (reservation_id, attempt)
);
-- SummarizeDeployments reads a window of them.
CREATE INDEX provider_attempts_created_at ON provider_attempts (created_at);
