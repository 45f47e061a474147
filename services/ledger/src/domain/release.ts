import type { Database } from '@gateway/db';
import { availableOrZero } from './read-balances.ts';
import type { BillingMode, ReservationStatus } from './ledger-types.ts';
import { appendMovement } from './append-movement.ts';
import { idProblem, reasonProblem } from './validation.ts';

/** A Reserve to give back because its request reached no upstream. */
export interface ReleaseInput {
  reservationId: string;
  /** Why, e.g. "upstream_not_called"; kept on the reservation and the movement. May be empty. */
  reason: string;
}

/** Results of Release, in precedence order. */
export type ReleaseResultName = 'ok' | 'invalid_argument' | 'reservation_unknown' | 'already_resolved';

/** The answer to Release. */
export interface ReleaseOutcome {
  result: ReleaseResultName;
  /** Returned from held to available, µ₹ (0 in internal billing mode). */
  releasedMicros: bigint;
  /** Available balance at the time of the answer, µ₹. */
  availableMicros: bigint;
  detail: string;
}

/** The reservation columns a release reads under its row lock. */
interface ReservationRow {
  organisation_id: string;
  billing_mode: BillingMode;
  amount_micros: bigint;
  status: ReservationStatus;
}

/**
 * Releases a held reservation: held -= Reserve, available += Reserve, one `release` movement;
 * nothing is debited and no usage is recorded. Under a row lock on the reservation, so a
 * racing settle or expiry sees exactly one winner. Releasing a released reservation answers
 * OK again (the reason is not compared); a settled or expired one is ALREADY_RESOLVED.
 * A Release of an id no reservation has leaves a tombstone (sql/ledger_tombstone_unknown_reservation.sql) and answers
 * RESERVATION_UNKNOWN, again on every repeat: the Release overtook its Reserve (ONE_OUTCOME),
 * so that Reserve, when it arrives, holds nothing and answers RELEASED.
 */
export async function release(db: Database, input: ReleaseInput): Promise<ReleaseOutcome> {
  const idIssue = idProblem('reservation_id', input.reservationId);
  if (idIssue) return { result: 'invalid_argument', releasedMicros: 0n, availableMicros: 0n, detail: idIssue };
  const reasonIssue = reasonProblem('reason', input.reason);

  return db.transaction(async (tx): Promise<ReleaseOutcome> => {
    const lockReservation = async () => (await tx.query<ReservationRow>(
      'SELECT organisation_id, billing_mode, amount_micros, status FROM reservations WHERE id = $1 FOR UPDATE',
      [input.reservationId],
    )).rows[0];
    let reservation = await lockReservation();
    if (!reservation && !reasonIssue) {
      // Under the tombstone lock (exclusive), so a Reserve of this id either committed before
      // (found now, released below) or sees the tombstone after this commits.
      const tombstoned = await tx.query<{ tombstoned: boolean }>(
        'SELECT ledger_tombstone_unknown_reservation($1, $2) AS tombstoned', [input.reservationId, input.reason]);
      if (tombstoned.rows[0]!.tombstoned) {
        return {
          result: 'reservation_unknown', releasedMicros: 0n, availableMicros: 0n,
          detail: 'no reservation has this id; a tombstone makes a later Reserve of it hold nothing',
        };
      }
      reservation = await lockReservation();
    }
    const heldMicros = reservation?.billing_mode === 'commercial' ? reservation.amount_micros : 0n;
    if (reservation?.status === 'released') {
      return {
        result: 'ok', releasedMicros: heldMicros, availableMicros: await availableOrZero(tx, reservation.organisation_id),
        detail: 'replay: reservation already released',
      };
    }
    if (reasonIssue) return { result: 'invalid_argument', releasedMicros: 0n, availableMicros: 0n, detail: reasonIssue };
    if (!reservation) throw new Error(`reservation ${input.reservationId} vanished under the tombstone lock`);
    if (reservation.status !== 'held') {
      return {
        result: 'already_resolved', releasedMicros: 0n,
        availableMicros: await availableOrZero(tx, reservation.organisation_id),
        detail: `reservation was ${reservation.status} before this release`,
      };
    }

    await tx.query(
      "UPDATE reservations SET status = 'released', resolved_at = now(), release_reason = $2 WHERE id = $1",
      [input.reservationId, input.reason],
    );
    let availableMicros: bigint;
    if (heldMicros > 0n) {
      const updated = await tx.query<{ available_micros: bigint }>(
        `UPDATE accounts SET held_micros = held_micros - $2, available_micros = available_micros + $2
         WHERE organisation_id = $1 RETURNING available_micros`,
        [reservation.organisation_id, heldMicros],
      );
      availableMicros = updated.rows[0]!.available_micros;
      await appendMovement(tx, {
        organisationId: reservation.organisation_id, kind: 'release', amountMicros: heldMicros,
        reservationId: input.reservationId, detail: { reason: input.reason },
      });
    } else {
      availableMicros = await availableOrZero(tx, reservation.organisation_id);
    }
    return { result: 'ok', releasedMicros: heldMicros, availableMicros, detail: '' };
  });
}
