import { z } from 'zod';
import { gatewayModelSlug } from '../../catalog/http/gateway-model-schema.ts';
import { moneyShown as money, pageLimit, timestampShown as timestamp } from '../../common/http/wire-fields.ts';
import { instantMs, pageSizes, windowInOrder } from '../../common/http/request-schemas.ts';

/** The platform area's wire shapes: usage records, usage summaries and the audit log. */

/** Query of GET /admin/v1/organisations/{id}/usage. */
export const usageQuery = z.strictObject({
  project_id: z.string({ error: 'must be given once' }).max(100).optional().meta({ description: 'Only this project.' }),
  model: gatewayModelSlug.optional().meta({ description: 'Only this gateway model slug.' }),
  limit: pageLimit(pageSizes.usageMax, pageSizes.usageDefault),
  cursor: z.string({ error: 'must be given once' }).min(1).max(1024, { error: 'must be at most 1024 characters' })
    .optional()
    .meta({ description: 'next_cursor of the previous page.' }),
  from: instantMs('Only records created at or after this instant (inclusive): ms since the epoch or ISO-8601.'),
  to: instantMs('Only records created before this instant (exclusive): ms since the epoch or ISO-8601.'),
}).superRefine(windowInOrder);

/** Query of GET /admin/v1/organisations/{id}/usage/summary. */
export const usageSummaryQuery = z.strictObject({
  project_id: z.string({ error: 'must be given once' }).max(100).optional().meta({ description: 'Only this project.' }),
  from: instantMs('Start of the window (inclusive), ISO-8601 or ms since the epoch; default: unbounded.'),
  to: instantMs('End of the window (exclusive), ISO-8601 or ms since the epoch; default: unbounded.'),
  group_by: z.enum(['project'], { error: 'must be "project"' }).optional()
    .meta({ description: 'project: rows are also split by project (and carry project_id).' }),
}).superRefine(windowInOrder);

/** Query of GET /admin/v1/audit-events. */
export const auditEventsQuery = z.strictObject({
  organisation_id: z.string({ error: 'must be given once' }).max(100).optional().meta({ description: 'Only this organisation\'s events.' }),
  limit: pageLimit(pageSizes.max, pageSizes.default),
  after: z.string({ error: 'must be given once' }).regex(/^\d{1,19}$/, { error: 'must be the id of an audit event' })
    .transform((value) => BigInt(value))
    .optional()
    .meta({ description: 'Return the events after this one (its id).' }),
});

/** One usage record. */
const usageRecordResponse = z.strictObject({
  id: z.string(),
  project_id: z.string(),
  model: z.string().meta({ description: 'Gateway model slug.' }),
  input_tokens: z.int(),
  output_tokens: z.int(),
  cost_micros: money('Customer-price cost.'),
  provider_cost_micros: money('What the provider charges (analytics only).'),
  debited_micros: money('Debited from the wallet ("0" in internal billing mode).'),
  usage_source: z.enum(['upstream', 'gateway_estimate']).meta({ description: 'upstream: the provider reported the tokens; gateway_estimate: the gateway counted them.' }),
  request_id: z.string(),
  created_at: timestamp,
  overrun_output_tokens: z.int().meta({ description: 'Output tokens the upstream produced beyond the Reserve: neither delivered nor billed, their provider cost inside provider_cost_micros. Non-zero flags the record; 0: none.' }),
  cost_by_class: z.record(z.string(), z.strictObject({
    tokens: z.int(),
    cost_micros: money('Customer-price cost of the class.'),
    provider_cost_micros: money('What the provider charges for the class (analytics only).'),
  })).optional().meta({
    description: 'The usage by token price class (input, cached_input, cache_write_5m, cache_write_1h, audio_input, image_input, output, reasoning), the classes with tokens only; '
      + 'their cost_micros sum to cost_micros. Absent: a plain usage (input_tokens and output_tokens at the model\'s input and output prices).',
  }),
});

/** A page of usage records, newest first. */
export const usageListResponse = z.strictObject({
  object: z.literal('list'),
  data: z.array(usageRecordResponse),
  next_cursor: z.string().nullable().meta({ description: 'Pass as `cursor` for the next page; null on the last page.' }),
});

/** One token price class of a summary: its tokens, customer cost and provider cost. */
const tokenClassSummary = z.strictObject({
  class: z.string().meta({ description: 'The token price class: input, cached_input, cache_write_5m, cache_write_1h, audio_input, image_input, output or reasoning.' }),
  tokens: z.int(),
  cost_micros: money('Customer-price cost of the class.'),
  provider_cost_micros: money('What the providers charge for the class (analytics only).'),
});

/** Usage summed by day (Asia/Kolkata) and gateway model (and project with group_by=project). */
export const usageSummaryResponse = z.strictObject({
  object: z.literal('list'),
  data: z.array(z.strictObject({
    day: z.string().meta({ description: 'Calendar day in Asia/Kolkata, e.g. "2026-11-21".' }),
    model: z.string().meta({ description: 'Gateway model slug.' }),
    project_id: z.string().optional().meta({ description: 'The project; only with group_by=project.' }),
    requests: z.int(),
    input_tokens: z.int(),
    output_tokens: z.int(),
    cost_micros: money('Customer-price cost.'),
    provider_cost_micros: money('Provider cost (analytics only).'),
    debited_micros: money('Debited from the wallet.'),
    token_classes: z.array(tokenClassSummary).meta({
      description: 'Tokens and cost per token price class, summed over the row\'s requests that carry classes, ordered by class name; '
        + 'empty when none does. Requests without classes are counted in unclassified_requests instead.',
    }),
    unclassified_requests: z.int().meta({
      description: 'Requests of the row without classes (plain input and output); their cost is cost_micros minus the sum of token_classes[].cost_micros.',
    }),
  })).meta({ description: 'Ordered by day, then model.' }),
});

/** One audit event: who changed what, when, with the before/after of each changed field (never a secret). */
export const auditEventResponse = z.strictObject({
  id: z.string().regex(/^\d+$/).meta({ description: 'Increasing; pass the last one as `after` for the next page.' }),
  occurred_at: timestamp,
  actor: z.strictObject({
    kind: z.enum(['platform_admin', 'organisation_token', 'person', 'cli', 'system']),
    token_id: z.string().nullable().meta({ description: 'The admin token that made the call; null for a person, the command line and the system.' }),
    person_id: z.string().nullable().meta({ description: 'The signed-in person who made the call; null for tokens, the command line and the system.' }),
  }),
  organisation_id: z.string().nullable(),
  action: z.string().meta({ description: 'e.g. "organisation.update", "project.rotate_key".' }),
  resource_type: z.string(),
  resource_id: z.string(),
  changes: z.record(z.string(), z.strictObject({ before: z.unknown(), after: z.unknown() }))
    .meta({ description: 'The before/after of each changed field. Credentials appear only as "(set)" / "(replaced)", keys as id and hint.' }),
});
