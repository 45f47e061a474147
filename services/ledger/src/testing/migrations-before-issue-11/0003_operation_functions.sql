-- Reserve and Settle as database functions, and a batch function that applies many of them in
-- one transaction (group commit). Each operation is one round trip instead of 7-10, and a batch
-- of operations is one round trip and one commit. The functions do exactly what
-- src/domain/reserve.ts and settle.ts did statement by statement; input validation and the
-- idempotency fingerprints stay in TypeScript, which passes `problems` (NULL when the input is
-- valid) and `fingerprint` in each operation's jsonb.

-- The answer to one operation; fields an operation does not have are 0.
CREATE TYPE ledger_op_result AS (
  result text,
  available_micros bigint,
  expires_at_ms bigint,
  debited_micros bigint,
  released_micros bigint,
  overrun_micros bigint,
  detail text
);

-- The current calendar month in Asia/Kolkata by the database clock, e.g. '2026-11'.
CREATE FUNCTION ledger_current_month() RETURNS text LANGUAGE sql STABLE AS $$
  SELECT to_char(now() AT TIME ZONE 'Asia/Kolkata', 'YYYY-MM')
$$;

-- An answer that moved nothing.
CREATE FUNCTION ledger_refusal(p_result text, p_detail text, p_available bigint) RETURNS ledger_op_result
LANGUAGE sql IMMUTABLE AS $$
  SELECT ROW(p_result, p_available, 0::bigint, 0::bigint, 0::bigint, 0::bigint, p_detail)::ledger_op_result
$$;

-- The available balance of an account, µ₹, or 0 when the organisation has none (answers only).
CREATE FUNCTION ledger_available_or_zero(p_organisation text) RETURNS bigint LANGUAGE sql STABLE AS $$
  SELECT coalesce((SELECT available_micros FROM accounts WHERE organisation_id = p_organisation), 0::bigint)
$$;

-- Raises this month's soft alert of a project when settled + held has reached the threshold
-- (spent × 100 ≥ cap × percent, exact) and none was raised yet (project-budget.ts did this).
-- The advisory lock makes alert ids commit in order, so readers can use them as a cursor.
CREATE FUNCTION ledger_raise_soft_alert_if_due(p_project text) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
  budget record;
  v_month text := ledger_current_month();
  v_spent numeric;
BEGIN
  SELECT organisation_id, monthly_cap_micros, soft_alert_percent INTO budget
  FROM project_budgets WHERE project_id = p_project;
  IF NOT FOUND OR budget.monthly_cap_micros <= 0 THEN RETURN false; END IF;
  v_spent := coalesce((SELECT settled_micros FROM project_month_spend WHERE project_id = p_project AND month = v_month), 0)
    + coalesce((SELECT sum(amount_micros) FROM reservations WHERE project_id = p_project AND status = 'held'), 0);
  IF v_spent * 100 < budget.monthly_cap_micros::numeric * budget.soft_alert_percent THEN RETURN false; END IF;
  IF EXISTS (SELECT 1 FROM budget_alerts WHERE project_id = p_project AND month = v_month) THEN RETURN false; END IF;
  PERFORM pg_advisory_xact_lock(hashtext('ledger.budget_alerts'));
  INSERT INTO budget_alerts (organisation_id, project_id, month, spent_micros, monthly_cap_micros, soft_alert_percent)
  VALUES (budget.organisation_id, p_project, v_month, v_spent, budget.monthly_cap_micros, budget.soft_alert_percent)
  ON CONFLICT (project_id, month) DO NOTHING;
  RETURN FOUND;
END
$$;

-- Why a Reserve holds nothing, in precedence order: no account, then (commercial, when
-- p_commercial_amount is given) not enough available, then the project budget.
CREATE FUNCTION ledger_refuse_unheld(p_organisation text, p_commercial_amount bigint, p_budget_problem text)
RETURNS ledger_op_result LANGUAGE plpgsql AS $$
DECLARE
  v_available bigint;
