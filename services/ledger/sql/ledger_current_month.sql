-- ledger_current_month: the current calendar month in Asia/Kolkata by the database clock, e.g.
-- '2026-11' (never a replica's clock, so every replica agrees on when a month ends).
-- Decides: PROJECT_BUDGET's month.
CREATE OR REPLACE FUNCTION ledger_current_month() RETURNS text LANGUAGE sql STABLE AS $$
  SELECT to_char(now() AT TIME ZONE 'Asia/Kolkata', 'YYYY-MM')
$$;
