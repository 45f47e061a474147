-- ledger_settle_carved: the Settle of a carve (a Reserve the proxy took from a credit grant in
-- memory; docs/ledger.md, "Carved settles"), the per-operation path: called by ledger_settle
-- when no reservation has the id and the Settle names a grant. The set-based batch
-- (ledger_apply_batch_set) does the same for carves of held grants with the same arithmetic.
-- Decides, with cost c and the carve's Reserve r (reserved_micros):
--   grant held: from_grant = min(c, remaining), from_available = c − from_grant (CONSERVATION:
--     held −= from_grant, available −= from_available, debited += c, one `settle` movement naming
--     the grant and no reservation: a carve has none, its id is in the detail); the unused r − c
--     stays in the grant (released 0); BOUNDED_OVERRUN: overrun_micros = max(0, c − r), as for
--     any Settle.
--   grant closed or expired: what it held is already back in available, so all of c is debited
--     from available and recorded as overrun (as a settle after expiry, EXPIRY).
--   INTERNAL_MODE: no wallet change; the grant's remaining (budget headroom) still shrinks by
--     from_grant, so settled + held never counts the cost twice (PROJECT_BUDGET).
-- NOTHING_FREE: exactly one usage record, which names the grant and keeps the settlement
-- (settle_fingerprint, settle_overrun_micros, settle_detail: migration 0021); no reservation row.
-- IDEMPOTENCY: under the grant's row lock, a record of this id written since the grant was created
-- is a replay (same fingerprint: the recorded answer) or a conflict; a concurrent carved Settle of
-- the same id waits for the lock and then finds the first one's record. A carve settled before
-- migration 0021 has a reservation row, and its replay is ledger_settle's.
-- Lock order: (the reservation does not exist) grant row -> account row -> spend row -> the usage
-- record's daily roll-up row (ledger_add_usage_daily).
CREATE OR REPLACE FUNCTION ledger_settle_carved(op jsonb) RETURNS ledger_op_result LANGUAGE plpgsql AS $$
DECLARE
  v_id text := op->>'reservationId';
  v_grant text := op->>'grantId';
  v_reserved bigint := (op->>'reservedMicros')::bigint;
  v_cost bigint := (op->>'costMicros')::bigint;
  g record;
  v_grant_held boolean;
  v_commercial boolean;
  v_from_grant bigint;
  v_from_available bigint;
  v_debited bigint;
  v_overrun bigint;
  v_detail text;
  v_available bigint;
  v_month text;
  v_created_at timestamptz;
  v_recorded record;
