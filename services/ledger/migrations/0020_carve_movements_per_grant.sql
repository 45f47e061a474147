-- One settle movement per grant per batch (docs/ledger.md, "Carved settles"). A carved Settle
-- wrote a movement of its own: in a soak, the movements INSERT was the set-based batch's largest
-- statement (pg_stat_statements, ~1.9 ms of a ~10 ms batch of ~50). The set-based batch now
-- writes, per grant its carves took from, one `settle` movement of their sums (what they took from
-- the grant's hold and, beyond it, from available; debited the sum of their costs), naming the
-- grant and no reservation: each carve's own figures are on its usage record, and a movement's
-- purpose is the balances, which are sums. The per-operation path (ledger_settle_carved) still
-- writes one per carve, naming both. So a settle movement names its reservation, its grant, or
-- both; everything else of its shape is as before. Verify's `movements` and `grants` checks sum
-- the deltas per organisation and per grant and are unchanged.
ALTER TABLE movements DROP CONSTRAINT movements_shape;
ALTER TABLE movements ADD CONSTRAINT movements_shape CHECK (CASE kind
  -- money arrives: credited and available grow by the amount
  WHEN 'credit' THEN credit_id IS NOT NULL AND reservation_id IS NULL AND refund_id IS NULL AND grant_id IS NULL
    AND credited_delta_micros = amount_micros AND available_delta_micros = amount_micros
    AND held_delta_micros = 0 AND debited_delta_micros = 0
  -- a Reserve moves the amount from available to held
  WHEN 'reserve' THEN reservation_id IS NOT NULL AND credit_id IS NULL AND refund_id IS NULL AND grant_id IS NULL
    AND credited_delta_micros = 0 AND available_delta_micros = -amount_micros
    AND held_delta_micros = amount_micros AND debited_delta_micros = 0
  -- a grant moves the amount from available to held
  WHEN 'grant' THEN grant_id IS NOT NULL AND reservation_id IS NULL AND credit_id IS NULL AND refund_id IS NULL
    AND credited_delta_micros = 0 AND available_delta_micros = -amount_micros
    AND held_delta_micros = amount_micros AND debited_delta_micros = 0
  -- a release, a grant's return or an expiry moves the amount from held back to available
  WHEN 'release' THEN reservation_id IS NOT NULL AND credit_id IS NULL AND refund_id IS NULL AND grant_id IS NULL
    AND credited_delta_micros = 0 AND available_delta_micros = amount_micros
    AND held_delta_micros = -amount_micros AND debited_delta_micros = 0
  WHEN 'grant_return' THEN grant_id IS NOT NULL AND reservation_id IS NULL AND credit_id IS NULL AND refund_id IS NULL
    AND credited_delta_micros = 0 AND available_delta_micros = amount_micros
    AND held_delta_micros = -amount_micros AND debited_delta_micros = 0
  WHEN 'expire' THEN (reservation_id IS NULL) <> (grant_id IS NULL) AND credit_id IS NULL AND refund_id IS NULL
    AND credited_delta_micros = 0 AND available_delta_micros = amount_micros
    AND held_delta_micros = -amount_micros AND debited_delta_micros = 0
  -- a settlement debits the amount, from the hold (the reservation's, or a carve's grant's) first
  -- and beyond it (overrun) from available; a batch's carves of one grant settle as one movement
  -- naming the grant alone
  WHEN 'settle' THEN (reservation_id IS NOT NULL OR grant_id IS NOT NULL) AND credit_id IS NULL AND refund_id IS NULL
    AND credited_delta_micros = 0 AND debited_delta_micros = amount_micros
    AND held_delta_micros <= 0 AND available_delta_micros <= 0
  -- money leaves: a refund takes the amount out of available and credited, never out of held
  WHEN 'refund' THEN refund_id IS NOT NULL AND reservation_id IS NULL AND credit_id IS NULL AND grant_id IS NULL
    AND credited_delta_micros = -amount_micros AND available_delta_micros = -amount_micros
    AND held_delta_micros = 0 AND debited_delta_micros = 0
  -- money comes back: a reversal returns what its refund (refund_id) took to available and credited
  WHEN 'refund_reversal' THEN refund_id IS NOT NULL AND reservation_id IS NULL AND credit_id IS NULL AND grant_id IS NULL
    AND credited_delta_micros = amount_micros AND available_delta_micros = amount_micros
    AND held_delta_micros = 0 AND debited_delta_micros = 0
  END);
