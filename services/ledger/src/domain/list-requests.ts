import type { Queryable } from '@gateway/db';
import { InvalidQueryError } from './invalid-query-error.ts';
import { windowProblem } from './list-usage.ts';
import type { TokenClassUsage } from './token-classes.ts';
import { idProblem, optionalIdProblem, problemsOf } from './validation.ts';

/** A request for one page of an organisation's request log (ListRequests). */
export interface ListRequestsInput {
  organisationId: string;
  /** Only this project; empty for all. */
  projectId: string;
  /** Only this model (as the client sent it); empty for all. */
  modelSlug: string;
  /** Only this API surface ('chat_completions', 'responses', 'embeddings', 'messages'); empty for all. */
  surface: string;
  /** 0: any; 2, 4 or 5: that class (2xx, 4xx, 5xx); 100..599: exactly that HTTP status. */
  status: number;
  /** Requests started at or after this instant, ms since the epoch; 0 for unbounded. */
  fromMs: bigint;
  /** Requests started before this instant, ms since the epoch; 0 for unbounded. */
  toMs: bigint;
  /** 1..500; 0 means the default of 50. */
  pageSize: number;
  /** Empty for the first page, else the token of the previous page. */
  pageToken: string;
}

/** One finished request as the request log keeps it (the proto's RequestRecord). */
export interface RequestRecordView {
  requestId: string;
  organisationId: string;
  projectId: string;
  surface: string;
  modelSlug: string;
  /** HTTP status answered to the client. */
  status: number;
  /** The error catalogue's code; empty for a success. */
  errorCode: string;
  stream: boolean;
  /** When the proxy received the request, ms since the Unix epoch. */
  startedAtMs: bigint;
  /** Receipt to last byte, ms. */
  latencyMs: number;
  /** Receipt to first content byte, ms; undefined when nothing was produced. */
  timeToFirstTokenMs?: number;
  inputTokens: bigint;
  outputTokens: bigint;
  /** Customer-price cost, µ₹ (display only: the usage record is the money). */
  costMicros: bigint;
  /** The usage by token price class; empty: plain input and output. */
  tokenClasses: TokenClassUsage[];
}

/** One page of the request log, newest first. */
export interface RequestPage {
  records: RequestRecordView[];
  /** Empty when there are no more pages. */
  nextPageToken: string;
}

/** Where a request-log listing stopped: the last record's start (µs since the epoch) and request id. */
interface RequestCursor {
  startedAtMicros: bigint;
  requestId: string;
}

/** The surfaces a request may be recorded on (the table's CHECK). */
const surfaces: ReadonlySet<string> = new Set(['chat_completions', 'responses', 'embeddings', 'messages']);

/** Page size when the caller asks for 0, in records. */
const defaultRequestPageSize = 50;

/** Largest page a caller may ask for, in records. */
const maxRequestPageSize = 500;

/** Version tag inside request-log tokens (distinct from ListUsage's, so one is never read as the other). */
const requestTokenVersion = 'r1';

/** Largest µs instant a cursor may name (int64). */
const maxCursorMicros = 2n ** 63n - 1n;

/** A request_log row with its start as integer µs. */
interface RequestRow {
  request_id: string;
  organisation_id: string;
  project_id: string;
  surface: string;
  model_slug: string;
  status: number;
  error_code: string | null;
  stream: boolean;
  started_at_micros: bigint;
  latency_ms: number;
  time_to_first_token_ms: number | null;
  input_tokens: bigint;
  output_tokens: bigint;
  cost_micros: bigint;
  token_classes: unknown;
}

/** The columns every read selects, the start as integer µs (exact below 2^53). */
const requestColumns = `request_id, organisation_id, project_id, surface, model_slug, status, error_code, stream,
  (extract(epoch FROM started_at) * 1000000)::bigint AS started_at_micros, latency_ms, time_to_first_token_ms,
  input_tokens, output_tokens, cost_micros, token_classes`;

