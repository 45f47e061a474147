-- ledger_settle: one Settle (services/ledger/src/domain/settle.ts), the per-operation path: a
-- batch of one, every operation of an isolated rerun, and every Settle the set-based batch does
-- not take (replays, conflicts, late settles after expiry, budgeted projects).
-- Decides: ONE_OUTCOME (under the reservation's row lock a racing settle, release or expiry sees
-- the winner's outcome; an expired reservation stays expired, its late settle recorded beside
-- it), IDEMPOTENCY (replay, conflict), NOTHING_FREE (exactly one usage record, also after an
-- expiry: a checkpointed expiry's provisional record is finalised once), EXPIRY (a late settle
-- adds only what the checkpoint did not charge), INTERNAL_MODE (no wallet change). The money
-- split itself (CONSERVATION, BOUNDED_OVERRUN) is ledger_settlement_split's. A Settle of a carve
-- (grant_id set, no reservation of this id yet) is ledger_settle_carved's; once its reservation
-- exists (a replay, or a promoted carve) it is an ordinary Settle here.
-- Every record it writes or finalises is added to its daily roll-up (ledger_add_usage_daily), last.
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
  v_debited bigint := 0;
  v_released bigint := 0;
  v_overrun bigint := 0;
  v_available bigint;
  v_month text;
  v_actual boolean;
  v_overrun_tokens bigint := coalesce((op->>'overrunOutputTokens')::bigint, 0);
  -- The provisional record as the expiry wrote it, and the record as written or finalised now.
  v_old record;
  v_new record;
