import {
  ATTR_ERROR_TYPE, ATTR_HTTP_REQUEST_METHOD, ATTR_HTTP_RESPONSE_STATUS_CODE, ATTR_HTTP_ROUTE, SpanKind, SpanStatusCode, requestContextOf, withContext,
  type Context, type OutgoingSpanSlot, type Span, type Tracer,
} from '@gateway/telemetry';
import type { ErrorCode } from '@gateway/errors';
import type { ProxyRoute, ReserveMetricOutcome, ReservePath, UpstreamMetricOutcome } from './request-labels.ts';

/**
 * One request's trace (docs/tracing.md), built only when tracing is on: a SERVER span for the
 * request (with its request id) and children for its steps: `rpm`, `reserve`, `upstream`
 * (CLIENT) and `settle`. The request's work runs in a context holding the server span and an
 * outgoing-span slot; a step that calls the ledger (reserve, settle) puts its span in the slot,
 * so the ledger client's messages carry that step as their parent. Spans hold no key, prompt,
 * completion or upstream URL: the provider kind is the only thing said of the upstream.
 */

/** Attribute: the gateway's request id, as echoed in `x-request-id`. */
const requestIdAttribute = 'gateway.request_id';
/** Attribute: the gateway model slug the request named (`unknown` when the snapshot has none by that name). */
const modelAttribute = 'gateway.model';
/** Attribute: whether the request asked for a stream. */
const streamAttribute = 'gateway.stream';
/** Attribute: how the Reserve was held, `carved` (from a credit grant in memory) or `exact` (at the ledger). */
const reservePathAttribute = 'gateway.reserve.path';
/** Attribute: what became of the Reserve (held, insufficient_balance, ...). */
const reserveOutcomeAttribute = 'gateway.reserve.outcome';
/** Attribute: the upstream's provider kind (openai_compatible, anthropic, ...). */
const providerKindAttribute = 'gateway.upstream.provider_kind';
/** Attribute: what became of the upstream call (ok, http_error, timeout, ...). */
const upstreamOutcomeAttribute = 'gateway.upstream.outcome';
/** Attribute: whether the RPM pool let the request through. */
const rpmAllowedAttribute = 'gateway.rpm.allowed';

/** Upstream outcomes that are the upstream's failure (an `aborted` call was cut by the gateway: not an error of the call). */
const failedUpstreamOutcomes = new Set<UpstreamMetricOutcome>(['http_error', 'timeout', 'connect_error', 'bad_response']);

/** The spans of one request, and the context its work runs in. */
export class RequestTrace {
  readonly #tracer: Tracer;
  readonly #server: Span;
  readonly #slot: OutgoingSpanSlot;
  readonly #context: Context;
  #reserve: Span | undefined;
  #upstream: Span | undefined;
  #settle: Span | undefined;

