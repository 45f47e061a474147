import { z } from 'zod';
import type { RefundWebhookEvent } from '../domain/refund-events.ts';
import { moneyShown, paiseShown, timestampShown as timestamp } from '../../common/http/wire-fields.ts';

/** Longest provider reason kept (safe to show; the rest is cut). */
const maxReasonLength = 200;

// Razorpay's refund entity (payload.refund.entity) and dispute entity (payload.dispute.entity), as far as the admin reads them.
const refundEntity = z.object({
  id: z.string().min(1),
  payment_id: z.string().min(1),
  amount: z.bigint(),
  receipt: z.string().nullable().optional(),
  status: z.string().optional(),
  error_description: z.string().nullable().optional(),
});

const disputeEntity = z.object({
  id: z.string().min(1),
  payment_id: z.string().min(1),
  amount: z.bigint(),
  amount_deducted: z.bigint().optional(),
  status: z.string().min(1),
});

const refundEnvelope = z.object({ payload: z.object({ refund: z.object({ entity: refundEntity }) }) });
const disputeEnvelope = z.object({ payload: z.object({ dispute: z.object({ entity: disputeEntity }) }) });

/**
 * A refund event (refund.processed, refund.failed) or dispute event (payment.dispute.created, won,
 * lost, closed) from a verified webhook's parsed JSON (amounts already bigint paise), or
 * undefined when the entity it needs is missing or malformed.
 */
export function parseRefundWebhookEvent(event: string, json: unknown): RefundWebhookEvent | undefined {
  if (event === 'refund.processed' || event === 'refund.failed') {
    const refund = refundEnvelope.safeParse(json).data?.payload.refund.entity;
    if (refund === undefined) return undefined;
    return {
      type: event, refundId: refund.id, paymentId: refund.payment_id, receipt: refund.receipt ?? null, amountPaise: refund.amount,
      reason: refund.error_description?.slice(0, maxReasonLength) ?? null,
    };
  }
  if (event === 'payment.dispute.created' || event === 'payment.dispute.won' || event === 'payment.dispute.lost' || event === 'payment.dispute.closed') {
    const dispute = disputeEnvelope.safeParse(json).data?.payload.dispute.entity;
    if (dispute === undefined) return undefined;
    return {
      type: event,
      dispute: { id: dispute.id, paymentId: dispute.payment_id, amountPaise: dispute.amount, amountDeductedPaise: dispute.amount_deducted ?? 0n, status: dispute.status },
    };
  }
  return undefined;
}

/** Query of GET /admin/v1/payment-reversals. */
export const paymentReversalListQuery = z.strictObject({
  organisation_id: z.string().regex(/^org_[0-9a-f]{24}$/).optional().meta({ description: 'Only this organisation\'s.' }),
  shortfall_only: z.enum(['true', 'false']).optional().meta({ description: 'true: only reversals the balance could not cover (the flagged organisations).' }),
});

const paymentReversalResponse = z.strictObject({
  id: z.string().meta({ description: 'prv_…' }),
  kind: z.enum(['refund', 'dispute']).meta({ description: 'refund: made from the payment provider\'s dashboard; dispute: a chargeback.' }),
  organisation_id: z.string(),
  topup_id: z.string(),
  provider_ref: z.string().meta({ description: 'The provider\'s refund (rfnd_…) or dispute (disp_…) id.' }),
  provider_payment_id: z.string(),
  amount_paise: paiseShown('What the payer got back or disputes, GST included.'),
  debit_micros: moneyShown('Its share of the top-up\'s credit: credit_micros × amount_paise / price_paise, rounded down.'),
  taken_micros: moneyShown('What the ledger took from the available balance (never below zero); null until debited.').nullable(),
  shortfall_micros: moneyShown('What the balance could not cover (debit_micros − taken_micros); above zero, the organisation is flagged.').nullable(),
  state: z.enum(['to_debit', 'debited', 'to_return', 'returned', 'closed']).meta({
    description: 'to_debit → debited (a dispute\'s hold until its outcome) → to_return → returned (a dispute won: the hold given back); closed: a dispute won before anything was taken.',
  }),
  dispute_status: z.string().nullable().meta({ description: 'Disputes: the provider\'s latest status (open, under_review, won, lost, closed).' }),
  last_error: z.string().nullable().meta({ description: 'The last failure of a step the refund job is retrying; null when none.' }),
  created_at: timestamp,
  updated_at: timestamp,
});

/** GET /admin/v1/payment-reversals: newest first, at most 500. */
export const paymentReversalListResponse = z.strictObject({ object: z.literal('list'), data: z.array(paymentReversalResponse) });
