import { z } from 'zod';
import type { PaymentWebhookEvent } from '../domain/payment-webhook.ts';
import { parseProviderJson, sanitiseDescription } from '../transport/razorpay-client.ts';
import { refundWebhookEventNames } from '../domain/refund-events.ts';
import { parseRefundWebhookEvent } from './refund-event-schemas.ts';
import { gstinStates, gstStateCodesText } from '../../../shared/gst-states.ts';
import { displayText, integerIn, moneyMicros, moneyShown, pageCursor, pageLimit, paiseAmount, paiseShown, timestampShown as timestamp } from '../../common/http/wire-fields.ts';

/**
 * The request and response shapes of the billing routes: top-up packages, billing profiles,
 * top-ups and their payment signals. Paise (what is paid, GST included) and µ₹ (what is credited)
 * travel as decimal strings. Responses document the API and tests parse real answers with them.
 */

const id = (prefix: string, what: string) => z.string().regex(new RegExp(`^${prefix}_[0-9a-f]{24}$`))
  .meta({ description: `Id of the ${what}: "${prefix}_" and 24 lowercase hex characters.` });

const packagePrice = paiseAmount({ min: 100n, max: 10_000_000_000n }, 'What the buyer pays, GST included; ₹1 to ₹10 crore.');
const packageCredit = moneyMicros({ min: 1n, max: 1_000_000_000_000_000n }, 'What the organisation\'s balance is credited with.');
const sortOrder = integerIn(-1_000_000, 1_000_000, 'Display order, smallest first.');

// ---- requests ----

/** Query of GET /admin/v1/topup-packages. */
export const packageListQuery = z.strictObject({
  include_inactive: z.enum(['true', 'false'], { error: 'must be "true" or "false"' })
    .optional()
    .meta({ description: 'true (platform admins only): inactive packages too.' }),
});

/** Body of POST /admin/v1/topup-packages. */
export const createPackageBody = z.strictObject({
  name: displayText('Name shown to buyers, 1..200 characters.'),
  price_paise: packagePrice,
  credit_micros: packageCredit,
  active: z.boolean({ error: 'must be true or false' }).optional().meta({ description: 'Whether owners may buy it; default true.' }),
  sort_order: sortOrder.optional(),
});

/** Body of PATCH /admin/v1/topup-packages/{package_id}: at least one field. */
export const updatePackageBody = z.strictObject({
  name: displayText('Name shown to buyers, 1..200 characters.').optional(),
  price_paise: packagePrice.optional(),
  credit_micros: packageCredit.optional(),
  active: z.boolean({ error: 'must be true or false' }).optional(),
  sort_order: sortOrder.optional(),
}).refine((body) => Object.keys(body).length > 0, { error: 'must change at least one of name, price_paise, credit_micros, active, sort_order' });

/** Body of PUT /admin/v1/organisations/{id}/billing-profile. */
export const putBillingProfileBody = z.strictObject({
  legal_name: displayText('The recipient\'s legal name on invoices, 1..200 characters.'),
  address: displayText('The recipient\'s address on invoices, 1..1000 characters.', 1000),
  state_code: z.string({ error: (issue) => (issue.input === undefined ? 'is required' : 'must be a string') })
    .regex(/^[0-9]{2}$/, { error: 'must be a two-digit GST state code, e.g. "29" for Karnataka' })
    .meta({ description: `Two-digit GST state code of the place of supply: a code in force (${gstStateCodesText(gstinStates)}), or 96 for a recipient outside India; decides CGST+SGST or IGST. Retired codes (25, 28) and 99 are refused.` }),
  gstin: z.string({ error: 'must be a string or null' })
    .trim()
    .transform((value) => value.toUpperCase())
    .nullable()
    .optional()
    .transform((value) => (value === '' ? null : value ?? null))
    .meta({ description: 'The recipient\'s GSTIN when registered (15 characters, check character validated, first two digits = state_code); null or absent otherwise.' }),
  country: z.string({ error: 'must be a string or null' })
    .trim()
    .min(1, { error: 'must not be empty (null or absent for an Indian state)' })
    .max(100, { error: 'must be at most 100 characters' })
    .nullable()
    .optional()
    .transform((value) => value ?? null)
    .meta({ description: 'The recipient\'s country, required with state_code 96 (outside India: an export of services, printed on the invoice); null or absent for an Indian state.' }),
  email: z.email({ error: 'must be an email address' })
    .max(254, { error: 'must be at most 254 characters' })
    .nullable()
    .optional()
    .transform((value) => value ?? null)
    .meta({ description: 'Where invoices are emailed; null or absent: nowhere.' }),
});

/** Body of POST /admin/v1/organisations/{id}/topups. */
export const purchaseBody = z.strictObject({
  package_id: z.string({ error: (issue) => (issue.input === undefined ? 'is required' : 'must be a string') })
    .min(1, { error: 'must not be empty' })
    .max(100, { error: 'must be at most 100 characters' })
    .meta({ description: 'The package to buy (an active one).' }),
});

