-- ledger_available_or_zero: the available balance of an account, µ₹, or 0 when the
-- organisation has none (for answers only).
-- Decides: no law.
CREATE OR REPLACE FUNCTION ledger_available_or_zero(p_organisation text) RETURNS bigint LANGUAGE sql STABLE AS $$
  SELECT coalesce((SELECT available_micros FROM accounts WHERE organisation_id = p_organisation), 0::bigint)
$$;
