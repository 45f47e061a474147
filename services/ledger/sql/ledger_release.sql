-- ledger_release: one Release (services/ledger/src/domain/release.ts, which checks the input
-- first), giving back a held Reserve whose request reached no upstream: held -= Reserve,
-- available += Reserve, one `release` movement; nothing is debited and no usage is recorded.
-- Decides: ONE_OUTCOME (a reservation leaves held once; a Release that overtakes its Reserve
-- leaves a tombstone, sql/ledger_tombstone_unknown_reservation.sql, so the late Reserve holds
-- nothing and answers RELEASED), CONSERVATION (the movement's deltas are the balances' change),
-- IDEMPOTENCY (releasing a released reservation answers OK again; the reason is not compared) and
-- INTERNAL_MODE (an internal reservation held nothing, so nothing returns and no movement is written).
--
-- Results, in precedence order: reservation_unknown (no reservation, a tombstone left; again on
-- every repeat), ok (replay: already released), invalid_argument (p_problems, the reason's problem
-- TypeScript found; an unknown id then leaves no tombstone), already_resolved (settled or expired),
-- ok. released_micros is what returned from held to available (on a replay, what the release
-- returned); available_micros the balance at the time of the answer (0 without a reservation).
--
-- Locks: the reservation row, so a racing settle or expiry sees exactly one winner; for an
-- unknown id the tombstone lock (exclusive), so a Reserve of this id either committed before (found
-- then, released here) or sees the tombstone after this commits; then the account row, in the
-- global lock order (reservation rows before accounts).
CREATE OR REPLACE FUNCTION ledger_release(
  p_reservation_id text, p_reason text, p_problems text,
  OUT result text, OUT released_micros bigint, OUT available_micros bigint, OUT detail text
) LANGUAGE plpgsql AS $$
DECLARE
  v reservations%ROWTYPE;
  v_found boolean;
BEGIN
  SELECT * INTO v FROM reservations r WHERE r.id = p_reservation_id FOR UPDATE;
  v_found := FOUND;
  IF NOT v_found AND p_problems = '' THEN
    IF ledger_tombstone_unknown_reservation(p_reservation_id, p_reason) THEN
      result := 'reservation_unknown'; released_micros := 0; available_micros := 0;
      detail := 'no reservation has this id; a tombstone makes a later Reserve of it hold nothing';
      RETURN;
    END IF;
    SELECT * INTO v FROM reservations r WHERE r.id = p_reservation_id FOR UPDATE;
    v_found := FOUND;
  END IF;
  released_micros := CASE WHEN v_found AND v.billing_mode = 'commercial' THEN v.amount_micros ELSE 0 END;
  IF v_found AND v.status = 'released' THEN
    result := 'ok'; available_micros := ledger_available_or_zero(v.organisation_id);
    detail := 'replay: reservation already released';
    RETURN;
  END IF;
  IF p_problems <> '' THEN
    result := 'invalid_argument'; released_micros := 0; available_micros := 0; detail := p_problems;
    RETURN;
  END IF;
  IF NOT v_found THEN
    RAISE EXCEPTION 'reservation % vanished under the tombstone lock', p_reservation_id;
  END IF;
  IF v.status <> 'held' THEN
    result := 'already_resolved'; released_micros := 0; available_micros := ledger_available_or_zero(v.organisation_id);
    detail := format('reservation was %s before this release', v.status);
    RETURN;
  END IF;

  UPDATE reservations r SET status = 'released', resolved_at = now(), release_reason = p_reason WHERE r.id = p_reservation_id;
  IF released_micros > 0 THEN
    UPDATE accounts a SET held_micros = a.held_micros - released_micros, available_micros = a.available_micros + released_micros
    WHERE a.organisation_id = v.organisation_id
    RETURNING a.available_micros INTO available_micros;
    INSERT INTO movements (organisation_id, kind, amount_micros, credited_delta_micros, available_delta_micros,
      held_delta_micros, debited_delta_micros, reservation_id, detail)
    VALUES (v.organisation_id, 'release', released_micros, 0, released_micros, -released_micros, 0, p_reservation_id,
      jsonb_build_object('reason', p_reason));
  ELSE
    available_micros := ledger_available_or_zero(v.organisation_id);
  END IF;
  result := 'ok'; detail := '';
END
$$;
