import type { IncomingHttpHeaders } from 'node:http';
import { GatewayError } from '@gateway/errors';
import { acceptedContentEncodings } from '@gateway/http-guard';

/**
 * What a body may occupy on the heap while it is read, bytes. An identity body with a
 * Content-Length is read to that length (one above `maxBodyBytes` is refused with 413 before a
 * byte is read, and one of an encoding the gateway does not take with 415: neither occupies
 * anything). A compressed or chunked body's decoded size is unknown until it has been read, so
 * it may take the whole per-body limit. No body at all takes nothing.
 */
function bytesWhileRead(headers: IncomingHttpHeaders, maxBodyBytes: number): number {
  const encoding = headers['content-encoding']?.trim().toLowerCase() ?? 'identity';
  if (!acceptedContentEncodings.includes(encoding)) return 0;
  const declared = headers['content-length'];
  const chunked = headers['transfer-encoding'] !== undefined;
  if (declared === undefined && !chunked) return 0;
  if (encoding !== 'identity' || chunked) return maxBodyBytes;
  const length = Number(declared);
  // A malformed Content-Length is refused by Node's parser before a handler runs; guarded anyway.
  if (!Number.isSafeInteger(length) || length < 0) return maxBodyBytes;
  return length > maxBodyBytes ? 0 : length;
}

/**
 * The process-wide budget of request-body bytes being read at once (PROXY_MAX_INFLIGHT_BODY_BYTES).
 * A body is read onto the V8 heap (after decoding its Content-Encoding) and may take minutes to
 * arrive, so without it a few keys sending large bodies slowly exhaust the heap and kill the
 * proxy for everyone (40 unfinished 16 MiB gzip bodies did). A body takes its
 * share before its first byte is read and gives it back once it has been parsed or has failed;
 * a body that does not fit is a retryable 503 at once, and moves no money (it is refused before
 * the RPM count and any Reserve).
 */
export class BodyByteBudget {
  #inUseBytes = 0;
  readonly #capacityBytes: number;
  readonly #maxBodyBytes: number;

  /** `capacityBytes` is the budget, `maxBodyBytes` the per-body limit (PROXY_MAX_BODY_BYTES); capacity ≥ the limit, or a chunked body could never be read. */
  constructor(capacityBytes: number, maxBodyBytes: number) {
    if (capacityBytes < maxBodyBytes) throw new RangeError('the in-flight body budget must hold at least one body of the largest size');
    this.#capacityBytes = capacityBytes;
    this.#maxBodyBytes = maxBodyBytes;
  }

  /** Bytes held by bodies being read now. */
  get inUseBytes(): number {
    return this.#inUseBytes;
  }

  /**
   * Takes what the body of a request with these headers may occupy while it is read, and returns
   * the function that gives it back (calling it again does nothing). Throws a 503
   * `service_unavailable` with `retry-after: 1` when it does not fit: other bodies will have
   * been read within a second or so, and retrying is safe since nothing happened.
   */
  take(headers: IncomingHttpHeaders): () => void {
    const bytes = bytesWhileRead(headers, this.#maxBodyBytes);
    if (this.#inUseBytes + bytes > this.#capacityBytes) {
      throw new GatewayError('service_unavailable', {
        publicMessage: 'The gateway is reading too many large request bodies at once. Try again shortly.',
        internalMessage: `body byte budget full: ${this.#inUseBytes} of ${this.#capacityBytes} bytes in use, ${bytes} asked`,
        headers: { 'retry-after': '1' },
      });
    }
    this.#inUseBytes += bytes;
    let held = true;
    return () => {
      if (!held) return;
      held = false;
      this.#inUseBytes -= bytes;
    };
  }
}
