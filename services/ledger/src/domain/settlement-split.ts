/** How one settlement moves money: what it debits, takes from the hold, returns, and overruns, µ₹. */
export interface SettlementSplit {
  /** Debited from the wallet: the whole cost. */
  debitedMicros: bigint;
  /** Part of the debit covered by the reservation's hold. */
  fromHoldMicros: bigint;
  /** Unused hold returned to available. */
  releasedMicros: bigint;
  /** Part of the debit beyond the hold, taken from available (which may go below zero by it). */
  overrunMicros: bigint;
}

/**
 * Splits a commercial settlement of `costMicros` against a hold of `heldMicros` (the Reserve
 * while it is held; zero once it expired, so a late settle is all overrun). Always:
 * fromHold + released = held, fromHold + overrun = cost, and fromHold = min(cost, held).
 */
export function splitSettlement(heldMicros: bigint, costMicros: bigint): SettlementSplit {
  if (heldMicros < 0n || costMicros < 0n) throw new RangeError('hold and cost must not be negative');
  const fromHoldMicros = costMicros < heldMicros ? costMicros : heldMicros;
  return {
    debitedMicros: costMicros,
    fromHoldMicros,
    releasedMicros: heldMicros - fromHoldMicros,
    overrunMicros: costMicros - fromHoldMicros,
  };
}
