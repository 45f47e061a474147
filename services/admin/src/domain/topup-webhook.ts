import { z } from 'zod';
import { parseProviderJson } from '../transport/razorpay-client.ts';
import type { ProviderPayment } from './payment-provider.ts';

/**
 * A provider webhook's body, as far as top-ups read it: Razorpay's event envelope
 * (`{ entity: 'event', event, payload: { payment: { entity }, order: { entity }, refund: { entity } } }`).
 * Only call after the signature over the raw bytes has been verified.
 */
export type PaymentWebhookEvent =
  | { type: 'payment.captured' | 'order.paid' | 'payment.failed'; payment: ProviderPayment }
  | { type: 'refund.processed'; refundId: string; paymentId: string }
  | { type: 'other'; name: string };

const paymentEntity = z.object({
  id: z.string().min(1),
  order_id: z.string().nullable().optional(),
  amount: z.bigint(),
  currency: z.string(),
  status: z.enum(['created', 'authorized', 'captured', 'refunded', 'failed']),
  method: z.string().nullable().optional(),
  error_description: z.string().nullable().optional(),
});

const envelope = z.object({
  event: z.string().min(1),
  payload: z.object({
    payment: z.object({ entity: paymentEntity }).optional(),
    refund: z.object({ entity: z.object({ id: z.string().min(1), payment_id: z.string().min(1) }) }).optional(),
  }).optional(),
});

/** Longest provider failure description kept (safe to show; the rest is cut). */
const maxDescriptionLength = 200;

/**
 * The event in a verified webhook body, or undefined when the body is not an event this admin
 * can read (not JSON, or a known event without the entity it needs). Amounts are read exactly
 * as bigint paise from the JSON text.
 */
export function parsePaymentWebhook(rawBody: Buffer): PaymentWebhookEvent | undefined {
  let json: unknown;
  try {
    json = parseProviderJson(rawBody.toString('utf8'));
  } catch {
    return undefined;
  }
  const parsed = envelope.safeParse(json);
  if (!parsed.success) return undefined;
  const { event, payload } = parsed.data;
  switch (event) {
    case 'payment.captured': case 'order.paid': case 'payment.failed': {
      const payment = payload?.payment?.entity;
      if (payment === undefined || !payment.order_id) return undefined;
      return {
        type: event,
        payment: {
          id: payment.id, orderId: payment.order_id, amountPaise: payment.amount, currency: payment.currency, status: payment.status,
          method: payment.method ?? 'unknown', errorDescription: payment.error_description?.slice(0, maxDescriptionLength) ?? null,
        },
      };
    }
    case 'refund.processed': {
      const refund = payload?.refund?.entity;
      return refund === undefined ? undefined : { type: event, refundId: refund.id, paymentId: refund.payment_id };
    }
    default:
      return { type: 'other', name: event };
  }
}
