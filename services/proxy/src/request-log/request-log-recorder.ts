/**
 * The request log's write side in the proxy (docs/proxy.md, "Request log"): each finished request
 * of a known organisation on an inference surface becomes one RequestRecord, buffered in memory
 * and sent to the ledger's RecordRequests in batches off the hot path. A request never waits for
 * it; a ledger away for long costs the oldest records (counted), never a request.
 */
import type { ledgerV1 } from '@gateway/contracts';
import type { ErrorCode } from '@gateway/errors';
import type { Logger } from '@gateway/logger';
import { status as GrpcStatus } from '@grpc/grpc-js';
import type { ClassUsage } from '../domain/token-classes.ts';
import type { ProxyRoute } from '../telemetry/request-labels.ts';

/** Sends one batch to the ledger (RecordRequests); throws the call's error when it fails. */
type RequestLogSend = (records: ledgerV1.RequestRecord[]) => Promise<unknown>;

/** Why records were given up (the `reason` label of gateway_proxy_request_log_dropped_total). */
type RequestLogDropReason = 'buffer_full' | 'refused';

/** How the recorder buffers and sends. */
interface RequestLogRecorderOptions {
  send: RequestLogSend;
  logger: Logger;
  /** Records sent per RecordRequests call (the ledger takes at most 1,000); default 500. */
  batchSize?: number;
  /** Longest a record waits before its batch leaves, ms; default 1,000. */
  intervalMs?: number;
  /** Most records held while the ledger is away; beyond it the oldest go (counted); default 20,000. */
  maxBuffered?: number;
  /** Told of every record given up, with why (the dropped counter). */
  onDropped?: (reason: RequestLogDropReason, count: number) => void;
}

/** The surface of an inference route, as the request log names it; undefined for routes that are not recorded. */
const surfaceOfRoute: Partial<Record<ProxyRoute, string>> = {
  '/v1/chat/completions': 'chat_completions',
  '/v1/responses': 'responses',
  '/v1/embeddings': 'embeddings',
  '/v1/messages': 'messages',
};

/** The request log's surface of a route (chat_completions, responses, embeddings, messages), or undefined: that route is not recorded. */
export function requestLogSurface(route: ProxyRoute): string | undefined {
  return surfaceOfRoute[route];
}

/** What a finished request tells the recorder (request-context.ts gathers it at the response's close). */
interface FinishedRequest {
  requestId: string;
  organisationId: string;
  projectId: string;
  surface: string;
  /** The model as the client named it ('' when none was read). */
  model: string | undefined;
  /** HTTP status answered (499: the client went away first). */
  status: number;
  errorCode: ErrorCode | undefined;
  stream: boolean;
  /** performance.now() at receipt, at the first body byte (undefined: none) and at the last byte, ms. */
  startedAtMs: number;
  firstByteAtMs: number | undefined;
  endedAtMs: number;
  /** What the Settle carried (undefined: no Settle, e.g. a refusal). */
  promptTokens: number | undefined;
  completionTokens: number | undefined;
  costMicros: bigint | undefined;
  classes: readonly ClassUsage[] | undefined;
}

/** Control characters, which the ledger refuses in a model slug (a client may send anything as `model`). */
const controlCharacter = /[\u0000-\u001f\u007f]/;
/** The same, every occurrence (for replace). */
const controlCharacters = /[\u0000-\u001f\u007f]/g;

/** Longest model slug the ledger keeps, characters. */
const maxModelChars = 200;

/** The record of a finished request, in the contract's shape; times as whole ms. */
export function requestRecordOf(finished: FinishedRequest): ledgerV1.RequestRecord {
  // Rounded up: anything that took time shows at least 1 ms.
  const latencyMs = Math.max(0, Math.ceil(finished.endedAtMs - finished.startedAtMs));
  const model = finished.model ?? '';
  return {
    requestId: finished.requestId,
    organisationId: finished.organisationId,
    projectId: finished.projectId,
    surface: finished.surface,
    modelSlug: model.length > maxModelChars || controlCharacter.test(model) ? model.slice(0, maxModelChars).replace(controlCharacters, '') : model,
    status: finished.status,
    errorCode: finished.errorCode ?? '',
    stream: finished.stream,
    // Wall-clock receipt: now less the monotonic time since (a clock step moves it, never the latency).
    startedAtMs: BigInt(Math.round(Date.now() - (performance.now() - finished.startedAtMs))),
    latencyMs,
    timeToFirstTokenMs: finished.firstByteAtMs === undefined
      ? undefined : Math.min(latencyMs, Math.max(0, Math.ceil(finished.firstByteAtMs - finished.startedAtMs))),
    inputTokens: BigInt(finished.promptTokens ?? 0),
    outputTokens: BigInt(finished.completionTokens ?? 0),
    costMicros: finished.costMicros ?? 0n,
    tokenClasses: (finished.classes ?? []).map((entry) => ({
      tokenClass: entry.tokenClass, tokens: BigInt(entry.tokens), costMicros: entry.costMicros, providerCostMicros: entry.providerCostMicros,
    })),
  };
}