BEGIN
  SELECT gr.organisation_id, gr.project_id, gr.billing_mode, gr.remaining_micros, gr.status, gr.created_at
  INTO g FROM grants gr WHERE gr.id = v_grant FOR UPDATE;
  IF NOT FOUND THEN
    RETURN ledger_refusal('reservation_unknown', 'no reservation has this id and no grant has its grant_id', 0);
  END IF;
  -- A promotion of this carve may have committed while this one waited for the grant.
  IF EXISTS (SELECT 1 FROM reservations r WHERE r.id = v_id) THEN RETURN ledger_settle(op); END IF;
  -- IDEMPOTENCY: this carve settled already (a replay, or a concurrent copy that committed first).
  SELECT u.settle_fingerprint, u.debited_micros, u.settle_overrun_micros, u.settle_detail INTO v_recorded
  FROM ledger_carve_records(ARRAY[v_id], g.created_at) AS u;
  IF FOUND THEN
    IF v_recorded.settle_fingerprint IS DISTINCT FROM op->>'fingerprint' THEN
      RETURN ledger_refusal('idempotency_conflict', 'reservation was already settled with a different payload', 0);
    END IF;
    RETURN ROW('ok', ledger_available_or_zero(g.organisation_id), 0::bigint, v_recorded.debited_micros, 0::bigint,
      v_recorded.settle_overrun_micros, v_recorded.settle_detail)::ledger_op_result;
  END IF;

  v_grant_held := g.status = 'held';
  v_commercial := g.billing_mode = 'commercial';
  v_from_grant := CASE WHEN v_grant_held THEN least(v_cost, g.remaining_micros) ELSE 0 END;
  v_from_available := v_cost - v_from_grant;
  v_debited := CASE WHEN v_commercial THEN v_cost ELSE 0 END;
  v_overrun := CASE WHEN NOT v_commercial THEN 0 WHEN v_grant_held THEN greatest(v_cost - v_reserved, 0) ELSE v_cost END;
  v_detail := CASE WHEN v_grant_held THEN '' ELSE format('settled after its grant was %s', g.status) END;

  IF v_from_grant > 0 THEN
    UPDATE grants gr SET remaining_micros = gr.remaining_micros - v_from_grant WHERE gr.id = v_grant;
  END IF;
  IF v_commercial THEN
    UPDATE accounts a SET held_micros = a.held_micros - v_from_grant, available_micros = a.available_micros - v_from_available,
      debited_micros = a.debited_micros + v_cost
    WHERE a.organisation_id = g.organisation_id RETURNING a.available_micros INTO v_available;
    IF v_cost > 0 THEN
      INSERT INTO movements (organisation_id, kind, amount_micros, credited_delta_micros, available_delta_micros,
        held_delta_micros, debited_delta_micros, reservation_id, grant_id, detail)
      VALUES (g.organisation_id, 'settle', v_cost, 0, -v_from_available, -v_from_grant, v_cost, NULL, v_grant,
        jsonb_build_object('usageSource', op->>'usageSource', 'requestId', op->>'requestId', 'carvedFrom', v_grant,
          'reservationId', v_id)
          || CASE WHEN v_grant_held THEN '{}'::jsonb ELSE jsonb_build_object('afterGrantResolved', true) END);
    END IF;
  ELSE
    v_available := ledger_available_or_zero(g.organisation_id);
  END IF;

  INSERT INTO usage_records (reservation_id, organisation_id, project_id, model_slug, input_tokens, output_tokens,
    cost_micros, provider_cost_micros, debited_micros, billing_mode, usage_source, request_id, overrun_output_tokens, token_classes,
    deployment, grant_id, settle_fingerprint, settle_overrun_micros, settle_detail)
  VALUES (v_id, g.organisation_id, g.project_id, op->>'modelSlug', (op->>'inputTokens')::bigint,
    (op->>'outputTokens')::bigint, v_cost, (op->>'providerCostMicros')::bigint, v_debited, g.billing_mode,
    op->>'usageSource', op->>'requestId', coalesce((op->>'overrunOutputTokens')::bigint, 0), (op->>'tokenClasses')::jsonb,
    nullif(op->>'deployment', ''), v_grant, op->>'fingerprint', v_overrun, v_detail)
  RETURNING to_char(created_at AT TIME ZONE 'Asia/Kolkata', 'YYYY-MM'), created_at INTO v_month, v_created_at;
  IF v_cost > 0 THEN
    INSERT INTO project_month_spend (project_id, month, organisation_id, settled_micros)
    VALUES (g.project_id, v_month, g.organisation_id, v_cost)
    ON CONFLICT (project_id, month) DO UPDATE SET settled_micros = project_month_spend.settled_micros + EXCLUDED.settled_micros;
  END IF;
  PERFORM ledger_add_usage_daily(v_created_at, g.organisation_id, g.project_id, op->>'modelSlug', g.billing_mode, 1,
    (op->>'inputTokens')::bigint, (op->>'outputTokens')::bigint, v_cost, (op->>'providerCostMicros')::bigint, v_debited);
  PERFORM ledger_raise_soft_alert_if_due(g.project_id);
  RETURN ROW('ok', v_available, 0::bigint, v_debited, 0::bigint, v_overrun, v_detail)::ledger_op_result;
END
$$;
