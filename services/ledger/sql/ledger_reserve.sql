-- ledger_reserve: one Reserve (services/ledger/src/domain/reserve.ts), the per-operation path: a
-- batch of one, and every operation of an isolated rerun (ledger_apply_batch_each).
-- Decides: nothing on its own; it gathers the facts in lock order and asks
-- ledger_reserve_decision (IDEMPOTENCY, ONE_OUTCOME, NO_OVERSPEND, PROJECT_BUDGET,
-- INTERNAL_MODE), the one place the Reserve's result is decided. It sets the deadline from the
-- database clock (EXPIRY).
--
-- Facts, in precedence order: an earlier reservation of this id (replay, conflict); the input's
-- problems; under the tombstone lock (shared, ledger_lock_reserve_ids), a Release that came
-- first; under the budget row lock, the project's spend this month and held; and last, on the
-- locked account row, the balance: a commercial Reserve moves available to held in one
-- conditional UPDATE whose WHERE is the decision, so Reserves serialise on the account row and
-- each decides on the balance the previous one left (NO_OVERSPEND). A concurrent Reserve with
-- the same new id that committed first raises SQLSTATE LR001 after our hold; the caller rolls
-- this operation back and runs it again, when it answers as a replay.
CREATE OR REPLACE FUNCTION ledger_reserve(op jsonb) RETURNS ledger_op_result LANGUAGE plpgsql AS $$
DECLARE
  v_id text := op->>'reservationId';
  v_fingerprint text := op->>'fingerprint';
  v_problems text := op->>'problems';
  v_organisation text;
  v_project text;
  v_commercial boolean;
  v_amount bigint;
  v_earlier_fingerprint text;
  v_earlier_organisation text;
  v_earlier_expires_at_ms bigint;
  v_result text;
  v_cap bigint;
  v_month text;
  v_settled numeric;
  v_held numeric;
  v_has_account boolean;
  v_holds boolean := false;
  v_available bigint;
  v_expires_at_ms bigint;
BEGIN
  SELECT request_fingerprint, organisation_id, floor(extract(epoch FROM expires_at) * 1000)::bigint
  INTO v_earlier_fingerprint, v_earlier_organisation, v_earlier_expires_at_ms FROM reservations WHERE id = v_id;
  v_result := ledger_reserve_decision(v_earlier_fingerprint, v_fingerprint, v_problems, false, true, NULL, false, NULL, NULL, NULL);

  IF v_result = 'ok' THEN
    -- ONE_OUTCOME: the tombstone lock (shared) before any row lock, then the tombstone.
    PERFORM pg_advisory_xact_lock_shared(1819501666, ledger_reservation_lock_bucket(v_id));
    v_result := ledger_reserve_decision(NULL, v_fingerprint, NULL,
      EXISTS (SELECT 1 FROM reservation_tombstones WHERE reservation_id = v_id), true, NULL, false, NULL, NULL, NULL);
  END IF;

  -- A carve the proxy makes its own reservation (promotion): held out of its grant, no balance
  -- or budget check again (ledger_reserve_from_grant).
  IF v_result = 'ok' AND op ? 'grantId' THEN RETURN ledger_reserve_from_grant(op); END IF;

  IF v_result = 'ok' THEN
    v_organisation := op->>'organisationId';
    v_project := op->>'projectId';
    v_commercial := op->>'billingMode' = 'commercial';
    v_amount := (op->>'amountMicros')::bigint;

    -- PROJECT_BUDGET: the budget row is locked first (budget, then account: the lock order of
    -- every path). Settled and held are read in one statement, so one snapshot: a Settle that
    -- commits between two reads would otherwise be missed by both (its hold gone from `held`,
    -- its cost not yet in `settled`).
    SELECT monthly_cap_micros INTO v_cap
    FROM project_budgets WHERE project_id = v_project AND monthly_cap_micros > 0 FOR UPDATE;
    IF v_cap IS NOT NULL THEN
      v_month := ledger_current_month();
      SELECT coalesce((SELECT s.settled_micros FROM project_month_spend s WHERE s.project_id = v_project AND s.month = v_month), 0),
        ledger_project_held(v_project)
      INTO v_settled, v_held;
    END IF;

    IF v_commercial THEN
      -- NO_OVERSPEND: the decision is this UPDATE's WHERE, on the locked account row.
      UPDATE accounts SET available_micros = available_micros - v_amount, held_micros = held_micros + v_amount
      WHERE organisation_id = v_organisation
        AND ledger_reserve_decision(NULL, v_fingerprint, NULL, false, true, available_micros, true, v_amount,
          v_settled + v_held, v_cap) = 'ok'
      RETURNING available_micros INTO v_available;
      v_holds := FOUND;
    END IF;
    IF NOT v_holds THEN
      -- Internal (nothing to hold), or a commercial Reserve the UPDATE refused: why, and the balance to answer with.
      SELECT available_micros INTO v_available FROM accounts WHERE organisation_id = v_organisation;
      v_has_account := FOUND;
      v_result := ledger_reserve_decision(NULL, v_fingerprint, NULL, false, v_has_account, v_available, v_commercial,
        v_amount, v_settled + v_held, v_cap);
      -- The UPDATE found too little, but a concurrent credit has landed since: nothing is held, retry later.
      IF v_commercial AND v_result = 'ok' THEN v_result := 'insufficient_balance'; END IF;
    END IF;
  END IF;

  IF v_result = 'replay' THEN
    RETURN ROW('ok', ledger_available_or_zero(v_earlier_organisation), v_earlier_expires_at_ms, 0::bigint, 0::bigint,
      0::bigint, ledger_reserve_detail(v_result, NULL, NULL))::ledger_op_result;
  ELSIF v_result <> 'ok' THEN
    RETURN ledger_refusal(v_result, ledger_reserve_detail(v_result, v_problems,
        CASE WHEN v_result = 'project_budget_exceeded' THEN
          format('project %s spend %s + held %s + amount %s µ₹ would pass its monthly cap of %s µ₹',
            v_month, v_settled, v_held, v_amount, v_cap) END),
      CASE WHEN v_result IN ('insufficient_balance', 'project_budget_exceeded') THEN v_available ELSE 0 END);
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
  IF v_cap IS NOT NULL THEN PERFORM ledger_raise_soft_alert_if_due(v_project); END IF;
  RETURN ROW('ok', v_available, v_expires_at_ms, 0::bigint, 0::bigint, 0::bigint, '')::ledger_op_result;
END
$$;
