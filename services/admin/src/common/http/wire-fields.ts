import { z } from 'zod';

/**
 * zod builders of the admin API's JSON fields, shared by the request and response schemas and by
 * the gateway model's wire rules (catalog/http/gateway-model-schema.ts): one wording of each rule and message.
 */

const moneyFormatMessage = 'must be a whole number of micro-rupees as a decimal string, e.g. "1500000" (a JSON number is accepted only if it is a safe integer)';

/**
 * A money amount in µ₹ as a request gives it: a decimal string of digits, or a JSON integer
 * within the safe range (a larger JSON number has already lost precision when it was parsed).
 * Becomes a bigint.
 */
export function moneyMicros(range: { min: bigint; max: bigint }, description: string) {
  return z.union([
    z.string().regex(/^\d{1,30}$/, { error: moneyFormatMessage }),
    z.number().int({ error: moneyFormatMessage }),
  ], { error: (issue) => (issue.input === undefined ? 'is required' : moneyFormatMessage) })
    .transform((value) => BigInt(value))
    .pipe(z.bigint()
      .min(range.min, { error: `must be at least ${range.min}` })
      .max(range.max, { error: `must be at most ${range.max}` }))
    .meta({ description: `${description} Micro-rupees (1 INR = 1,000,000), as a decimal string.` });
}

/** A bounded integer with one message naming its range. */
export function integerIn(min: number, max: number, description: string) {
  const message = `must be an integer between ${min} and ${max}`;
  return z.number({ error: (issue) => (issue.input === undefined ? 'is required' : message) })
    .int({ error: message }).min(min, { error: message }).max(max, { error: message })
    .meta({ description });
}

/** A display name: trimmed, 1..200 characters (or up to `maxLength`). */
export function displayText(description: string, maxLength = 200) {
  return z.string({ error: (issue) => (issue.input === undefined ? 'is required' : 'must be a string') })
    .trim()
    .min(1, { error: 'must not be empty' })
    .max(maxLength, { error: `must be at most ${maxLength} characters` })
    .meta({ description });
}

/** A money amount in µ₹ as a response shows it: a decimal string. */
export function moneyShown(description: string) {
  return z.string().regex(/^-?\d+$/)
    .meta({ description: `${description} Micro-rupees (1 INR = 1,000,000) as a decimal string.`, examples: ['1500000'] });
}

const paiseFormatMessage = 'must be a whole number of paise as a decimal string, e.g. "49900" for ₹499.00 (a JSON number is accepted only if it is a safe integer)';

/** An amount in paise (₹1 = 100) as a request gives it: a decimal string or a safe JSON integer; becomes a bigint. */
export function paiseAmount(range: { min: bigint; max: bigint }, description: string) {
  return z.union([
    z.string().regex(/^\d{1,15}$/, { error: paiseFormatMessage }),
    z.number().int({ error: paiseFormatMessage }),
  ], { error: (issue) => (issue.input === undefined ? 'is required' : paiseFormatMessage) })
    .transform((value) => BigInt(value))
    .pipe(z.bigint()
      .min(range.min, { error: `must be at least ${range.min}` })
      .max(range.max, { error: `must be at most ${range.max}` }))
    .meta({ description: `${description} Paise (₹1 = 100), as a decimal string.` });
}

/** An amount in paise as a response shows it: a decimal string. */
export function paiseShown(description: string) {
  return z.string().regex(/^\d+$/).meta({ description: `${description} Paise (₹1 = 100) as a decimal string.`, examples: ['49900'] });
}

/** An instant as a response shows it: ISO-8601 in UTC. */
export const timestampShown = z.iso.datetime().meta({ description: 'ISO-8601 timestamp (UTC).' });

/** A list's page size as a query parameter: an optional decimal string 1..`max` (items) with one message; the route applies `defaultSize` when absent. */
export function pageLimit(max: number, defaultSize: number) {
  const message = `must be an integer between 1 and ${max}`;
  return z.string({ error: 'must be given once' })
    .regex(/^\d{1,7}$/, { error: message })
    .transform(Number)
    .pipe(z.number().int().min(1, { error: message }).max(max, { error: message }))
    .optional()
    .meta({ description: `Items per page, 1..${max}; default ${defaultSize}.` });
}

/** A list's cursor as a query parameter: an optional next_cursor of a previous page, matching `pattern`. */
export function pageCursor(pattern: RegExp) {
  return z.string({ error: 'must be given once' }).regex(pattern, { error: 'must be the next_cursor of a previous page' })
    .optional()
    .meta({ description: 'next_cursor of the previous page.' });
}
