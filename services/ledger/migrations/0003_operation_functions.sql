-- Reserve and Settle as database functions, and a batch function that applies many of them in
-- one transaction (group commit): each operation is one round trip instead of 7-10, and a batch
-- of operations is one round trip and one commit. Input validation and the idempotency
-- fingerprints stay in TypeScript, which passes `problems` (NULL when the input is valid) and
-- `fingerprint` in each operation's jsonb.
--
-- Schema only. The functions themselves (ledger_reserve, ledger_settle, ledger_apply_batch...)
-- live one per file in services/ledger/sql/ and are applied after the migrations at every start
-- (prepareLedgerSchema); this file created them until their bodies moved there, and databases
-- that ran that text accept this one through superseded-checksums.json.

-- The answer to one operation; fields an operation does not have are 0.
CREATE TYPE ledger_op_result AS (
  result text,
  available_micros bigint,
  expires_at_ms bigint,
  debited_micros bigint,
  released_micros bigint,
  overrun_micros bigint,
  detail text
);
