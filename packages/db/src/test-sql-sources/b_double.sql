-- Test source: its argument type changed from integer, so the old signature is dropped first.
DROP FUNCTION IF EXISTS b_double(integer);
CREATE OR REPLACE FUNCTION b_double(p bigint) RETURNS bigint LANGUAGE sql IMMUTABLE AS $$
  SELECT p * 2
$$;
