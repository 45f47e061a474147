-- The request log (docs/ledger.md, "Request log"): every finished request of an organisation as
-- the proxy saw it (surface, model, status and error code, stream, latency, time to first token,
-- the tokens and cost its Settle carried), for developers debugging their calls. Not money: the
-- usage record is what was billed, and nothing here takes part in Verify or any law.
-- - Written by RecordRequests in batches the proxy sends off the hot path; a request id already
--   kept is skipped (ON CONFLICT DO NOTHING on the partition's unique index), so a retried batch
--   writes nothing twice.
-- - Partitioned by day (Asia/Kolkata) on started_at, so retention (LEDGER_REQUEST_LOG_RETENTION_DAYS)
--   drops whole days instead of deleting rows. The maintenance creates the days ahead, each a copy
--   of the DEFAULT partition (CREATE TABLE ... (LIKE request_log_default INCLUDING ALL), then
--   ATTACH), named request_log_pYYYY_MM_DD; the DEFAULT partition takes a row whose day has no
--   partition yet.
-- - A unique key on a partitioned table must include the partition key: (request_id, started_at).
--   A request has one started_at, so a retried record meets its first copy.
CREATE TABLE request_log (
  request_id text NOT NULL,
  organisation_id text NOT NULL,
  project_id text NOT NULL,
  surface text NOT NULL CHECK (surface IN ('chat_completions', 'responses', 'embeddings', 'messages')),
  model_slug text NOT NULL,
  status smallint NOT NULL CHECK (status BETWEEN 100 AND 599),
  error_code text,
  stream boolean NOT NULL,
  started_at timestamptz NOT NULL,
  latency_ms integer NOT NULL CHECK (latency_ms >= 0),
  time_to_first_token_ms integer CHECK (time_to_first_token_ms >= 0),
  input_tokens bigint NOT NULL DEFAULT 0 CHECK (input_tokens >= 0),
  output_tokens bigint NOT NULL DEFAULT 0 CHECK (output_tokens >= 0),
  cost_micros bigint NOT NULL DEFAULT 0 CHECK (cost_micros >= 0),
  -- [{"token_class": "cached_input", "tokens": 900, "cost_micros": 45}, ...]; NULL: plain input and output.
  token_classes jsonb
) PARTITION BY RANGE (started_at);

-- ListRequests: newest first per organisation, keyset on (started_at, request_id); filters on
-- project, model, surface and status read the organisation's rows in that order.
CREATE INDEX request_log_listing ON request_log (organisation_id, started_at DESC, request_id DESC);

CREATE UNIQUE INDEX request_log_request ON request_log (request_id, started_at);

CREATE TABLE request_log_default PARTITION OF request_log DEFAULT;
