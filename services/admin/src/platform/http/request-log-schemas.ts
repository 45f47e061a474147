import { z } from 'zod';
import { requestSurfaces, type RequestLogRecord } from '../../common/domain/request-log-port.ts';
import { instantMs, pageSizes, windowInOrder } from '../../common/http/request-schemas.ts';
import { moneyShown as money, pageLimit, timestampShown as timestamp } from '../../common/http/wire-fields.ts';

/** The request log's wire shapes (GET /admin/v1/organisations/{id}/requests and /requests/{request_id}). */

/** A status filter as the query gives it: a class (2xx, 4xx, 5xx) or one HTTP status 100..599. */
const statusFilter = z.string({ error: 'must be given once' })
  .regex(/^(?:[245]xx|[1-5]\d\d)$/, { error: 'must be 2xx, 4xx, 5xx or an HTTP status such as 402' })
  .transform((value) => (value.endsWith('xx') ? Number(value[0]) : Number(value)))
  .optional()
  .meta({ description: 'Only this class of status (2xx, 4xx, 5xx) or exactly this HTTP status (e.g. 402); default: every status.' });

/** Query of GET /admin/v1/organisations/{id}/requests. */
export const requestLogQuery = z.strictObject({
  project_id: z.string({ error: 'must be given once' }).max(100).optional().meta({ description: 'Only this project.' }),
  model: z.string({ error: 'must be given once' }).regex(/^[\x21-\x7e]{1,128}$/, { error: 'must be 1 to 128 printable characters without spaces' })
    .optional()
    .meta({ description: 'Only this model, as the client sent it (a gateway model slug or an alias).' }),
  surface: z.enum(requestSurfaces, { error: `must be one of ${requestSurfaces.join(', ')}` }).optional()
    .meta({ description: 'Only this API surface.' }),
  status: statusFilter,
  limit: pageLimit(pageSizes.usageMax, pageSizes.usageDefault),
  cursor: z.string({ error: 'must be given once' }).min(1).max(1024, { error: 'must be at most 1024 characters' })
    .optional()
    .meta({ description: 'next_cursor of the previous page.' }),
  from: instantMs('Only requests started at or after this instant (inclusive): ms since the epoch or ISO-8601.'),
  to: instantMs('Only requests started before this instant (exclusive): ms since the epoch or ISO-8601.'),
}).superRefine(windowInOrder);

/** One finished request, served or refused. */
export const requestLogRecordResponse = z.strictObject({
  object: z.literal('request'),
  request_id: z.string().meta({ description: 'The gateway\'s request id (the x-request-id answered to the client).' }),
  project_id: z.string(),
  surface: z.enum(requestSurfaces).meta({ description: 'The API surface called.' }),
  model: z.string().meta({ description: 'The model the client asked for, as sent (slug or alias); "" when the request named none.' }),
  status: z.int().meta({ description: 'The HTTP status answered (for a stream: the status its headers carried).' }),
  error_code: z.string().nullable().meta({ description: 'The error code of a refused or failed request (docs/errors.md), e.g. "insufficient_balance"; null for a success.' }),
  stream: z.boolean(),
  started_at: timestamp.meta({ description: 'When the gateway received the request: ISO-8601 (UTC), to the millisecond.' }),
  latency_ms: z.int().meta({ description: 'From receipt to the last byte answered, ms.' }),
  time_to_first_token_ms: z.int().nullable().meta({ description: 'From receipt to the first content byte, ms; null when nothing was produced.' }),
  input_tokens: z.int(),
  output_tokens: z.int(),
  cost_micros: money('Customer-price cost, as its usage was billed (display only: the usage records are the money).'),
  cost_by_class: z.record(z.string(), z.strictObject({
    tokens: z.int(),
    cost_micros: money('Customer-price cost of the class.'),
  })).optional().meta({
    description: 'The usage by token price class (input, cached_input, cache_write_5m, cache_write_1h, audio_input, image_input, output, reasoning); '
      + 'absent: a plain usage (or none).',
  }),
});

/** A page of requests, newest first. */
export const requestLogListResponse = z.strictObject({
  object: z.literal('list'),
  data: z.array(requestLogRecordResponse),
  next_cursor: z.string().nullable().meta({ description: 'Pass as `cursor` for the next page; null on the last page.' }),
});

/** The JSON of one logged request: token counts and latencies as numbers, money as decimal strings (µ₹). */
export function requestLogRecordJson(record: RequestLogRecord): z.output<typeof requestLogRecordResponse> {
  return {
    object: 'request',
    request_id: record.requestId,
    project_id: record.projectId,
    surface: record.surface as z.output<typeof requestLogRecordResponse>['surface'],
    model: record.modelSlug,
    status: record.status,
    error_code: record.errorCode,
    stream: record.stream,
    started_at: record.startedAt.toISOString(),
    latency_ms: record.latencyMs,
    time_to_first_token_ms: record.timeToFirstTokenMs,
    input_tokens: Number(record.inputTokens),
    output_tokens: Number(record.outputTokens),
    cost_micros: record.costMicros.toString(),
    // Only when the request's usage was itemised by class.
    ...(record.tokenClasses.length === 0 ? {} : {
      cost_by_class: Object.fromEntries(record.tokenClasses.map((entry) => [entry.tokenClass, {
        tokens: Number(entry.tokens), cost_micros: entry.costMicros.toString(),
      }])),
    }),
  };
}
