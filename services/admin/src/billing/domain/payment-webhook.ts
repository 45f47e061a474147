import type { ProviderPayment } from './payment-provider.ts';
import { applyRefundWebhookEvent, type RefundWebhookEvent } from './refund-events.ts';
import { recordFailedPayment, recordUnmatched, settleCapturedPayment, type WebhookOutcome } from './settlement.ts';
import { recordWebhookEvent } from './topup-store.ts';
import { requireProvider, type TopUpsDeps } from './topups-deps.ts';

/**
 * A provider webhook's event, as far as billing reads it (the HTTP layer reads it from the body,
 * only after the signature over the raw bytes has been verified). Amounts in paise.
 */
export type PaymentWebhookEvent =
  | { type: 'payment.captured' | 'order.paid' | 'payment.failed' | 'payment.authorized'; payment: ProviderPayment }
  | RefundWebhookEvent
  | { type: 'other'; name: string }
  /** A correctly signed body that is not an event this admin can read (its `event` name when it had one). */
  | { type: 'unreadable'; name: string | null };

/** One correctly signed webhook delivery: its event and the id it is deduplicated by (the provider's, or the body's digest). */
export interface PaymentWebhookDelivery {
  event: PaymentWebhookEvent;
  eventId: string;
}

/**
 * Whether a webhook body's signature is the configured provider's over these exact bytes
 * (service_unavailable when no provider is configured): the HTTP layer asks before it reads the body.
 */
export function verifyPaymentWebhookSignature(deps: Pick<TopUpsDeps, 'provider'>, rawBody: Buffer, signature: string | undefined): boolean {
  return requireProvider(deps).verifyWebhookSignature(rawBody, signature);
}

/** Records a correctly signed body this admin could not read as unmatched, once per event id. */
async function recordUnreadableEvent(deps: TopUpsDeps, eventId: string, name: string | null): Promise<WebhookOutcome> {
  let warn: (() => void) | undefined;
  const repeated = await deps.db.transaction(async (tx) => {
    warn = undefined;
    if (!await recordWebhookEvent(tx, eventId, name ?? 'unreadable')) return true;
    warn = await recordUnmatched(deps, tx, {
      source: 'webhook', reason: 'unreadable_event', eventId, eventType: name ?? 'unknown', paymentId: null, orderId: null,
      amountPaise: null, currency: null, paymentStatus: null, method: null,
    });
    return false;
  });
  warn?.();
  return repeated ? 'repeated' : 'unmatched';
}

/**
 * Applies one verified provider webhook delivery, once per event id, in the transaction that
 * records the id. Events may come in any order and more than once; unknown events are ignored;
 * a genuine event that matches no top-up (or could not be read) is recorded as unmatched — every
 * correctly signed delivery is answered 2xx, since Razorpay retries anything else for 24 hours
 * and then disables the endpoint, losing the events that matter.
 */
export async function receivePaymentWebhook(deps: TopUpsDeps, delivery: PaymentWebhookDelivery): Promise<WebhookOutcome> {
  const { event, eventId } = delivery;
  const ref = { id: eventId, type: event.type };
  switch (event.type) {
    case 'other':
      return 'ignored';
    case 'unreadable':
      return recordUnreadableEvent(deps, eventId, event.name);
    case 'payment.authorized':
      // With automatic capture (how orders are made) a capture follows at once; an account on
      // manual capture is captured by reconciliation and the sweep (captureAuthorizedPayment),
      // which also record an authorisation no top-up has.
      return 'ignored';
    case 'payment.captured': case 'order.paid':
      if (event.payment.status !== 'captured') return 'ignored';
      return settleCapturedPayment(deps, event.payment, `webhook:${event.type}`, ref);
    case 'payment.failed':
      return await recordFailedPayment(deps, event.payment, `webhook:${event.type}`, ref) ? 'repeated' : 'processed';
    default:
      // Refund and dispute events: refund-events.ts.
      return applyRefundWebhookEvent(deps, event, eventId);
  }
}