/** Whether a failed send was the ledger refusing the batch as malformed (sending it again cannot help). */
function refusedAsMalformed(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as { code?: unknown }).code === GrpcStatus.INVALID_ARGUMENT;
}

/**
 * Buffers finished requests and sends them in batches: one batch in flight at a time, leaving
 * every `intervalMs` or as soon as `batchSize` records wait. A failed batch goes back to the
 * front of the buffer for the next tick (the ledger skips a record it already kept, so a batch
 * that was written but whose answer was lost is harmless); a batch refused as malformed is
 * dropped and logged. The buffer is bounded: when full, the oldest records go, counted.
 */
export class RequestLogRecorder {
  readonly #send: RequestLogSend;
  readonly #logger: Logger;
  readonly #batchSize: number;
  readonly #intervalMs: number;
  readonly #maxBuffered: number;
  readonly #onDropped: (reason: RequestLogDropReason, count: number) => void;
  #buffer: ledgerV1.RequestRecord[] = [];
  #sending: Promise<boolean> | undefined;
  #timer: NodeJS.Timeout | undefined;
  /** Consecutive failed sends, for the log (one warning per outage, not per tick). */
  #failures = 0;

  /** Creates the recorder; start() begins the timer. */
  constructor(options: RequestLogRecorderOptions) {
    this.#send = options.send;
    this.#logger = options.logger;
    this.#batchSize = options.batchSize ?? 500;
    this.#intervalMs = options.intervalMs ?? 1_000;
    this.#maxBuffered = options.maxBuffered ?? 20_000;
    this.#onDropped = options.onDropped ?? (() => undefined);
  }

  /** Records waiting to be sent. */
  get buffered(): number {
    return this.#buffer.length;
  }

  /** Starts sending every intervalMs (the timer does not keep the process alive). */
  start(): void {
    this.#timer ??= setInterval(() => { void this.#sendOne(); }, this.#intervalMs);
    this.#timer.unref();
  }

  /** Takes one finished request's record; never waits and never throws. */
  add(record: ledgerV1.RequestRecord): void {
    this.#buffer.push(record);
    if (this.#buffer.length > this.#maxBuffered) {
      const over = this.#buffer.length - this.#maxBuffered;
      this.#buffer.splice(0, over);
      this.#onDropped('buffer_full', over);
    }
    if (this.#buffer.length >= this.#batchSize && this.#sending === undefined) void this.#sendOne();
  }

  /** Sends one batch unless one is in flight; resolves true when it left (or there was nothing), false when it failed. */
  #sendOne(): Promise<boolean> {
    if (this.#sending !== undefined) return this.#sending;
    if (this.#buffer.length === 0) return Promise.resolve(true);
    const batch = this.#buffer.splice(0, this.#batchSize);
    this.#sending = this.#send(batch).then(
      () => {
        if (this.#failures > 0) this.#logger.info({ failedSends: this.#failures }, 'request log: the ledger takes records again');
        this.#failures = 0;
        return true;
      },
      (error: unknown) => {
        if (refusedAsMalformed(error)) {
          this.#logger.error({ err: error, records: batch.length }, 'request log: the ledger refused a batch as malformed; dropped');
          this.#onDropped('refused', batch.length);
          return true;
        }
        if (this.#failures === 0) this.#logger.warn({ err: error, buffered: this.#buffer.length + batch.length }, 'request log: the ledger did not take a batch; kept for the next try');
        this.#failures += 1;
        // Back to the front, in order; the bound holds (the oldest go first).
        this.#buffer = batch.concat(this.#buffer);
        const over = this.#buffer.length - this.#maxBuffered;
        if (over > 0) {
          this.#buffer.splice(0, over);
          this.#onDropped('buffer_full', over);
        }
        return false;
      },
    ).finally(() => { this.#sending = undefined; });
    return this.#sending;
  }

  /**
   * Stops the timer and sends what is buffered (at shutdown, after the requests drained), until
   * the buffer is empty, a send fails, or `timeoutMs` passes; what is left is logged as lost.
   */
  async close(timeoutMs: number): Promise<void> {
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
    const deadline = performance.now() + timeoutMs;
    if (this.#sending !== undefined) await this.#sending;
    while (this.#buffer.length > 0 && performance.now() < deadline) {
      if (!(await this.#sendOne())) break;
    }
    if (this.#buffer.length > 0) {
      this.#logger.warn({ records: this.#buffer.length }, 'request log: records not sent at shutdown (display only; the usage records are the money)');
      this.#onDropped('buffer_full', this.#buffer.length);
      this.#buffer = [];
    }
  }
}
