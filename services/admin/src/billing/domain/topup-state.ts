import type { Queryable } from '@gateway/db';

/**
 * A top-up's state machine: created → pending_payment → paid → credited → invoiced, with failed,
 * expired and refunded on the side. Every move is one UPDATE guarded by the state it starts from
 * plus one `topup_transitions` row with its cause, in the caller's transaction.
 */
export type TopUpState = 'created' | 'pending_payment' | 'paid' | 'credited' | 'invoiced' | 'failed' | 'expired' | 'refunded';

/**
 * Why a top-up moved: which signal or job did it. Webhook causes name their event
 * (`webhook:payment.captured`).
 */
export type TopUpCause =
  | 'purchase' | 'provider_order_failed' | 'checkout_callback' | `webhook:${string}` | 'reconciliation' | 'payment_sweep' | 'expiry' | 'settlement' | 'refund';

/**
 * The moves allowed from each state. A capture wins over an earlier failure or expiry of the same
 * order (for UPI, payment.failed can arrive before the capture of a later attempt; a capture after
 * expiry is still money received), so failed → paid and expired → paid are allowed. Credited and
 * invoiced top-ups may be refunded (their unspent balance).
 */
const allowedMoves: Readonly<Record<TopUpState, readonly TopUpState[]>> = {
  created: ['pending_payment', 'failed', 'expired'],
  pending_payment: ['paid', 'failed', 'expired'],
  failed: ['paid', 'expired'],
  expired: ['paid'],
  paid: ['credited'],
  credited: ['invoiced', 'refunded'],
  invoiced: ['refunded'],
  refunded: [],
};

/** Whether the state machine allows moving from `from` to `to`. */
export function canMove(from: TopUpState, to: TopUpState): boolean {
  return allowedMoves[from].includes(to);
}

/** Payment facts a move records on the top-up itself. */
interface MoveFacts {
  /** The captured payment that paid the top-up (paid only). */
  providerPaymentId?: string | undefined;
}

/**
 * Moves a top-up from `from` to `to` and records the transition with its cause and details.
 * Returns false (and changes nothing) when the top-up is no longer in `from` — a concurrent
 * signal got there first. A move the machine does not allow is a programming error and throws.
 * Sets paid_at / credited_at when entering paid / credited.
 */
export async function moveTopUp(
  tx: Queryable,
  move: { topUpId: string; from: TopUpState; to: TopUpState; cause: TopUpCause; details?: Record<string, string | null> | undefined } & MoveFacts,
): Promise<boolean> {
  if (!canMove(move.from, move.to)) throw new Error(`top-up state machine: ${move.from} → ${move.to} is not allowed`);
  const { rowCount } = await tx.query(
    `UPDATE topups SET state = $3, updated_at = clock_timestamp(),
       provider_payment_id = COALESCE($4, provider_payment_id),
       paid_at = CASE WHEN $3 = 'paid' THEN clock_timestamp() ELSE paid_at END,
       credited_at = CASE WHEN $3 = 'credited' THEN clock_timestamp() ELSE credited_at END
     WHERE id = $1 AND state = $2`,
    [move.topUpId, move.from, move.to, move.providerPaymentId ?? null],
  );
  if (rowCount === 0) return false;
  await recordTransition(tx, { topUpId: move.topUpId, from: move.from, to: move.to, cause: move.cause, details: move.details ?? {} });
  return true;
}

/**
 * Records a transition row. Used by moveTopUp, for the first row of a new top-up (from null),
 * and for events that leave the state as it is but must be on the record (a duplicate payment
 * refunded: from = to, cause 'duplicate_payment_refunded'; a captured payment of the wrong amount
 * or currency, left for a person to decide: from = to, cause 'payment_amount_mismatch').
 */
export async function recordTransition(
  tx: Queryable,
  transition: {
    topUpId: string; from: TopUpState | null; to: TopUpState; cause: TopUpCause | 'duplicate_payment_refunded' | 'payment_amount_mismatch'; details: Record<string, string | null>;
  },
): Promise<void> {
  await tx.query(
    'INSERT INTO topup_transitions (topup_id, from_state, to_state, cause, details) VALUES ($1, $2, $3, $4, $5)',
    [transition.topUpId, transition.from, transition.to, transition.cause, JSON.stringify(transition.details)],
  );
}
