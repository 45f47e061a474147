-- ledger_adjust_grant: AdjustGrant (services/ledger/src/domain/adjust-grant.ts), one
-- transaction: returns part or all of what a grant holds to available and/or pushes its deadline.
-- Decides, in precedence order: idempotency_conflict / replay (IDEMPOTENCY on adjustment_id; a
-- replay answers the stored first answer), invalid_argument, grant_unknown, already_resolved
-- (the grant was closed or expired first: nothing changes), ok. CONSERVATION: a return of `a`
-- is one `grant_return` movement (held −a, available +a) naming the grant, never more than the
-- grant holds (return_micros is capped at remaining); `close` returns everything left and
-- resolves the grant (status closed). INTERNAL_MODE: no movement, no wallet change. EXPIRY:
-- extend_ttl_ms > 0 makes the deadline now() + extend by the database clock. On a recalled grant,
-- every adjustment but a bare extension answers the recall (recall_answered_at, migration 0011).
-- Lock order: grant row -> account row (the global order: budget -> reservations -> grants ->
-- accounts -> spend).
CREATE OR REPLACE FUNCTION ledger_adjust_grant(op jsonb)
RETURNS TABLE (result text, returned_micros bigint, remaining_micros bigint, expires_at_ms bigint, recalled boolean,
  owner_id text, detail text)
LANGUAGE plpgsql AS $$
DECLARE
  v_adjustment text := op->>'adjustmentId';
  v_grant text := op->>'grantId';
  v_fingerprint text := op->>'fingerprint';
  v_problems text := op->>'problems';
  v_close boolean := coalesce((op->>'close')::boolean, false);
  v_extend bigint := coalesce((op->>'extendTtlMs')::bigint, 0);
  earlier record;
  g record;
  v_return bigint;
  v_expires_at timestamptz;
BEGIN
  SELECT a.fingerprint, a.returned_micros, a.remaining_micros, a.expires_at, a.grant_id INTO earlier
  FROM grant_adjustments a WHERE a.adjustment_id = v_adjustment;
  IF FOUND THEN
    IF earlier.fingerprint <> v_fingerprint THEN
      RETURN QUERY SELECT 'idempotency_conflict', 0::bigint, 0::bigint, 0::bigint, false, ''::text,
        'adjustment_id was already used with a different payload'::text;
    ELSE
      RETURN QUERY SELECT 'ok', earlier.returned_micros, earlier.remaining_micros,
        floor(extract(epoch FROM earlier.expires_at) * 1000)::bigint, gr.recalled_at IS NOT NULL, gr.owner_id,
        'replay: adjustment already applied'::text
      FROM grants gr WHERE gr.id = earlier.grant_id;
    END IF;
    RETURN;
  END IF;
  IF v_problems IS NOT NULL THEN
    RETURN QUERY SELECT 'invalid_argument', 0::bigint, 0::bigint, 0::bigint, false, ''::text, v_problems;
    RETURN;
  END IF;

  SELECT gr.organisation_id, gr.billing_mode, gr.remaining_micros, gr.status, gr.expires_at, gr.recalled_at, gr.owner_id
  INTO g FROM grants gr WHERE gr.id = v_grant FOR UPDATE;
  IF NOT FOUND THEN
    RETURN QUERY SELECT 'grant_unknown', 0::bigint, 0::bigint, 0::bigint, false, ''::text, 'no grant has this id'::text;
    RETURN;
  END IF;
  IF g.status <> 'held' THEN
    RETURN QUERY SELECT 'already_resolved', 0::bigint, 0::bigint, floor(extract(epoch FROM g.expires_at) * 1000)::bigint,
      g.recalled_at IS NOT NULL, g.owner_id, format('grant was %s before this adjustment', g.status);
    RETURN;
  END IF;

  v_return := CASE WHEN v_close THEN g.remaining_micros ELSE least((op->>'returnMicros')::bigint, g.remaining_micros) END;
  v_expires_at := CASE WHEN v_extend > 0 THEN now() + v_extend * interval '1 millisecond' ELSE g.expires_at END;
  UPDATE grants gr SET remaining_micros = gr.remaining_micros - v_return, expires_at = v_expires_at,
    status = CASE WHEN v_close THEN 'closed' ELSE gr.status END,
    -- The owner heard the recall: anything but a bare extension answers it (a return, a close, or
    -- an adjustment that changes nothing, which is how an owner with nothing uncarved says so).
    recall_answered_at = CASE
      WHEN gr.recalled_at IS NOT NULL AND gr.recall_answered_at IS NULL
        AND (v_close OR (op->>'returnMicros')::bigint > 0 OR v_extend = 0) THEN now()
      ELSE gr.recall_answered_at END,
    resolved_at = CASE WHEN v_close THEN now() ELSE gr.resolved_at END
  WHERE gr.id = v_grant;
  IF g.billing_mode = 'commercial' AND v_return > 0 THEN
    UPDATE accounts a SET available_micros = a.available_micros + v_return, held_micros = a.held_micros - v_return
    WHERE a.organisation_id = g.organisation_id;
    INSERT INTO movements (organisation_id, kind, amount_micros, credited_delta_micros, available_delta_micros,
      held_delta_micros, debited_delta_micros, grant_id, detail)
    VALUES (g.organisation_id, 'grant_return', v_return, 0, v_return, -v_return, 0, v_grant,
      jsonb_build_object('adjustmentId', v_adjustment, 'reason', op->>'reason', 'close', v_close));
  END IF;
  INSERT INTO grant_adjustments (adjustment_id, grant_id, fingerprint, returned_micros, remaining_micros, expires_at, closed, reason)
  VALUES (v_adjustment, v_grant, v_fingerprint, v_return, g.remaining_micros - v_return, v_expires_at, v_close,
    coalesce(op->>'reason', ''))
  ON CONFLICT (adjustment_id) DO NOTHING;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'concurrent AdjustGrant with the same adjustment id committed first: %', v_adjustment USING ERRCODE = 'LR001';
  END IF;
  RETURN QUERY SELECT 'ok', v_return, g.remaining_micros - v_return, floor(extract(epoch FROM v_expires_at) * 1000)::bigint,
    g.recalled_at IS NOT NULL, g.owner_id, CASE WHEN v_close THEN 'closed' ELSE '' END;
END
$$;
