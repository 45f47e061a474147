-- ledger_checkpoint: one Checkpoint (services/ledger/src/domain/checkpoint.ts, which checks the
-- input first), recording a long stream's running usage on its held reservation so that an expiry
-- charges it instead of nothing.
-- Decides: EXPIRY (the totals an expiry charges, and the deadline a checkpoint may push out),
-- IDEMPOTENCY (only a sequence above the last recorded changes anything: retries and reordering
-- are harmless), ONE_OUTCOME (a resolved reservation takes no checkpoint) and CONSERVATION (a
-- checkpoint never moves money; running totals never go down).
--
-- Results, in precedence order: reservation_unknown, ok with nothing changed (a sequence at or
-- below the last recorded, whatever else it carries), already_resolved, invalid_argument (a total
-- below the last checkpoint's, or a request id other than the one recorded), ok.
-- expires_at_ms is the reservation's deadline after the call, ms since the Unix epoch (database
-- clock); 0 when there is no reservation.
--
-- Locks: the reservation row, so a racing settle, release or expiry sees either the old or the
-- new checkpoint, never half of one.
CREATE OR REPLACE FUNCTION ledger_checkpoint(
  p_reservation_id text, p_sequence bigint, p_input_tokens bigint, p_output_tokens bigint, p_cost bigint,
  p_provider_cost bigint, p_extend_ttl_ms bigint, p_request_id text,
  OUT result text, OUT expires_at_ms bigint, OUT detail text
) LANGUAGE plpgsql AS $$
DECLARE
  v reservations%ROWTYPE;
  v_problems text[] := ARRAY[]::text[];
BEGIN
  SELECT * INTO v FROM reservations r WHERE r.id = p_reservation_id FOR UPDATE;
  IF NOT FOUND THEN
    result := 'reservation_unknown'; expires_at_ms := 0; detail := 'no reservation has this id';
    RETURN;
  END IF;
  expires_at_ms := floor(extract(epoch FROM v.expires_at) * 1000)::bigint;
  IF p_sequence <= v.checkpoint_sequence THEN
    result := 'ok'; detail := 'replay or out of order: sequence is not above the last recorded; nothing changed';
    RETURN;
  END IF;
  IF v.status <> 'held' THEN
    result := 'already_resolved'; detail := format('reservation was %s before this checkpoint', v.status);
    RETURN;
  END IF;
  IF p_input_tokens < v.checkpoint_input_tokens THEN
    v_problems := v_problems || 'input_tokens is below the last checkpoint (totals, not increments)'::text;
  END IF;
  IF p_output_tokens < v.checkpoint_output_tokens THEN
    v_problems := v_problems || 'output_tokens is below the last checkpoint (totals, not increments)'::text;
  END IF;
  IF p_cost < v.checkpoint_cost_micros THEN
    v_problems := v_problems || 'cost_micros is below the last checkpoint (totals, not increments)'::text;
  END IF;
  IF p_provider_cost < v.checkpoint_provider_cost_micros THEN
    v_problems := v_problems || 'provider_cost_micros is below the last checkpoint (totals, not increments)'::text;
  END IF;
  -- One reservation is one request: a second id means a caller mixed up its reservations.
  IF p_request_id <> '' AND v.request_id <> '' AND p_request_id <> v.request_id THEN
    v_problems := v_problems || 'request_id differs from the one an earlier checkpoint recorded'::text;
  END IF;
  IF cardinality(v_problems) > 0 THEN
    result := 'invalid_argument'; detail := array_to_string(v_problems, '; ');
    RETURN;
  END IF;

  UPDATE reservations r SET checkpoint_sequence = p_sequence, checkpoint_input_tokens = p_input_tokens,
    checkpoint_output_tokens = p_output_tokens, checkpoint_cost_micros = p_cost, checkpoint_provider_cost_micros = p_provider_cost,
    expires_at = CASE WHEN p_extend_ttl_ms > 0 THEN now() + p_extend_ttl_ms * interval '1 millisecond' ELSE r.expires_at END,
    -- The first checkpoint that carries a request id records it; the usage record an expiry writes carries it.
    request_id = CASE WHEN r.request_id = '' THEN p_request_id ELSE r.request_id END
  WHERE r.id = p_reservation_id
  RETURNING floor(extract(epoch FROM r.expires_at) * 1000)::bigint INTO expires_at_ms;
  result := 'ok'; detail := '';
END
$$;
