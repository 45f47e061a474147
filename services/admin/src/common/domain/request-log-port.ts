/** The request log as the admin reads it from the ledger (ListRequests, GetRequest): display only, never money. */

/** The API surfaces a request may be recorded on. */
export const requestSurfaces = ['chat_completions', 'responses', 'embeddings', 'messages'] as const;

/** One API surface of the proxy. */
type RequestSurface = (typeof requestSurfaces)[number];

/** One token price class of a logged request: its tokens and customer cost, µ₹. */
interface RequestTokenClass {
  /** e.g. `cached_input`, `reasoning` (docs/api-conventions.md, "Token classes"). */
  tokenClass: string;
  tokens: bigint;
  /** Customer-price cost of the class, µ₹. */
  costMicros: bigint;
}

/** One finished request as the proxy saw it. */
export interface RequestLogRecord {
  requestId: string;
  projectId: string;
  surface: string;
  /** The gateway model the client asked for, as sent; '' when none. */
  modelSlug: string;
  /** The HTTP status answered to the client. */
  status: number;
  /** The error catalogue's code; null for a success. */
  errorCode: string | null;
  stream: boolean;
  /** When the proxy received the request (ms precision). */
  startedAt: Date;
  /** Receipt to last byte, ms. */
  latencyMs: number;
  /** Receipt to first content byte, ms; null when nothing was produced. */
  timeToFirstTokenMs: number | null;
  inputTokens: bigint;
  outputTokens: bigint;
  /** Customer-price cost, µ₹ (display only: the usage record is the money). */
  costMicros: bigint;
  /** The usage by token price class; empty: plain input and output. */
  tokenClasses: RequestTokenClass[];
}

/** Filters and paging of a request-log listing. */
export interface RequestLogQuery {
  projectId?: string | undefined;
  modelSlug?: string | undefined;
  surface?: RequestSurface | undefined;
  /** undefined: any; 2, 4 or 5: that class (2xx, 4xx, 5xx); 100..599: exactly that status. */
  status?: number | undefined;
  /** Window on the start, ms since the epoch: from inclusive, to exclusive; undefined = unbounded. */
  fromMs?: number | undefined;
  toMs?: number | undefined;
  /** 1..500 records. */
  pageSize: number;
  /** Opaque token from the previous page. */
  pageToken?: string | undefined;
}

/** What the admin needs from the ledger to show the request log (part of LedgerPort). */
export interface RequestLogPort {
  /** Lists an organisation's requests newest first, one page at a time. */
  listRequests(request: RequestLogQuery & { organisationId: string }): Promise<{ records: RequestLogRecord[]; nextPageToken: string | null }>;
  /** One request of an organisation by its request id; null when it has none (or it is past retention). */
  getRequest(request: { organisationId: string; requestId: string }): Promise<RequestLogRecord | null>;
}
