/**
 * RecordRequests (docs/ledger.md, "Request log"): the proxy's finished requests written to
 * request_log in one multi-row INSERT per batch. Not money: nothing here moves a balance or
 * takes part in Verify; the figures are a display copy of what the request's Settle carried.
 */
import type { Queryable } from '@gateway/db';
import { InvalidQueryError } from './invalid-query-error.ts';
import { isKnownTokenClass } from './token-classes.ts';
import { idProblem, problemsOf } from './validation.ts';

/** Most records one RecordRequests call may carry (the contract's bound). */
const maxRecordsPerCall = 1_000;

/** The API surfaces a record may name (request_log's CHECK). */
const surfaces: ReadonlySet<string> = new Set(['chat_completions', 'responses', 'embeddings', 'messages']);

/** Longest model slug and error code a record may carry, characters (ids follow the ledger's id rules: 1..128 printable ASCII). */
const maxTextLength = 200;

/** Control characters (NUL among them, which PostgreSQL text refuses) are not allowed in the text fields. */
const controlCharacterPattern = /[\u0000-\u001f\u007f]/;

/** Largest int32 (latency_ms and time_to_first_token_ms are int32 on the wire and integer in the table). */
const maxInt32 = 2_147_483_647;

/** One token class of a recorded request, as the proxy sent it (its provider cost is not kept). */
interface RecordedTokenClass {
  tokenClass: string;
  /** Tokens of the class. */
  tokens: bigint;
  /** Customer-price cost of the class, µ₹. */
  costMicros: bigint;
}

/** One finished request as RecordRequests receives it (the proto's RequestRecord, decoded). */
interface RequestRecordInput {
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
  timeToFirstTokenMs?: number | undefined;
  inputTokens: bigint;
  outputTokens: bigint;
  /** Customer-price cost, µ₹. */
  costMicros: bigint;
  tokenClasses: readonly RecordedTokenClass[];
}

/** Why a record cannot be kept, or undefined; names the field the way the contract does. */
function recordProblem(record: RequestRecordInput): string | undefined {
  const idProblems = problemsOf(
    idProblem('request_id', record.requestId), idProblem('organisation_id', record.organisationId), idProblem('project_id', record.projectId),
  );
  if (idProblems.length > 0) return idProblems.join('; ');
  if (!surfaces.has(record.surface)) return `surface must be one of ${[...surfaces].join(', ')}`;
  if (record.modelSlug.length > maxTextLength) return `model_slug must be at most ${maxTextLength} characters`;
  if (controlCharacterPattern.test(record.modelSlug)) return 'model_slug must not contain control characters';
  if (!Number.isInteger(record.status) || record.status < 100 || record.status > 599) return 'status must be an HTTP status (100..599)';
  if (record.errorCode.length > maxTextLength) return `error_code must be at most ${maxTextLength} characters`;
  if (controlCharacterPattern.test(record.errorCode)) return 'error_code must not contain control characters';
  if (record.startedAtMs <= 0n) return 'started_at_ms must be a time after the Unix epoch';
  if (record.latencyMs < 0 || record.latencyMs > maxInt32) return 'latency_ms must not be negative';
  const ttft = record.timeToFirstTokenMs;
  if (ttft !== undefined && (ttft < 0 || ttft > record.latencyMs)) return 'time_to_first_token_ms must be between 0 and latency_ms';
  if (record.inputTokens < 0n || record.outputTokens < 0n) return 'tokens must not be negative';
  if (record.costMicros < 0n) return 'cost_micros must not be negative';
  const seen = new Set<string>();
  for (const entry of record.tokenClasses) {
    if (!isKnownTokenClass(entry.tokenClass)) return `token_classes: unknown token_class ${JSON.stringify(entry.tokenClass.slice(0, 40))}`;
    if (seen.has(entry.tokenClass)) return `token_classes: ${entry.tokenClass} is given twice`;
    seen.add(entry.tokenClass);
    if (entry.tokens < 0n || entry.costMicros < 0n) return `token_classes: ${entry.tokenClass} has a negative figure`;
  }
  return undefined;
}

/**
 * The classes as request_log keeps them: a JSON array of {token_class, tokens, cost_micros} with
 * the figures as JSON numbers written from the bigints (jsonb keeps them exact); null when none.
 */
function tokenClassesJson(classes: readonly RecordedTokenClass[]): string | null {
  if (classes.length === 0) return null;
  return `[${classes.map((entry) => `{"token_class":${JSON.stringify(entry.tokenClass)},"tokens":${entry.tokens},"cost_micros":${entry.costMicros}}`).join(',')}]`;
}

/**
 * Keeps a batch of finished requests: validates every record (the first bad one refuses the whole
 * call with InvalidQueryError naming its index, so a caller's bug is seen rather than half-kept),
 * then writes them all in one INSERT ... SELECT FROM unnest(...) ON CONFLICT DO NOTHING: a request
 * id already kept (same started_at) is skipped, so a retried batch writes nothing twice (a
 * duplicate within one batch is skipped alike). Answers
 * how many records were written now.
 */
export async function recordRequests(db: Queryable, records: readonly RequestRecordInput[]): Promise<number> {
  if (records.length > maxRecordsPerCall) throw new InvalidQueryError(`records: at most ${maxRecordsPerCall} per call, got ${records.length}`);
  for (const [index, record] of records.entries()) {
    const problem = recordProblem(record);
    if (problem) throw new InvalidQueryError(`records[${index}]: ${problem}`);
  }
  if (records.length === 0) return 0;
  const column = <T>(pick: (record: RequestRecordInput) => T) => records.map(pick);
  const { rowCount } = await db.query(
    `INSERT INTO request_log (
       request_id, organisation_id, project_id, surface, model_slug, status, error_code, stream, started_at,
       latency_ms, time_to_first_token_ms, input_tokens, output_tokens, cost_micros, token_classes)
     SELECT r.request_id, r.organisation_id, r.project_id, r.surface, r.model_slug, r.status, r.error_code, r.stream,
       to_timestamp(r.started_at_ms / 1000.0), r.latency_ms, r.ttft_ms, r.input_tokens, r.output_tokens, r.cost_micros, r.token_classes
     FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::smallint[], $7::text[], $8::boolean[],
       $9::bigint[], $10::integer[], $11::integer[], $12::bigint[], $13::bigint[], $14::bigint[], $15::jsonb[])
       AS r(request_id, organisation_id, project_id, surface, model_slug, status, error_code, stream,
         started_at_ms, latency_ms, ttft_ms, input_tokens, output_tokens, cost_micros, token_classes)
     ON CONFLICT DO NOTHING`,
    [
      column((r) => r.requestId), column((r) => r.organisationId), column((r) => r.projectId), column((r) => r.surface),
      column((r) => r.modelSlug), column((r) => r.status), column((r) => (r.errorCode === '' ? null : r.errorCode)), column((r) => r.stream),
      column((r) => r.startedAtMs.toString()), column((r) => r.latencyMs), column((r) => r.timeToFirstTokenMs ?? null),
      column((r) => r.inputTokens.toString()), column((r) => r.outputTokens.toString()), column((r) => r.costMicros.toString()),
      column((r) => tokenClassesJson(r.tokenClasses)),
    ],
  );
  return rowCount;
}
