import type { Queryable } from '@gateway/db';

/** Held reservations and credit grants whose deadline passed more than a grace ago. */
export interface HoldsPastDeadline {
  reservations: number;
  grants: number;
}

/**
 * Counts holds still `held` more than `graceMs` past their deadline by the database clock: what
 * the expiry sweeper should already have resolved (EXPIRY). Both counts read only the partial
 * indexes of held rows by deadline (reservations_due, grants_due), so the cost follows the number
 * of overdue holds, not the size of the tables.
 */
export async function countHoldsPastDeadline(db: Queryable, graceMs: number): Promise<HoldsPastDeadline> {
  const { rows } = await db.query<{ reservations: bigint; grants: bigint }>(
    `SELECT
       (SELECT count(*) FROM reservations WHERE status = 'held' AND expires_at <= now() - $1::bigint * interval '1 millisecond') AS reservations,
       (SELECT count(*) FROM grants WHERE status = 'held' AND expires_at <= now() - $1::bigint * interval '1 millisecond') AS grants`,
    [Math.max(0, Math.round(graceMs))],
  );
  const [row] = rows;
  return { reservations: Number(row?.reservations ?? 0n), grants: Number(row?.grants ?? 0n) };
}