BEGIN
  SELECT available_micros INTO v_available FROM accounts WHERE organisation_id = p_organisation;
  IF NOT FOUND THEN RETURN ledger_refusal('organisation_unknown', 'organisation has no account', 0); END IF;
  IF p_commercial_amount IS NOT NULL AND v_available < p_commercial_amount THEN
    RETURN ledger_refusal('insufficient_balance', 'available balance is below amount_micros', v_available);
  END IF;
  IF p_budget_problem IS NOT NULL THEN RETURN ledger_refusal('project_budget_exceeded', p_budget_problem, v_available); END IF;
  -- The conditional UPDATE found too little, but a concurrent credit has landed since: retry later.
  RETURN ledger_refusal('insufficient_balance', 'available balance is below amount_micros', v_available);
END
$$;

-- Reserve (law 1, law 9): see reserve.ts. A concurrent Reserve with the same new id that
-- committed first raises SQLSTATE LR001 after our hold; the caller rolls this operation back
-- and runs it again, when it answers as a replay.
CREATE FUNCTION ledger_reserve(op jsonb) RETURNS ledger_op_result LANGUAGE plpgsql AS $$
DECLARE
  v_id text := op->>'reservationId';
  v_fingerprint text := op->>'fingerprint';
  v_problems text := op->>'problems';
  v_organisation text;
  v_project text;
  v_commercial boolean;
  v_amount bigint;
  earlier record;
  budget record;
  v_has_budget boolean;
  v_month text;
  v_settled numeric;
  v_held numeric;
  v_budget_problem text;
  v_available bigint;
  v_expires_at_ms bigint;
BEGIN
  SELECT request_fingerprint, organisation_id, floor(extract(epoch FROM expires_at) * 1000)::bigint AS expires_at_ms
  INTO earlier FROM reservations WHERE id = v_id;
  IF FOUND THEN
    IF earlier.request_fingerprint <> v_fingerprint THEN
      RETURN ledger_refusal('idempotency_conflict', 'reservation_id was already used with a different payload', 0);
    END IF;
    RETURN ROW('ok', ledger_available_or_zero(earlier.organisation_id), earlier.expires_at_ms, 0::bigint, 0::bigint,
      0::bigint, 'replay: reservation already exists')::ledger_op_result;
  END IF;
  IF v_problems IS NOT NULL THEN RETURN ledger_refusal('invalid_argument', v_problems, 0); END IF;

  v_organisation := op->>'organisationId';
  v_project := op->>'projectId';
  v_commercial := op->>'billingMode' = 'commercial';
  v_amount := (op->>'amountMicros')::bigint;

  -- Law 9: the budget row is locked first (budget, then account: the lock order of every path).
  SELECT organisation_id, monthly_cap_micros, soft_alert_percent INTO budget
  FROM project_budgets WHERE project_id = v_project AND monthly_cap_micros > 0 FOR UPDATE;
  v_has_budget := FOUND;
  IF v_has_budget THEN
    v_month := ledger_current_month();
    v_settled := coalesce((SELECT settled_micros FROM project_month_spend WHERE project_id = v_project AND month = v_month), 0);
    v_held := coalesce((SELECT sum(amount_micros) FROM reservations WHERE project_id = v_project AND status = 'held'), 0);
    IF v_settled + v_held + v_amount > budget.monthly_cap_micros THEN
      v_budget_problem := format('project %s spend %s + held %s + amount %s µ₹ would pass its monthly cap of %s µ₹',
        v_month, v_settled, v_held, v_amount, budget.monthly_cap_micros);
    END IF;
  END IF;

  IF v_commercial AND v_budget_problem IS NULL THEN
    -- The whole of law 1 is this WHERE: Reserves serialise on the account row and each
    -- re-checks the balance the previous one left.
    UPDATE accounts SET available_micros = available_micros - v_amount, held_micros = held_micros + v_amount
    WHERE organisation_id = v_organisation AND available_micros >= v_amount
    RETURNING available_micros INTO v_available;
    IF NOT FOUND THEN RETURN ledger_refuse_unheld(v_organisation, v_amount, NULL); END IF;
  ELSIF v_budget_problem IS NOT NULL THEN
    RETURN ledger_refuse_unheld(v_organisation, CASE WHEN v_commercial THEN v_amount END, v_budget_problem);
  ELSE
    SELECT available_micros INTO v_available FROM accounts WHERE organisation_id = v_organisation;
    IF NOT FOUND THEN RETURN ledger_refusal('organisation_unknown', 'organisation has no account', 0); END IF;
  END IF;

  INSERT INTO reservations (id, organisation_id, project_id, billing_mode, amount_micros, model_slug, expires_at,
    request_fingerprint)
  VALUES (v_id, v_organisation, v_project, op->>'billingMode', v_amount, op->>'modelSlug',
    now() + (op->>'ttlMs')::bigint * interval '1 millisecond', v_fingerprint)
  ON CONFLICT (id) DO NOTHING
  RETURNING floor(extract(epoch FROM expires_at) * 1000)::bigint INTO v_expires_at_ms;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'concurrent call with the same idempotency key committed first: %', v_id USING ERRCODE = 'LR001';
  END IF;
  IF v_commercial THEN
    INSERT INTO movements (organisation_id, kind, amount_micros, credited_delta_micros, available_delta_micros,
      held_delta_micros, debited_delta_micros, reservation_id, detail)
    VALUES (v_organisation, 'reserve', v_amount, 0, -v_amount, v_amount, 0, v_id,
      jsonb_build_object('projectId', v_project, 'modelSlug', op->>'modelSlug'));
  END IF;
  IF v_has_budget THEN PERFORM ledger_raise_soft_alert_if_due(v_project); END IF;
  RETURN ROW('ok', v_available, v_expires_at_ms, 0::bigint, 0::bigint, 0::bigint, '')::ledger_op_result;
