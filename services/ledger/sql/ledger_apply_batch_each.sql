-- ledger_apply_batch_each: a batch operation by operation, in one transaction, in array order,
-- one row per operation: every batch the set-based path does not take, and every isolated rerun.
-- Decides: no law of its own (each operation is ledger_reserve's or ledger_settle's); it keeps
-- ONE_OUTCOME and IDEMPOTENCY safe across a batch by its lock order and its reruns.
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
-- global order (budget rows -> reservation rows -> grant rows -> account rows -> this month's
-- project-spend rows -> today's usage roll-up rows of those projects, each sorted), so batches on any number of replicas, the sweeper and the single-call
-- paths cannot deadlock one another; the operations then re-lock rows they already hold.
CREATE OR REPLACE FUNCTION ledger_apply_batch_each(ops jsonb, p_isolate boolean)
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
  v_grant_ids text[];
BEGIN
  SELECT array_agg(DISTINCT o->>'projectId') FILTER (WHERE o->>'kind' = 'reserve' AND o ? 'projectId'),
    array_agg(DISTINCT o->>'organisationId') FILTER (WHERE o->>'kind' = 'reserve' AND o ? 'organisationId'),
    array_agg(DISTINCT o->>'reservationId') FILTER (WHERE o->>'kind' = 'settle'),
    array_agg(DISTINCT o->>'grantId') FILTER (WHERE o ? 'grantId')
  INTO v_reserve_projects, v_reserve_organisations, v_resolve_ids, v_grant_ids
  FROM jsonb_array_elements(ops) AS o;

  PERFORM 1 FROM project_budgets b WHERE b.project_id = ANY (v_reserve_projects) ORDER BY b.project_id FOR UPDATE;
  PERFORM 1 FROM reservations r WHERE r.id = ANY (v_resolve_ids) ORDER BY r.id FOR UPDATE;
  -- The grants of carved Settles and promotions (after reservations, before accounts).
  PERFORM 1 FROM grants g WHERE g.id = ANY (v_grant_ids) ORDER BY g.id FOR UPDATE;
  PERFORM 1 FROM accounts a
  WHERE a.organisation_id = ANY (v_reserve_organisations)
     OR a.organisation_id IN (SELECT r.organisation_id FROM reservations r WHERE r.id = ANY (v_resolve_ids))
     OR a.organisation_id IN (SELECT g.organisation_id FROM grants g WHERE g.id = ANY (v_grant_ids))
  ORDER BY a.organisation_id FOR UPDATE;
  PERFORM 1 FROM project_month_spend s
  WHERE s.month = ledger_current_month()
    AND (s.project_id IN (SELECT r.project_id FROM reservations r WHERE r.id = ANY (v_resolve_ids))
      OR s.project_id IN (SELECT g.project_id FROM grants g WHERE g.id = ANY (v_grant_ids)))
  ORDER BY s.project_id FOR UPDATE;
  PERFORM 1 FROM usage_daily d
  WHERE d.day = (now() AT TIME ZONE 'Asia/Kolkata')::date
    AND (d.organisation_id, d.project_id) IN (SELECT r.organisation_id, r.project_id FROM reservations r WHERE r.id = ANY (v_resolve_ids)
      UNION ALL SELECT g.organisation_id, g.project_id FROM grants g WHERE g.id = ANY (v_grant_ids))
  ORDER BY d.organisation_id, d.project_id, d.model_slug, d.billing_mode FOR UPDATE;

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
