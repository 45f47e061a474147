-- ledger_apply_operation: runs one operation of a batch by its kind.
-- Decides: no law; it dispatches to ledger_reserve or ledger_settle.
CREATE OR REPLACE FUNCTION ledger_apply_operation(op jsonb) RETURNS ledger_op_result LANGUAGE plpgsql AS $$
BEGIN
  IF op->>'kind' = 'reserve' THEN RETURN ledger_reserve(op); END IF;
  IF op->>'kind' = 'settle' THEN RETURN ledger_settle(op); END IF;
  RAISE EXCEPTION 'unknown ledger operation kind %', op->>'kind' USING ERRCODE = '22023';
END
$$;