END
$$;

-- Settle (laws 3, 5, 6, 7): see settle.ts. Under the reservation's row lock, so a racing settle,
-- release or expiry sees the winner's outcome.
CREATE FUNCTION ledger_settle(op jsonb) RETURNS ledger_op_result LANGUAGE plpgsql AS $$
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
      request_id = CASE WHEN v_actual THEN op->>'requestId' ELSE request_id END
    WHERE reservation_id = v_id AND provisional
    RETURNING to_char(created_at AT TIME ZONE 'Asia/Kolkata', 'YYYY-MM') INTO v_month;
    IF NOT FOUND THEN
      RAISE EXCEPTION 'reservation % expired with a checkpoint but has no provisional usage record', v_id;
    END IF;
  ELSE
    INSERT INTO usage_records (reservation_id, organisation_id, project_id, model_slug, input_tokens, output_tokens,
      cost_micros, provider_cost_micros, debited_micros, billing_mode, usage_source, request_id)
    VALUES (v_id, res.organisation_id, res.project_id, op->>'modelSlug', (op->>'inputTokens')::bigint,
      (op->>'outputTokens')::bigint, v_cost, (op->>'providerCostMicros')::bigint, v_debited, res.billing_mode,
      op->>'usageSource', op->>'requestId')
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

-- Runs one operation by its kind.
CREATE FUNCTION ledger_apply_operation(op jsonb) RETURNS ledger_op_result LANGUAGE plpgsql AS $$
BEGIN
  IF op->>'kind' = 'reserve' THEN RETURN ledger_reserve(op); END IF;
  IF op->>'kind' = 'settle' THEN RETURN ledger_settle(op); END IF;
  RAISE EXCEPTION 'unknown ledger operation kind %', op->>'kind' USING ERRCODE = '22023';
END
$$;

