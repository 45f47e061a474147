import type { Database } from '@gateway/db';
import type { BillingMode } from './ledger-types.ts';
import { appendMovement } from './append-movement.ts';

/** What one expiry batch resolved. */
export interface ExpiryBatchResult {
  /** Reservations moved from held to expired. */
  expiredCount: number;
  /** Hold returned to available across them, µ₹. */
  releasedMicros: bigint;
}

/** A reservation the batch expired. */
interface ExpiredRow {
  id: string;
  organisation_id: string;
  billing_mode: BillingMode;
  amount_micros: bigint;
}

/**
 * Expires up to `batchSize` held reservations whose deadline has passed by the database clock
 * (law 7): status becomes `expired`, each commercial hold returns to available with one
 * `expire` movement, all in one transaction. `FOR UPDATE SKIP LOCKED` lets several ledger
 * replicas sweep at once without waiting on each other or on a settle holding a row; the
 * status re-check under the lock means a reservation settled or released meanwhile is left alone.
 */
export async function expireDueReservations(db: Database, batchSize: number): Promise<ExpiryBatchResult> {
  return db.transaction(async (tx) => {
    const { rows } = await tx.query<ExpiredRow>(
      `WITH due AS (
         SELECT id FROM reservations
         WHERE status = 'held' AND expires_at <= now()
         ORDER BY expires_at
         LIMIT $1
         FOR UPDATE SKIP LOCKED
       )
       UPDATE reservations AS r SET status = 'expired', resolved_at = now()
       FROM due WHERE r.id = due.id
       RETURNING r.id, r.organisation_id, r.billing_mode, r.amount_micros`,
      [batchSize],
    );
    const heldByOrganisation = new Map<string, bigint>();
    for (const row of rows) {
      if (row.billing_mode !== 'commercial') continue;
      heldByOrganisation.set(row.organisation_id, (heldByOrganisation.get(row.organisation_id) ?? 0n) + row.amount_micros);
    }
    // Accounts in a fixed order, so two sweepers (or a sweeper and a settle) never deadlock.
    const organisations = [...heldByOrganisation.keys()].sort();
    let releasedMicros = 0n;
    for (const organisationId of organisations) {
      const amountMicros = heldByOrganisation.get(organisationId)!;
      await tx.query(
        `UPDATE accounts SET held_micros = held_micros - $2, available_micros = available_micros + $2
         WHERE organisation_id = $1`,
        [organisationId, amountMicros],
      );
      releasedMicros += amountMicros;
    }
    for (const row of rows) {
      if (row.billing_mode !== 'commercial') continue;
      await appendMovement(tx, {
        organisationId: row.organisation_id, kind: 'expire', amountMicros: row.amount_micros,
        reservationId: row.id, detail: { reason: 'deadline passed' },
      });
    }
    return { expiredCount: rows.length, releasedMicros };
  });
}
