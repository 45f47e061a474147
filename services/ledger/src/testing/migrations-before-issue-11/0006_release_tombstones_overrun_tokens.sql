-- Release tombstones (ONE_OUTCOME) and overrun output tokens on usage records (BOUNDED_OVERRUN).
-- docs/ledger.md, "Release before Reserve: tombstones" and "Overrun output tokens".
--
-- 1. A Release that finds no reservation leaves a tombstone, and every Reserve path answers
--    'released' for a tombstoned id and writes nothing that moves money. Why: after a ledger
--    freeze, a proxy's Release overtook its queued Reserve, was answered "unknown", and the
--    Reserve then held money for a request that had already failed, until its deadline.
-- 2. usage_records.overrun_output_tokens, written by every settle path and compared as part of
--    the settle's idempotency payload.
-- The functions below restate ledger_reserve (0005), ledger_settle (0003), the set-based batch
-- (0005) and the batch entry point (0005) with these changes and nothing else.

-- One row per reservation id that was released before any Reserve of it arrived. Not part of
-- the money history (it moves nothing and is pruned), so no append-only trigger.
CREATE TABLE reservation_tombstones (
  reservation_id text PRIMARY KEY CHECK (length(reservation_id) BETWEEN 1 AND 128),
  -- The Release's reason, e.g. "upstream_not_called" (may be empty).
  reason text NOT NULL,
  -- Database clock, like every deadline of the ledger; the sweeper prunes by it.
  created_at timestamptz NOT NULL DEFAULT now()
);
-- The sweeper's pruning list, oldest first.
CREATE INDEX reservation_tombstones_created ON reservation_tombstones (created_at);

-- Output tokens the upstream produced beyond the Reserve: neither delivered nor billed, their
-- provider cost inside provider_cost_micros. Non-zero flags the record.
ALTER TABLE usage_records
  ADD COLUMN overrun_output_tokens bigint NOT NULL DEFAULT 0 CHECK (overrun_output_tokens >= 0);