-- Applies a batch of operations (a jsonb array of {kind: 'reserve'|'settle', ...}) in one
-- transaction, in array order, and returns one row per operation.
--
-- p_isolate = true: each operation runs in its own subtransaction (BEGIN/EXCEPTION), so an
-- operation that fails is rolled back alone and answers with its SQLSTATE and message; it
-- neither fails nor alters the others. p_isolate = false is the fast path without
-- subtransactions (they cost more than the operations' own statements): any error fails the
-- whole statement, which then has written nothing, and the caller runs the batch again
-- isolated, where every operation gets exactly the answer it would have had. Deadlocks and
-- serialization failures are raised in both modes, so the caller retries the whole batch.
--
-- Lock order: before the first operation, the rows the batch will lock are locked in the one
-- global order (budget rows -> reservation rows -> account rows -> this month's project-spend
-- rows, each sorted), so batches on any number of replicas, the sweeper and the single-call
-- paths cannot deadlock one another; the operations then re-lock rows they already hold.
CREATE FUNCTION ledger_apply_batch(ops jsonb, p_isolate boolean)
RETURNS TABLE (ordinal integer, result text, available_micros bigint, expires_at_ms bigint, debited_micros bigint,
  released_micros bigint, overrun_micros bigint, detail text, error_state text, error_message text)
LANGUAGE plpgsql AS $$
DECLARE
  v_op jsonb;
  v_ordinal integer;
  v_outcome ledger_op_result;
  v_attempt integer;
  v_state text;
  v_message text;
  v_reserve_projects text[];
  v_reserve_organisations text[];
  v_resolve_ids text[];
BEGIN
  SELECT array_agg(DISTINCT o->>'projectId') FILTER (WHERE o->>'kind' = 'reserve' AND o ? 'projectId'),
    array_agg(DISTINCT o->>'organisationId') FILTER (WHERE o->>'kind' = 'reserve' AND o ? 'organisationId'),
    array_agg(DISTINCT o->>'reservationId') FILTER (WHERE o->>'kind' = 'settle')
  INTO v_reserve_projects, v_reserve_organisations, v_resolve_ids
  FROM jsonb_array_elements(ops) AS o;

  PERFORM 1 FROM project_budgets b WHERE b.project_id = ANY (v_reserve_projects) ORDER BY b.project_id FOR UPDATE;
  PERFORM 1 FROM reservations r WHERE r.id = ANY (v_resolve_ids) ORDER BY r.id FOR UPDATE;
  PERFORM 1 FROM accounts a
  WHERE a.organisation_id = ANY (v_reserve_organisations)
     OR a.organisation_id IN (SELECT r.organisation_id FROM reservations r WHERE r.id = ANY (v_resolve_ids))
  ORDER BY a.organisation_id FOR UPDATE;
  PERFORM 1 FROM project_month_spend s
  WHERE s.month = ledger_current_month()
    AND s.project_id IN (SELECT r.project_id FROM reservations r WHERE r.id = ANY (v_resolve_ids))
  ORDER BY s.project_id FOR UPDATE;

  FOR v_op, v_ordinal IN SELECT e.value, e.ordinality::integer FROM jsonb_array_elements(ops) WITH ORDINALITY AS e LOOP
    v_state := NULL;
    v_message := NULL;
    IF NOT p_isolate THEN
      v_outcome := ledger_apply_operation(v_op);
    ELSE
      v_attempt := 0;
      LOOP
        v_state := NULL;
        v_message := NULL;
        BEGIN
          v_outcome := ledger_apply_operation(v_op);
        EXCEPTION
          WHEN serialization_failure OR deadlock_detected THEN RAISE;
          WHEN OTHERS THEN
            v_state := SQLSTATE;
            v_message := SQLERRM;
        END;
        -- Lost an idempotency-key race: this operation was rolled back; run it again to see the winner.
        EXIT WHEN v_state IS DISTINCT FROM 'LR001' OR v_attempt >= 3;
        v_attempt := v_attempt + 1;
      END LOOP;
    END IF;
    ordinal := v_ordinal;
    IF v_state IS NULL THEN
      result := v_outcome.result; available_micros := v_outcome.available_micros;
      expires_at_ms := v_outcome.expires_at_ms; debited_micros := v_outcome.debited_micros;
      released_micros := v_outcome.released_micros; overrun_micros := v_outcome.overrun_micros;
      detail := v_outcome.detail; error_state := NULL; error_message := NULL;
    ELSE
      result := NULL; available_micros := NULL; expires_at_ms := NULL; debited_micros := NULL;
      released_micros := NULL; overrun_micros := NULL; detail := NULL; error_state := v_state; error_message := v_message;
    END IF;
    RETURN NEXT;
  END LOOP;
END
$$;
