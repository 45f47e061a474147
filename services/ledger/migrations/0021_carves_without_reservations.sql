-- Carves without reservation rows (docs/ledger.md, "Carved settles"). A carved Settle (a Reserve
-- the proxy took from a credit grant in memory) wrote a reservation row, settled at once, only to
-- hold its idempotency key: one more heap row and one more insertion into the reservations
-- primary key (a random key: a page dirtied, and after each checkpoint written whole to the WAL)
-- per request. Its usage record now carries what a replay needs instead:
-- - grant_id: the grant it was carved from (NULL for every other record);
-- - settle_fingerprint, settle_overrun_micros, settle_detail: the Settle's payload hash and the
--   answer's overrun and detail, as a reservation keeps them (its debit is debited_micros).
-- IDEMPOTENCY and ONE_OUTCOME: a carve's usage records all come after its grant was created, so a
-- Settle or a promotion of a carve id looks for a record of that id from the grant's created_at on
-- (the months since, each partition's own unique index), under the grant's row lock, which every
-- path that writes a carve's record or promotes a carve holds first: a replay finds the record
-- (answered as before: same payload, the same answer; another payload, a conflict), a promotion of
-- a settled carve is refused, and two copies of one Settle serialise on the grant.
-- Existing carves keep their reservation rows (and NULL here): a replay of one still finds it.
-- Verify: a usage record without a reservation must name a grant that exists (orphans).
ALTER TABLE usage_records ADD COLUMN grant_id text, ADD COLUMN settle_fingerprint text,
  ADD COLUMN settle_overrun_micros bigint CHECK (settle_overrun_micros >= 0), ADD COLUMN settle_detail text;
ALTER TABLE usage_records ADD CONSTRAINT usage_records_carve_settlement CHECK (
  (grant_id IS NULL) = (settle_fingerprint IS NULL)
  AND (grant_id IS NULL) = (settle_overrun_micros IS NULL)
  AND (grant_id IS NULL) = (settle_detail IS NULL));