BEGIN
  SELECT organisation_id, project_id, billing_mode, amount_micros, status, settle_fingerprint, settle_debited_micros,
    settle_released_micros, settle_overrun_micros, settle_detail, expiry_charged_micros, created_at
  INTO res FROM reservations WHERE id = v_id FOR UPDATE;
  IF NOT FOUND THEN
    IF v_problems IS NOT NULL THEN RETURN ledger_refusal('invalid_argument', v_problems, 0); END IF;
    -- A carve the proxy took from a grant in memory: the ledger has never seen it.
    IF op ? 'grantId' THEN RETURN ledger_settle_carved(op); END IF;
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
    -- The split (ledger_settlement_split, inlined) and the account change in one statement.
    UPDATE accounts a SET held_micros = a.held_micros - (s.from_hold_micros + s.released_micros),
      available_micros = a.available_micros + s.released_micros - s.overrun_micros,
      debited_micros = a.debited_micros + s.debited_micros
    FROM ledger_settlement_split(v_hold, v_extra) AS s
    WHERE a.organisation_id = res.organisation_id
    RETURNING a.available_micros, s.debited_micros, s.released_micros, s.overrun_micros
    INTO v_available, v_debited, v_released, v_overrun;
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
    -- The record is no older than its reservation: the month partitions before it are not searched.
    SELECT u.model_slug, u.input_tokens, u.output_tokens, u.cost_micros, u.provider_cost_micros, u.debited_micros
    INTO v_old FROM usage_records u WHERE u.reservation_id = v_id AND u.provisional AND u.created_at >= res.created_at;
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
      overrun_output_tokens = v_overrun_tokens,
      -- The classes describe the settle's figures: kept only when those figures stand.
      token_classes = CASE WHEN v_actual THEN (op->>'tokenClasses')::jsonb ELSE token_classes END,
      -- The deployment that answered, when the settle names one, else what the checkpoint recorded.
      deployment = coalesce(nullif(op->>'deployment', ''), deployment)
    WHERE reservation_id = v_id AND provisional AND created_at >= res.created_at
    RETURNING to_char(created_at AT TIME ZONE 'Asia/Kolkata', 'YYYY-MM') AS month, created_at, model_slug, input_tokens,
      output_tokens, cost_micros, provider_cost_micros, debited_micros
    INTO v_new;
    IF NOT FOUND THEN
      RAISE EXCEPTION 'reservation % expired with a checkpoint but has no provisional usage record', v_id;
    END IF;
  ELSE
    INSERT INTO usage_records (reservation_id, organisation_id, project_id, model_slug, input_tokens, output_tokens,
      cost_micros, provider_cost_micros, debited_micros, billing_mode, usage_source, request_id, overrun_output_tokens, token_classes,
      deployment)
    VALUES (v_id, res.organisation_id, res.project_id, op->>'modelSlug', (op->>'inputTokens')::bigint,
      (op->>'outputTokens')::bigint, v_cost, (op->>'providerCostMicros')::bigint, v_debited, res.billing_mode,
      op->>'usageSource', op->>'requestId', v_overrun_tokens, (op->>'tokenClasses')::jsonb, nullif(op->>'deployment', ''))
    RETURNING to_char(created_at AT TIME ZONE 'Asia/Kolkata', 'YYYY-MM') AS month, created_at, model_slug, input_tokens,
      output_tokens, cost_micros, provider_cost_micros, debited_micros
    INTO v_new;
  END IF;
  v_month := v_new.month;
  IF v_extra > 0 THEN
    INSERT INTO project_month_spend (project_id, month, organisation_id, settled_micros)
    VALUES (res.project_id, v_month, res.organisation_id, v_extra)
    ON CONFLICT (project_id, month) DO UPDATE SET settled_micros = project_month_spend.settled_micros + EXCLUDED.settled_micros;
  END IF;
  -- The roll-up, after the spend row (lock order). A finalised record leaves its provisional
  -- figures' row (one request fewer) for its final figures' (one more): the same row unless the
  -- model changed, so then one update of the differences.
  IF NOT v_finalising THEN
    PERFORM ledger_add_usage_daily(v_new.created_at, res.organisation_id, res.project_id, v_new.model_slug, res.billing_mode,
      1, v_new.input_tokens, v_new.output_tokens, v_new.cost_micros, v_new.provider_cost_micros, v_new.debited_micros);
  ELSIF v_old.model_slug = v_new.model_slug THEN
    UPDATE usage_daily d SET input_tokens = d.input_tokens + v_new.input_tokens - v_old.input_tokens,
      output_tokens = d.output_tokens + v_new.output_tokens - v_old.output_tokens,
      cost_micros = d.cost_micros + v_new.cost_micros - v_old.cost_micros,
      provider_cost_micros = d.provider_cost_micros + v_new.provider_cost_micros - v_old.provider_cost_micros,
      debited_micros = d.debited_micros + v_new.debited_micros - v_old.debited_micros
    WHERE d.day = (v_new.created_at AT TIME ZONE 'Asia/Kolkata')::date AND d.organisation_id = res.organisation_id
      AND d.project_id = res.project_id AND d.model_slug = v_old.model_slug AND d.billing_mode = res.billing_mode;
  ELSE
    UPDATE usage_daily d SET requests = d.requests - 1, input_tokens = d.input_tokens - v_old.input_tokens,
      output_tokens = d.output_tokens - v_old.output_tokens, cost_micros = d.cost_micros - v_old.cost_micros,
      provider_cost_micros = d.provider_cost_micros - v_old.provider_cost_micros,
      debited_micros = d.debited_micros - v_old.debited_micros
    WHERE d.day = (v_new.created_at AT TIME ZONE 'Asia/Kolkata')::date AND d.organisation_id = res.organisation_id
      AND d.project_id = res.project_id AND d.model_slug = v_old.model_slug AND d.billing_mode = res.billing_mode;
    PERFORM ledger_add_usage_daily(v_new.created_at, res.organisation_id, res.project_id, v_new.model_slug, res.billing_mode,
      1, v_new.input_tokens, v_new.output_tokens, v_new.cost_micros, v_new.provider_cost_micros, v_new.debited_micros);
  END IF;
  PERFORM ledger_raise_soft_alert_if_due(res.project_id);
  RETURN ROW('ok', v_available, 0::bigint, v_debited, v_released, v_overrun, v_detail)::ledger_op_result;
END
$$;
