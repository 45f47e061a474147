-- ledger_keep_attempts: keeps one request's failed upstream attempts (the `failedAttempts` JSON
-- that services/ledger/src/domain/provider-attempts.ts attemptsJson makes, validated there) for
-- its reservation, for platform analytics (provider cost per deployment). The one INSERT of
-- provider_attempts: a Settle's come through ledger_record_attempts, a Release's from release.ts.
-- Decides: no law; it moves no money. IDEMPOTENCY: (reservation_id, attempt) is the key, so a
-- replay writes nothing twice.
CREATE OR REPLACE FUNCTION ledger_keep_attempts(p_reservation_id text, p_organisation_id text, p_model_slug text, p_attempts jsonb)
RETURNS void LANGUAGE sql AS $$
  INSERT INTO provider_attempts (reservation_id, attempt, organisation_id, model_slug, deployment, outcome,
    input_tokens, output_tokens, provider_cost_micros)
  SELECT p_reservation_id, a.attempt, p_organisation_id, p_model_slug, a.deployment, a.outcome,
    a."inputTokens", a."outputTokens", a."providerCostMicros"
  FROM jsonb_to_recordset(p_attempts) AS a(attempt integer, deployment text, outcome text,
    "inputTokens" bigint, "outputTokens" bigint, "providerCostMicros" bigint)
  ON CONFLICT (reservation_id, attempt) DO NOTHING
$$;
