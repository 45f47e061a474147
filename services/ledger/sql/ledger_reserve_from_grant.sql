-- ledger_reserve_from_grant: a Reserve with grant_id (promotion, docs/ledger.md "Promotion"):
-- a carve the proxy took from a grant in memory becomes its own reservation (a stream that
-- outlived one checkpoint interval, so EXPIRY can charge its checkpoints). Called by
-- ledger_reserve after IDEMPOTENCY, invalid input and the tombstone (ONE_OUTCOME) were decided;
-- the set-based batch never takes it.
-- Decides: grant_not_held unless the grant is held, is the same organisation, project and
-- billing mode, and has at least the amount remaining; otherwise ok. NO_OVERSPEND and
-- PROJECT_BUDGET are not checked again: the grant passed them and the amount moves from the
-- grant's hold to the reservation's (the account's held is unchanged: a `grant_return` and a
-- `reserve` movement of the amount, CONSERVATION (history) and (holds) both keep).
-- INTERNAL_MODE: no movement. ONE_OUTCOME: a carve already settled is refused (idempotency_conflict).
-- Lock order: grant row (the reservation is new).
CREATE OR REPLACE FUNCTION ledger_reserve_from_grant(op jsonb) RETURNS ledger_op_result LANGUAGE plpgsql AS $$
DECLARE
  v_id text := op->>'reservationId';
  v_grant text := op->>'grantId';
  v_amount bigint := (op->>'amountMicros')::bigint;
  g record;
  v_expires_at_ms bigint;
BEGIN
  SELECT gr.organisation_id, gr.project_id, gr.billing_mode, gr.remaining_micros, gr.status, gr.created_at
  INTO g FROM grants gr WHERE gr.id = v_grant FOR UPDATE;
  IF NOT FOUND THEN
    RETURN ledger_refusal('grant_not_held', 'no grant has this grant_id', 0);
  END IF;
  -- ONE_OUTCOME: a carve that settled already (its usage record since the grant was created, no
  -- reservation row: migration 0021) is not promoted; as a Reserve of an id already used, a conflict.
  IF EXISTS (SELECT 1 FROM ledger_carve_records(ARRAY[v_id], g.created_at)) THEN
    RETURN ledger_refusal('idempotency_conflict', 'this carve was already settled', 0);
  END IF;
  IF g.status <> 'held' OR g.organisation_id <> op->>'organisationId' OR g.project_id <> op->>'projectId'
     OR g.billing_mode <> op->>'billingMode' OR g.remaining_micros < v_amount THEN
    RETURN ledger_refusal('grant_not_held', CASE
      WHEN g.status <> 'held' THEN format('grant was %s', g.status)
      WHEN g.organisation_id <> op->>'organisationId' OR g.project_id <> op->>'projectId' OR g.billing_mode <> op->>'billingMode'
        THEN 'grant is held for another organisation, project or billing mode'
      ELSE format('grant holds %s µ₹, less than amount_micros', g.remaining_micros) END,
      ledger_available_or_zero(g.organisation_id));
  END IF;
  UPDATE grants gr SET remaining_micros = gr.remaining_micros - v_amount WHERE gr.id = v_grant;
  INSERT INTO reservations (id, organisation_id, project_id, billing_mode, amount_micros, model_slug, expires_at,
    request_fingerprint, grant_id)
  VALUES (v_id, g.organisation_id, g.project_id, g.billing_mode, v_amount, op->>'modelSlug',
    now() + (op->>'ttlMs')::bigint * interval '1 millisecond', op->>'fingerprint', v_grant)
  ON CONFLICT (id) DO NOTHING
  RETURNING floor(extract(epoch FROM expires_at) * 1000)::bigint INTO v_expires_at_ms;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'concurrent call with the same idempotency key committed first: %', v_id USING ERRCODE = 'LR001';
  END IF;
  IF g.billing_mode = 'commercial' THEN
    INSERT INTO movements (organisation_id, kind, amount_micros, credited_delta_micros, available_delta_micros,
      held_delta_micros, debited_delta_micros, reservation_id, grant_id, detail)
    VALUES (g.organisation_id, 'grant_return', v_amount, 0, v_amount, -v_amount, 0, NULL, v_grant,
        jsonb_build_object('reason', 'promoted', 'reservationId', v_id)),
      (g.organisation_id, 'reserve', v_amount, 0, -v_amount, v_amount, 0, v_id, NULL,
        jsonb_build_object('projectId', g.project_id, 'modelSlug', op->>'modelSlug', 'promotedFrom', v_grant));
  END IF;
  RETURN ROW('ok', ledger_available_or_zero(g.organisation_id), v_expires_at_ms, 0::bigint, 0::bigint, 0::bigint, '')::ledger_op_result;
END
$$;
