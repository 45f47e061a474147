import { z } from 'zod';
import { gatewayModelSlug } from '../../catalog/http/gateway-model-schema.ts';
import { moneyShown as money } from '../../common/http/wire-fields.ts';
import { instantMs, windowInOrder } from '../../common/http/request-schemas.ts';

/** Query of GET /admin/v1/organisations/{id}/usage/export: exactly listUsage's filters, without paging. */
export const usageExportQuery = z.strictObject({
  project_id: z.string({ error: 'must be given once' }).max(100).optional().meta({ description: 'Only this project.' }),
  model: gatewayModelSlug.optional().meta({ description: 'Only this gateway model slug.' }),
  from: instantMs('Only records created at or after this instant (inclusive): ms since the epoch or ISO-8601.'),
  to: instantMs('Only records created before this instant (exclusive): ms since the epoch or ISO-8601.'),
}).superRefine(windowInOrder);

/** Query of GET /admin/v1/analytics/margin and its export. */
export const marginQuery = z.strictObject({
  from: instantMs('Start of the window (inclusive): ms since the epoch or ISO-8601; default: unbounded.'),
  to: instantMs('End of the window (exclusive): ms since the epoch or ISO-8601; default: unbounded.'),
  group_by: z.enum(['day', 'model', 'organisation'], { error: 'must be "day", "model" or "organisation"' }).optional()
    .meta({ description: 'day (Asia/Kolkata calendar day), model (gateway model slug) or organisation (id, with its name); default day.' }),
}).superRefine(windowInOrder);

/** A CSV download (RFC 4180, CRLF line ends, a header line; money in µ₹ integers). */
export const csvResponse = z.string().meta({
  description: 'RFC 4180 CSV with a header line. Text cells that a spreadsheet would run as a formula (starting = + - @, tab or CR) get a leading \'.',
});

/** Counts and money of some usage, as the margin report shows them. */
const usageFiguresShape = {
  requests: z.int(),
  input_tokens: z.int(),
  output_tokens: z.int(),
  customer_price_micros: money('What customers were charged for the usage (its cost).'),
  provider_cost_micros: money('What the providers charge for it.'),
  token_classes: z.array(z.strictObject({
    class: z.string().meta({ description: 'The token price class: input, cached_input, cache_write_5m, cache_write_1h, audio_input, image_input, output or reasoning.' }),
    tokens: z.int(),
    customer_price_micros: money('What customers were charged for the class.'),
    provider_cost_micros: money('What the providers charge for the class.'),
  })).meta({ description: 'Per token class, summed over the requests the ledger recorded by class, ordered by class name; their sums are within customer_price_micros and provider_cost_micros.' }),
  unclassified_requests: z.int().meta({ description: 'Requests recorded without classes (plain input and output): their cost is in the figures above, in no class.' }),
};

/** One group of the margin report. */
const marginRowResponse = z.strictObject({
  key: z.string().meta({ description: 'The day ("2026-11-21", Asia/Kolkata), the gateway model slug, or the organisation id, by group_by.' }),
  organisation_name: z.string().nullable().optional()
    .meta({ description: 'With group_by=organisation: the organisation\'s name (null if it no longer exists in the admin).' }),
  billing_mode: z.enum(['commercial', 'internal']).meta({ description: 'The billing mode the usage was recorded under.' }),
  ...usageFiguresShape,
  margin_micros: money('customer_price − provider_cost; negative when sold below cost. null for internal usage: it earns nothing.').nullable(),
});

/** The margin report: commercial usage and its margin, and internal (sponsored) usage apart from it. */
export const marginReportResponse = z.strictObject({
  object: z.literal('list'),
  group_by: z.enum(['day', 'model', 'organisation']),
  data: z.array(marginRowResponse).meta({ description: 'Commercial usage by group: days in order; models and organisations largest customer price first.' }),
  totals: z.strictObject({ ...usageFiguresShape, margin_micros: money('customer_price − provider_cost of all commercial usage.') })
    .meta({ description: 'The commercial rows summed.' }),
  internal: z.strictObject({
    data: z.array(marginRowResponse).meta({ description: 'Internal usage by group, margin_micros null.' }),
    totals: z.strictObject(usageFiguresShape),
  }).meta({ description: 'Internal (sponsored) organisations\' usage at customer price and at provider cost; never debited, so not revenue.' }),
});

/** Query of GET /admin/v1/analytics/deployments. */
export const deploymentReportQuery = z.strictObject({
  from: instantMs('Start of the window (inclusive): ms since the epoch or ISO-8601; default: unbounded.'),
  to: instantMs('End of the window (exclusive): ms since the epoch or ISO-8601; default: unbounded.'),
}).superRefine(windowInOrder);

/** The report per upstream deployment (platform admins only). */
export const deploymentReportResponse = z.strictObject({
  object: z.literal('list'),
  data: z.array(z.strictObject({
    gateway_model: z.string().meta({ description: 'The gateway model slug.' }),
    deployment: z.string().meta({ description: 'The deployment\'s name within the model ("primary": the model\'s own upstream); "" for usage settled before deployments were recorded.' }),
    requests: z.int().meta({ description: 'Requests the deployment answered (usage records).' }),
    customer_price_micros: money('What customers were charged for those requests in commercial billing (internal usage earns nothing).'),
    provider_cost_micros: money('What the provider charges for those requests plus the failed attempts it may have billed.'),
    failed_attempt_provider_cost_micros: money('The part of provider_cost_micros from failed attempts (timeouts after sending, streams broken before anything reached the client).'),
    margin_micros: money('customer_price − provider_cost; negative when the deployment costs more than it earns.'),
    failed_attempts: z.int().meta({ description: 'Attempts that failed over but that the provider may have billed.' }),
  })).meta({ description: 'Ordered by gateway model, then deployment.' }),
});