-- The advisory lock that orders a Reserve and a Release of an unknown id on the same id, in
-- one of 256 buckets of the id's hash (two-key form, its own key space: no clash with the
-- budget-alert lock). Why a lock at all: under READ COMMITTED a Release that finds no
-- reservation and a Reserve that finds no tombstone could both commit (neither sees the
-- other's uncommitted row) and leave a held reservation beside a tombstone. Every Reserve takes
-- its bucket SHARED before it looks for a tombstone (Reserves never wait for each other), and a
-- Release of an unknown id takes it EXCLUSIVE before it looks again and writes the tombstone:
-- whichever comes second sees the first one's committed row. Buckets bound the locks a batch
-- holds (≤ 256, whatever its size) at the price of a Release of an unknown id (rare) sometimes
-- waiting for an unrelated Reserve of its bucket to commit. Reserves take their buckets before
-- any row lock, and a Release waiting for its bucket holds nothing, so this adds no deadlock.
CREATE FUNCTION ledger_reservation_lock_bucket(p_id text) RETURNS integer LANGUAGE sql IMMUTABLE AS $$
  SELECT hashtext(p_id) & 255
$$;

-- Takes the Reserve side (shared) of the tombstone lock for these ids. 1819501666 is an
-- arbitrary constant naming this use of the two-key advisory lock space.
CREATE FUNCTION ledger_lock_reserve_ids(p_ids text[]) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_advisory_xact_lock_shared(1819501666, b.bucket)
  FROM (SELECT DISTINCT ledger_reservation_lock_bucket(i) AS bucket FROM unnest(p_ids) AS i) AS b;
END
$$;

-- Release of an id with no reservation: under the exclusive tombstone lock, looks again (a
-- Reserve that held the bucket has committed by now) and, if there is still no reservation,
-- leaves the tombstone (a repeated Release finds it and changes nothing). Returns false when a
-- reservation exists after all: the caller releases it as usual.
CREATE FUNCTION ledger_tombstone_unknown_reservation(p_id text, p_reason text) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_advisory_xact_lock(1819501666, ledger_reservation_lock_bucket(p_id));
  IF EXISTS (SELECT 1 FROM reservations WHERE id = p_id) THEN RETURN false; END IF;
  INSERT INTO reservation_tombstones (reservation_id, reason) VALUES (p_id, p_reason) ON CONFLICT (reservation_id) DO NOTHING;
  RETURN true;
END
$$;

-- Reserve (law 1, law 9), as in 0005, plus the tombstone check after the input check.
CREATE OR REPLACE FUNCTION ledger_reserve(op jsonb) RETURNS ledger_op_result LANGUAGE plpgsql AS $$
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
  -- ONE_OUTCOME: a Release of this id came first and gave up on it; hold nothing. (A tombstone
  -- and a reservation never share an id, so this also comes before replay and conflict.)
  PERFORM pg_advisory_xact_lock_shared(1819501666, ledger_reservation_lock_bucket(v_id));
  IF EXISTS (SELECT 1 FROM reservation_tombstones WHERE reservation_id = v_id) THEN
    RETURN ledger_refusal('released', 'a Release of this reservation_id arrived first; nothing is held', 0);
  END IF;

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
    -- One statement, so one snapshot: a Settle that commits between two reads would otherwise
    -- be missed by both (its hold gone from `held`, its cost not yet in `settled`).
    SELECT coalesce((SELECT s.settled_micros FROM project_month_spend s WHERE s.project_id = v_project AND s.month = v_month), 0),
      coalesce((SELECT sum(r.amount_micros) FROM reservations r WHERE r.project_id = v_project AND r.status = 'held'), 0)
    INTO v_settled, v_held;
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

-- Settle (laws 3, 5, 6, 7), as in 0003, plus overrun_output_tokens on the usage record it
-- writes or finalises (absent in the jsonb: 0).
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
      request_id = CASE WHEN v_actual THEN op->>'requestId' ELSE request_id END,
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

-- The set-based batch of 0005, plus: its Reserves take their tombstone lock buckets (shared)
-- right after parsing, before any row lock; a tombstoned Reserve is decided 'released' (in
-- both passes, before every other Reserve result: a valid operation has no input problem) and
-- writes nothing; Settles write overrun_output_tokens on their usage records.
CREATE OR REPLACE FUNCTION ledger_apply_batch_set(ops jsonb)
RETURNS TABLE (ordinal integer, result text, available_micros bigint, expires_at_ms bigint, debited_micros bigint,
  released_micros bigint, overrun_micros bigint, detail text, error_state text, error_message text)
LANGUAGE plpgsql AS $$
DECLARE
  v_count integer := jsonb_array_length(ops);
  v_month text := ledger_current_month();
  v_eligible boolean;
  v_index integer;
  v_org_index integer;
  v_from_hold bigint;
  v_settles_found integer := 0;
  v_pass integer;
  v_ok boolean;
  res record;
  acc record;
  -- The operations as arrays (index = ordinal), typed as the 0003 functions read them.
  v_kind text[];
  v_id text[];
  v_fingerprint text[];
  v_organisation text[];
  v_project text[];
  v_billing_mode text[];
  v_amount bigint[];
  v_ttl_ms bigint[];
  v_model text[];
  v_input_tokens bigint[];
  v_output_tokens bigint[];
  v_cost bigint[];
  v_provider_cost bigint[];
  v_usage_source text[];
  v_request_id text[];
  v_overrun_tokens bigint[];
  v_reserve_ids text[];
  -- Reserve ids of the batch with a tombstone (answered 'released', nothing written).
  v_tombstoned text[] := '{}';
  v_settle_ids text[];
  v_reserve_projects text[];
  v_settle_projects text[];
  v_lock_organisations text[];
  -- Accounts the batch touches (sorted), as parallel arrays of running balances, µ₹: pass 1
  -- runs on the unlocked read, pass 2 on the balances under the lock.
  v_orgs text[];
  v_available bigint[];
  v_held bigint[];
  v_debited bigint[];
  -- The batch's net change per account, µ₹ (from pass 1; pass 2 must reproduce it).
  v_available_delta bigint[];
  v_held_delta bigint[];
  v_debited_delta bigint[];
  -- Per operation (index = ordinal): the answer, and what a Settle writes (µ₹).
  v_result text[] := array_fill(NULL::text, ARRAY[v_count]);
  v_answer_available bigint[] := array_fill(0::bigint, ARRAY[v_count]);
  v_expires_at_ms bigint[] := array_fill(0::bigint, ARRAY[v_count]);
  v_debit bigint[] := array_fill(0::bigint, ARRAY[v_count]);
  v_release bigint[] := array_fill(0::bigint, ARRAY[v_count]);
  v_overrun bigint[] := array_fill(0::bigint, ARRAY[v_count]);
  v_detail text[] := array_fill(''::text, ARRAY[v_count]);
  v_tentative text[];
  -- Per Settle: its reservation's organisation, project, billing mode and Reserve (µ₹).
  v_res_organisation text[] := array_fill(NULL::text, ARRAY[v_count]);
  v_res_project text[] := array_fill(NULL::text, ARRAY[v_count]);
  v_res_billing_mode text[] := array_fill(NULL::text, ARRAY[v_count]);
  v_res_amount bigint[] := array_fill(NULL::bigint, ARRAY[v_count]);
BEGIN
  SELECT array_agg(x.kind ORDER BY x.ord), array_agg(x."reservationId" ORDER BY x.ord),
    array_agg(x.fingerprint ORDER BY x.ord), array_agg(x."organisationId" ORDER BY x.ord),
    array_agg(x."projectId" ORDER BY x.ord), array_agg(x."billingMode" ORDER BY x.ord),
    array_agg(x."amountMicros" ORDER BY x.ord), array_agg(x."ttlMs" ORDER BY x.ord),
    array_agg(x."modelSlug" ORDER BY x.ord), array_agg(x."inputTokens" ORDER BY x.ord),
    array_agg(x."outputTokens" ORDER BY x.ord), array_agg(x."costMicros" ORDER BY x.ord),
    array_agg(x."providerCostMicros" ORDER BY x.ord), array_agg(x."usageSource" ORDER BY x.ord),
    array_agg(x."requestId" ORDER BY x.ord), array_agg(coalesce(x."overrunOutputTokens", 0) ORDER BY x.ord),
    coalesce(array_agg(x."reservationId") FILTER (WHERE x.kind = 'reserve'), '{}'),
    coalesce(array_agg(x."reservationId") FILTER (WHERE x.kind = 'settle'), '{}'),
    coalesce(array_agg(DISTINCT x."projectId") FILTER (WHERE x.kind = 'reserve'), '{}'),
    -- The common shape, judged on the operations alone: valid Reserves and Settles, ids distinct.
    bool_and(x.kind IN ('reserve', 'settle') AND x.problems IS NULL AND x."reservationId" IS NOT NULL)
      AND count(DISTINCT x."reservationId") = v_count
  INTO v_kind, v_id, v_fingerprint, v_organisation, v_project, v_billing_mode, v_amount, v_ttl_ms, v_model,
    v_input_tokens, v_output_tokens, v_cost, v_provider_cost, v_usage_source, v_request_id, v_overrun_tokens,
    v_reserve_ids, v_settle_ids, v_reserve_projects, v_eligible
  FROM ROWS FROM (jsonb_to_recordset(ops) AS (kind text, "reservationId" text, fingerprint text, problems text,
    "organisationId" text, "projectId" text, "billingMode" text, "amountMicros" bigint, "ttlMs" bigint,
    "modelSlug" text, "inputTokens" bigint, "outputTokens" bigint, "costMicros" bigint,
    "providerCostMicros" bigint, "usageSource" text, "requestId" text, "overrunOutputTokens" bigint)) WITH ORDINALITY
    AS x(kind, "reservationId", fingerprint, problems, "organisationId", "projectId", "billingMode", "amountMicros",
      "ttlMs", "modelSlug", "inputTokens", "outputTokens", "costMicros", "providerCostMicros", "usageSource",
      "requestId", "overrunOutputTokens", ord);
  -- The tombstone lock (shared) before any row lock, for this path and the loop it may fall back to.
  IF cardinality(v_reserve_ids) > 0 THEN PERFORM ledger_lock_reserve_ids(v_reserve_ids); END IF;
  IF NOT coalesce(v_eligible, false) THEN
    RETURN QUERY SELECT * FROM ledger_apply_batch_each(ops, false);
    RETURN;
  END IF;

  -- Lock order of every path: budget rows -> reservation rows -> (later) account rows ->
  -- project-spend rows, each sorted.
  IF cardinality(v_reserve_projects) > 0 THEN
    PERFORM 1 FROM project_budgets b WHERE b.project_id = ANY (v_reserve_projects) ORDER BY b.project_id FOR UPDATE;
  END IF;
  IF cardinality(v_settle_ids) > 0 THEN
    FOR res IN SELECT r.id, r.organisation_id, r.project_id, r.billing_mode, r.amount_micros, r.status, r.settle_fingerprint
      FROM reservations r WHERE r.id = ANY (v_settle_ids) ORDER BY r.id FOR UPDATE LOOP
      -- Settles must be of held reservations never settled (else: replay, conflict, late settle...).
      IF res.status <> 'held' OR res.settle_fingerprint IS NOT NULL THEN v_eligible := false; END IF;
      v_settles_found := v_settles_found + 1;
      v_index := array_position(v_id, res.id);
      v_res_organisation[v_index] := res.organisation_id;
      v_res_project[v_index] := res.project_id;
      v_res_billing_mode[v_index] := res.billing_mode;
      v_res_amount[v_index] := res.amount_micros;
    END LOOP;
    IF NOT v_eligible OR v_settles_found <> cardinality(v_settle_ids) THEN
      RETURN QUERY SELECT * FROM ledger_apply_batch_each(ops, false);
      RETURN;
    END IF;
  END IF;

  SELECT (SELECT coalesce(array_agg(DISTINCT o), '{}') FROM unnest(v_organisation || v_res_organisation) AS o WHERE o IS NOT NULL),
    (SELECT coalesce(array_agg(DISTINCT p), '{}') FROM unnest(v_res_project) AS p WHERE p IS NOT NULL)
  INTO v_lock_organisations, v_settle_projects;
  -- Reserves must be of new ids, no project of the batch may have a budget cap; and the
  -- balances, read without a lock (sorted by organisation, as they will be locked).
  SELECT NOT EXISTS (SELECT 1 FROM reservations r WHERE r.id = ANY (v_reserve_ids))
    AND NOT EXISTS (SELECT 1 FROM project_budgets b
      WHERE b.project_id = ANY (v_reserve_projects || v_settle_projects) AND b.monthly_cap_micros > 0),
    (SELECT coalesce(array_agg(a.organisation_id ORDER BY a.organisation_id), '{}') FROM accounts a
      WHERE a.organisation_id = ANY (v_lock_organisations))
  INTO v_eligible, v_orgs;
  IF NOT v_eligible THEN
    RETURN QUERY SELECT * FROM ledger_apply_batch_each(ops, false);
    RETURN;
  END IF;
  -- ONE_OUTCOME: Reserves whose id a Release reached first (one index probe per Reserve). No
  -- tombstone can appear meanwhile: a Release needs the bucket this batch holds shared.
  IF cardinality(v_reserve_ids) > 0 THEN
    SELECT coalesce(array_agg(t.reservation_id), '{}') INTO v_tombstoned
    FROM reservation_tombstones t WHERE t.reservation_id = ANY (v_reserve_ids);
  END IF;
  SELECT array_agg(a.available_micros ORDER BY a.organisation_id), array_agg(a.held_micros ORDER BY a.organisation_id),
    array_agg(a.debited_micros ORDER BY a.organisation_id)
  INTO v_available, v_held, v_debited
  FROM accounts a WHERE a.organisation_id = ANY (v_orgs);
  IF coalesce(cardinality(v_available), 0) <> cardinality(v_orgs) THEN
    -- Accounts are never deleted; should one be, the loop answers as it must.
    RETURN QUERY SELECT * FROM ledger_apply_batch_each(ops, false);
    RETURN;
  END IF;
  v_available_delta := v_available;
  v_held_delta := v_held;
  v_debited_delta := v_debited;

  -- Pass 1 decides on the unlocked balances (what to write); pass 2, after the accounts are
  -- locked, decides again on the locked balances (law 1 and the answers) and must agree.
  FOR v_pass IN 1 .. 2 LOOP
    IF v_pass = 2 THEN
      v_tentative := v_result;
      -- Net change per account from pass 1, µ₹.
      FOR v_org_index IN 1 .. coalesce(cardinality(v_orgs), 0) LOOP
        v_available_delta[v_org_index] := v_available[v_org_index] - v_available_delta[v_org_index];
        v_held_delta[v_org_index] := v_held[v_org_index] - v_held_delta[v_org_index];
        v_debited_delta[v_org_index] := v_debited[v_org_index] - v_debited_delta[v_org_index];
      END LOOP;

      -- Write each table once, in operation order. Reservations first.
      INSERT INTO reservations (id, organisation_id, project_id, billing_mode, amount_micros, model_slug, expires_at,
        request_fingerprint)
      SELECT v_id[g], v_organisation[g], v_project[g], v_billing_mode[g], v_amount[g], v_model[g],
        now() + v_ttl_ms[g] * interval '1 millisecond', v_fingerprint[g]
      FROM generate_series(1, v_count) AS g
      WHERE v_kind[g] = 'reserve' AND v_result[g] = 'ok'
      ORDER BY g;

      IF cardinality(v_settle_ids) > 0 THEN
        UPDATE reservations r SET status = 'settled', resolved_at = now(),
          settle_fingerprint = v_fingerprint[s.g], settle_debited_micros = v_debit[s.g],
          settle_released_micros = v_release[s.g], settle_overrun_micros = v_overrun[s.g], settle_detail = ''
        FROM (SELECT u.id, array_position(v_id, u.id) AS g FROM unnest(v_settle_ids) AS u (id)) AS s
        WHERE r.id = s.id;
      END IF;

      -- Movements: a Reserve's hold; a Settle's debit, then its unused hold. Internal billing
      -- mode moves no wallet money and writes none; amounts of zero write nothing.
      INSERT INTO movements (organisation_id, kind, amount_micros, credited_delta_micros, available_delta_micros,
        held_delta_micros, debited_delta_micros, reservation_id, detail)
      SELECT m.organisation_id, m.kind, m.amount_micros, 0, m.available_delta_micros, m.held_delta_micros,
        m.debited_delta_micros, v_id[m.g], m.detail
      FROM generate_series(1, v_count) AS g
      CROSS JOIN LATERAL (VALUES
        (g, 0, v_organisation[g], 'reserve', CASE WHEN v_kind[g] = 'reserve' AND v_result[g] = 'ok'
            AND v_billing_mode[g] = 'commercial' THEN v_amount[g] ELSE 0 END,
          -v_amount[g], v_amount[g], 0::bigint,
          jsonb_build_object('projectId', v_project[g], 'modelSlug', v_model[g])),
        (g, 1, v_res_organisation[g], 'settle', CASE WHEN v_kind[g] = 'settle' THEN v_debit[g] ELSE 0 END,
          -v_overrun[g], -(v_debit[g] - v_overrun[g]), v_debit[g],
          jsonb_build_object('usageSource', v_usage_source[g], 'requestId', v_request_id[g])),
        (g, 2, v_res_organisation[g], 'release', CASE WHEN v_kind[g] = 'settle' THEN v_release[g] ELSE 0 END,
          v_release[g], -v_release[g], 0::bigint,
          jsonb_build_object('reason', 'unused reserve returned at settlement'))
      ) AS m (g, step, organisation_id, kind, amount_micros, available_delta_micros, held_delta_micros,
        debited_delta_micros, detail)
      WHERE m.amount_micros > 0
      ORDER BY m.g, m.step;

      -- One usage record per settled reservation (law 5).
      IF cardinality(v_settle_ids) > 0 THEN
        INSERT INTO usage_records (reservation_id, organisation_id, project_id, model_slug, input_tokens, output_tokens,
          cost_micros, provider_cost_micros, debited_micros, billing_mode, usage_source, request_id, overrun_output_tokens)
        SELECT v_id[g], v_res_organisation[g], v_res_project[g], v_model[g], v_input_tokens[g], v_output_tokens[g],
          v_cost[g], v_provider_cost[g], v_debit[g], v_res_billing_mode[g], v_usage_source[g], v_request_id[g],
          v_overrun_tokens[g]
        FROM generate_series(1, v_count) AS g
        WHERE v_kind[g] = 'settle'
        ORDER BY g;
      END IF;

      -- Now the hot rows: the accounts, locked in sorted order (one UPDATE of one row locks
      -- just it; several are locked first, sorted, so two batches cannot deadlock), each
      -- changed by the batch's net amounts; RETURNING gives the balances after the change,
      -- from which the locked balances before it follow.
      IF cardinality(v_orgs) > 1 THEN
        PERFORM 1 FROM accounts a WHERE a.organisation_id = ANY (v_orgs) ORDER BY a.organisation_id FOR NO KEY UPDATE;
      END IF;
      FOR acc IN
        UPDATE accounts a SET available_micros = a.available_micros + d.available_delta,
          held_micros = a.held_micros + d.held_delta, debited_micros = a.debited_micros + d.debited_delta
        FROM unnest(v_orgs, v_available_delta, v_held_delta, v_debited_delta)
          AS d (organisation_id, available_delta, held_delta, debited_delta)
        WHERE a.organisation_id = d.organisation_id
        RETURNING a.organisation_id, a.available_micros - d.available_delta AS available_before,
          a.held_micros - d.held_delta AS held_before, a.debited_micros - d.debited_delta AS debited_before
      LOOP
        v_org_index := array_position(v_orgs, acc.organisation_id);
        v_available[v_org_index] := acc.available_before;
        v_held[v_org_index] := acc.held_before;
        v_debited[v_org_index] := acc.debited_before;
      END LOOP;
      v_answer_available := array_fill(0::bigint, ARRAY[v_count]);
      v_expires_at_ms := array_fill(0::bigint, ARRAY[v_count]);
    END IF;

    -- Decide each operation in arrival order, with the arithmetic of ledger_reserve / ledger_settle.
    FOR v_index IN 1 .. v_count LOOP
      IF v_kind[v_index] = 'reserve' THEN
        v_org_index := array_position(v_orgs, v_organisation[v_index]);
        IF v_id[v_index] = ANY (v_tombstoned) THEN
          -- As ledger_reserve: decided before every other result of a valid Reserve.
          v_result[v_index] := 'released';
          v_detail[v_index] := 'a Release of this reservation_id arrived first; nothing is held';
        ELSIF v_org_index IS NULL THEN
          v_result[v_index] := 'organisation_unknown';
          v_detail[v_index] := 'organisation has no account';
        ELSIF v_billing_mode[v_index] = 'commercial' AND v_available[v_org_index] < v_amount[v_index] THEN
          -- Law 1: the conditional UPDATE of ledger_reserve would find no row.
          v_result[v_index] := 'insufficient_balance';
          v_detail[v_index] := 'available balance is below amount_micros';
          v_answer_available[v_index] := v_available[v_org_index];
        ELSE
          IF v_billing_mode[v_index] = 'commercial' THEN
            v_available[v_org_index] := v_available[v_org_index] - v_amount[v_index];
            v_held[v_org_index] := v_held[v_org_index] + v_amount[v_index];
          END IF;
          v_result[v_index] := 'ok';
          v_detail[v_index] := '';
          v_answer_available[v_index] := v_available[v_org_index];
          v_expires_at_ms[v_index] :=
            floor(extract(epoch FROM now() + v_ttl_ms[v_index] * interval '1 millisecond') * 1000)::bigint;
        END IF;
      ELSE
        v_org_index := array_position(v_orgs, v_res_organisation[v_index]);
        IF v_res_billing_mode[v_index] = 'commercial' THEN
          -- Held, not expired: the cost comes from the hold first, beyond it (overrun) from available.
          v_from_hold := least(v_cost[v_index], v_res_amount[v_index]);
          v_debit[v_index] := v_cost[v_index];
          v_release[v_index] := v_res_amount[v_index] - v_from_hold;
          v_overrun[v_index] := v_cost[v_index] - v_from_hold;
          v_held[v_org_index] := v_held[v_org_index] - v_res_amount[v_index];
          v_available[v_org_index] := v_available[v_org_index] + v_release[v_index] - v_overrun[v_index];
          v_debited[v_org_index] := v_debited[v_org_index] + v_cost[v_index];
        END IF;
        v_result[v_index] := 'ok';
        v_answer_available[v_index] := v_available[v_org_index];
      END IF;
    END LOOP;
  END LOOP;

  -- Law 1 under the lock: every decision of pass 2 must be that of pass 1, which the rows
  -- written follow. Otherwise nothing of this statement stays, and the caller runs it again.
  IF v_result IS DISTINCT FROM v_tentative THEN
    RAISE EXCEPTION 'ledger batch decided on a balance that changed before it was locked; run it again'
      USING ERRCODE = 'LR002';
  END IF;

  -- This month's spend per project (both billing modes), one row each, after the accounts.
  INSERT INTO project_month_spend (project_id, month, organisation_id, settled_micros)
  SELECT v_res_project[g], v_month, (array_agg(v_res_organisation[g] ORDER BY g))[1], sum(v_cost[g])::bigint
  FROM generate_series(1, v_count) AS g
  WHERE v_kind[g] = 'settle' AND v_cost[g] > 0
  GROUP BY v_res_project[g]
  ORDER BY v_res_project[g]
  ON CONFLICT (project_id, month) DO UPDATE SET settled_micros = project_month_spend.settled_micros + EXCLUDED.settled_micros;

  RETURN QUERY
  SELECT g, v_result[g], v_answer_available[g], v_expires_at_ms[g], v_debit[g], v_release[g], v_overrun[g],
    v_detail[g], NULL::text, NULL::text
  FROM generate_series(1, v_count) AS g;
END
$$;

-- The entry point of 0005, plus: an isolated run takes its Reserves' tombstone locks first, in
-- the outer transaction (a lock taken inside an operation's subtransaction would be let go if
-- that operation failed). A batch of one locks inside ledger_reserve; the set-based path (and
-- the loop it falls back to) right after parsing.
CREATE OR REPLACE FUNCTION ledger_apply_batch(ops jsonb, p_isolate boolean)
RETURNS TABLE (ordinal integer, result text, available_micros bigint, expires_at_ms bigint, debited_micros bigint,
  released_micros bigint, overrun_micros bigint, detail text, error_state text, error_message text)
LANGUAGE plpgsql AS $$
DECLARE
  v_outcome ledger_op_result;
BEGIN
  IF p_isolate THEN
    PERFORM ledger_lock_reserve_ids(ARRAY(SELECT o->>'reservationId' FROM jsonb_array_elements(ops) AS o
      WHERE o->>'kind' = 'reserve' AND o->>'reservationId' IS NOT NULL));
    RETURN QUERY SELECT * FROM ledger_apply_batch_each(ops, true);
  ELSIF jsonb_array_length(ops) = 1 THEN
    v_outcome := ledger_apply_operation(ops->0);
    RETURN QUERY SELECT 1, v_outcome.result, v_outcome.available_micros, v_outcome.expires_at_ms,
      v_outcome.debited_micros, v_outcome.released_micros, v_outcome.overrun_micros, v_outcome.detail, NULL::text, NULL::text;
  ELSE
    RETURN QUERY SELECT * FROM ledger_apply_batch_set(ops);
  END IF;
END
$$;
