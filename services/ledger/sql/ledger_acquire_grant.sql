-- ledger_acquire_grant: AcquireGrant (services/ledger/src/domain/acquire-grant.ts), one
-- transaction. The one home of a grant's sizing (docs/ledger.md, "Credit grants"):
--   granted = min(want, floor(max(available, 0) × share / 100))                      commercial
--   and, with a budget cap C, also min(…, floor(max(C − settled(p, month) − held(p), 0) × share / 100))
--   internal without a budget: want (it holds only budget headroom, which is unlimited)
-- share = LEDGER_GRANT_MAX_SHARE_PERCENT (p_share_percent). granted < min → not_granted, nothing held.
-- Decides, in precedence order: idempotency_conflict / replay (IDEMPOTENCY on the grant id),
-- invalid_argument, organisation_unknown, not_granted, ok. NO_OVERSPEND: a grant takes at most
-- a share of what is available under the account row lock, so it never takes available below
-- zero; PROJECT_BUDGET: at most a share of the headroom under the budget row lock, and its
-- remaining counts in held(p) (ledger_project_held) until it is resolved; INTERNAL_MODE: no
-- wallet movement. EXPIRY: the deadline is now() + ttl by the database clock.
-- Lock order (the global one): the project's budget-change lock (shared; SetProjectBudget takes it
-- exclusive, so a grant is either visible to the recall a budget change makes, or sized under the
-- new cap: never sized under the old cap and committed after the change) -> budget row -> account
-- row. The recall that a not_granted answer
-- asks for (recall_organisation / recall_project) is a separate statement of the caller
-- (ledger_recall_grants), since it locks grant rows, which come before accounts in the order.
CREATE OR REPLACE FUNCTION ledger_acquire_grant(op jsonb, p_share_percent integer)
RETURNS TABLE (result text, granted_micros bigint, expires_at_ms bigint, available_micros bigint, detail text,
  recall_organisation boolean, recall_project boolean)
LANGUAGE plpgsql AS $$
DECLARE
  v_id text := op->>'grantId';
  v_fingerprint text := op->>'fingerprint';
  v_problems text := op->>'problems';
  earlier record;
  v_organisation text := op->>'organisationId';
  v_project text := op->>'projectId';
  v_commercial boolean := op->>'billingMode' = 'commercial';
  v_min bigint := (op->>'minMicros')::bigint;
  v_want bigint := (op->>'wantMicros')::bigint;
  v_cap bigint;
  v_headroom numeric;
  v_available bigint;
  v_granted numeric;
  v_by_balance numeric;
  v_by_budget numeric;
  v_expires_at_ms bigint;
