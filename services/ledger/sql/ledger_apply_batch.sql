-- ledger_apply_batch: the one entry point of Reserve and Settle (apply-ledger-operations.ts
-- sends every batch here). Three paths: p_isolate (a rerun after a failure) takes its Reserves'
-- tombstone locks in the outer transaction (a lock taken inside an operation's subtransaction
-- would be let go if that operation failed), then runs ledger_apply_batch_each isolated; a batch
-- of one runs its operation's function directly (no jsonb unnesting, no pre-locking queries: the
-- concurrency-1 case, on every gateway request's latency); two or more go to
-- ledger_apply_batch_set, which falls back to the loop when the batch is not of its shape.
-- After the operations, the failed upstream attempts their Settles carried are kept
-- (sql/ledger_record_attempts.sql), in the same transaction.
-- Generic plans (plan_cache_mode, for this call and every function it calls): the statements of
-- the functions below take their operations as arrays and jsonb, whose custom plans PostgreSQL
-- would otherwise re-plan on every call (about 0.4 ms of a batch's CPU; `pnpm bench batch-cost`
-- with BENCH_TRACK_FUNCTIONS, docs/ledger.md "What a Settle costs"); every statement here finds
-- its rows by key, so the generic plan is the custom one. And no sequential scans (enable_seqscan
-- off, for the same scope), which keeps that true: a connection builds its generic plans once, on
-- the statistics of that moment, and on a young database (a new install, every bench) the
-- reservations table is tiny then, so the plan was a sequential scan that each connection kept
-- while the table grew (auto_explain in a 1-minute `pnpm bench soak`: 190 scans of up to 25,213
-- rows per batch, the soak's throughput falling minute by minute). A table without an index on
-- the key is still scanned: the setting only prices the scan out where an index serves.
-- Decides: no law; it only routes (the results are ledger_reserve_decision's and ledger_settle's).
CREATE OR REPLACE FUNCTION ledger_apply_batch(ops jsonb, p_isolate boolean)
RETURNS TABLE (ordinal integer, result text, available_micros bigint, expires_at_ms bigint, debited_micros bigint,
  released_micros bigint, overrun_micros bigint, detail text, error_state text, error_message text)
LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan SET enable_seqscan = off AS $$
DECLARE
  v_outcome ledger_op_result;
BEGIN
  IF p_isolate THEN
    PERFORM ledger_lock_reserve_ids(ARRAY(SELECT o->>'reservationId' FROM jsonb_array_elements(ops) AS o
      WHERE o->>'kind' = 'reserve' AND o->>'reservationId' IS NOT NULL));
    RETURN QUERY SELECT * FROM ledger_apply_batch_each(ops, true);
    PERFORM ledger_record_attempts(ops);
  ELSIF jsonb_array_length(ops) = 1 THEN
    v_outcome := ledger_apply_operation(ops->0);
    RETURN QUERY SELECT 1, v_outcome.result, v_outcome.available_micros, v_outcome.expires_at_ms,
      v_outcome.debited_micros, v_outcome.released_micros, v_outcome.overrun_micros, v_outcome.detail, NULL::text, NULL::text;
    -- Only a Settle that carried failed attempts costs the extra statement.
    IF ops->0 ? 'failedAttempts' THEN PERFORM ledger_record_attempts(ops); END IF;
  ELSE
    RETURN QUERY SELECT * FROM ledger_apply_batch_set(ops);
    PERFORM ledger_record_attempts(ops);
  END IF;
END
$$;
