import type { Queryable } from '@gateway/db';

/** Kinds of wallet movement; each has a fixed effect on the balances (see docs/ledger.md). */
type MovementKind = 'credit' | 'reserve' | 'settle' | 'release' | 'expire';

/** One movement to append: its kind, amount (µ₹, positive) and what it belongs to. */
export interface MovementInput {
  organisationId: string;
  kind: MovementKind;
  amountMicros: bigint;
  reservationId?: string;
  creditId?: string;
  /** For a settlement: the part of the debit beyond the hold, µ₹ (taken from available). */
  overrunMicros?: bigint;
  detail?: Record<string, unknown>;
}

/** The effect of a movement on each balance column, µ₹; credited = available + held + debited. */
interface MovementDeltas {
  creditedMicros: bigint;
  availableMicros: bigint;
  heldMicros: bigint;
  debitedMicros: bigint;
}

/**
 * What a movement does to the balances. The migration's CHECK enforces the same shapes, so a
 * wrong caller fails loudly instead of writing history that does not add up.
 */
function movementDeltas(kind: MovementKind, amountMicros: bigint, overrunMicros = 0n): MovementDeltas {
  switch (kind) {
    case 'credit':
      return { creditedMicros: amountMicros, availableMicros: amountMicros, heldMicros: 0n, debitedMicros: 0n };
    case 'reserve':
      return { creditedMicros: 0n, availableMicros: -amountMicros, heldMicros: amountMicros, debitedMicros: 0n };
    case 'release':
    case 'expire':
      return { creditedMicros: 0n, availableMicros: amountMicros, heldMicros: -amountMicros, debitedMicros: 0n };
    case 'settle':
      return { creditedMicros: 0n, availableMicros: -overrunMicros, heldMicros: -(amountMicros - overrunMicros), debitedMicros: amountMicros };
  }
}

/** Appends one movement row in the caller's transaction. Amounts of zero move nothing and write nothing. */
export async function appendMovement(tx: Queryable, movement: MovementInput): Promise<void> {
  if (movement.amountMicros === 0n) return;
  const deltas = movementDeltas(movement.kind, movement.amountMicros, movement.overrunMicros);
  await tx.query(
    `INSERT INTO movements (organisation_id, kind, amount_micros, credited_delta_micros, available_delta_micros,
       held_delta_micros, debited_delta_micros, reservation_id, credit_id, detail)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
    [
      movement.organisationId, movement.kind, movement.amountMicros, deltas.creditedMicros, deltas.availableMicros,
      deltas.heldMicros, deltas.debitedMicros, movement.reservationId ?? null, movement.creditId ?? null,
      JSON.stringify(movement.detail ?? {}),
    ],
  );
}
