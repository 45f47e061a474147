import { z } from 'zod';
import { moneyShown, paiseAmount, paiseShown, timestampShown as timestamp } from '../../common/http/wire-fields.ts';

/**
 * The request and response shapes of the refund routes. Paise (what goes back to the payer, GST
 * included) and µ₹ (what leaves the balance) travel as decimal strings.
 */

const id = (prefix: string, what: string) => z.string().regex(new RegExp(`^${prefix}_[0-9a-f]{24}$`))
  .meta({ description: `Id of the ${what}: "${prefix}_" and 24 lowercase hex characters.` });

/** Body of POST /admin/v1/organisations/{id}/topups/{topup_id}/refunds. */
export const createRefundBody = z.strictObject({
  // Razorpay refunds at least ₹1.
  amount_paise: paiseAmount({ min: 100n, max: 10_000_000_000n }, 'What goes back to the payer, GST included, at most what is left of the top-up\'s price.'),
});

const refundState = z.enum(['requested', 'debited', 'provider_pending', 'provider_refunded', 'credit_noted', 'refused', 'provider_refused', 'failed'])
  .meta({ description: 'requested → debited (the ledger took it from the purchased, unspent balance) → provider_pending (the payment provider accepted it but has not processed it yet) → provider_refunded (the provider processed it) → credit_noted (the credit note is issued). refused: the ledger refused it and nothing moved. provider_refused → failed: the provider refused it for good (`failure_reason`), and its money went back to the balance.' });

const refundResponse = z.strictObject({
  id: id('rfd', 'refund'),
  topup_id: id('top', 'top-up'),
  amount_paise: paiseShown('What goes back to the payer, GST included.'),
  debit_micros: moneyShown('What leaves the balance: credit_micros × amount_paise / price_paise, rounded down.'),
  state: refundState,
  provider_refund_id: z.string().nullable().meta({ description: 'The payment provider\'s refund id, once it refunded.' }),
  credit_note_id: id('doc', 'credit note').nullable().meta({ description: 'The credit note referencing the top-up\'s invoice, once issued.' }),
  failure_reason: z.string().nullable().meta({ description: 'Why the payment provider refused the refund (provider_refused and failed only), in its words.' }),
  last_error: z.string().nullable().meta({ description: 'The last transient failure of a step the refund job is retrying (the provider or the ledger unreachable); null when none.' }),
  attempts: z.number().int().meta({ description: 'Failed attempts of the current step (the wait before the next doubles, up to an hour).' }),
  next_attempt_at: timestamp.nullable().meta({ description: 'When the refund job next carries it forward; null once final.' }),
  created_at: timestamp,
});

/** POST .../refunds: the refund as it stands (credit_noted, or debited when the provider call is still to be retried). */
export const refundEnvelope = z.strictObject({ refund: refundResponse });

/** GET .../refunds: the top-up's refunds, newest first. */
export const refundListResponse = z.strictObject({ object: z.literal('list'), data: z.array(refundResponse) });
