import type { Queryable } from '@gateway/db';

/**
 * Why a payment the provider reported matches nothing the gateway sold: a captured payment with
 * no order, an order no top-up has, an authorised payment the admin will not capture, or a
 * correctly signed webhook body it could not read.
 */
type UnmatchedReason = 'no_order' | 'unknown_order' | 'authorized_not_captured' | 'unreadable_event';

/** The signal that brought an unmatched payment. */
export type UnmatchedSource = 'webhook' | 'sweep' | 'reconciliation';

/** What is recorded of an unmatched payment (amounts in integer paise; null where the signal had none). */
export interface UnmatchedPaymentInput {
  source: UnmatchedSource;
  reason: UnmatchedReason;
  /** The webhook's x-razorpay-event-id, when a webhook brought it. */
  eventId: string | null;
  /** The webhook event (`payment.captured`, …), or the payment's status as a sweep saw it (`payment.captured`). */
  eventType: string;
  paymentId: string | null;
  orderId: string | null;
  amountPaise: bigint | null;
  currency: string | null;
  paymentStatus: string | null;
  method: string | null;
}

/** An unmatched payment as platform admins list it. */
export interface UnmatchedPayment extends UnmatchedPaymentInput {
  id: string;
  firstSeenAt: Date;
  lastSeenAt: Date;
  /** How many signals reported it (webhook retries, every sweep pass). */
  seenCount: number;
}

interface UnmatchedRow {
  id: bigint;
  source: UnmatchedSource;
  reason: UnmatchedReason;
  event_id: string | null;
  event_type: string;
  payment_id: string | null;
  order_id: string | null;
  amount_paise: bigint | null;
  currency: string | null;
  payment_status: string | null;
  method: string | null;
  first_seen_at: Date;
  last_seen_at: Date;
  seen_count: number;
}

/**
 * Records a payment that matches nothing, once per (reason, payment) — or per event when there is
 * no payment — in the caller's transaction; a repeat only counts as seen again. Returns whether it
 * is new (the caller warns once). For every handler of provider events that finds nothing to apply
 * its event to.
 */
export async function recordUnmatchedPayment(tx: Queryable, input: UnmatchedPaymentInput): Promise<boolean> {
  const dedupeKey = input.paymentId !== null ? `${input.reason}:${input.paymentId}` : `event:${input.eventId ?? input.eventType}`;
  const { rows } = await tx.query<{ inserted: boolean }>(
    `INSERT INTO unmatched_payments (dedupe_key, source, reason, event_id, event_type, payment_id, order_id, amount_paise, currency, payment_status, method)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
     ON CONFLICT (dedupe_key) DO UPDATE SET last_seen_at = clock_timestamp(), seen_count = unmatched_payments.seen_count + 1
     RETURNING (xmax = 0) AS inserted`,
    [dedupeKey, input.source, input.reason, input.eventId, input.eventType, input.paymentId, input.orderId,
      input.amountPaise?.toString() ?? null, input.currency, input.paymentStatus, input.method],
  );
  return rows[0]!.inserted;
}

/** Unmatched payments, newest first, after `beforeId` (the previous page's last), `limit` of them and whether more follow. */
export async function listUnmatchedPayments(db: Queryable, page: { beforeId: string | undefined; limit: number }): Promise<{ items: UnmatchedPayment[]; hasMore: boolean }> {
  const { rows } = await db.query<UnmatchedRow>(
    `SELECT id, source, reason, event_id, event_type, payment_id, order_id, amount_paise, currency, payment_status, method, first_seen_at, last_seen_at, seen_count
     FROM unmatched_payments
     WHERE $1::bigint IS NULL OR id < $1::bigint
     ORDER BY id DESC
     LIMIT $2`,
    [page.beforeId ?? null, page.limit + 1],
  );
  const items = rows.slice(0, page.limit).map((row): UnmatchedPayment => ({
    id: row.id.toString(), source: row.source, reason: row.reason, eventId: row.event_id, eventType: row.event_type, paymentId: row.payment_id,
    orderId: row.order_id, amountPaise: row.amount_paise, currency: row.currency, paymentStatus: row.payment_status, method: row.method,
    firstSeenAt: row.first_seen_at, lastSeenAt: row.last_seen_at, seenCount: row.seen_count,
  }));
  return { items, hasMore: rows.length > page.limit };
}
