-- A leaner hot path for Reserve and Settle (docs/ledger.md, "Hot path: 0005").
--
-- 1. Foreign keys off the tables every Reserve and Settle writes. Each was a per-row trigger
--    (an index lookup and a KEY SHARE lock on the parent, ≈ 9 µs, 9 per pair) re-proving what
--    the only writers already know: every row below is written by a ledger function (or a
--    ledger transaction in TypeScript) that has just found and locked its parent account or
--    reservation in the same transaction, and accounts and reservations are never deleted
--    (nothing in the service deletes them, and reservations have no DELETE path at all).
--    Verify (find-balance-differences.ts) now also reports orphans: a reservation, movement or
--    usage record whose account, reservation or credit does not exist.
--    Kept: the foreign keys of credits, budgets, budget changes, alerts and project spend (their
--    rows are written rarely: once per credit, budget change, alert or project and month).
ALTER TABLE reservations DROP CONSTRAINT reservations_organisation_id_fkey;
ALTER TABLE movements DROP CONSTRAINT movements_organisation_id_fkey;
ALTER TABLE movements DROP CONSTRAINT movements_reservation_id_fkey;
ALTER TABLE movements DROP CONSTRAINT movements_credit_id_fkey;
ALTER TABLE usage_records DROP CONSTRAINT usage_records_reservation_id_fkey;
ALTER TABLE usage_records DROP CONSTRAINT usage_records_organisation_id_fkey;

