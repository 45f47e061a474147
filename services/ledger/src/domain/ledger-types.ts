/** Largest amount (µ₹) or token count one request may carry: 2^62, so sums of a few stay inside int64. */
export const maxAmountMicros = 2n ** 62n;

/** How an organisation pays: from its prepaid wallet, or sponsored with no wallet movement (INTERNAL_MODE). */
export type BillingMode = 'commercial' | 'internal';

/** Where a usage record's token counts came from: the upstream's report or the gateway's own count. */
export type UsageSource = 'upstream' | 'gateway_estimate';

/** Lifecycle of a reservation: it leaves `held` exactly once (ONE_OUTCOME). */
export type ReservationStatus = 'held' | 'settled' | 'released' | 'expired';

/** The four balances of one wallet, µ₹; credited = available + held + debited always. */
export interface Balances {
  creditedMicros: bigint;
  availableMicros: bigint;
  heldMicros: bigint;
  debitedMicros: bigint;
}
