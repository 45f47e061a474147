import { z } from 'zod';
import { pageLimit } from './wire-fields.ts';

/** Request shapes every area's routes share: paging, time windows, the Idempotency-Key header. */

/** The Idempotency-Key header of a credit: 1..128 characters of A-Z a-z 0-9 _ - : . */
export const idempotencyKeyHeader = z.object({
  'Idempotency-Key': z.string({ error: (issue) => (issue.input === undefined ? 'header is required' : 'must be a single header value') })
    .regex(/^[A-Za-z0-9_\-:.]{1,128}$/, { error: 'must be 1 to 128 characters of A-Z, a-z, 0-9 and _ - : .' }),
});

/** The default and largest page sizes of the lists. */
export const pageSizes = { default: 20, max: 100, usageDefault: 50, usageMax: 500 } as const;

/** Query of the cursor-paged lists (organisations, projects, gateway models). */
export const listQuery = z.strictObject({
  limit: pageLimit(pageSizes.max, pageSizes.default),
  after: z.string({ error: 'must be given once' }).min(1).max(200)
    .optional()
    .meta({ description: 'Return the items after this one (its id, or its slug for gateway models).' }),
});

/** The latest instant a window bound may name, ms since the epoch (the ledger's limit: year 9999). */
const maxInstantMs = 253_402_300_799_999;

/**
 * An instant given as a query parameter, as ms since the epoch: either ms since the epoch (digits)
 * or an ISO-8601 date-time with an offset. 1 ms .. year 9999, the ledger's window bounds.
 */
export function instantMs(description: string) {
  const message = 'must be ms since the epoch or an ISO-8601 date-time such as 2026-11-01T00:00:00+05:30';
  return z.string({ error: 'must be given once' })
    .refine((value) => /^\d{1,15}$/.test(value) || z.iso.datetime({ offset: true }).safeParse(value).success, { error: message })
    .transform((value) => (/^\d+$/.test(value) ? Number(value) : Date.parse(value)))
    .pipe(z.number().int().min(1, { error: 'must be after 1970-01-01T00:00:00Z' }).max(maxInstantMs, { error: 'must be before the year 10000' }))
    .optional()
    .meta({ description });
}

/** Refuses a window whose `to` is not after its `from` (400 naming `to`). */
export function windowInOrder(query: { from?: number | undefined; to?: number | undefined }, context: z.RefinementCtx): void {
  if (query.from !== undefined && query.to !== undefined && query.from >= query.to) {
    context.addIssue({ code: 'custom', path: ['to'], message: 'must be after from' });
  }
}
