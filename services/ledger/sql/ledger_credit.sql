-- ledger_credit: one Credit (services/ledger/src/domain/credit.ts, which checks the input first),
-- a top-up or a manual credit: credited and available grow by the amount, with one `credit`
-- movement.
-- Decides: IDEMPOTENCY (the same credit_id with the same payload answers OK again without
-- crediting twice; with another payload it is a conflict) and CONSERVATION (credits): credited and
-- available grow together, so credited = available + held + debited still holds and credited is
-- Σ credits − Σ refunds + Σ reversals.
--
-- `purchased` (money the payer bought: only it is refundable, and it is spent first) is compared
-- beside the fingerprint, not in it, so credits fingerprinted before it existed still replay.
--
-- Results, in precedence order: idempotency_conflict / replay (an earlier credit of this id),
-- invalid_argument (the problems TypeScript found), organisation_unknown, ok. A credit that would
-- take a balance beyond int64 fails with numeric_value_out_of_range (22003), which the caller
-- answers as invalid_argument.
--
-- Locks: the account row only (as RefundCredit). Two racing calls with the same new id meet on the
-- credits primary key: the loser raises LR005, and the caller runs it again (it then answers as a
-- replay or a conflict).
CREATE OR REPLACE FUNCTION ledger_credit(
  p_credit_id text, p_organisation text, p_amount bigint, p_reason text, p_fingerprint text, p_problems text,
  p_purchased boolean,
  OUT result text, OUT available_micros bigint, OUT detail text
) LANGUAGE plpgsql AS $$
DECLARE
  v_earlier credits%ROWTYPE;
BEGIN
  SELECT * INTO v_earlier FROM credits c WHERE c.credit_id = p_credit_id;
  IF FOUND THEN
    IF v_earlier.fingerprint = p_fingerprint AND v_earlier.purchased = p_purchased THEN
      result := 'ok'; available_micros := ledger_available_or_zero(v_earlier.organisation_id);
      detail := 'replay: credit already applied';
    ELSE
      result := 'idempotency_conflict'; available_micros := 0;
      detail := 'credit_id was already used with a different payload';
    END IF;
    RETURN;
  END IF;
  IF p_problems <> '' THEN
    result := 'invalid_argument'; available_micros := 0; detail := p_problems;
    RETURN;
  END IF;

  UPDATE accounts a SET credited_micros = a.credited_micros + p_amount, available_micros = a.available_micros + p_amount
  WHERE a.organisation_id = p_organisation
  RETURNING a.available_micros INTO available_micros;
  IF NOT FOUND THEN
    result := 'organisation_unknown'; available_micros := 0; detail := 'organisation has no account';
    RETURN;
  END IF;
  INSERT INTO credits (credit_id, organisation_id, amount_micros, reason, fingerprint, purchased)
  VALUES (p_credit_id, p_organisation, p_amount, p_reason, p_fingerprint, p_purchased)
  ON CONFLICT (credit_id) DO NOTHING;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'concurrent credit with the same credit_id committed first: %', p_credit_id USING ERRCODE = 'LR005';
  END IF;
  INSERT INTO movements (organisation_id, kind, amount_micros, credited_delta_micros, available_delta_micros,
    held_delta_micros, debited_delta_micros, credit_id, detail)
  VALUES (p_organisation, 'credit', p_amount, p_amount, p_amount, 0, 0, p_credit_id, jsonb_build_object('reason', p_reason));
  result := 'ok'; detail := '';
END
$$;
