import type { Dispatcher } from 'undici';
import { connectErrorCodes, discardedBodyBytes, errorCodeOf, reasonOf, retryAfterMsOf, timeoutErrorCodes } from './upstream-call-errors.ts';
import type { UpstreamStream, UpstreamStreamOutcome } from './upstream-outcome.ts';

/** Unread body bytes above which a streamed call's connection is paused until the reader catches up. */
const streamHighWaterBytes = 64 * 1024;

/**
 * One streamed call as an undici dispatch handler that is also its body's async iterator: chunks
 * go straight to the reader waiting for them (or wait in a small queue, the connection paused
 * while the queue is large), with no Readable, stream iterator or AbortController per call. The
 * caller's signal, the stream's abort() and the total timer cut the call through undici's
 * controller; a failure after the body started reaches the reader as the error undici reports.
 */
export class StreamCall implements Dispatcher.DispatchHandler, AsyncIterator<Uint8Array>, AsyncIterable<Uint8Array> {
  readonly #open: (outcome: UpstreamStreamOutcome) => void;
  readonly #signal: AbortSignal;
  readonly #totalTimeoutMs: number;
  readonly #timer: NodeJS.Timeout;
  /** The attempt's own wait for the response headers (routing), when it has one. */
  #headersTimer: NodeJS.Timeout | undefined;
  #retryAfterMs: number | undefined;
  readonly #onAbort = (): void => { this.#cut(); };
  #controller: Dispatcher.DispatchController | undefined;
  /** The open outcome has been handed out (stream, or the outcome of a call without one). */
  #opened = false;
  #statusCode = 0;
  #totalTimedOut = false;
  #cutByGateway = false;
  #queue: Buffer[] = [];
  #queuedBytes = 0;
  #ended = false;
  #error: Error | undefined;
  #waiter: { resolve: (result: IteratorResult<Uint8Array>) => void; reject: (error: Error) => void } | undefined;
  #deliveryQueued = false;
  #closed = false;
  /**
   * Hands the waiting reader what has arrived, once undici has parsed the whole socket read: a
   * chunked body comes as one callback per HTTP chunk (one per SSE event for most upstreams), and
   * the reader must get a read's chunks together, as one buffer, so they become one write to the client.
   */
  readonly #deliver = (): void => {
    this.#deliveryQueued = false;
    const waiter = this.#waiter;
    if (waiter === undefined) return;
    this.#waiter = undefined;
    if (this.#queue.length > 0) waiter.resolve({ value: this.#take(), done: false });
    else if (this.#error !== undefined) waiter.reject(this.#error);
    else if (this.#ended) waiter.resolve({ value: undefined, done: true });
    else this.#waiter = waiter;
  };

  constructor(open: (outcome: UpstreamStreamOutcome) => void, signal: AbortSignal, totalTimeoutMs: number, headersTimeoutMs?: number) {
    this.#open = open;
    this.#signal = signal;
    this.#totalTimeoutMs = totalTimeoutMs;
    this.#timer = setTimeout(() => { this.#totalTimedOut = true; this.#cut(); }, totalTimeoutMs);
    if (headersTimeoutMs !== undefined && headersTimeoutMs < totalTimeoutMs) {
      this.#headersTimer = setTimeout(() => {
        this.#headersTimer = undefined;
        // No headers in the attempt's time: a timeout for the caller now, and the call is cut.
        this.#settleOpen({ kind: 'timeout', reason: `no response headers within the attempt's ${headersTimeoutMs} ms` });
        if (this.#controller !== undefined && !this.#controller.aborted) this.#controller.abort(new Error('upstream call ended by the gateway'));
      }, headersTimeoutMs);
    }
    if (signal.aborted) this.#cutByGateway = true;
    else signal.addEventListener('abort', this.#onAbort, { once: true });
  }

  /** Aborts the call through undici (at once, or as soon as it is handed to a connection). */
  #cut(): void {
    if (this.#signal.aborted) this.#cutByGateway = true;
    const reason = new Error('upstream call ended by the gateway');
    if (this.#controller !== undefined) {
      if (!this.#controller.aborted && !this.#ended) this.#controller.abort(reason);
      return;
    }
    // Not yet handed to a connection: onRequestStart aborts it; a caller waiting to open hears now.
    this.#settleOpen(this.#failure(reason));
  }

  #stopTimers(): void {
    clearTimeout(this.#timer);
    if (this.#headersTimer !== undefined) clearTimeout(this.#headersTimer);
    this.#signal.removeEventListener('abort', this.#onAbort);
  }

  /** The outcome of a non-2xx answer (its Retry-After kept for the router). */
  #httpError(): UpstreamStreamOutcome {
    return this.#retryAfterMs === undefined
      ? { kind: 'http_error', statusCode: this.#statusCode }
      : { kind: 'http_error', statusCode: this.#statusCode, retryAfterMs: this.#retryAfterMs };
  }

  #settleOpen(outcome: UpstreamStreamOutcome): void {
    if (this.#opened) return;
    this.#opened = true;
    if (outcome.kind !== 'stream') this.#stopTimers();
    this.#open(outcome);
  }

  /** What a body failure means (the total timer, undici's timeouts, or anything else). */
  #failure(error: unknown): { kind: 'timeout' | 'failed'; reason: string } {
    if (this.#totalTimedOut) return { kind: 'timeout', reason: `no complete answer within ${this.#totalTimeoutMs} ms` };
    const code = errorCodeOf(error);
    if (code !== undefined && timeoutErrorCodes.has(code)) return { kind: 'timeout', reason: reasonOf(error) };
    return { kind: 'failed', reason: this.#cutByGateway || this.#signal.aborted ? 'aborted by the gateway' : reasonOf(error) };
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.#controller = controller;
    if (this.#totalTimedOut || this.#cutByGateway || this.#opened) controller.abort(new Error('upstream call ended by the gateway'));
  }

  onResponseStart(_controller: Dispatcher.DispatchController, statusCode: number, headers: Record<string, string | string[] | undefined>): void {
    this.#statusCode = statusCode;
    if (this.#headersTimer !== undefined) {
      clearTimeout(this.#headersTimer);
      this.#headersTimer = undefined;
    }
    if (statusCode < 200 || statusCode >= 300) {
      this.#retryAfterMs = retryAfterMsOf(statusCode, headers);
      return; // settled once its body has been discarded
    }
    const stream: UpstreamStream = {
      statusCode,
      body: this,
      failureOf: (error) => this.#failure(error),
      abort: () => { this.#cutByGateway = true; this.#cut(); },
      close: () => { this.#close(); },
    };
    this.#settleOpen({ kind: 'stream', stream });
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.#closed) return;
    if (this.#statusCode < 200 || this.#statusCode >= 300) {
      // A failure's body is read and discarded (vendor text never travels further); a long one cuts the connection.
      this.#queuedBytes += chunk.length;
      if (this.#queuedBytes > discardedBodyBytes) {
        this.#settleOpen(this.#httpError());
        controller.abort(new Error('upstream error body discarded'));
      }
      return;
    }
    this.#queue.push(chunk);
    this.#queuedBytes += chunk.length;
    this.#scheduleDelivery();
    // Backpressure: a reader that is behind (a slow client) pauses the upstream connection.
    if (this.#queuedBytes > streamHighWaterBytes && !controller.paused) controller.pause();
  }

  /** Delivery to a waiting reader runs after the current socket read has been parsed (a microtask). */
  #scheduleDelivery(): void {
    if (this.#waiter === undefined || this.#deliveryQueued) return;
    this.#deliveryQueued = true;
    queueMicrotask(this.#deliver);
  }

  /** Everything queued, as one buffer; resumes a paused connection. */
  #take(): Buffer {
    const taken = this.#queue.length === 1 ? this.#queue[0]! : Buffer.concat(this.#queue, this.#queuedBytes);
    this.#queue = [];
    this.#queuedBytes = 0;
    if (this.#controller?.paused === true) this.#controller.resume();
    return taken;
  }

  onResponseEnd(): void {
    this.#ended = true;
    if (this.#statusCode < 200 || this.#statusCode >= 300) {
      this.#settleOpen(this.#httpError());
      return;
    }
    this.#scheduleDelivery();
  }

  onResponseError(_controller: Dispatcher.DispatchController | undefined, error: Error): void {
    if (!this.#opened) {
      // No stream yet: a non-2xx whose body was being discarded stays that answer; otherwise the
      // call produced no stream (unreachable when nothing was sent).
      if (this.#statusCode !== 0 && (this.#statusCode < 200 || this.#statusCode >= 300)) {
        this.#settleOpen(this.#httpError());
        return;
      }
      const code = errorCodeOf(error);
      if (!this.#totalTimedOut && code !== undefined && connectErrorCodes.has(code)) {
        this.#settleOpen({ kind: 'unreachable', reason: reasonOf(error) });
        return;
      }
      this.#settleOpen(this.#failure(error));
      return;
    }
    if (this.#ended) return;
    this.#ended = true;
    this.#error = error;
    this.#scheduleDelivery();
  }

  [Symbol.asyncIterator](): AsyncIterator<Uint8Array> {
    return this;
  }

  next(): Promise<IteratorResult<Uint8Array>> {
    // What has arrived goes at once, all of it as one read; the error or the end only after it.
    if (this.#queue.length > 0) return Promise.resolve({ value: this.#take(), done: false });
    if (this.#error !== undefined) return Promise.reject(this.#error);
    if (this.#ended) return Promise.resolve({ value: undefined, done: true });
    return new Promise((resolve, reject) => { this.#waiter = { resolve, reject }; });
  }

  /** Leaving the loop early (at [DONE]) changes nothing here: close() decides what becomes of the call. */
  return(): Promise<IteratorResult<Uint8Array>> {
    return Promise.resolve({ value: undefined, done: true });
  }

  /**
   * Stops the timers and frees the connection: a body whose last byte has arrived (the usual end:
   * the upstream ended it right after [DONE]) leaves the connection in the pool and builds no
   * error; a body still open (an upstream that lingers after [DONE]) is cut.
   */
  #close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#stopTimers();
    this.#queue = [];
    this.#queuedBytes = 0;
    if (!this.#ended && this.#controller !== undefined && !this.#controller.aborted) {
      this.#controller.abort(new Error('upstream call ended by the gateway'));
    }
    if (this.#controller?.paused === true) this.#controller.resume();
  }
}
