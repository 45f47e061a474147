// The dashboard's only way to the admin: same-origin fetches of /admin/v1 and /auth with the
// session cookie, the session's CSRF token on every change, and the API's error shape turned
// into ApiError so forms can show a message beside the field the API named.
import { readableErrorText } from './components/error-text.ts';

/** An error the admin API answered (or a network failure, status 0), in the API's terms. */
export class ApiError extends Error {
  /** HTTP status; 0 when the request never got an answer. */
  readonly status: number;
  /** The API's error code, e.g. "invalid_request", "permission_denied", "network_error" (status 0). */
  readonly code: string;
  /** The request field at fault (e.g. "monthly_cap_micros"), or null. */
  readonly param: string | null;
  /** Seconds to wait before retrying, from Retry-After (429), or null. */
  readonly retryAfterSeconds: number | null;

  constructor(message: string, status: number, code: string, param: string | null, retryAfterSeconds: number | null = null) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.code = code;
    this.param = param;
    this.retryAfterSeconds = retryAfterSeconds;
  }
}

/** Query parameters of a GET; undefined values are left out. */
type Query = Record<string, string | number | undefined>;

let csrfToken: string | undefined;
let sessionLost: (() => void) | undefined;

/** Remembers the signed-in session's CSRF token (undefined after sign-out); api.send sends it. */
export function setCsrfToken(token: string | undefined): void {
  csrfToken = token;
}

/** Called when an /admin/v1 call answers 401: the session ended (expired, revoked, signed out elsewhere). */
export function onSessionLost(listener: () => void): void {
  sessionLost = listener;
}

function urlOf(path: string, query?: Query): string {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(query ?? {})) if (value !== undefined) search.set(name, String(value));
  const text = search.toString();
  return text === '' ? path : `${path}?${text}`;
}

async function call(method: string, path: string, init: { query?: Query; body?: unknown; accept?: string; headers?: Record<string, string> }): Promise<Response> {
  const headers: Record<string, string> = { ...init.headers, accept: init.accept ?? 'application/json' };
  if (init.body !== undefined) headers['content-type'] = 'application/json';
  if (method !== 'GET' && csrfToken !== undefined) headers['x-csrf-token'] = csrfToken;
  let response: Response;
  try {
    response = await fetch(urlOf(path, init.query), {
      method,
      headers,
      credentials: 'same-origin',
      ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
    });
  } catch {
    throw new ApiError('The admin could not be reached. Check the connection and try again.', 0, 'network_error', null);
  }
  if (response.ok) return response;
  throw await errorOf(response, path);
}

async function errorOf(response: Response, path: string): Promise<ApiError> {
  let message = `The admin answered ${response.status}.`;
  let code = 'http_error';
  let param: string | null = null;
  try {
    const body = (await response.json()) as { error?: { message?: string; code?: string; param?: string | null } };
    if (body.error?.message !== undefined) message = readableErrorText(body.error.message);
    if (body.error?.code !== undefined) code = body.error.code;
    param = body.error?.param ?? null;
  } catch {
    // Not the API's error shape (a proxy in between, say): the status line's message stays.
  }
  const retryAfter = Number(response.headers.get('retry-after'));
  if (response.status === 401 && path.startsWith('/admin/v1/')) sessionLost?.();
  return new ApiError(message, response.status, code, param, Number.isFinite(retryAfter) && retryAfter > 0 ? retryAfter : null);
}

/** The body of an answer: parsed JSON, or undefined for 204 / an empty body. */
async function bodyOf<T>(response: Response): Promise<T> {
  const text = await response.text();
  return (text === '' ? undefined : JSON.parse(text)) as T;
}

/** The file name a Content-Disposition header gives, if any. */
function fileNameOf(response: Response, fallback: string): string {
  const header = response.headers.get('content-disposition') ?? '';
  const match = /filename\*?=(?:UTF-8'')?"?([^";]+)"?/i.exec(header);
  return match?.[1] === undefined ? fallback : decodeURIComponent(match[1]);
}

/** Calls of the admin API (paths are absolute, e.g. "/admin/v1/organisations/org_…/projects"). */
export const api = {
  /** GET a JSON resource; throws ApiError on any non-2xx answer. */
  async get<T>(path: string, query?: Query): Promise<T> {
    return bodyOf<T>(await call('GET', path, query === undefined ? {} : { query }));
  },
  /** Sends a change as JSON with the session's X-CSRF-Token (and `headers`, e.g. Idempotency-Key); resolves to the JSON answer (undefined for 204). */
  async send<T>(method: 'POST' | 'PUT' | 'PATCH' | 'DELETE', path: string, body?: unknown, headers?: Record<string, string>): Promise<T> {
    return bodyOf<T>(await call(method, path, headers === undefined ? { body } : { body, headers }));
  },
  /** Fetches a CSV export and saves it through a temporary download link. */
  async download(path: string, query?: Query): Promise<void> {
    const response = await call('GET', path, { ...(query === undefined ? {} : { query }), accept: 'text/csv' });
    const url = URL.createObjectURL(await response.blob());
    const link = document.createElement('a');
    link.href = url;
    link.download = fileNameOf(response, `${path.split('/').filter(Boolean).slice(-2).join('-')}.csv`);
    document.body.append(link);
    link.click();
    link.remove();
    // The click has started the download; the object URL can go once the event loop turns.
    setTimeout(() => URL.revokeObjectURL(url), 0);
  },
};
