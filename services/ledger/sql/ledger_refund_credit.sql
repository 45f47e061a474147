-- ledger_refund_credit: one RefundCredit (services/ledger/src/domain/refund-credit.ts), returning
-- part of a credit's unspent money to the payer (the admin's refund of a top-up).
-- Decides: IDEMPOTENCY (replay, conflict), NO_OVERSPEND (a refund never takes available below
-- zero and never touches held) and CONSERVATION (credits): credited and available shrink by the
-- amount together, so credited = available + held + debited still holds and credited is
-- Σ credits − Σ refunds + Σ reversals.
--
-- Only purchased, unspent credit is refundable: purchased money is spent first, so the refundable
-- part of available is available − Σ credits not purchased (never below zero). With
-- p_up_to_available (money the payer already got back outside the gateway) the refund instead
-- takes least(amount, available, what is left of the credit) and the purchased-only rule does
-- not apply: the money has left, so what can be debited is; taking 0 writes nothing.
--
-- Results, in precedence order: idempotency_conflict / replay (an earlier refund of this id),
-- invalid_argument (the problems TypeScript found), organisation_unknown, credit_unknown (no
-- credit of this organisation has the id), exceeds_credit (the credit's refunds, net of their
-- reversals, would add up to more than it), insufficient_balance (the purchased, unspent part of
-- available < amount). Only ok writes anything.
--
-- Locks: the account row only (as Credit), so it takes its place in the global lock order
-- (accounts after budget and reservation rows) and cannot deadlock another path. Refunds of one
-- organisation serialise on that lock; the second of two racing calls with the same new id then
-- finds the first one's row and answers as a replay. The same new id on two organisations (a
-- caller bug) meets on the primary key: the loser raises LR003, and the caller runs it again
-- (it then answers IDEMPOTENCY_CONFLICT).
CREATE OR REPLACE FUNCTION ledger_refund_credit(
  p_refund_id text, p_organisation text, p_credit_id text, p_amount bigint, p_reason text,
  p_fingerprint text, p_problems text, p_up_to_available boolean,
  OUT result text, OUT available_micros bigint, OUT detail text, OUT refunded_micros bigint
) LANGUAGE plpgsql AS $$
DECLARE
  v_not_purchased bigint;
  v_refundable bigint;
  v_take bigint;
  v_earlier_fingerprint text;
  v_earlier_organisation text;
  v_available bigint;
  v_has_account boolean := false;
  v_credit_amount bigint;
  v_refunded bigint;