/** The page size of the top-up list when none is given. */
export const defaultTopUpPageSize = 20;

/** Query of GET /admin/v1/organisations/{id}/topups: page size and the previous page's next_cursor. */
export const topUpListQuery = z.strictObject({
  limit: pageLimit(100, defaultTopUpPageSize),
  cursor: pageCursor(/^top_[0-9a-f]{24}$/),
});

/** Query of GET /admin/v1/unmatched-payments: page size and the previous page's next_cursor. */
export const unmatchedPaymentListQuery = z.strictObject({
  limit: pageLimit(100, defaultTopUpPageSize),
  cursor: pageCursor(/^[1-9][0-9]{0,18}$/),
});

const providerId = (what: string) => z.string({ error: (issue) => (issue.input === undefined ? 'is required' : 'must be a string') })
  .regex(/^[A-Za-z0-9_]{1,64}$/, { error: `must be the payment provider's ${what}` });

/** Body of POST .../topups/{topup_id}/checkout-callback: what Razorpay Checkout (or the local pay page) hands the browser. */
export const checkoutCallbackBody = z.strictObject({
  razorpay_payment_id: providerId('payment id'),
  razorpay_order_id: providerId('order id'),
  razorpay_signature: z.string({ error: (issue) => (issue.input === undefined ? 'is required' : 'must be a string') })
    .max(200, { error: 'must be at most 200 characters' })
    .meta({ description: 'hex HMAC-SHA256(key secret, "<order_id>|<payment_id>").' }),
});

// ---- responses ----

const topUpState = z.enum(['created', 'pending_payment', 'paid', 'credited', 'invoiced', 'failed', 'expired', 'refunded'])
  .meta({ description: 'created → pending_payment → paid → credited → invoiced; failed (no payment yet); expired (unpaid past expires_at); refunded.' });

/** A top-up package. */
export const packageResponse = z.strictObject({
  id: id('pkg', 'package'),
  name: z.string(),
  price_paise: paiseShown('What the buyer pays, GST included.'),
  credit_micros: moneyShown('What the balance is credited with.'),
  active: z.boolean(),
  sort_order: z.int(),
  created_at: timestamp,
});

/** The packages, in display order. */
export const packageListResponse = z.strictObject({ object: z.literal('list'), data: z.array(packageResponse) });

const billingProfileResponse = z.strictObject({
  legal_name: z.string(),
  address: z.string(),
  state_code: z.string(),
  gstin: z.string().nullable(),
  country: z.string().nullable(),
  email: z.string().nullable(),
  updated_at: timestamp,
});

/** GET/PUT billing profile: the profile, or null before one is set. */
export const billingProfileEnvelope = z.strictObject({ billing_profile: billingProfileResponse.nullable() });

/** A top-up with its documents and transitions. */
export const topUpResponse = z.strictObject({
  id: id('top', 'top-up'),
  package_id: id('pkg', 'package'),
  package_name: z.string(),
  price_paise: paiseShown('Paid, GST included (the package\'s price when bought).'),
  credit_micros: moneyShown('Credited (the package\'s credit when bought).'),
  state: topUpState,
  provider: z.enum(['razorpay', 'local']),
  provider_order_id: z.string().nullable(),
  provider_payment_id: z.string().nullable().meta({ description: 'The captured payment that paid it (a second capture of the same order is refunded).' }),
  created_at: timestamp,
  paid_at: timestamp.nullable(),
  credited_at: timestamp.nullable(),
  expires_at: timestamp,
  documents: z.array(z.strictObject({ id: id('doc', 'tax document'), kind: z.enum(['tax_invoice', 'receipt_voucher', 'credit_note']), serial: z.string() })),
  transitions: z.array(z.strictObject({
    from_state: topUpState.nullable(),
    to_state: topUpState,
    cause: z.string().meta({ description: 'purchase, checkout_callback, webhook:<event>, reconciliation, expiry, provider_order_failed, duplicate_payment_refunded (state unchanged), payment_amount_mismatch (state unchanged: a capture of another amount or currency, left for a person), refund.' }),
    occurred_at: timestamp,
  })).meta({ description: 'Every transition, oldest first (a refunded duplicate payment is recorded with from_state = to_state).' }),
});

/** The organisation's top-ups, newest first. */
export const topUpListResponse = z.strictObject({
  object: z.literal('list'),
  data: z.array(topUpResponse),
  next_cursor: z.string().nullable().meta({ description: 'Pass as `cursor` for the next page; null on the last page.' }),
});

/** POST .../topups: the new top-up and how the browser pays it. */
export const purchaseResponse = z.strictObject({
  topup: topUpResponse,
  checkout: z.strictObject({
    provider: z.enum(['razorpay', 'local']),
    key_id: z.string().meta({ description: 'Razorpay Checkout\'s `key` (public).' }),
    order_id: z.string(),
    amount_paise: paiseShown('Checkout\'s `amount`.'),
    currency: z.literal('INR'),
    name: z.string(),
    description: z.string(),
    pay_page_url: z.string().nullable().meta({ description: 'The local provider\'s pay page (it returns to the dashboard with the Checkout fields); null with Razorpay.' }),
  }),
});

