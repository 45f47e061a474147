-- Request ids on checkpoints (NOTHING_FREE, EXPIRY). docs/ledger.md, "Checkpoint" and "Expiry
-- and late settles".
--
-- A Reserve carries no request id, so the provisional usage record an expiry writes from a
-- checkpoint had request_id '' and could not be matched to its request (a SIGKILLed proxy's
-- streams were paired with such records by amount). Now:
-- 1. reservations.request_id: the gateway's request id, recorded by the first Checkpoint that
--    carries one ('' until then); the expiry writes it onto its provisional usage record.
-- 2. ledger_settle (as in 0006, one change): a late settle that finalises the provisional record
--    sets the settle's own request id when it carries one, whichever figures stand (in 0006 it
--    did only when the actual totals replaced the charged ones), else keeps the checkpoint's.
--    usage_record_finalise_only (0002) compares no request id, so this update passes it.
-- Settles of held reservations (every other path, including the set-based batch) are unchanged:
-- their record carries the Settle's request id as before.

-- '' (not NULL) for "none recorded": the value the usage record takes as it is; an existing
-- constant default rewrites no rows.
ALTER TABLE reservations
  ADD COLUMN request_id text NOT NULL DEFAULT '' CHECK (length(request_id) <= 128);

-- Settle (laws 3, 5, 6, 7), as in 0006, except the request id of a finalised provisional record.
CREATE OR REPLACE FUNCTION ledger_settle(op jsonb) RETURNS ledger_op_result LANGUAGE plpgsql AS $$
DECLARE
  v_id text := op->>'reservationId';
  v_fingerprint text := op->>'fingerprint';
  v_problems text := op->>'problems';
  res record;
  v_expired boolean;
  v_commercial boolean;
  v_detail text;
  v_charged bigint;
  v_finalising boolean;
  v_cost bigint;
  v_extra bigint;
  v_hold bigint;
  v_from_hold bigint := 0;
  v_debited bigint := 0;
  v_released bigint := 0;
  v_overrun bigint := 0;
  v_available bigint;
  v_month text;
  v_actual boolean;
  v_overrun_tokens bigint := coalesce((op->>'overrunOutputTokens')::bigint, 0);