BEGIN
  SELECT r.fingerprint, r.organisation_id INTO v_earlier_fingerprint, v_earlier_organisation
  FROM refunds r WHERE r.refund_id = p_refund_id;
  IF v_earlier_fingerprint IS NULL AND p_problems = '' THEN
    SELECT a.available_micros INTO v_available FROM accounts a WHERE a.organisation_id = p_organisation FOR UPDATE;
    v_has_account := FOUND;
    IF v_has_account THEN
      -- Again under the account lock: a racing call of the same id that committed meanwhile is seen.
      SELECT r.fingerprint, r.organisation_id INTO v_earlier_fingerprint, v_earlier_organisation
      FROM refunds r WHERE r.refund_id = p_refund_id;
    END IF;
  END IF;

  -- IDEMPOTENCY: an earlier refund of this id answers (a conflict before invalid input, as the proto orders them).
  refunded_micros := 0;
  IF v_earlier_fingerprint IS NOT NULL THEN
    IF v_earlier_fingerprint = p_fingerprint THEN
      result := 'ok'; available_micros := ledger_available_or_zero(v_earlier_organisation);
      detail := 'replay: refund already applied';
      SELECT r.amount_micros INTO refunded_micros FROM refunds r WHERE r.refund_id = p_refund_id;
    ELSE
      result := 'idempotency_conflict'; available_micros := 0;
      detail := 'refund_id was already used with a different payload';
    END IF;
    RETURN;
  END IF;
  IF p_problems <> '' THEN
    result := 'invalid_argument'; available_micros := 0; detail := p_problems;
    RETURN;
  END IF;
  IF NOT v_has_account THEN
    result := 'organisation_unknown'; available_micros := 0; detail := 'organisation has no account';
    RETURN;
  END IF;

  SELECT c.amount_micros INTO v_credit_amount FROM credits c
  WHERE c.credit_id = p_credit_id AND c.organisation_id = p_organisation;
  IF NOT FOUND THEN
    result := 'credit_unknown'; available_micros := v_available;
    detail := 'no credit of this organisation has this credit_id';
    RETURN;
  END IF;
  -- The credit's refunds (net of reversals) are stable: every refund and reversal locks this same account row first.
  SELECT coalesce(sum(r.amount_micros - coalesce(v.amount_micros, 0)), 0)::bigint INTO v_refunded
  FROM refunds r LEFT JOIN refund_reversals v ON v.refund_id = r.refund_id WHERE r.credit_id = p_credit_id;
  IF p_up_to_available THEN
    -- The money has already left: take what there is of it, never below zero (NO_OVERSPEND).
    v_take := least(p_amount, greatest(v_available, 0), v_credit_amount - v_refunded);
    IF v_take <= 0 THEN
      result := 'ok'; available_micros := v_available; detail := 'nothing available to take';
      RETURN;
    END IF;
  ELSE
    IF v_refunded + p_amount > v_credit_amount THEN
      result := 'exceeds_credit'; available_micros := v_available;
      detail := format('the credit of %s µ₹ has %s µ₹ refunded already; %s µ₹ more would exceed it',
        v_credit_amount, v_refunded, p_amount);
      RETURN;
    END IF;
    -- NO_OVERSPEND: only what is available (not held, not spent) can leave, and of that only
    -- purchased money: credits not purchased are spent last and never go out as cash.
    SELECT coalesce(sum(c.amount_micros), 0)::bigint INTO v_not_purchased FROM credits c
    WHERE c.organisation_id = p_organisation AND NOT c.purchased;
    v_refundable := greatest(v_available - v_not_purchased, 0);
    IF v_available < p_amount THEN
      result := 'insufficient_balance'; available_micros := v_available;
      detail := format('available balance %s µ₹ is below the refund of %s µ₹', v_available, p_amount);
      RETURN;
    END IF;
    IF v_refundable < p_amount THEN
      result := 'insufficient_balance'; available_micros := v_available;
      detail := format('only purchased, unspent credit is refundable: %s µ₹ of the available %s µ₹ (%s µ₹ is credit not purchased); the refund is %s µ₹',
        v_refundable, v_available, v_not_purchased, p_amount);
      RETURN;
    END IF;
    v_take := p_amount;
  END IF;

  INSERT INTO refunds (refund_id, organisation_id, credit_id, amount_micros, reason, fingerprint, requested_micros)
  VALUES (p_refund_id, p_organisation, p_credit_id, v_take, p_reason, p_fingerprint, p_amount)
  ON CONFLICT (refund_id) DO NOTHING;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'concurrent refund with the same refund_id committed first: %', p_refund_id USING ERRCODE = 'LR003';
  END IF;
  UPDATE accounts a SET credited_micros = a.credited_micros - v_take, available_micros = a.available_micros - v_take
  WHERE a.organisation_id = p_organisation
  RETURNING a.available_micros INTO v_available;
  INSERT INTO movements (organisation_id, kind, amount_micros, credited_delta_micros, available_delta_micros,
    held_delta_micros, debited_delta_micros, refund_id, detail)
  VALUES (p_organisation, 'refund', v_take, -v_take, -v_take, 0, 0, p_refund_id,
    jsonb_build_object('reason', p_reason, 'credit_id', p_credit_id));
  result := 'ok'; available_micros := v_available; detail := ''; refunded_micros := v_take;
END
$$;
