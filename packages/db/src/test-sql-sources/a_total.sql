-- Test source: a LANGUAGE sql body that calls a function of a later file (b_double), which only
-- works because the applier defers body checks.
CREATE OR REPLACE FUNCTION a_total(p bigint) RETURNS bigint LANGUAGE sql IMMUTABLE AS $$
  SELECT b_double(p) + 1
$$;
