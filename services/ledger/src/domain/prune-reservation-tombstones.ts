import type { Queryable } from '@gateway/db';

/**
 * How long a Release tombstone is kept, ms (25 h). A tombstone only has to outlive the Reserve
 * it stands in for while that Reserve can still be on its way: queued in a proxy, in a
 * connection, in the ledger's batcher or behind a frozen database, which is seconds to minutes
 * (call deadlines; the 12 s freeze that motivated tombstones). 24 h is the longest any
 * reservation may live at all (the largest ttl_ms), so nothing in the system waits that long;
 * one more hour is margin for clock steps and sweeps that ran late. Pruning keeps the table to
 * about one day of early Releases.
 */
export const tombstoneRetentionMs = 25 * 60 * 60 * 1000;

/**
 * Deletes up to `limit` tombstones older than `retentionMs` by the database clock, oldest first,
 * and answers how many went. Run by the expiry sweeper.
 */
export async function pruneReservationTombstones(db: Queryable, retentionMs: number, limit: number): Promise<number> {
  const { rowCount } = await db.query(
    `DELETE FROM reservation_tombstones WHERE reservation_id IN (
       SELECT reservation_id FROM reservation_tombstones
       WHERE created_at < now() - $1::bigint * interval '1 millisecond'
       ORDER BY created_at LIMIT $2)`,
    [retentionMs, limit],
  );
  return rowCount;
}
