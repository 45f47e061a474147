-- ledger_apply_batch_set: a batch of two or more Reserves and Settles, set-based (docs/ledger.md,
-- "Set-based batches"). The hot path of the ledger.
-- Decides: NO_OVERSPEND under the account lock (second pass below). Each Reserve's result is
-- ledger_reserve_decision's and each Settle's split ledger_settlement_split's, the functions
-- the per-operation path (ledger_reserve, ledger_settle) asks, so the two paths cannot disagree.
--
-- It takes the common shape only: valid Reserves of new ids (no promotion), valid Settles of held
-- reservations and carved Settles of held grants (a carve writes no reservation, its usage
-- record keeps the settlement; see ledger_settle_carved), all ids distinct, no project with a budget cap. Any other batch (replays,
-- conflicts, invalid input, late settles after expiry, budgeted projects, an id twice) goes to
-- ledger_apply_batch_each. The batch decides every operation in arrival order in memory and
-- writes each table once (one multi-row INSERT or UPDATE per table). It reads the balances
-- without a lock, decides every operation on them (pass 1), writes its reservations, movements
-- and usage records, and only then locks the accounts (sorted), applies its net change to each
-- in one UPDATE and reads back the locked balances. Under that lock it decides every operation
-- again from the balance as it really was before this batch (pass 2). If any operation would be
-- decided differently (another batch spent the balance meanwhile, only possible near an empty
-- wallet), it raises SQLSTATE LR002 and the statement, having written nothing, is run again by
-- the caller. Writes depend only on the decisions and the amounts, never on the absolute
-- balance, so when the decisions agree every row written is the row the locked run would have
-- written; the answers' balances come from the locked run. Its Reserves take their tombstone
-- lock buckets (shared) right after parsing, before any row lock; a tombstoned Reserve is
-- answered 'released' and writes nothing (ONE_OUTCOME). Project spend rows are upserted last,
-- after the accounts, and the usage records' daily roll-ups after them, one row per organisation,
-- project, model and billing mode of the batch (the global lock order: budgets -> reservations ->
-- accounts -> spend -> roll-ups).
CREATE OR REPLACE FUNCTION ledger_apply_batch_set(ops jsonb)
RETURNS TABLE (ordinal integer, result text, available_micros bigint, expires_at_ms bigint, debited_micros bigint,
  released_micros bigint, overrun_micros bigint, detail text, error_state text, error_message text)
LANGUAGE plpgsql AS $$
DECLARE
  v_count integer := jsonb_array_length(ops);
  v_month text := ledger_current_month();
  -- The day of this batch's usage records (their created_at is now()), Asia/Kolkata.
  v_day date := (now() AT TIME ZONE 'Asia/Kolkata')::date;
  v_eligible boolean;
  v_index integer;
  v_org_index integer;
  v_settles_found integer := 0;
  v_pass integer;
  v_ok boolean;
  res record;
  acc record;
  -- The operations as arrays (index = ordinal), typed as ledger_reserve and ledger_settle read them.
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
  -- A carved Settle's grant and Reserve (µ₹); NULL otherwise.
  v_grant_ref text[];
  v_reserved bigint[];
  -- Each Settle's usage by token class (issue 25), NULL for a plain usage or another operation.
  v_token_classes jsonb[];
  -- Each Settle's answering upstream deployment (issue 29), NULL when it names none.
  v_deployment text[];
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
  -- Carved Settles (a Reserve taken from a grant in memory, no reservation yet): per operation,
  -- whether it is one, what it takes from its grant's hold and from available (µ₹); per grant
  -- (sorted, locked), its id and running remaining (µ₹).
  v_carve boolean[] := array_fill(false, ARRAY[v_count]);
  v_from_grant bigint[] := array_fill(0::bigint, ARRAY[v_count]);
  v_from_available bigint[];
  v_carve_grant_ids text[];
  v_grants text[] := '{}';
  v_grant_remaining bigint[] := '{}';
  v_grant_index integer;
  -- When the oldest of those grants was created: a carve's usage record is never older.
  v_grants_since timestamptz := 'infinity';
  -- The carves' reservation ids.
  v_carve_ids text[];
