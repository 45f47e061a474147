// What an upstream call comes to, shared by the transport (upstream-transport.ts), its streamed
// call (stream-call.ts), the failure classification (upstream-call-errors.ts) and the inference
// that bills by it, so none of them imports another for its types.

/**
 * What became of one upstream call. The distinction that matters for money: `unreachable`
 * means the request never left (the Reserve is released); every other outcome means it may
 * have reached the provider (the Reserve is settled).
 */
export type UpstreamOutcome =
  /** A 2xx answer whose body parsed as JSON. */
  | { kind: 'response'; statusCode: number; json: unknown }
  /**
   * A non-2xx answer; its body is discarded unread (vendor text never travels further). A 429's
   * or 503's Retry-After is kept, ms, for the router alone.
   */
  | { kind: 'http_error'; statusCode: number; retryAfterMs?: number | undefined }
  /** The connection could not be made; nothing was sent. */
  | { kind: 'unreachable'; reason: string }
  /** No first byte, a stalled body, or the total time ran out, after the request was sent. */
  | { kind: 'timeout'; reason: string }
  /** Sent, but the answer was broken (reset, not JSON, too large). */
  | { kind: 'failed'; reason: string };

/** A 2xx streamed answer being read: its body chunks as they arrive, and how to classify a failure. */
export interface UpstreamStream {
  statusCode: number;
  /** The body, chunk by chunk as the upstream sends it; throws when the body fails or is aborted. */
  body: AsyncIterable<Uint8Array>;
  /** What a body failure means: a timeout (idle gap or total time) or a broken stream. */
  failureOf(error: unknown): { kind: 'timeout' | 'failed'; reason: string };
  /** Cuts the call now (the gateway ended the stream: cost stop, failure, client gone). */
  abort(): void;
  /** Stops the total-time timer and frees the connection; call once the body is done with. */
  close(): void;
}

/** What became of opening a streamed call: the stream, or the outcome of a call that produced none. */
export type UpstreamStreamOutcome = { kind: 'stream'; stream: UpstreamStream } | Exclude<UpstreamOutcome, { kind: 'response' }>;
