import { z } from 'zod';

/**
 * The shapes of the admin API's responses. They document the API (OpenAPI) and tests parse
 * real responses with them, so the document cannot drift from what the service sends.
 */

/** A resource id as a response shows it: `prefix`_ and 24 lowercase hex characters. */
export const prefixedId = (prefix: string, what: string) => z.string().regex(new RegExp(`^${prefix}_[0-9a-f]{24}$`))
  .meta({ description: `Id of the ${what}: "${prefix}_" and 24 lowercase hex characters.` });

/** A cursor-paged list of items. */
export function listResponse<Item extends z.ZodType>(item: Item) {
  return z.strictObject({
    object: z.literal('list'),
    data: z.array(item),
    has_more: z.boolean().meta({ description: 'Whether more items follow; pass the last id (slug) as `after`.' }),
  });
}

/** The OpenAI-shaped error body every error carries. */
export const errorResponse = z.strictObject({
  error: z.strictObject({
    message: z.string(),
    type: z.string(),
    param: z.string().nullable(),
    code: z.string(),
  }),
});

/** The body of /healthz and /readyz. */
export const healthResponse = z.strictObject({ status: z.enum(['ok', 'ready', 'not_ready']) });