  /** Starts the request's SERVER span at `startedAtMs` (a performance.now() reading: when the proxy began reading the request). */
  constructor(tracer: Tracer, route: ProxyRoute, method: string, requestId: string, startedAtMs: number) {
    this.#tracer = tracer;
    this.#server = tracer.startSpan(`${method} ${route}`, {
      kind: SpanKind.SERVER,
      startTime: startedAtMs,
      attributes: { [ATTR_HTTP_REQUEST_METHOD]: method, [ATTR_HTTP_ROUTE]: route, [requestIdAttribute]: requestId },
    });
    this.#slot = { span: undefined };
    this.#context = requestContextOf(this.#server, this.#slot);
  }

  /**
   * Runs the request's work (its handler, Settle included) with its context active, so what it
   * sends the ledger carries its spans. Once the work is over the slot is closed: a timer the
   * work left behind (a grant's housekeeping) then sends no context of this request.
   */
  run<T>(work: () => Promise<T>): Promise<T> {
    return withContext(this.#context, work).finally(() => { this.#slot.span = undefined; this.#slot.closed = true; });
  }

  /** A child span of the request, started now or at `startTime` (performance.now() ms). */
  #child(name: string, kind: SpanKind, startTime?: number): Span {
    return this.#tracer.startSpan(name, { kind, ...(startTime !== undefined ? { startTime } : {}) }, this.#context);
  }

  /** The model named, and whether a stream was asked for. */
  model(slug: string, stream: boolean): void {
    this.#server.setAttribute(modelAttribute, slug);
    this.#server.setAttribute(streamAttribute, stream);
  }

  /** The RPM decision, made between `startedAtMs` and now. */
  rpm(startedAtMs: number, allowed: boolean): void {
    const span = this.#child('rpm', SpanKind.INTERNAL, startedAtMs);
    span.setAttribute(rpmAllowedAttribute, allowed);
    span.end();
  }

  /** The Reserve starts: its span is the parent of the ledger calls made until it ends. */
  reserveStarted(): void {
    this.#reserve = this.#child('reserve', SpanKind.INTERNAL);
    this.#slot.span = this.#reserve;
  }

  /** The Reserve ended: its path and outcome; a failure to reach the ledger is an error. */
  reserveEnded(path: ReservePath, outcome: ReserveMetricOutcome): void {
    const span = this.#reserve;
    if (span === undefined) return;
    this.#reserve = undefined;
    if (this.#slot.span === span) this.#slot.span = undefined;
    span.setAttribute(reservePathAttribute, path);
    span.setAttribute(reserveOutcomeAttribute, outcome);
    if (outcome === 'ledger_unavailable' || outcome === 'error') span.setStatus({ code: SpanStatusCode.ERROR });
    span.end();
  }

  /** The upstream call is dispatched (a CLIENT span: the provider kind only, never its URL or key). */
  upstreamStarted(providerKind: string): void {
    this.#upstream = this.#child('upstream', SpanKind.CLIENT);
    this.#upstream.setAttribute(providerKindAttribute, providerKind);
  }

  /** The upstream call is over. */
  upstreamEnded(outcome: UpstreamMetricOutcome): void {
    const span = this.#upstream;
    if (span === undefined) return;
    this.#upstream = undefined;
    span.setAttribute(upstreamOutcomeAttribute, outcome);
    if (failedUpstreamOutcomes.has(outcome)) span.setStatus({ code: SpanStatusCode.ERROR });
    span.end();
  }

  /** The first byte of the answer went to the client: an event on the request's span. */
  firstByte(): void {
    this.#server.addEvent('first byte');
  }

  /** The Settle is sent: its span is the parent of the Settle the ledger client sends. */
  settleStarted(promptTokens: number, completionTokens: number, costMicros: bigint): void {
    const span = this.#child('settle', SpanKind.INTERNAL);
    span.setAttribute('gateway.tokens.input', promptTokens);
    span.setAttribute('gateway.tokens.output', completionTokens);
    // µ₹ as a decimal string: exact, whatever the amount (a span attribute has no bigint).
    span.setAttribute('gateway.cost_micros', costMicros.toString());
    this.#settle = span;
    this.#slot.span = span;
  }

  /** The ledger answered the Settle (or it was abandoned at shutdown). */
  settleEnded(): void {
    const span = this.#settle;
    if (span === undefined) return;
    this.#settle = undefined;
    if (this.#slot.span === span) this.#slot.span = undefined;
    span.end();
  }

  /** The response is over: its status and error code; a 5xx is an error of the request. */
  finish(status: number, errorCode: ErrorCode | undefined): void {
    this.#server.setAttribute(ATTR_HTTP_RESPONSE_STATUS_CODE, status);
    if (errorCode !== undefined) this.#server.setAttribute(ATTR_ERROR_TYPE, errorCode);
    if (status >= 500) this.#server.setStatus({ code: SpanStatusCode.ERROR });
    this.#server.end();
  }
}
