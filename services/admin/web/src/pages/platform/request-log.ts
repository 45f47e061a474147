// The request log page's rules, apart from its markup so they are unit-tested: the filter form
// turned into the API's query, a request's time to the millisecond in IST, and which requests
// count as failed.
import { formatCount } from '../../format.ts';
import { istWindowQuery } from '../common/ist-dates.ts';

/** One finished request as GET /admin/v1/organisations/{id}/requests lists it. */
export interface RequestRecord {
  object: 'request';
  request_id: string;
  project_id: string;
  surface: 'chat_completions' | 'responses' | 'embeddings' | 'messages';
  /** The model as the client sent it; '' when none. */
  model: string;
  status: number;
  /** The error code of a refused or failed request; null for a success. */
  error_code: string | null;
  stream: boolean;
  /** ISO-8601 (UTC), to the millisecond. */
  started_at: string;
  /** Receipt to last byte, ms. */
  latency_ms: number;
  /** Receipt to first content byte, ms; null when nothing was produced. */
  time_to_first_token_ms: number | null;
  input_tokens: number;
  output_tokens: number;
  /** Customer-price cost, µ₹ as a decimal string. */
  cost_micros: string;
  /** Tokens and cost (µ₹) by token price class; absent for a plain usage. */
  cost_by_class?: Record<string, { tokens: number; cost_micros: string }>;
}

/** A page of requests, newest first. */
export interface RequestPage {
  object: 'list';
  data: RequestRecord[];
  next_cursor: string | null;
}

/** The status choices of the filter form. */
export type StatusChoice = 'all' | 'success' | '4xx' | '5xx' | 'exact';

/** The request log's filter form as the person set it (empty string: no filter). */
export interface RequestFilterForm {
  projectId: string;
  model: string;
  surface: string;
  status: StatusChoice;
  /** The exact HTTP status typed, when `status` is 'exact'. */
  exactStatus: string;
  /** First IST day included ("YYYY-MM-DD"), or ''. */
  fromDay: string;
  /** Last IST day included ("YYYY-MM-DD"), or ''. */
  toDay: string;
}

/** The form with no filter set. */
export const emptyRequestFilters: RequestFilterForm = {
  projectId: '', model: '', surface: '', status: 'all', exactStatus: '', fromDay: '', toDay: '',
};

/** The API surfaces with the names people read. */
export const surfaceLabels: Record<RequestRecord['surface'], string> = {
  chat_completions: 'Chat completions',
  responses: 'Responses',
  embeddings: 'Embeddings',
  messages: 'Messages',
};

/**
 * The query of GET …/requests the form selects (from/to: ms since the epoch, the "to" day
 * included so its bound is the next IST day's start), or why the form cannot make one.
 */
export function requestFilterQuery(form: RequestFilterForm): { ok: true; query: Record<string, string> } | { ok: false; problem: string } {
  const query: Record<string, string> = {};
  if (form.projectId !== '') query.project_id = form.projectId;
  if (form.model !== '') query.model = form.model;
  if (form.surface !== '') query.surface = form.surface;
  if (form.status === 'success') query.status = '2xx';
  if (form.status === '4xx' || form.status === '5xx') query.status = form.status;
  if (form.status === 'exact') {
    const text = form.exactStatus.trim();
    if (!/^[1-5]\d\d$/.test(text)) return { ok: false, problem: 'Enter an HTTP status from 100 to 599, such as 402.' };
    query.status = text;
  }
  const window = istWindowQuery(form.fromDay, form.toDay);
  if (!window.ok) return window;
  return { ok: true, query: { ...query, ...window.query } };
}

/** IST's offset from UTC, ms (+05:30, no daylight saving). */
const istOffsetMs = 19_800_000;

const monthNames = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/** An ISO-8601 instant in India Standard Time to the millisecond: "20 Nov 2025, 10:00:01.123 IST". */
export function istMillisecond(iso: string): string {
  const ms = Date.parse(iso);
  if (Number.isNaN(ms)) return '—';
  const shifted = new Date(ms + istOffsetMs).toISOString(); // "2025-11-20T10:00:01.123Z" in IST's wall clock
  const [year, month, day] = [shifted.slice(0, 4), Number(shifted.slice(5, 7)), Number(shifted.slice(8, 10))];
  return `${day} ${monthNames[month - 1]} ${year}, ${shifted.slice(11, 23)} IST`;
}

/** A duration in ms as people read it: "812 ms", "12,345 ms" (exact, Indian grouping as the rest of the dashboard). */
export function durationText(ms: number | null): string {
  return ms === null ? '—' : `${formatCount(ms)} ms`;
}

/** Whether a request failed: a status of 400 or more, or an error code (a stream that failed after its 200 headers). */
export function requestFailed(record: Pick<RequestRecord, 'status' | 'error_code'>): boolean {
  return record.status >= 400 || record.error_code !== null;
}
