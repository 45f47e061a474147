import { createHash } from 'node:crypto';
import { GatewayError } from '@gateway/errors';
import type { PaymentWebhookDelivery } from '../domain/payment-webhook.ts';
import { parsePaymentWebhook } from './billing-schemas.ts';

/** A webhook event id: Razorpay's x-razorpay-event-id, word characters and a few separators. */
const eventIdPattern = /^[A-Za-z0-9_.:-]{1,200}$/;

/** The webhook request as received: its raw bytes and the two headers that matter. */
export interface PaymentWebhookRequest {
  rawBody: Buffer;
  /** X-Razorpay-Signature. */
  signature: string | undefined;
  /** X-Razorpay-Event-Id. */
  eventId: string | undefined;
}

/**
 * Reads a provider webhook request into a delivery billing can apply: the signature over the raw
 * bytes is verified first (a forged or re-serialised body is refused, 400, and nothing is read),
 * only then is the body parsed (parsePaymentWebhook; an unreadable one is still a delivery, to be
 * recorded). Without a usable event id (Razorpay always sends one) the body's digest stands in,
 * so a repeat of the same body is still recognised.
 */
export function readPaymentWebhook(
  verifySignature: (rawBody: Buffer, signature: string | undefined) => boolean,
  request: PaymentWebhookRequest,
): PaymentWebhookDelivery {
  if (!verifySignature(request.rawBody, request.signature)) {
    throw new GatewayError('invalid_request', { publicMessage: 'The webhook signature (X-Razorpay-Signature) does not match the body.' });
  }
  const event = parsePaymentWebhook(request.rawBody);
  const eventId = request.eventId !== undefined && eventIdPattern.test(request.eventId)
    ? request.eventId
    : `body:${createHash('sha256').update(request.rawBody).digest('hex')}`;
  return { event, eventId };
}
