import type { Queryable } from '@gateway/db';
import type { BillingMode, UsageSource } from './ledger-types.ts';
import { InvalidQueryError } from './invalid-query-error.ts';
import { decodePageToken, encodePageToken } from './page-token.ts';
import { idProblem, optionalIdProblem, problemsOf } from './validation.ts';
import { tokenClassesFromJson, type TokenClassUsage } from './token-classes.ts';

/** A request for one page of an organisation's usage records. */
export interface ListUsageInput {
  organisationId: string;
  /** Only this project; empty for all. */
  projectId: string;
  /** Only this model; empty for all. */
  modelSlug: string;
  /** Records created at or after this instant, ms since the epoch; 0 for unbounded. */
  fromMs: bigint;
  /** Records created before this instant, ms since the epoch; 0 for unbounded. */
  toMs: bigint;
  /** 1..500; 0 means the default of 50. */
  pageSize: number;
  /** Empty for the first page, else the token of the previous page. */
  pageToken: string;
}

/** One usage record as the ledger reports it. */
export interface UsageRecordView {
  id: string;
  reservationId: string;
  organisationId: string;
  projectId: string;
  modelSlug: string;
  inputTokens: bigint;
  outputTokens: bigint;
  /** Customer-price cost, µ₹. */
  costMicros: bigint;
  /** Provider cost, µ₹. */
  providerCostMicros: bigint;
  /** Debited from the wallet, µ₹ (0 in internal billing mode). */
  debitedMicros: bigint;
  billingMode: BillingMode;
  usageSource: UsageSource;
  requestId: string;
  /** ms since the Unix epoch. */
  createdAtMs: bigint;
  /** Output tokens produced beyond the Reserve, neither delivered nor billed (BOUNDED_OVERRUN); 0: none. */
  overrunOutputTokens: bigint;
  /** The usage by token price class as its Settle gave it; empty: plain input and output. */
  tokenClasses: TokenClassUsage[];
  /** The upstream deployment that answered; '' when not known (platform analytics only). */
  deployment: string;
}

/** One page of usage records, newest first. */
export interface UsagePage {
  records: UsageRecordView[];
  /** Empty when there are no more pages. */
  nextPageToken: string;
}

/** Page size when the caller asks for 0, in records. */
const defaultUsagePageSize = 50;

/** Largest page a caller may ask for, in records. */
const maxUsagePageSize = 500;

/** Latest instant a window bound may name, ms since the epoch (year 9999). */
const maxWindowMs = 253_402_300_799_999n;

/** A usage_records row with its creation time as integers. */
interface UsageRow {
  id: bigint;
  reservation_id: string;
  organisation_id: string;
  project_id: string;
  model_slug: string;
  input_tokens: bigint;
  output_tokens: bigint;
  cost_micros: bigint;
  provider_cost_micros: bigint;
  debited_micros: bigint;
  billing_mode: BillingMode;
  usage_source: UsageSource;
  request_id: string;
  created_at_micros: bigint;
  overrun_output_tokens: bigint;
  token_classes: unknown;
  deployment: string | null;
}

/** Checks a window bound in ms: 0 (unbounded) up to the year 9999. */
export function windowProblem(field: string, valueMs: bigint): string | undefined {
  if (valueMs < 0n) return `${field} must not be negative`;
  if (valueMs > maxWindowMs) return `${field} must be at most ${maxWindowMs}`;
  return undefined;
}

/**
 * Lists an organisation's usage records newest first, with keyset pagination on
 * (created_at, id): a page never repeats or skips a record that existed when the listing began.
 * Each page reads only the month partitions its window and cursor allow, through each one's
 * (organisation, created_at, id) index: a deep page costs what the first does.
 * Throws InvalidQueryError for bad input.
 */
export async function listUsage(db: Queryable, input: ListUsageInput): Promise<UsagePage> {
  const problems = problemsOf(
    idProblem('organisation_id', input.organisationId),
    optionalIdProblem('project_id', input.projectId),
    optionalIdProblem('model_slug', input.modelSlug),
    windowProblem('from_ms', input.fromMs),
    windowProblem('to_ms', input.toMs),
    input.fromMs > 0n && input.toMs > 0n && input.fromMs >= input.toMs ? 'from_ms must be before to_ms' : undefined,
    !Number.isInteger(input.pageSize) || input.pageSize < 0 || input.pageSize > maxUsagePageSize
      ? `page_size must be between 1 and ${maxUsagePageSize} (0 means ${defaultUsagePageSize})` : undefined,
  );
  const cursor = input.pageToken === '' ? undefined : decodePageToken(input.pageToken);
  if (input.pageToken !== '' && !cursor) problems.push('page_token is not a token this service issued');
  if (problems.length > 0) throw new InvalidQueryError(problems.join('; '));

  const pageSize = input.pageSize === 0 ? defaultUsagePageSize : input.pageSize;
  // Bounds travel as integers and become timestamps in SQL; µs values stay below 2^53, so exact.
  const { rows } = await db.query<UsageRow>(
    `SELECT id, reservation_id, organisation_id, project_id, model_slug, input_tokens, output_tokens, cost_micros,
       provider_cost_micros, debited_micros, billing_mode, usage_source, request_id, overrun_output_tokens, token_classes, deployment,
       (extract(epoch FROM created_at) * 1000000)::bigint AS created_at_micros
     FROM usage_records
     WHERE organisation_id = $1
       AND ($2::text = '' OR project_id = $2)
       AND ($3::text = '' OR model_slug = $3)
       AND ($4::bigint = 0 OR created_at >= timestamptz 'epoch' + $4::bigint * interval '1 millisecond')
       AND ($5::bigint = 0 OR created_at < timestamptz 'epoch' + $5::bigint * interval '1 millisecond')
       AND ($6::bigint IS NULL
         OR (created_at, id) < (timestamptz 'epoch' + $6::bigint * interval '1 microsecond', $7::bigint))
       -- Implied by the keyset condition, but in a form partition pruning reads: a deep page
       -- skips the months after its cursor.
       AND ($6::bigint IS NULL OR created_at <= timestamptz 'epoch' + $6::bigint * interval '1 microsecond')
     ORDER BY created_at DESC, id DESC
     LIMIT $8`,
    [input.organisationId, input.projectId, input.modelSlug, input.fromMs, input.toMs,
      cursor?.createdAtMicros ?? null, cursor?.id ?? null, pageSize + 1],
  );
  const page = rows.slice(0, pageSize);
  const last = page.at(-1);
  return {
    records: page.map(toView),
    nextPageToken: rows.length > pageSize && last ? encodePageToken({ createdAtMicros: last.created_at_micros, id: last.id }) : '',
  };
}

/** Turns a row into the view the transport sends. */
function toView(row: UsageRow): UsageRecordView {
  return {
    id: row.id.toString(),
    reservationId: row.reservation_id,
    organisationId: row.organisation_id,
    projectId: row.project_id,
    modelSlug: row.model_slug,
    inputTokens: row.input_tokens,
    outputTokens: row.output_tokens,
    costMicros: row.cost_micros,
    providerCostMicros: row.provider_cost_micros,
    debitedMicros: row.debited_micros,
    billingMode: row.billing_mode,
    usageSource: row.usage_source,
    requestId: row.request_id,
    createdAtMs: row.created_at_micros / 1000n,
    overrunOutputTokens: row.overrun_output_tokens,
    tokenClasses: tokenClassesFromJson(row.token_classes),
    deployment: row.deployment ?? '',
  };
}