BEGIN
  SELECT organisation_id, project_id, billing_mode, amount_micros, status, settle_fingerprint, settle_debited_micros,
    settle_released_micros, settle_overrun_micros, settle_detail, expiry_charged_micros
  INTO res FROM reservations WHERE id = v_id FOR UPDATE;
  IF NOT FOUND THEN
    IF v_problems IS NOT NULL THEN RETURN ledger_refusal('invalid_argument', v_problems, 0); END IF;
    RETURN ledger_refusal('reservation_unknown', 'no reservation has this id', 0);
  END IF;
  IF res.settle_fingerprint IS NOT NULL THEN
    IF res.settle_fingerprint <> v_fingerprint THEN
      RETURN ledger_refusal('idempotency_conflict', 'reservation was already settled with a different payload', 0);
    END IF;
    RETURN ROW('ok', ledger_available_or_zero(res.organisation_id), 0::bigint, coalesce(res.settle_debited_micros, 0),
      coalesce(res.settle_released_micros, 0), coalesce(res.settle_overrun_micros, 0), coalesce(res.settle_detail, ''))::ledger_op_result;
  END IF;
  IF v_problems IS NOT NULL THEN RETURN ledger_refusal('invalid_argument', v_problems, 0); END IF;
  IF res.status IN ('released', 'settled') THEN
    RETURN ledger_refusal('already_resolved', format('reservation was %s before this settle', res.status),
      ledger_available_or_zero(res.organisation_id));
  END IF;

  v_expired := res.status = 'expired';
  v_commercial := res.billing_mode = 'commercial';
  v_detail := CASE WHEN v_expired THEN 'settled after expiry' ELSE '' END;
  v_charged := res.expiry_charged_micros;
  v_finalising := v_expired AND v_charged IS NOT NULL;
  v_cost := (op->>'costMicros')::bigint;
  -- What this settle adds to the project's spend and (commercial) to the wallet's debits.
  v_extra := CASE WHEN v_finalising THEN greatest(v_cost - v_charged, 0) ELSE v_cost END;

  IF v_commercial THEN
    -- Once expired, the hold is already back in available: whatever is charged now is overrun.
    v_hold := CASE WHEN v_expired THEN 0 ELSE res.amount_micros END;
    v_from_hold := least(v_extra, v_hold);
    v_debited := v_extra;
    v_released := v_hold - v_from_hold;
    v_overrun := v_extra - v_from_hold;
    UPDATE accounts SET held_micros = held_micros - (v_from_hold + v_released),
      available_micros = available_micros + v_released - v_overrun, debited_micros = debited_micros + v_debited
    WHERE organisation_id = res.organisation_id
    RETURNING available_micros INTO v_available;
    -- The settle movement (debit) and the release movement (unused hold), in one statement;
    -- amounts of zero move nothing and write nothing.
    INSERT INTO movements (organisation_id, kind, amount_micros, credited_delta_micros, available_delta_micros,
      held_delta_micros, debited_delta_micros, reservation_id, detail)
    SELECT m.* FROM (VALUES
      (res.organisation_id, 'settle', v_debited, 0::bigint, -v_overrun, -(v_debited - v_overrun), v_debited, v_id,
        jsonb_build_object('usageSource', op->>'usageSource', 'requestId', op->>'requestId')
          || CASE WHEN v_expired THEN jsonb_build_object('afterExpiry', true) ELSE '{}'::jsonb END
          || CASE WHEN v_finalising THEN jsonb_build_object('chargedAtExpiryMicros', v_charged::text) ELSE '{}'::jsonb END),
      (res.organisation_id, 'release', v_released, 0::bigint, v_released, -v_released, 0::bigint, v_id,
        jsonb_build_object('reason', 'unused reserve returned at settlement'))
    ) AS m (organisation_id, kind, amount_micros, credited_delta_micros, available_delta_micros, held_delta_micros,
      debited_delta_micros, reservation_id, detail)
    WHERE m.amount_micros > 0;
  ELSE
    v_available := ledger_available_or_zero(res.organisation_id);
  END IF;

  -- An expired reservation keeps its one outcome (expired); the late settlement is recorded beside it.
  UPDATE reservations SET status = CASE WHEN status = 'held' THEN 'settled' ELSE status END,
    resolved_at = coalesce(resolved_at, now()), settle_fingerprint = v_fingerprint, settle_debited_micros = v_debited,
    settle_released_micros = v_released, settle_overrun_micros = v_overrun, settle_detail = v_detail
  WHERE id = v_id;

  IF v_finalising THEN
    -- The provisional record from the checkpoint becomes final: with the actual totals when they
    -- are at least what was charged, else with the charged figures kept.
    v_actual := v_cost >= v_charged;
    UPDATE usage_records SET provisional = false,
      input_tokens = CASE WHEN v_actual THEN (op->>'inputTokens')::bigint ELSE input_tokens END,
      output_tokens = CASE WHEN v_actual THEN (op->>'outputTokens')::bigint ELSE output_tokens END,
      cost_micros = CASE WHEN v_actual THEN v_cost ELSE cost_micros END,
      provider_cost_micros = CASE WHEN v_actual THEN (op->>'providerCostMicros')::bigint ELSE provider_cost_micros END,
      debited_micros = debited_micros + v_debited,
      model_slug = CASE WHEN v_actual THEN op->>'modelSlug' ELSE model_slug END,
      usage_source = CASE WHEN v_actual THEN op->>'usageSource' ELSE usage_source END,
      -- The settle's own request id when it carries one (whichever figures stand), else the one
      -- the expiry took from the checkpoint: the final record stays findable by request id.
      request_id = CASE WHEN coalesce(op->>'requestId', '') <> '' THEN op->>'requestId' ELSE request_id END,
      -- The overrun is a fact about the request whichever figures stand: it always flags the record.
      overrun_output_tokens = v_overrun_tokens
    WHERE reservation_id = v_id AND provisional
    RETURNING to_char(created_at AT TIME ZONE 'Asia/Kolkata', 'YYYY-MM') INTO v_month;
    IF NOT FOUND THEN
      RAISE EXCEPTION 'reservation % expired with a checkpoint but has no provisional usage record', v_id;
    END IF;
  ELSE
    INSERT INTO usage_records (reservation_id, organisation_id, project_id, model_slug, input_tokens, output_tokens,
      cost_micros, provider_cost_micros, debited_micros, billing_mode, usage_source, request_id, overrun_output_tokens)
    VALUES (v_id, res.organisation_id, res.project_id, op->>'modelSlug', (op->>'inputTokens')::bigint,
      (op->>'outputTokens')::bigint, v_cost, (op->>'providerCostMicros')::bigint, v_debited, res.billing_mode,
      op->>'usageSource', op->>'requestId', v_overrun_tokens)
    RETURNING to_char(created_at AT TIME ZONE 'Asia/Kolkata', 'YYYY-MM') INTO v_month;
  END IF;
  IF v_extra > 0 THEN
    INSERT INTO project_month_spend (project_id, month, organisation_id, settled_micros)
    VALUES (res.project_id, v_month, res.organisation_id, v_extra)
    ON CONFLICT (project_id, month) DO UPDATE SET settled_micros = project_month_spend.settled_micros + EXCLUDED.settled_micros;
  END IF;
  PERFORM ledger_raise_soft_alert_if_due(res.project_id);
  RETURN ROW('ok', v_available, 0::bigint, v_debited, v_released, v_overrun, v_detail)::ledger_op_result;
END
$$;
