// The vendor's side of the wire, shared by every route: the leaky headers and error bodies a real
// vendor sends, reading a request body, and streaming a reply word by word under the directives.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Directives } from './directives.ts';

/** Each string the fake upstream deliberately leaks, by where it appears. */
const namedLeakMarkers = {
  /** Appended to the requested model: the vendor's internal model name. */
  vendorModelSuffix: '-vendor-internal-2024',
  /** `system_fingerprint` of every completion and chunk. */
  systemFingerprint: 'fp_vendor_secret',
  /** Value of the `openai-organization` response header. */
  organisationHeaderValue: 'vendor-org-secret',
  /** Name of a vendor-only response header. */
  organisationHeaderName: 'openai-organization',
  /** Name of the vendor's request-id response header. */
  requestIdHeaderName: 'x-vendor-request-id',
  /** Prefix of the vendor's request ids. */
  requestIdPrefix: 'vreq_secret_',
  /** Value of the `server` response header. */
  serverHeaderValue: 'vendor-upstream/1.0',
  /** In every error body the fake sends. */
  errorText: 'VENDOR-SECRET-ERROR-TEXT',
  /** Prefix of the vendor's completion ids. */
  completionIdPrefix: 'chatcmpl-vendorsecret-',
  /** Value of an extra, non-OpenAI body field. */
  vendorTrace: 'vendor-trace-secret',
  /** Prefix of the vendor's Anthropic-style message ids. */
  messageIdPrefix: 'msg_vendorsecret_',
  /** Prefix of the vendor's tool-call ids on the OpenAI routes. */
  toolCallIdPrefix: 'call_vendorsecret_',
  /** Prefix of the vendor's tool_use ids on the Anthropic route. */
  toolUseIdPrefix: 'toolu_vendorsecret_',
} as const;

/**
 * Strings the fake upstream deliberately leaks in its bodies and headers, the way real vendors
 * do: by name, and as `all` for a test that asserts none of them reaches a client, byte for byte.
 */
export const leakMarkers: typeof namedLeakMarkers & { readonly all: readonly string[] } = {
  ...namedLeakMarkers,
  all: Object.values(namedLeakMarkers),
};

const maxBodyBytes = 16 * 1024 * 1024;

/** The vendor's response headers for request number `requestNumber` (1-based), leaks included. */
export function vendorHeaders(requestNumber: number): Record<string, string> {
  return {
    [leakMarkers.requestIdHeaderName]: `${leakMarkers.requestIdPrefix}${requestNumber}`,
    [leakMarkers.organisationHeaderName]: leakMarkers.organisationHeaderValue,
    'x-ratelimit-remaining-requests': '4999',
    server: leakMarkers.serverHeaderValue,
  };
}

/** Sends `body` as JSON with HTTP `status` and `headers`. */
export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string>): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { ...headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

/** An OpenAI-shaped vendor error body for HTTP `status`, leaking the vendor's error text. */
export function vendorError(status: number, message: string, code: string): unknown {
  return { error: { message: `${message} (${leakMarkers.errorText})`, type: status >= 500 ? 'server_error' : 'invalid_request_error', param: null, code } };
}

/** The whole body of a request; rejects past 16 MiB. */
export function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBodyBytes) { reject(new Error('body too large')); req.destroy(); return; }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

/** Resolves after `ms` milliseconds without keeping the process alive. */
export function delay(ms: number): Promise<void> {
  return new Promise((resolve) => { setTimeout(resolve, ms).unref(); });
}

/** An Anthropic-shaped vendor error body. */
export function anthropicError(type: string, message: string): unknown {
  return { type: 'error', error: { type, message: `${message} (${leakMarkers.errorText})` } };
}

/** The frames of one streamed reply, in the upstream's own format. */
export interface StreamFrames {
  head: string[];
  word(word: string, index: number): string;
  /** The in-stream error event `error_after` sends. */
  error: string;
  tail: string[];
}

/**
 * Streams a reply word by word, obeying the streaming directives: a delay before each word, a
 * silence after N words, a cut connection or an in-stream error after N words. Stops early when the client goes away.
 */
export async function streamWords(res: ServerResponse, headers: Record<string, string>, directives: Directives, frames: StreamFrames, words: readonly string[]): Promise<void> {
  res.writeHead(200, { ...headers, 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
  for (const frame of frames.head) res.write(frame);
  // A cut comes after what was written has left, as when a vendor node dies mid-answer.
  const cut = async () => { await new Promise<void>((resolve) => { res.write('', () => resolve()); }); res.destroy(); };
  for (let i = 0; i < words.length; i += 1) {
    if (directives.failAfter === i) { await cut(); return; }
    if (directives.errorAfter === i) { res.end(frames.error); return; }
    if (directives.chunkDelayMs !== undefined) await delay(directives.chunkDelayMs);
    if (directives.pauseAfter === i) await delay(directives.pauseMs ?? 1000);
    if (res.destroyed) return;
    res.write(frames.word(words[i]!, i));
  }
  if (directives.failAfter === words.length) { await cut(); return; }
  if (directives.errorAfter === words.length) { res.end(frames.error); return; }
  for (const frame of frames.tail.slice(0, -1)) res.write(frame);
  res.end(frames.tail.at(-1));
}