-- What the dropped keys also guaranteed, that a parent cannot vanish under its rows, the schema
-- still enforces: accounts and reservations refuse DELETE and TRUNCATE (statement triggers, so
-- the hot path's inserts and updates pay nothing for them).
CREATE FUNCTION refuse_parent_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'ledger table % is never deleted from: other rows name its rows (% refused)', TG_TABLE_NAME, TG_OP
    USING ERRCODE = 'P0001';
END
$$;
CREATE TRIGGER accounts_never_deleted BEFORE DELETE OR TRUNCATE ON accounts
  FOR EACH STATEMENT EXECUTE FUNCTION refuse_parent_delete();
CREATE TRIGGER reservations_never_deleted BEFORE DELETE OR TRUNCATE ON reservations
  FOR EACH STATEMENT EXECUTE FUNCTION refuse_parent_delete();

-- 2. Indexes no query of the service uses (each cost one index insert per row): movements are
--    read per organisation (movements_organisation) or in full (verify); held reservations are
--    read by deadline (reservations_due), by project (reservations_project_held) or in full.
DROP INDEX movements_reservation;
DROP INDEX reservations_organisation;

-- 3. The set-based batch of 0004, taking the hot rows last. In 0004 a batch locked its accounts
--    (and this month's project-spend rows) first and held them through all of its row writes,
--    so batches on one organisation ran strictly one after another whatever the number of
--    connections. Now the batch reads the balances without a lock, decides every operation on
--    them in arrival order (tentatively), writes its reservations, movements and usage records,
--    and only then locks the accounts (sorted), applies its net change to each in one UPDATE
--    and reads back the locked balances. Under that lock it decides every operation again from
--    the balance as it really was before this batch: law 1 (no overspend) is that second
--    decision, made under the account row lock like ledger_reserve's conditional UPDATE. If any
--    operation would be decided differently (another batch spent the balance meanwhile, only
--    possible near an empty wallet), the function raises SQLSTATE LR002 and the statement,
--    having written nothing, is run again by the caller. Writes depend only on the decisions
--    (ok or refused) and the amounts, never on the absolute balance, so when the decisions
--    agree every row written is the row the locked run would have written; the answers'
--    balances come from the locked run. Project spend rows are upserted last, after the
--    accounts (the global lock order: budgets -> reservations -> accounts -> project spend).
--    The shape check, the fallbacks to ledger_apply_batch_each and the arithmetic are 0004's.
CREATE FUNCTION ledger_apply_batch_set(ops jsonb)
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
  v_reserve_ids text[];
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
    array_agg(x."requestId" ORDER BY x.ord),
    coalesce(array_agg(x."reservationId") FILTER (WHERE x.kind = 'reserve'), '{}'),
    coalesce(array_agg(x."reservationId") FILTER (WHERE x.kind = 'settle'), '{}'),
    coalesce(array_agg(DISTINCT x."projectId") FILTER (WHERE x.kind = 'reserve'), '{}'),
    -- The common shape, judged on the operations alone: valid Reserves and Settles, ids distinct.
    bool_and(x.kind IN ('reserve', 'settle') AND x.problems IS NULL AND x."reservationId" IS NOT NULL)
      AND count(DISTINCT x."reservationId") = v_count
  INTO v_kind, v_id, v_fingerprint, v_organisation, v_project, v_billing_mode, v_amount, v_ttl_ms, v_model,
    v_input_tokens, v_output_tokens, v_cost, v_provider_cost, v_usage_source, v_request_id,
    v_reserve_ids, v_settle_ids, v_reserve_projects, v_eligible
  FROM ROWS FROM (jsonb_to_recordset(ops) AS (kind text, "reservationId" text, fingerprint text, problems text,
    "organisationId" text, "projectId" text, "billingMode" text, "amountMicros" bigint, "ttlMs" bigint,
    "modelSlug" text, "inputTokens" bigint, "outputTokens" bigint, "costMicros" bigint,
    "providerCostMicros" bigint, "usageSource" text, "requestId" text)) WITH ORDINALITY
    AS x(kind, "reservationId", fingerprint, problems, "organisationId", "projectId", "billingMode", "amountMicros",
      "ttlMs", "modelSlug", "inputTokens", "outputTokens", "costMicros", "providerCostMicros", "usageSource",
      "requestId", ord);
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
          cost_micros, provider_cost_micros, debited_micros, billing_mode, usage_source, request_id)
        SELECT v_id[g], v_res_organisation[g], v_res_project[g], v_model[g], v_input_tokens[g], v_output_tokens[g],
          v_cost[g], v_provider_cost[g], v_debit[g], v_res_billing_mode[g], v_usage_source[g], v_request_id[g]
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
        IF v_org_index IS NULL THEN
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

-- 4. One entry point, three paths. A batch of one (the concurrency-1 case, on every gateway
--    request's latency) runs its operation's function directly: no jsonb unnesting, no
--    pre-locking queries (ledger_reserve and ledger_settle lock in the global order on their
--    own), no loop. Batches of two or more take the set-based path above when they have the
--    common shape; every isolated rerun, and any other batch, the 0003 loop.
DROP FUNCTION ledger_apply_batch(jsonb, boolean);
CREATE FUNCTION ledger_apply_batch(ops jsonb, p_isolate boolean)
RETURNS TABLE (ordinal integer, result text, available_micros bigint, expires_at_ms bigint, debited_micros bigint,
  released_micros bigint, overrun_micros bigint, detail text, error_state text, error_message text)
LANGUAGE plpgsql AS $$
DECLARE
  v_outcome ledger_op_result;
BEGIN
  IF p_isolate THEN
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

-- 5. The Project Budget check reads this month's settled spend and the held Reserves in one
--    statement. In 0003 they were two statements, each with its own snapshot under READ
--    COMMITTED, and a Settle committing between them (on another connection: another ledger
--    replica, or a second batch in flight) was counted in neither, its hold gone from one and
--    its cost not yet in the other. Reserves of a project still serialise on its budget row.
CREATE OR REPLACE FUNCTION ledger_raise_soft_alert_if_due(p_project text) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
  budget record;
  v_month text := ledger_current_month();
  v_spent numeric;
BEGIN
  SELECT organisation_id, monthly_cap_micros, soft_alert_percent INTO budget
  FROM project_budgets WHERE project_id = p_project;
  IF NOT FOUND OR budget.monthly_cap_micros <= 0 THEN RETURN false; END IF;
  -- One statement, one snapshot (see ledger_reserve).
  SELECT coalesce((SELECT s.settled_micros FROM project_month_spend s WHERE s.project_id = p_project AND s.month = v_month), 0)
    + coalesce((SELECT sum(r.amount_micros) FROM reservations r WHERE r.project_id = p_project AND r.status = 'held'), 0)
  INTO v_spent;
  IF v_spent * 100 < budget.monthly_cap_micros::numeric * budget.soft_alert_percent THEN RETURN false; END IF;
  IF EXISTS (SELECT 1 FROM budget_alerts WHERE project_id = p_project AND month = v_month) THEN RETURN false; END IF;
  PERFORM pg_advisory_xact_lock(hashtext('ledger.budget_alerts'));
  INSERT INTO budget_alerts (organisation_id, project_id, month, spent_micros, monthly_cap_micros, soft_alert_percent)
  VALUES (budget.organisation_id, p_project, v_month, v_spent, budget.monthly_cap_micros, budget.soft_alert_percent)
  ON CONFLICT (project_id, month) DO NOTHING;
  RETURN FOUND;
END
$$;

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
