import { isIP } from 'node:net';
import { Agent, buildConnector, type Dispatcher } from 'undici';
import { AddressRefusedError, checkedLookup, disallowedAddressReason, systemResolver, type HostResolver } from '@gateway/address-policy';
import type { UpstreamRequest } from './upstream-adapter.ts';
import { discardedBodyBytes, failedCallOutcome, retryAfterMsOf } from './upstream-call-errors.ts';
import { StreamCall } from './stream-call.ts';
import type { UpstreamOutcome, UpstreamStreamOutcome } from './upstream-outcome.ts';

/**
 * Where one upstream call goes: the model's base URL (e.g. `https://api.example.com/v1`) and
 * whether the admin allowed it a private address. Without that permission every address the
 * host is (a literal) or resolves to is checked against the SSRF policy before connecting.
 */
export interface UpstreamEndpoint {
  baseUrl: string;
  /** Absent or false: private, loopback and other internal addresses are refused at connect time. */
  allowPrivateNetwork?: boolean | undefined;
}

/**
 * One routing attempt's own limits on a call (inference/attempts.ts), within the transport's:
 * its wait for the response headers, and what is left of the request's UPSTREAM_TOTAL_TIMEOUT_MS
 * when earlier attempts used some of it (so a request's attempts together stay within it).
 */
export interface AttemptLimits {
  /** A timeout when no response headers came within this, ms. */
  headersTimeoutMs: number;
  /** The call's whole time, ms, when less than the transport's total; undefined: the transport's. */
  totalTimeoutMs?: number | undefined;
}

/** Largest non-streamed answer body read by default, bytes: what embeddings size their batches against (embeddings.ts). */
export const upstreamResponseMaxBytes = 16 * 1024 * 1024;

/** Timeouts and limits of the upstream transport. */
export interface UpstreamTransportOptions {
  connectTimeoutMs: number;
  /** Longest wait for the response headers after sending, ms. */
  firstByteTimeoutMs: number;
  /** Longest gap between two chunks of the body, ms. */
  idleTimeoutMs: number;
  /** Longest a whole call may take, ms. */
  totalTimeoutMs: number;
  /** Largest response body read, bytes. */
  maxResponseBytes?: number;
  /** How host names are resolved; default the system resolver (tests inject a table). */
  resolve?: HostResolver;
}

/**
 * undici's connector with the SSRF check in front: a literal IP host (which `net.connect` never
 * looks up) is judged before the socket is opened, and a host name is resolved by a lookup that
 * judges every address it returns. A refusal fails the connect with AddressRefusedError, so the
 * request is never written and the call counts as `unreachable` (the Reserve is released).
 */
function guardedConnector(timeoutMs: number, resolve: HostResolver, allowPrivate: boolean): buildConnector.connector {
  const connect = buildConnector({ timeout: timeoutMs, lookup: checkedLookup(resolve, allowPrivate) });
  if (allowPrivate) return connect;
  return (options, callback) => {
    const host = options.hostname.replace(/^\[|\]$/g, '');
    const reason = isIP(host) === 0 ? undefined : disallowedAddressReason(host);
    if (reason !== undefined) {
      // undici awaits the callback; failing here opens no socket at all.
      callback(new AddressRefusedError(`${host} is ${reason}: refused before connecting (SSRF guard)`), null);
      return;
    }
    connect(options, callback);
  };
}

/** A base URL taken apart once: its origin, its path without trailing slashes, and its query. */
interface ParsedBase { origin: string; path: string; search: string }
/** Base URLs come from the config snapshot (a few per model): parsed once, not per call. Bounded. */
const parsedBases = new Map<string, ParsedBase>();

/** Origin and path (with the base URL's query, e.g. Azure's api-version, kept) of a request. */
function targetOf(baseUrl: string, request: UpstreamRequest): { origin: string; path: string } {
  let base = parsedBases.get(baseUrl);
  if (base === undefined) {
    const url = new URL(baseUrl);
    base = { origin: url.origin, path: url.pathname.replace(/\/+$/, ''), search: url.search };
    if (parsedBases.size >= 1000) parsedBases.clear();
    parsedBases.set(baseUrl, base);
  }
  let path = `${base.path}${request.path}`;
  if (base.search !== '') path += path.includes('?') ? `&${base.search.slice(1)}` : base.search;
  return { origin: base.origin, path };
}