/** Encodes a cursor as an opaque URL-safe token. */
function encodeRequestPageToken(cursor: RequestCursor): string {
  return Buffer.from(JSON.stringify([requestTokenVersion, cursor.startedAtMicros.toString(), cursor.requestId])).toString('base64url');
}

/** Decodes a token from encodeRequestPageToken; undefined when it is not one. */
function decodeRequestPageToken(token: string): RequestCursor | undefined {
  if (token.length > 400 || !/^[A-Za-z0-9_-]+$/.test(token)) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
  } catch {
    return undefined;
  }
  if (!Array.isArray(parsed) || parsed.length !== 3 || parsed[0] !== requestTokenVersion) return undefined;
  const [, startedAt, requestId] = parsed as unknown[];
  if (typeof startedAt !== 'string' || typeof requestId !== 'string' || !/^\d{1,19}$/.test(startedAt)) return undefined;
  if (idProblem('request_id', requestId) !== undefined) return undefined;
  const startedAtMicros = BigInt(startedAt);
  return startedAtMicros > maxCursorMicros ? undefined : { startedAtMicros, requestId };
}

/** Checks a status filter: 0, a class digit (2, 4, 5) or an HTTP status 100..599. */
function statusFilterProblem(status: number): string | undefined {
  if (!Number.isInteger(status)) return 'status must be an integer';
  if (status === 0 || status === 2 || status === 4 || status === 5 || (status >= 100 && status <= 599)) return undefined;
  return 'status must be 0 (any), 2, 4 or 5 (a class) or an HTTP status 100..599';
}

/** The [low, high) status range a filter selects; [0, 1000) for any. */
function statusRange(status: number): [number, number] {
  if (status === 0) return [0, 1000];
  if (status < 10) return [status * 100, status * 100 + 100];
  return [status, status + 1];
}

/**
 * Lists an organisation's request log newest first, with keyset pagination on
 * (started_at, request_id) through the index request_log_listing: a page never repeats or skips
 * a record that existed when the listing began, and a deep page costs what the first does.
 * Filters: project, model, surface, status (any, a class or exact) and a window on started_at
 * (from inclusive, to exclusive). Throws InvalidQueryError for bad input.
 */
export async function listRequests(db: Queryable, input: ListRequestsInput): Promise<RequestPage> {
  const problems = problemsOf(
    idProblem('organisation_id', input.organisationId),
    optionalIdProblem('project_id', input.projectId),
    optionalIdProblem('model_slug', input.modelSlug),
    input.surface === '' || surfaces.has(input.surface) ? undefined : `surface must be one of ${[...surfaces].join(', ')}`,
    statusFilterProblem(input.status),
    windowProblem('from_ms', input.fromMs),
    windowProblem('to_ms', input.toMs),
    input.fromMs > 0n && input.toMs > 0n && input.fromMs >= input.toMs ? 'from_ms must be before to_ms' : undefined,
    !Number.isInteger(input.pageSize) || input.pageSize < 0 || input.pageSize > maxRequestPageSize
      ? `page_size must be between 1 and ${maxRequestPageSize} (0 means ${defaultRequestPageSize})` : undefined,
  );
  const cursor = input.pageToken === '' ? undefined : decodeRequestPageToken(input.pageToken);
  if (input.pageToken !== '' && !cursor) problems.push('page_token is not a token this service issued');
  if (problems.length > 0) throw new InvalidQueryError(problems.join('; '));

  const pageSize = input.pageSize === 0 ? defaultRequestPageSize : input.pageSize;
  const [statusLow, statusHigh] = statusRange(input.status);
  const { rows } = await db.query<RequestRow>(
    `SELECT ${requestColumns}
     FROM request_log
     WHERE organisation_id = $1
       AND ($2::text = '' OR project_id = $2)
       AND ($3::text = '' OR model_slug = $3)
       AND ($4::text = '' OR surface = $4)
       AND status >= $5 AND status < $6
       AND ($7::bigint = 0 OR started_at >= timestamptz 'epoch' + $7::bigint * interval '1 millisecond')
       AND ($8::bigint = 0 OR started_at < timestamptz 'epoch' + $8::bigint * interval '1 millisecond')
       AND ($9::bigint IS NULL
         OR (started_at, request_id) < (timestamptz 'epoch' + $9::bigint * interval '1 microsecond', $10::text))
       -- Implied by the keyset condition, but in a form partition pruning reads: a deep page
       -- skips the days after its cursor.
       AND ($9::bigint IS NULL OR started_at <= timestamptz 'epoch' + $9::bigint * interval '1 microsecond')
     ORDER BY started_at DESC, request_id DESC
     LIMIT $11`,
    [input.organisationId, input.projectId, input.modelSlug, input.surface, statusLow, statusHigh, input.fromMs, input.toMs,
      cursor?.startedAtMicros ?? null, cursor?.requestId ?? null, pageSize + 1],
  );
  const page = rows.slice(0, pageSize);
  const last = page.at(-1);
  return {
    records: page.map(toView),
    nextPageToken: rows.length > pageSize && last
      ? encodeRequestPageToken({ startedAtMicros: last.started_at_micros, requestId: last.request_id }) : '',
  };
}

