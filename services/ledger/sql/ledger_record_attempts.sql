-- ledger_record_attempts: keeps the failed upstream attempts a batch's Settles carried
-- (services/ledger/src/domain/settle.ts sends them as the op's "failedAttempts" JSON text), for
-- platform analytics (provider cost per deployment), through ledger_keep_attempts. Called by
-- ledger_apply_batch after the batch's operations, in the same transaction.
-- Decides: no law; it moves no money. IDEMPOTENCY: attempts are kept only for a reservation that
-- this very Settle settled (its settle fingerprint, on the reservation or a carve's usage record;
-- a late settle after expiry included), so a
-- conflicting payload records nothing, and ledger_keep_attempts's key makes a replay write nothing twice.
CREATE OR REPLACE FUNCTION ledger_record_attempts(ops jsonb)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  -- PERFORM runs the call for every row (a SQL function would stop at its final query's first row).
  PERFORM ledger_keep_attempts(r.id, r.organisation_id, r.model_slug, (o->>'failedAttempts')::jsonb)
  FROM jsonb_array_elements(ops) AS o
  JOIN reservations r ON r.id = o->>'reservationId' AND r.settle_fingerprint = o->>'fingerprint'
  WHERE o->>'kind' = 'settle' AND o->>'failedAttempts' IS NOT NULL;
  -- A carve has no reservation: its usage record keeps the fingerprint (migration 0021).
  PERFORM ledger_keep_attempts(u.reservation_id, u.organisation_id, u.model_slug, (o->>'failedAttempts')::jsonb)
  FROM jsonb_array_elements(ops) AS o
  JOIN grants gr ON gr.id = o->>'grantId'
  CROSS JOIN LATERAL ledger_carve_records(ARRAY[o->>'reservationId'], gr.created_at) AS u
  WHERE u.settle_fingerprint = o->>'fingerprint' AND o->>'kind' = 'settle' AND o->>'failedAttempts' IS NOT NULL AND o ? 'grantId';
END
$$;