BEGIN
  SELECT array_agg(x.kind ORDER BY x.ord), array_agg(x."reservationId" ORDER BY x.ord),
    array_agg(x.fingerprint ORDER BY x.ord), array_agg(x."organisationId" ORDER BY x.ord),
    array_agg(x."projectId" ORDER BY x.ord), array_agg(x."billingMode" ORDER BY x.ord),
    array_agg(x."amountMicros" ORDER BY x.ord), array_agg(x."ttlMs" ORDER BY x.ord),
    array_agg(x."modelSlug" ORDER BY x.ord), array_agg(x."inputTokens" ORDER BY x.ord),
    array_agg(x."outputTokens" ORDER BY x.ord), array_agg(x."costMicros" ORDER BY x.ord),
    array_agg(x."providerCostMicros" ORDER BY x.ord), array_agg(x."usageSource" ORDER BY x.ord),
    array_agg(x."requestId" ORDER BY x.ord), array_agg(coalesce(x."overrunOutputTokens", 0) ORDER BY x.ord),
    array_agg(x."grantId" ORDER BY x.ord), array_agg(x."reservedMicros" ORDER BY x.ord),
    array_agg(x."tokenClasses"::jsonb ORDER BY x.ord), array_agg(nullif(x.deployment, '') ORDER BY x.ord),
    coalesce(array_agg(x."reservationId") FILTER (WHERE x.kind = 'reserve'), '{}'),
    coalesce(array_agg(x."reservationId") FILTER (WHERE x.kind = 'settle'), '{}'),
    coalesce(array_agg(DISTINCT x."projectId") FILTER (WHERE x.kind = 'reserve'), '{}'),
    -- The common shape, judged on the operations alone: valid Reserves and Settles, ids distinct.
    -- (a promotion, a Reserve with a grant, takes the loop).
    bool_and(x.kind IN ('reserve', 'settle') AND x.problems IS NULL AND x."reservationId" IS NOT NULL
      AND NOT (x.kind = 'reserve' AND x."grantId" IS NOT NULL))
      AND count(DISTINCT x."reservationId") = v_count
  INTO v_kind, v_id, v_fingerprint, v_organisation, v_project, v_billing_mode, v_amount, v_ttl_ms, v_model,
    v_input_tokens, v_output_tokens, v_cost, v_provider_cost, v_usage_source, v_request_id, v_overrun_tokens,
    v_grant_ref, v_reserved, v_token_classes, v_deployment, v_reserve_ids, v_settle_ids, v_reserve_projects, v_eligible
  FROM ROWS FROM (jsonb_to_recordset(ops) AS (kind text, "reservationId" text, fingerprint text, problems text,
    "organisationId" text, "projectId" text, "billingMode" text, "amountMicros" bigint, "ttlMs" bigint,
    "modelSlug" text, "inputTokens" bigint, "outputTokens" bigint, "costMicros" bigint,
    "providerCostMicros" bigint, "usageSource" text, "requestId" text, "overrunOutputTokens" bigint,
    "grantId" text, "reservedMicros" bigint, "tokenClasses" text, deployment text)) WITH ORDINALITY
    AS x(kind, "reservationId", fingerprint, problems, "organisationId", "projectId", "billingMode", "amountMicros",
      "ttlMs", "modelSlug", "inputTokens", "outputTokens", "costMicros", "providerCostMicros", "usageSource",
      "requestId", "overrunOutputTokens", "grantId", "reservedMicros", "tokenClasses", deployment, ord);
  -- The tombstone lock (shared) before any row lock, for this path and the loop it may fall back to.
  IF cardinality(v_reserve_ids) > 0 THEN PERFORM ledger_lock_reserve_ids(v_reserve_ids); END IF;
  IF NOT coalesce(v_eligible, false) THEN
    RETURN QUERY SELECT * FROM ledger_apply_batch_each(ops, false);
    RETURN;
  END IF;

  -- Lock order of every path: budget rows -> reservation rows -> grant rows -> (later) account
  -- rows -> project-spend rows, each sorted.
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
    IF NOT v_eligible THEN
      RETURN QUERY SELECT * FROM ledger_apply_batch_each(ops, false);
      RETURN;
    END IF;
    -- A Settle whose reservation does not exist is a carve if it names a grant (else: the loop
    -- answers reservation_unknown). A carve whose reservation exists (a replay, a promotion)
    -- was found above and is an ordinary Settle.
    FOR v_index IN 1 .. v_count LOOP
      IF v_kind[v_index] = 'settle' AND v_res_amount[v_index] IS NULL THEN
        IF v_grant_ref[v_index] IS NULL OR coalesce(v_reserved[v_index], 0) <= 0 THEN
          RETURN QUERY SELECT * FROM ledger_apply_batch_each(ops, false);
          RETURN;
        END IF;
        v_carve[v_index] := true;
      END IF;
    END LOOP;
    SELECT coalesce(array_agg(DISTINCT v_grant_ref[g]), '{}') INTO v_carve_grant_ids
    FROM generate_series(1, v_count) AS g WHERE v_carve[g];
    IF cardinality(v_carve_grant_ids) > 0 THEN
      -- The carves' grants, locked sorted; each must be held (a settle after its grant was
      -- closed or expired, or of an unknown grant, takes the loop).
      FOR res IN SELECT gr.id, gr.organisation_id, gr.project_id, gr.billing_mode, gr.remaining_micros, gr.status, gr.created_at
        FROM grants gr WHERE gr.id = ANY (v_carve_grant_ids) ORDER BY gr.id FOR UPDATE LOOP
        IF res.status <> 'held' THEN v_eligible := false; END IF;
        v_grants_since := least(v_grants_since, res.created_at);
        v_grants := v_grants || res.id;
        v_grant_remaining := v_grant_remaining || res.remaining_micros;
        FOR v_index IN 1 .. v_count LOOP
          IF v_carve[v_index] AND v_grant_ref[v_index] = res.id THEN
            v_res_organisation[v_index] := res.organisation_id;
            v_res_project[v_index] := res.project_id;
            v_res_billing_mode[v_index] := res.billing_mode;
            v_res_amount[v_index] := v_reserved[v_index];
          END IF;
        END LOOP;
      END LOOP;
      IF NOT v_eligible OR cardinality(v_grants) <> cardinality(v_carve_grant_ids) THEN
        RETURN QUERY SELECT * FROM ledger_apply_batch_each(ops, false);
        RETURN;
      END IF;
      -- Under the grant locks now held (migration 0021), a carve that settled already (a replay:
      -- its usage record, written since its grant was created) or that a promotion made a
      -- reservation while this batch waited for the grant (ONE_OUTCOME: it is then an ordinary
      -- Settle of that reservation) takes the loop, which answers it as ledger_settle does.
      v_carve_ids := ARRAY(SELECT v_id[g] FROM generate_series(1, v_count) AS g WHERE v_carve[g]);
      IF EXISTS (SELECT 1 FROM ledger_carve_records(v_carve_ids, v_grants_since))
        OR EXISTS (SELECT 1 FROM reservations r WHERE r.id = ANY (v_carve_ids)) THEN
        RETURN QUERY SELECT * FROM ledger_apply_batch_each(ops, false);
        RETURN;
      END IF;
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

  -- Each commercial Settle's split (ledger_settlement_split, inlined), in one statement: it
  -- depends on the Settle's Reserve and cost only, never on a running balance. Internal billing
  -- mode moves no wallet money: zeros.
  SELECT array_agg(coalesce(s.debited_micros, 0) ORDER BY g), array_agg(coalesce(s.released_micros, 0) ORDER BY g),
    array_agg(coalesce(s.overrun_micros, 0) ORDER BY g)
  INTO v_debit, v_release, v_overrun
  FROM generate_series(1, v_count) AS g
  LEFT JOIN LATERAL ledger_settlement_split(v_res_amount[g], v_cost[g]) AS s
    ON v_kind[g] = 'settle' AND v_res_billing_mode[g] = 'commercial';
  -- What a Settle takes from available: its overrun; a carve's is what its grant no longer holds.
  v_from_available := v_overrun;
  -- Carves (ledger_settle_carved's arithmetic), in arrival order against each grant's running
  -- remaining: from_grant = min(c, remaining), the rest from available; the unused part of the
  -- carve stays in the grant (released 0); overrun = max(0, c − r) (BOUNDED_OVERRUN). Internal
  -- billing mode moves no wallet money, but its grant's headroom shrinks the same way.
  FOR v_index IN 1 .. v_count LOOP
    IF v_carve[v_index] THEN
      v_grant_index := array_position(v_grants, v_grant_ref[v_index]);
      v_from_grant[v_index] := least(v_cost[v_index], v_grant_remaining[v_grant_index]);
      v_grant_remaining[v_grant_index] := v_grant_remaining[v_grant_index] - v_from_grant[v_index];
      v_release[v_index] := 0;
      IF v_res_billing_mode[v_index] = 'commercial' THEN
        v_debit[v_index] := v_cost[v_index];
        v_from_available[v_index] := v_cost[v_index] - v_from_grant[v_index];
        v_overrun[v_index] := greatest(v_cost[v_index] - v_reserved[v_index], 0);
      END IF;
    END IF;
  END LOOP;

  -- Pass 1 decides on the unlocked balances (what to write); pass 2, after the accounts are
  -- locked, decides again on the locked balances (NO_OVERSPEND and the answers) and must agree.
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
        WHERE r.id = s.id AND NOT v_carve[s.g];
      END IF;

      -- Carves: no reservation rows (their usage records below carry the settlement; migration
      -- 0021), and each grant's hold less what they took from it, one UPDATE.
      IF cardinality(v_grants) > 0 THEN
        UPDATE grants gr SET remaining_micros = d.remaining
        FROM unnest(v_grants, v_grant_remaining) AS d (id, remaining)
        WHERE gr.id = d.id AND gr.remaining_micros <> d.remaining;
      END IF;

      -- Movements: a Reserve's hold; a Settle's debit, then its unused hold; a batch's carves, one
      -- debit per grant (migration 0020: their sums, from the grant's hold and beyond it from
      -- available; each carve's own figures are on its usage record), at its first carve's place.
      -- Internal billing mode moves no wallet money and writes none; amounts of zero write nothing.
      INSERT INTO movements (organisation_id, kind, amount_micros, credited_delta_micros, available_delta_micros,
        held_delta_micros, debited_delta_micros, reservation_id, grant_id, detail)
      SELECT m.organisation_id, m.kind, m.amount_micros, 0, m.available_delta_micros, m.held_delta_micros,
        m.debited_delta_micros, m.reservation_id, m.grant_id, m.detail
      FROM (
        SELECT m.g, m.step, m.organisation_id, m.kind, m.amount_micros, m.available_delta_micros, m.held_delta_micros,
          m.debited_delta_micros, v_id[m.g] AS reservation_id, NULL::text AS grant_id, m.detail
        FROM generate_series(1, v_count) AS g
        CROSS JOIN LATERAL (VALUES
          (g, 0, v_organisation[g], 'reserve', CASE WHEN v_kind[g] = 'reserve' AND v_result[g] = 'ok'
              AND v_billing_mode[g] = 'commercial' THEN v_amount[g] ELSE 0 END,
            -v_amount[g], v_amount[g], 0::bigint,
            jsonb_build_object('projectId', v_project[g], 'modelSlug', v_model[g])),
          (g, 1, v_res_organisation[g], 'settle', CASE WHEN v_kind[g] = 'settle' AND NOT v_carve[g] THEN v_debit[g] ELSE 0 END,
            -v_from_available[g], -(v_debit[g] - v_from_available[g]), v_debit[g],
            jsonb_build_object('usageSource', v_usage_source[g], 'requestId', v_request_id[g])),
          (g, 2, v_res_organisation[g], 'release', CASE WHEN v_kind[g] = 'settle' THEN v_release[g] ELSE 0 END,
            v_release[g], -v_release[g], 0::bigint,
            jsonb_build_object('reason', 'unused reserve returned at settlement'))
        ) AS m (g, step, organisation_id, kind, amount_micros, available_delta_micros, held_delta_micros,
          debited_delta_micros, detail)
        UNION ALL
        SELECT min(g), 1, v_res_organisation[g], 'settle', sum(v_debit[g])::bigint, -sum(v_from_available[g])::bigint,
          -sum(v_debit[g] - v_from_available[g])::bigint, sum(v_debit[g])::bigint, NULL, v_grant_ref[g],
          jsonb_build_object('carvedFrom', v_grant_ref[g], 'carves', count(*))
        FROM generate_series(1, v_count) AS g
        WHERE v_carve[g]
        GROUP BY v_grant_ref[g], v_res_organisation[g]
      ) AS m
      WHERE m.amount_micros > 0
      ORDER BY m.g, m.step;

      -- One usage record per settled reservation (NOTHING_FREE). Their class roll-ups are this
      -- batch's own per-key upserts below: the setting tells the row trigger to skip them
      -- (migration 0019; its WHEN is read as each row is inserted).
      IF cardinality(v_settle_ids) > 0 THEN
        PERFORM set_config('ledger.rollups_written', 'on', true);
        INSERT INTO usage_records (reservation_id, organisation_id, project_id, model_slug, input_tokens, output_tokens,
          cost_micros, provider_cost_micros, debited_micros, billing_mode, usage_source, request_id, overrun_output_tokens,
          token_classes, deployment, grant_id, settle_fingerprint, settle_overrun_micros, settle_detail)
        SELECT v_id[g], v_res_organisation[g], v_res_project[g], v_model[g], v_input_tokens[g], v_output_tokens[g],
          v_cost[g], v_provider_cost[g], v_debit[g], v_res_billing_mode[g], v_usage_source[g], v_request_id[g],
          v_overrun_tokens[g], v_token_classes[g], v_deployment[g],
          CASE WHEN v_carve[g] THEN v_grant_ref[g] END, CASE WHEN v_carve[g] THEN v_fingerprint[g] END,
          CASE WHEN v_carve[g] THEN v_overrun[g] END, CASE WHEN v_carve[g] THEN '' END
        FROM generate_series(1, v_count) AS g
        WHERE v_kind[g] = 'settle'
        ORDER BY g;
        PERFORM set_config('ledger.rollups_written', 'off', true);
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
        -- ledger_reserve_decision (inlined), as ledger_reserve asks it: the batch has new ids,
        -- valid input and no budgeted project, so the facts left are the tombstone, the account
        -- and its running balance (NO_OVERSPEND on the balance the operations before left).
        v_result[v_index] := ledger_reserve_decision(NULL, v_fingerprint[v_index], NULL, v_id[v_index] = ANY (v_tombstoned),
          v_org_index IS NOT NULL, v_available[v_org_index], v_billing_mode[v_index] = 'commercial', v_amount[v_index],
          NULL, NULL);
        v_detail[v_index] := ledger_reserve_detail(v_result[v_index], NULL, NULL);
        IF v_result[v_index] = 'insufficient_balance' THEN
          v_answer_available[v_index] := v_available[v_org_index];
        ELSIF v_result[v_index] = 'ok' THEN
          IF v_billing_mode[v_index] = 'commercial' THEN
            v_available[v_org_index] := v_available[v_org_index] - v_amount[v_index];
            v_held[v_org_index] := v_held[v_org_index] + v_amount[v_index];
          END IF;
          v_answer_available[v_index] := v_available[v_org_index];
          v_expires_at_ms[v_index] :=
            floor(extract(epoch FROM now() + v_ttl_ms[v_index] * interval '1 millisecond') * 1000)::bigint;
        END IF;
      ELSE
        v_org_index := array_position(v_orgs, v_res_organisation[v_index]);
        IF v_res_billing_mode[v_index] = 'commercial' THEN
          -- Held, not expired: the split computed above (ledger_settlement_split); a carve takes
          -- from its grant's hold what it does not take from available, and returns nothing.
          v_held[v_org_index] := v_held[v_org_index] - (v_debit[v_index] - v_from_available[v_index]) - v_release[v_index];
          v_available[v_org_index] := v_available[v_org_index] + v_release[v_index] - v_from_available[v_index];
          v_debited[v_org_index] := v_debited[v_org_index] + v_debit[v_index];
        END IF;
        v_result[v_index] := 'ok';
        v_answer_available[v_index] := v_available[v_org_index];
      END IF;
    END LOOP;
  END LOOP;

  -- NO_OVERSPEND under the lock: every decision of pass 2 must be that of pass 1, which the rows
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

  -- Today's roll-ups of the batch's usage records, aggregated per key (each row locked once per
  -- batch, in key order), after the spend rows: the totals and the records without classes,
  -- then the tokens and costs by class (what the row trigger of migration 0016 adds per record,
  -- here once per key and class).
  IF cardinality(v_settle_ids) > 0 THEN
    INSERT INTO usage_daily AS d (day, organisation_id, project_id, model_slug, billing_mode, requests, input_tokens,
      output_tokens, cost_micros, provider_cost_micros, debited_micros, unclassified_requests)
    SELECT v_day, v_res_organisation[g], v_res_project[g], v_model[g], v_res_billing_mode[g], count(*),
      sum(v_input_tokens[g])::bigint, sum(v_output_tokens[g])::bigint, sum(v_cost[g])::bigint,
      sum(v_provider_cost[g])::bigint, sum(v_debit[g])::bigint, count(*) FILTER (WHERE v_token_classes[g] IS NULL)
    FROM generate_series(1, v_count) AS g
    WHERE v_kind[g] = 'settle'
    GROUP BY v_res_organisation[g], v_res_project[g], v_model[g], v_res_billing_mode[g]
    ORDER BY v_res_organisation[g], v_res_project[g], v_model[g], v_res_billing_mode[g]
    ON CONFLICT (day, organisation_id, project_id, model_slug, billing_mode) DO UPDATE SET
      requests = d.requests + EXCLUDED.requests, input_tokens = d.input_tokens + EXCLUDED.input_tokens,
      output_tokens = d.output_tokens + EXCLUDED.output_tokens, cost_micros = d.cost_micros + EXCLUDED.cost_micros,
      provider_cost_micros = d.provider_cost_micros + EXCLUDED.provider_cost_micros,
      debited_micros = d.debited_micros + EXCLUDED.debited_micros,
      unclassified_requests = d.unclassified_requests + EXCLUDED.unclassified_requests;
    INSERT INTO usage_daily_classes AS c (day, organisation_id, project_id, model_slug, billing_mode, token_class, tokens,
      cost_micros, provider_cost_micros)
    SELECT v_day, v_res_organisation[g], v_res_project[g], v_model[g], v_res_billing_mode[g], e->>'tokenClass',
      sum((e->>'tokens')::bigint)::bigint, sum((e->>'costMicros')::bigint)::bigint,
      sum((e->>'providerCostMicros')::bigint)::bigint
    FROM generate_series(1, v_count) AS g
    CROSS JOIN LATERAL jsonb_array_elements(v_token_classes[g]) AS e
    WHERE v_kind[g] = 'settle' AND v_token_classes[g] IS NOT NULL
    GROUP BY v_res_organisation[g], v_res_project[g], v_model[g], v_res_billing_mode[g], e->>'tokenClass'
    ORDER BY v_res_organisation[g], v_res_project[g], v_model[g], v_res_billing_mode[g], e->>'tokenClass'
    ON CONFLICT (day, organisation_id, project_id, model_slug, billing_mode, token_class) DO UPDATE SET
      tokens = c.tokens + EXCLUDED.tokens, cost_micros = c.cost_micros + EXCLUDED.cost_micros,
      provider_cost_micros = c.provider_cost_micros + EXCLUDED.provider_cost_micros;
  END IF;

  RETURN QUERY
  SELECT g, v_result[g], v_answer_available[g], v_expires_at_ms[g], v_debit[g], v_release[g], v_overrun[g],
    v_detail[g], NULL::text, NULL::text
  FROM generate_series(1, v_count) AS g;
END
$$;