/** A request for one record of an organisation's request log (GetRequest). */
export interface GetRequestInput {
  organisationId: string;
  requestId: string;
}

/**
 * Reads one request of an organisation's request log; undefined when the organisation has no
 * such request (another organisation's request is not found either). Throws InvalidQueryError for bad input.
 */
export async function getRequest(db: Queryable, input: GetRequestInput): Promise<RequestRecordView | undefined> {
  const problems = problemsOf(idProblem('organisation_id', input.organisationId), idProblem('request_id', input.requestId));
  if (problems.length > 0) throw new InvalidQueryError(problems.join('; '));
  const { rows } = await db.query<RequestRow>(
    `SELECT ${requestColumns} FROM request_log WHERE request_id = $1 AND organisation_id = $2
     ORDER BY started_at DESC LIMIT 1`,
    [input.requestId, input.organisationId],
  );
  return rows[0] ? toView(rows[0]) : undefined;
}

/** A stored figure (JSON number or decimal string) as a bigint; 0 when absent or unreadable. */
function storedInteger(value: unknown): bigint {
  if (typeof value === 'number' && Number.isSafeInteger(value)) return BigInt(value);
  if (typeof value === 'string' && /^\d{1,19}$/.test(value)) return BigInt(value);
  return 0n;
}

/**
 * The token classes as request_log keeps them: the migration's form
 * ([{"token_class", "tokens", "cost_micros"}], numbers) or usage_records' (camelCase, decimal
 * strings); NULL is none.
 */
function requestTokenClasses(stored: unknown): TokenClassUsage[] {
  if (!Array.isArray(stored)) return [];
  return (stored as Array<Record<string, unknown>>).flatMap((entry) => {
    const tokenClass = entry.token_class ?? entry.tokenClass;
    if (typeof tokenClass !== 'string') return [];
    return [{
      tokenClass,
      tokens: storedInteger(entry.tokens),
      costMicros: storedInteger(entry.cost_micros ?? entry.costMicros),
      providerCostMicros: storedInteger(entry.provider_cost_micros ?? entry.providerCostMicros),
    }];
  });
}

/** Turns a row into the view the transport sends. */
function toView(row: RequestRow): RequestRecordView {
  return {
    requestId: row.request_id,
    organisationId: row.organisation_id,
    projectId: row.project_id,
    surface: row.surface,
    modelSlug: row.model_slug,
    status: Number(row.status),
    errorCode: row.error_code ?? '',
    stream: row.stream,
    startedAtMs: row.started_at_micros / 1000n,
    latencyMs: Number(row.latency_ms),
    ...(row.time_to_first_token_ms === null ? {} : { timeToFirstTokenMs: Number(row.time_to_first_token_ms) }),
    inputTokens: row.input_tokens,
    outputTokens: row.output_tokens,
    costMicros: row.cost_micros,
    tokenClasses: requestTokenClasses(row.token_classes),
  };
}
