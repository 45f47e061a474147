-- ledger_reverse_refund: one ReverseRefund (services/ledger/src/domain/reverse-refund.ts), giving
-- a refund's money back to the balance (the payment provider refused the refund; a dispute was won).
-- Decides: IDEMPOTENCY (replay, conflict; and one reversal per refund) and CONSERVATION
-- (credits): credited and available grow by what the refund took, so credited = available +
-- held + debited still holds and credited is Σ credits − Σ refunds + Σ reversals.
--
-- Results, in precedence order: idempotency_conflict / replay (an earlier reversal of this id),
-- invalid_argument (the problems TypeScript found), refund_unknown (no refund of this
-- organisation has refund_id), already_reversed (another reversal id reversed it). Only ok
-- writes anything.
--
-- Locks: the account row only (as RefundCredit), so reversals and refunds of one organisation
-- serialise on it; the second of two racing calls with the same new id then finds the first
-- one's row. The same new id on two refunds (a caller bug) meets on the primary key: the loser
-- raises LR004, and the caller runs it again (it then answers IDEMPOTENCY_CONFLICT).
CREATE OR REPLACE FUNCTION ledger_reverse_refund(
  p_reversal_id text, p_organisation text, p_refund_id text, p_reason text, p_fingerprint text, p_problems text,
  OUT result text, OUT reversed_micros bigint, OUT available_micros bigint, OUT detail text
) LANGUAGE plpgsql AS $$
DECLARE
  v_earlier_fingerprint text;
  v_earlier_organisation text;
  v_earlier_amount bigint;
  v_available bigint;
  v_amount bigint;
BEGIN
  reversed_micros := 0;
  IF p_problems = '' THEN
    -- The account lock first, so a racing call of the same id that committed meanwhile is seen.
    SELECT a.available_micros INTO v_available FROM accounts a WHERE a.organisation_id = p_organisation FOR UPDATE;
  END IF;
  SELECT v.fingerprint, v.organisation_id, v.amount_micros INTO v_earlier_fingerprint, v_earlier_organisation, v_earlier_amount
  FROM refund_reversals v WHERE v.reversal_id = p_reversal_id;

  -- IDEMPOTENCY: an earlier reversal of this id answers.
  IF v_earlier_fingerprint IS NOT NULL THEN
    IF v_earlier_fingerprint = p_fingerprint THEN
      result := 'ok'; reversed_micros := v_earlier_amount; available_micros := ledger_available_or_zero(v_earlier_organisation);
      detail := 'replay: reversal already applied';
    ELSE
      result := 'idempotency_conflict'; available_micros := 0;
      detail := 'reversal_id was already used with a different payload';
    END IF;
    RETURN;
  END IF;
  IF p_problems <> '' THEN
    result := 'invalid_argument'; available_micros := 0; detail := p_problems;
    RETURN;
  END IF;

  SELECT r.amount_micros INTO v_amount FROM refunds r WHERE r.refund_id = p_refund_id AND r.organisation_id = p_organisation;
  IF NOT FOUND THEN
    result := 'refund_unknown'; available_micros := coalesce(v_available, 0);
    detail := 'no refund of this organisation has this refund_id';
    RETURN;
  END IF;
  IF EXISTS (SELECT 1 FROM refund_reversals v WHERE v.refund_id = p_refund_id) THEN
    result := 'already_reversed'; available_micros := v_available;
    detail := 'the refund was already reversed under another reversal_id';
    RETURN;
  END IF;

  INSERT INTO refund_reversals (reversal_id, refund_id, organisation_id, amount_micros, reason, fingerprint)
  VALUES (p_reversal_id, p_refund_id, p_organisation, v_amount, p_reason, p_fingerprint)
  ON CONFLICT (reversal_id) DO NOTHING;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'concurrent reversal with the same reversal_id committed first: %', p_reversal_id USING ERRCODE = 'LR004';
  END IF;
  UPDATE accounts a SET credited_micros = a.credited_micros + v_amount, available_micros = a.available_micros + v_amount
  WHERE a.organisation_id = p_organisation
  RETURNING a.available_micros INTO v_available;
  INSERT INTO movements (organisation_id, kind, amount_micros, credited_delta_micros, available_delta_micros,
    held_delta_micros, debited_delta_micros, refund_id, detail)
  VALUES (p_organisation, 'refund_reversal', v_amount, v_amount, v_amount, 0, 0, p_refund_id,
    jsonb_build_object('reason', p_reason, 'reversal_id', p_reversal_id));
  result := 'ok'; reversed_micros := v_amount; available_micros := v_available; detail := '';
END
$$;
