-- ledger_record_attempts: keeps the failed upstream attempts a batch's Settles carried
-- (services/ledger/src/domain/settle.ts sends them as the op's "failedAttempts" JSON text), for
-- platform analytics (provider cost per deployment). Called by ledger_apply_batch after the
-- batch's operations, in the same transaction.
-- Decides: no law; it moves no money. IDEMPOTENCY: a row is written only for a reservation that
-- this very Settle settled (its settle fingerprint; a late settle after expiry included), so a conflicting payload
-- records nothing, and (reservation_id, attempt) is the key, so a replay writes nothing twice.
CREATE OR REPLACE FUNCTION ledger_record_attempts(ops jsonb)
RETURNS void LANGUAGE sql AS $$
  INSERT INTO provider_attempts (reservation_id, attempt, organisation_id, model_slug, deployment, outcome,
    input_tokens, output_tokens, provider_cost_micros)
  SELECT r.id, (a->>'attempt')::integer, r.organisation_id, r.model_slug, a->>'deployment', a->>'outcome',
    (a->>'inputTokens')::bigint, (a->>'outputTokens')::bigint, (a->>'providerCostMicros')::bigint
  FROM jsonb_array_elements(ops) AS o
  JOIN reservations r ON r.id = o->>'reservationId' AND r.settle_fingerprint = o->>'fingerprint'
  CROSS JOIN LATERAL jsonb_array_elements((o->>'failedAttempts')::jsonb) AS a
  WHERE o->>'kind' = 'settle' AND o->>'failedAttempts' IS NOT NULL
  ON CONFLICT (reservation_id, attempt) DO NOTHING
$$;
