-- Stored Responses (POST /v1/responses with store: true) are kept by the proxies for the
-- platform's retention (ADMIN_RESPONSE_RETENTION_S). An organisation may turn storing off, or
-- keep its responses for a shorter time of its own (null: the platform's).
ALTER TABLE organisations
  ADD COLUMN store_responses boolean NOT NULL DEFAULT true,
  ADD COLUMN response_retention_s integer CHECK (response_retention_s IS NULL OR response_retention_s BETWEEN 1 AND 31536000);