BEGIN
  -- A replay answers the first answer (IDEMPOTENCY): the first deadline is created_at + ttl (one
  -- transaction, one now()), not expires_at, which AdjustGrant's extend may have moved since.
  SELECT g.fingerprint, g.organisation_id, g.granted_micros,
    floor(extract(epoch FROM g.created_at + (op->>'ttlMs')::bigint * interval '1 millisecond') * 1000)::bigint AS expires_ms
  INTO earlier FROM grants g WHERE g.id = v_id;
  IF FOUND THEN
    IF earlier.fingerprint <> v_fingerprint THEN
      RETURN QUERY SELECT 'idempotency_conflict', 0::bigint, 0::bigint, 0::bigint,
        'grant_id was already used with a different payload'::text, false, false;
    ELSE
      RETURN QUERY SELECT 'ok', earlier.granted_micros, earlier.expires_ms, ledger_available_or_zero(earlier.organisation_id),
        'replay: grant already held'::text, false, false;
    END IF;
    RETURN;
  END IF;
  IF v_problems IS NOT NULL THEN
    RETURN QUERY SELECT 'invalid_argument', 0::bigint, 0::bigint, 0::bigint, v_problems, false, false;
    RETURN;
  END IF;

  -- PROJECT_BUDGET: the budget-change lock, then the budget row (the lock order), then settled and
  -- held in one statement. The lock is taken also when the project has no budget row yet, which a
  -- row lock cannot cover.
  PERFORM pg_advisory_xact_lock_shared(ledger_budget_change_lock_class(), hashtext(v_project));
  SELECT b.monthly_cap_micros INTO v_cap FROM project_budgets b
  WHERE b.project_id = v_project AND b.monthly_cap_micros > 0 FOR UPDATE;
  IF v_cap IS NOT NULL THEN
    SELECT v_cap - coalesce((SELECT s.settled_micros FROM project_month_spend s
        WHERE s.project_id = v_project AND s.month = ledger_current_month()), 0) - ledger_project_held(v_project)
    INTO v_headroom;
  END IF;

  SELECT a.available_micros INTO v_available FROM accounts a WHERE a.organisation_id = v_organisation FOR UPDATE;
  IF NOT FOUND THEN
    RETURN QUERY SELECT 'organisation_unknown', 0::bigint, 0::bigint, 0::bigint, 'organisation has no account'::text, false, false;
    RETURN;
  END IF;

  v_by_balance := CASE WHEN v_commercial THEN floor(greatest(v_available, 0)::numeric * p_share_percent / 100) END;
  v_by_budget := CASE WHEN v_cap IS NOT NULL THEN floor(greatest(v_headroom, 0) * p_share_percent / 100) END;
  v_granted := least(v_want::numeric, coalesce(v_by_balance, v_want), coalesce(v_by_budget, v_want));
  IF v_granted < v_min THEN
    RETURN QUERY SELECT 'not_granted', 0::bigint, 0::bigint, v_available,
      format('a grant of at least %s µ₹ does not fit: %s', v_min, concat_ws('; ',
        CASE WHEN v_by_balance < v_min THEN format('%s%% of available %s µ₹ is %s µ₹', p_share_percent, v_available, v_by_balance) END,
        CASE WHEN v_by_budget < v_min THEN format('%s%% of the project''s budget headroom %s µ₹ is %s µ₹', p_share_percent, v_headroom, v_by_budget) END)),
      coalesce(v_by_balance < v_min, false), coalesce(v_by_budget < v_min, false);
    RETURN;
  END IF;

  IF v_commercial THEN
    UPDATE accounts a SET available_micros = a.available_micros - v_granted::bigint, held_micros = a.held_micros + v_granted::bigint
    WHERE a.organisation_id = v_organisation RETURNING a.available_micros INTO v_available;
  END IF;
  INSERT INTO grants (id, organisation_id, project_id, billing_mode, owner_id, granted_micros, remaining_micros, expires_at, fingerprint)
  VALUES (v_id, v_organisation, v_project, op->>'billingMode', op->>'ownerId', v_granted::bigint, v_granted::bigint,
    now() + (op->>'ttlMs')::bigint * interval '1 millisecond', v_fingerprint)
  ON CONFLICT (id) DO NOTHING
  RETURNING floor(extract(epoch FROM grants.expires_at) * 1000)::bigint INTO v_expires_at_ms;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'concurrent AcquireGrant with the same grant id committed first: %', v_id USING ERRCODE = 'LR001';
  END IF;
  IF v_commercial THEN
    INSERT INTO movements (organisation_id, kind, amount_micros, credited_delta_micros, available_delta_micros,
      held_delta_micros, debited_delta_micros, grant_id, detail)
    VALUES (v_organisation, 'grant', v_granted::bigint, 0, -v_granted::bigint, v_granted::bigint, 0, v_id,
      jsonb_build_object('projectId', v_project, 'ownerId', op->>'ownerId'));
  END IF;
  IF v_cap IS NOT NULL THEN PERFORM ledger_raise_soft_alert_if_due(v_project); END IF;
  RETURN QUERY SELECT 'ok', v_granted::bigint, v_expires_at_ms, v_available, ''::text, false, false;
END
$$;
