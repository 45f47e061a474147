import { z } from 'zod';
import { displayText, moneyMicros, moneyShown as money } from '../../common/http/wire-fields.ts';
import { prefixedId } from '../../common/http/response-schemas.ts';

/** The wire shapes of an organisation's balance and of manual credits. */

/** The largest single manual credit, µ₹ (₹1,000,000,000): a guard against a slipped finger. */
const maxCreditMicros = 1_000_000_000_000_000n;

/** Body of POST /admin/v1/organisations/{id}/credits. */
export const createCreditBody = z.strictObject({
  amount_micros: moneyMicros({ min: 1n, max: maxCreditMicros }, 'Amount to credit, positive.'),
  reason: displayText('Why the credit is made; kept on the ledger movement. 1..500 characters.', 500),
});

/** An organisation's balance. credited = available + held + debited. */
export const balanceResponse = z.strictObject({
  organisation_id: prefixedId('org', 'organisation'),
  currency: z.literal('INR'),
  credited_micros: money('Everything ever credited.'),
  available_micros: money('What new Reserves can hold.'),
  held_micros: money('Held by open Reserves.'),
  debited_micros: money('Debited by settled usage.'),
});

/** The result of a manual credit. */
export const creditResponse = z.strictObject({
  credit_id: z.string().meta({ description: 'The ledger credit id: "manual:<organisation id>:<Idempotency-Key>".' }),
  organisation_id: prefixedId('org', 'organisation'),
  amount_micros: money('The amount credited.'),
  reason: z.string(),
  balance: balanceResponse.meta({ description: 'The balance right after this credit (the same on a replay).' }),
});