/** POST /webhooks/razorpay: what was done with the event. */
export const webhookAckResponse = z.strictObject({
  status: z.enum(['processed', 'repeated', 'ignored', 'unmatched']).meta({
    description: 'repeated: this event id was processed before; ignored: an event top-ups do not act on; unmatched: a genuine event that matches no top-up (a payment without an order, an order no top-up has, a body that could not be read), recorded for platform admins (GET /admin/v1/unmatched-payments).',
  }),
});

/** One payment that matched nothing the gateway sold. */
const unmatchedPaymentResponse = z.strictObject({
  id: z.string().meta({ description: 'Pass as `cursor` for the page after it.' }),
  reason: z.enum(['no_order', 'unknown_order', 'authorized_not_captured', 'unreadable_event']).meta({
    description: 'no_order: captured without an order (payment link, QR code, another integration); unknown_order: an order no top-up has; authorized_not_captured: an authorised payment the admin did not capture (Razorpay returns it to the payer after 3 days); unreadable_event: a correctly signed webhook body the admin could not read.',
  }),
  source: z.enum(['webhook', 'sweep', 'reconciliation']).meta({ description: 'The signal that first reported it.' }),
  event_id: z.string().nullable(),
  event_type: z.string(),
  payment_id: z.string().nullable(),
  order_id: z.string().nullable(),
  amount_paise: z.string().nullable().meta({ description: 'Integer paise as a decimal string, as the provider reported it.' }),
  currency: z.string().nullable(),
  payment_status: z.string().nullable(),
  method: z.string().nullable(),
  first_seen_at: z.string(),
  last_seen_at: z.string(),
  seen_count: z.number().int().meta({ description: 'How many signals reported it (webhook retries, sweep passes).' }),
});

/** GET /admin/v1/unmatched-payments: newest first. */
export const unmatchedPaymentListResponse = z.strictObject({
  object: z.literal('list'),
  data: z.array(unmatchedPaymentResponse),
  next_cursor: z.string().nullable().meta({ description: 'Pass as `cursor` for the next page; null on the last page.' }),
});

// ---- the provider's webhook ----

const paymentEntity = z.object({
  id: z.string().min(1),
  order_id: z.string().nullable().optional(),
  amount: z.bigint(),
  currency: z.string(),
  status: z.enum(['created', 'authorized', 'captured', 'refunded', 'failed']),
  method: z.string().nullable().optional(),
  error_description: z.string().nullable().optional(),
});

const webhookEnvelope = z.object({
  event: z.string().min(1),
  payload: z.object({
    payment: z.object({ entity: paymentEntity }).optional(),
    refund: z.object({ entity: z.object({ id: z.string().min(1), payment_id: z.string().min(1), receipt: z.string().nullable().optional() }) }).optional(),
  }).optional(),
});

/**
 * The event in a verified provider webhook body (Razorpay's envelope: `{ event, payload: { payment:
 * { entity }, order: { entity }, refund: { entity } } }`), or `unreadable` when the body is not an
 * event this admin can read (not JSON, or a known event without the entity it needs). A payment
 * without an order (a payment link, a QR code) is read with `orderId: null`. Amounts are read
 * exactly as bigint paise from the JSON text.
 */
export function parsePaymentWebhook(rawBody: Buffer): PaymentWebhookEvent {
  let json: unknown;
  try {
    json = parseProviderJson(rawBody.toString('utf8'));
  } catch {
    return { type: 'unreadable', name: null };
  }
  const parsed = webhookEnvelope.safeParse(json);
  if (!parsed.success) return { type: 'unreadable', name: eventNameOf(json) };
  const { event, payload } = parsed.data;
  switch (event) {
    case 'payment.captured': case 'order.paid': case 'payment.failed': case 'payment.authorized': {
      const payment = payload?.payment?.entity;
      if (payment === undefined) return { type: 'unreadable', name: event };
      return {
        type: event,
        payment: {
          id: payment.id, orderId: payment.order_id ?? null, amountPaise: payment.amount, currency: payment.currency, status: payment.status,
          method: payment.method ?? 'unknown', errorDescription: payment.error_description == null ? null : sanitiseDescription(payment.error_description, []),
        },
      };
    }
    default:
      // Refund and dispute events: refund-event-schemas.ts.
      if (!refundWebhookEventNames.has(event)) return { type: 'other', name: event };
      return parseRefundWebhookEvent(event, json) ?? { type: 'unreadable', name: event };
  }
}

/** The `event` name of a body that is JSON but not an event envelope this admin reads (at most 100 characters), or null. */
function eventNameOf(json: unknown): string | null {
  if (typeof json !== 'object' || json === null || !('event' in json)) return null;
  const name = (json as { event: unknown }).event;
  return typeof name === 'string' && name !== '' ? name.slice(0, 100) : null;
}