/**
 * One non-streaming call as an undici dispatch handler: the body's chunks are collected as they
 * arrive, with no Readable, async iterator or AbortController per call (their objects were a
 * large part of a completion's garbage); the total timeout is one timer that aborts through
 * undici's controller. The first outcome settles the call; later callbacks change nothing.
 */
class CompletionCall implements Dispatcher.DispatchHandler {
  readonly #resolve: (outcome: UpstreamOutcome) => void;
  readonly #maxResponseBytes: number;
  readonly #totalTimeoutMs: number;
  readonly #timer: NodeJS.Timeout;
  /** The attempt's own wait for the response headers (routing), when it has one. */
  #headersTimer: NodeJS.Timeout | undefined;
  #controller: Dispatcher.DispatchController | undefined;
  #settled = false;
  #totalTimedOut = false;
  #statusCode = 0;
  #retryAfterMs: number | undefined;
  #chunks: Buffer[] = [];
  #size = 0;

  constructor(resolve: (outcome: UpstreamOutcome) => void, maxResponseBytes: number, totalTimeoutMs: number, headersTimeoutMs: number | undefined) {
    this.#resolve = resolve;
    this.#maxResponseBytes = maxResponseBytes;
    this.#totalTimeoutMs = totalTimeoutMs;
    this.#timer = setTimeout(() => {
      this.#totalTimedOut = true;
      this.#finish(failedCallOutcome(undefined, true, totalTimeoutMs));
    }, totalTimeoutMs);
    if (headersTimeoutMs !== undefined && headersTimeoutMs < totalTimeoutMs) {
      this.#headersTimer = setTimeout(() => {
        this.#finish({ kind: 'timeout', reason: `no response headers within the attempt's ${headersTimeoutMs} ms` });
      }, headersTimeoutMs);
    }
  }

  /** The outcome of a non-2xx answer (its Retry-After kept for the router). */
  #httpError(): UpstreamOutcome {
    return this.#retryAfterMs === undefined
      ? { kind: 'http_error', statusCode: this.#statusCode }
      : { kind: 'http_error', statusCode: this.#statusCode, retryAfterMs: this.#retryAfterMs };
  }

  /** Settles the call once; stops the timer and cuts the call when it is still running. */
  #finish(outcome: UpstreamOutcome, cut = true): void {
    if (this.#settled) return;
    this.#settled = true;
    clearTimeout(this.#timer);
    if (this.#headersTimer !== undefined) clearTimeout(this.#headersTimer);
    this.#chunks = [];
    this.#resolve(outcome);
    if (cut && this.#controller !== undefined && !this.#controller.aborted) this.#controller.abort(new Error('upstream call ended by the gateway'));
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.#controller = controller;
    // The total time ran out before the request was handed to a connection.
    if (this.#settled) controller.abort(new Error('upstream call ended by the gateway'));
  }

  onResponseStart(_controller: Dispatcher.DispatchController, statusCode: number, headers: Record<string, string | string[] | undefined>): void {
    this.#statusCode = statusCode;
    if (this.#headersTimer !== undefined) {
      clearTimeout(this.#headersTimer);
      this.#headersTimer = undefined;
    }
    if (statusCode === 429 || statusCode === 503) this.#retryAfterMs = retryAfterMsOf(statusCode, headers);
  }

  onResponseData(_controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.#settled) return;
    this.#size += chunk.length;
    // A non-2xx body is read and discarded (vendor text never travels further), up to 128 KiB as
    // undici's dump() did; past that (or a 2xx past the response limit) the connection is cut.
    if (!this.#isSuccess() && this.#size > discardedBodyBytes) { this.#finish(this.#httpError()); return; }
    if (this.#size > this.#maxResponseBytes) { this.#finish({ kind: 'failed', reason: 'ResponseTooLargeError' }); return; }
    if (this.#isSuccess()) this.#chunks.push(chunk);
  }

  onResponseEnd(): void {
    if (this.#settled) return;
    if (!this.#isSuccess()) { this.#finish(this.#httpError(), false); return; }
    const text = this.#chunks.length === 1 ? this.#chunks[0]!.toString('utf8') : Buffer.concat(this.#chunks, this.#size).toString('utf8');
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      this.#finish({ kind: 'failed', reason: 'response body is not JSON' }, false);
      return;
    }
    this.#finish({ kind: 'response', statusCode: this.#statusCode, json }, false);
  }

  onResponseError(_controller: Dispatcher.DispatchController, error: Error): void {
    this.fail(error);
  }

  /** The call failed (undici's error, or dispatch refusing the request outright). */
  fail(error: unknown): void {
    // An answer whose status was already a failure stays that failure (its body was only being discarded).
    if (this.#statusCode !== 0 && !this.#isSuccess()) { this.#finish(this.#httpError(), false); return; }
    this.#finish(failedCallOutcome(error, this.#totalTimedOut, this.#totalTimeoutMs), false);
  }

  #isSuccess(): boolean {
    return this.#statusCode >= 200 && this.#statusCode < 300;
  }
}

/**
 * The one HTTP transport all adapters share: undici Agents, which keep a keep-alive pool per
 * upstream origin, with connect, first-byte, idle (between body chunks) and total timeouts.
 * It never follows redirects. There are two agents: calls of models the admin did not allow
 * private go through one whose connector checks every address against the SSRF policy; the
 * others through one that does not. Their pools are separate, so a checked call never reuses
 * a connection that was opened without the check.
 */
export class UpstreamTransport {
  readonly #checkedAgent: Agent;
  readonly #privateAgent: Agent;
  readonly #totalTimeoutMs: number;
  readonly #maxResponseBytes: number;

  /** Creates the shared agents; connections open on first use. */
  constructor(options: UpstreamTransportOptions) {
    const resolve = options.resolve ?? systemResolver;
    const agentFor = (allowPrivate: boolean) => new Agent({
      connect: guardedConnector(options.connectTimeoutMs, resolve, allowPrivate),
      headersTimeout: options.firstByteTimeoutMs,
      bodyTimeout: options.idleTimeoutMs,
      keepAliveTimeout: 30_000,
    });
    this.#checkedAgent = agentFor(false);
    this.#privateAgent = agentFor(true);
    this.#totalTimeoutMs = options.totalTimeoutMs;
    this.#maxResponseBytes = options.maxResponseBytes ?? upstreamResponseMaxBytes;
  }

  /** A call's whole time, ms: the transport's, or an attempt's share of it when less. */
  #totalOf(limits: AttemptLimits | undefined): number {
    const total = limits?.totalTimeoutMs;
    return total !== undefined && total < this.#totalTimeoutMs ? Math.max(1, total) : this.#totalTimeoutMs;
  }

  /** The agent an endpoint's calls go through: checked unless the admin allowed it private. */
  #agentFor(endpoint: UpstreamEndpoint): Agent {
    return endpoint.allowPrivateNetwork === true ? this.#privateAgent : this.#checkedAgent;
  }

  /**
   * Sends one request to an upstream endpoint (base URL e.g. `https://api.example.com/v1`); never
   * rejects. `limits`: a routing attempt's own (AttemptLimits), a timeout when one passes;
   * undefined: the transport's alone.
   */
  send(endpoint: UpstreamEndpoint, request: UpstreamRequest, limits?: AttemptLimits): Promise<UpstreamOutcome> {
    const { origin, path } = targetOf(endpoint.baseUrl, request);
    return new Promise((resolve) => {
      const call = new CompletionCall(resolve, this.#maxResponseBytes, this.#totalOf(limits), limits?.headersTimeoutMs);
      try {
        this.#agentFor(endpoint).dispatch({ origin, path, method: 'POST', headers: request.headers, body: request.body }, call);
      } catch (error) {
        call.fail(error);
      }
    });
  }

  /**
   * Opens a streamed call and hands back its body to read chunk by chunk (nothing is buffered
   * here beyond what the reader has not taken yet; the connection is paused while that is more
   * than a read's worth). `signal` aborts the call at any point (client gone, shutdown), as does
   * the stream's abort(); the total timeout keeps running until the stream is closed. Never rejects.
   * `limits` as send's.
   */
  openStream(endpoint: UpstreamEndpoint, request: UpstreamRequest, signal: AbortSignal, limits?: AttemptLimits): Promise<UpstreamStreamOutcome> {
    const { origin, path } = targetOf(endpoint.baseUrl, request);
    return new Promise((resolve) => {
      const call = new StreamCall(resolve, signal, this.#totalOf(limits), limits?.headersTimeoutMs);
      try {
        this.#agentFor(endpoint).dispatch({ origin, path, method: 'POST', headers: request.headers, body: request.body }, call);
      } catch (error) {
        call.onResponseError(undefined, error as Error);
      }
    });
  }

  /** Closes every pooled connection; in-flight calls fail. */
  async close(): Promise<void> {
    await Promise.all([this.#checkedAgent.destroy(), this.#privateAgent.destroy()]);
  }
}
