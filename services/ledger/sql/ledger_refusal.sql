-- ledger_refusal: an answer that moved nothing (the result, its detail and the balance to show).
-- Decides: no law.
CREATE OR REPLACE FUNCTION ledger_refusal(p_result text, p_detail text, p_available bigint) RETURNS ledger_op_result
LANGUAGE sql IMMUTABLE AS $$
  SELECT ROW(p_result, p_available, 0::bigint, 0::bigint, 0::bigint, 0::bigint, p_detail)::ledger_op_result
$$;
