import type { ErrorCode } from '@gateway/errors';
import { tracingOff, type ProxyMetrics, type ServiceTracing } from '@gateway/telemetry';
import { RequestTrace } from './request-trace.ts';
import type { ProxyRoute, ReserveMetricOutcome, ReservePath, UpstreamMetricOutcome } from './request-labels.ts';

/**
 * What the proxy observes about each request, in one place: the inference code calls a method
 * of its request's observer at each step (RPM, Reserve, upstream, first byte, Settle, end), and
 * the observer turns that into metrics (and, with tracing on, spans). The hot path is
 * benchmarked (bench/proxy-cpu.bench.ts), so an observer is one object of plain fields per
 * request: timestamps are `performance.now()` readings kept in fields (no Date, no closure per
 * call), and label objects are built only when a metric is recorded.
 */

/** Route label of a request that matched no route (the 404) or was refused before routing (a malformed path). */
const unmatchedRoute = 'unmatched';

/** The RPM pool that refused a request (the `scope` label of proxyRpmRefusals). */
export type RpmScope = 'organisation';

/** Seconds between two performance.now() readings (ms): the unit every histogram of the catalogue takes. */
function secondsSince(startedAtMs: number): number {
  return (performance.now() - startedAtMs) / 1000;
}

/** The `status_class` label of a status: `2xx`, `4xx`, `5xx`. Fixed strings, so nothing is built per request. */
function statusClassOf(status: number): string {
  if (status < 200) return '1xx';
  if (status < 300) return '2xx';
  if (status < 400) return '3xx';
  if (status < 500) return '4xx';
  return '5xx';
}

/**
 * The proxy's telemetry: its metrics, and the factory of per-request observers. One per proxy
 * (createProxyApp builds it next to the metrics registry).
 */
export class ProxyTelemetry {
  /** The proxy's metrics registry and its catalogue objects. */
  readonly metrics: ProxyMetrics;
  /** The proxy's tracing; off (the default), a request builds no span and no trace object. */
  readonly tracing: ServiceTracing;

  /** Wraps the proxy's metrics and tracing; nothing is recorded until a request starts. */
  constructor(metrics: ProxyMetrics, tracing: ServiceTracing = tracingOff) {
    this.metrics = metrics;
    this.tracing = tracing;
  }

  /**
   * Starts observing one request of a public route. `startedAtMs` is the performance.now()
   * reading of when the proxy began reading it (the request context's), so the duration covers
   * what ran before the route's handler.
   */
  startRequest(route: ProxyRoute, method: string, requestId: string, startedAtMs: number): RequestObserver {
    return new RequestObserver(this, route, method, requestId, startedAtMs);
  }

  /** Counts a request no route matched (the 404) or refused before routing (a malformed path): route `unmatched`. */
  unmatchedRequest(method: string, status: number, errorCode: ErrorCode | undefined, startedAtMs: number): void {
    this.metrics.httpRequests.inc({ route: unmatchedRoute, method, model: '', status, error_code: errorCode ?? '' });
    this.metrics.httpRequestDuration.observe({ route: unmatchedRoute, model: '', status_class: statusClassOf(status) }, secondsSince(startedAtMs));
  }
}

/**
 * One request's observations. Created when a /v1 request reaches its handler; `finish` is called
 * once when its response is over (the request context's close). Steps that did not happen are
 * simply never called: a 401 has no Reserve, a 429 no model.
 */
export class RequestObserver {
  readonly #telemetry: ProxyTelemetry;
  readonly #route: ProxyRoute;
  readonly #method: string;
  /** The request id (echoed to the client): for spans, never a metric label. */
  readonly requestId: string;
  readonly #startedAtMs: number;
  /** Gateway model slug ('' until the body named one; `unknown` when it named none the snapshot has). */
  #model = '';
  #stream = false;
  #reserveStartedAtMs = 0;
  #upstreamStartedAtMs = 0;
  #providerKind = '';
  #upstreamOpen = false;
  #firstByteSeen = false;
  /** performance.now() when the first byte of the body went to the client, ms; undefined until then (the request log's time to first token). */
  firstByteAtMs: number | undefined;
  #settleStartedAtMs = 0;
  #settlePath: ReservePath = 'exact';
  #finished = false;
  /** The request's spans (request-trace.ts); undefined with tracing off, so each step's tracing is one branch. */
  readonly #trace: RequestTrace | undefined;

  /** Use ProxyTelemetry.startRequest. */
  constructor(telemetry: ProxyTelemetry, route: ProxyRoute, method: string, requestId: string, startedAtMs: number) {
    this.#telemetry = telemetry;
    this.#route = route;
    this.#method = method;
    this.requestId = requestId;
    this.#startedAtMs = startedAtMs;
    const { tracing } = telemetry;
    this.#trace = tracing.enabled ? new RequestTrace(tracing.tracer, route, method, requestId, startedAtMs) : undefined;
  }

  /** The route the request took (a template, e.g. `/v1/chat/completions`). */
  get route(): ProxyRoute {
    return this.#route;
  }

  /** Whether the request asked for a stream (known once its model was resolved; false before). */
  get stream(): boolean {
    return this.#stream;
  }

  /**
   * Runs the request's work (the route's handler, its Settle included): with tracing on, in the
   * request's trace context, so the ledger calls it makes carry its spans; off, just calls it.
   */
  run<T>(work: () => Promise<T>): Promise<T> {
    return this.#trace === undefined ? work() : this.#trace.run(work);
  }

  /** The RPM pool decided, between `startedAtMs` (performance.now()) and now: traced as the `rpm` span (the refusal is counted by rpmRefused). */
  rpmChecked(startedAtMs: number, allowed: boolean): void {
    this.#trace?.rpm(startedAtMs, allowed);
  }

  /** The request named a model the snapshot has (`slug` is the gateway's slug) and asked for a stream or not. */
  modelResolved(slug: string, stream: boolean): void {
    this.#model = slug;
    this.#stream = stream;
    this.#trace?.model(slug, stream);
  }

  /** The request named a model the snapshot does not have: its label is `unknown` (bounded, whatever the client sent). */
  modelUnknown(stream: boolean): void {
    this.#model = 'unknown';
    this.#stream = stream;
    this.#trace?.model('unknown', stream);
  }

  /** The RPM pool refused the request (it is answered 429). */
  rpmRefused(scope: RpmScope): void {
    this.#telemetry.metrics.proxyRpmRefusals.inc({ scope });
  }

  /** The Reserve starts (a carve or a ledger call follows). */
  reserveStarted(): void {
    this.#reserveStartedAtMs = performance.now();
    this.#trace?.reserveStarted();
  }

  /** The Reserve ended: the path it took and whether it was held. */
  reserveEnded(path: ReservePath, outcome: ReserveMetricOutcome): void {
    const { metrics } = this.#telemetry;
    this.#settlePath = path;
    metrics.proxyLedgerCallDuration.observe({ operation: 'reserve', path }, secondsSince(this.#reserveStartedAtMs));
    metrics.proxyReserves.inc({ path, outcome });
    this.#trace?.reserveEnded(path, outcome);
  }

  /** The upstream call for the resolved gateway model is dispatched to a provider of this kind (e.g. `openai_compatible`, a kind the snapshot accepted). */
  upstreamStarted(providerKind: string): void {
    this.#providerKind = providerKind;
    this.#upstreamStartedAtMs = performance.now();
    this.#upstreamOpen = true;
    this.#trace?.upstreamStarted(providerKind);
  }

  /**
   * The upstream call is over: its answer read (non-streaming), its stream ended, or it failed.
   * Once per call; a second call (an ending reported twice) changes nothing.
   */
  upstreamEnded(outcome: UpstreamMetricOutcome): void {
    if (!this.#upstreamOpen) return;
    this.#upstreamOpen = false;
    const { metrics } = this.#telemetry;
    // Both labels come from the config snapshot (the gateway model's slug, its upstream's kind), never from the request: bounded.
    const labels = { provider_kind: this.#providerKind, model: this.#model, outcome };
    metrics.proxyUpstreamDuration.observe(labels, secondsSince(this.#upstreamStartedAtMs));
    metrics.proxyUpstreamRequests.inc(labels);
    this.#trace?.upstreamEnded(outcome);
  }

  /** The first byte of a completion's body goes to the client (the JSON answer, or a stream's first frame). Once per request. */
  firstByte(): void {
    if (this.#firstByteSeen) return;
    this.#firstByteSeen = true;
    this.firstByteAtMs = performance.now();
    this.#telemetry.metrics.proxyTimeToFirstByte.observe({ model: this.#model, stream: this.#stream ? 'true' : 'false' }, secondsSince(this.#startedAtMs));
    this.#trace?.firstByte();
  }

  /**
   * The Settle is sent, with the numbers it carries: the tokens billed and what they cost, µ₹
   * (the ledger is the record; this is an observation, converted to a JS number here only).
   */
  settleStarted(promptTokens: number, completionTokens: number, costMicros: bigint): void {
    const { metrics } = this.#telemetry;
    this.#settleStartedAtMs = performance.now();
    const model = this.#model;
    if (promptTokens > 0) metrics.proxyTokens.inc({ model, kind: 'input' }, promptTokens);
    if (completionTokens > 0) metrics.proxyTokens.inc({ model, kind: 'output' }, completionTokens);
    if (costMicros > 0n) metrics.proxyChargedMicros.inc({ model }, Number(costMicros));
    this.#trace?.settleStarted(promptTokens, completionTokens, costMicros);
  }

  /** The ledger answered the Settle (outbox retries included), or it was abandoned at shutdown. */
  settleEnded(): void {
    this.#telemetry.metrics.proxyLedgerCallDuration.observe({ operation: 'settle', path: this.#settlePath }, secondsSince(this.#settleStartedAtMs));
    this.#trace?.settleEnded();
  }

  /**
   * The response is over (sent, or the client went away): counts the request by route, model,
   * status and error code ('' on success) and records its whole duration. Once per request.
   */
  finish(status: number, errorCode: ErrorCode | undefined): void {
    if (this.#finished) return;
    this.#finished = true;
    const { metrics } = this.#telemetry;
    const model = this.#model;
    metrics.httpRequests.inc({ route: this.#route, method: this.#method, model, status, error_code: errorCode ?? '' });
    metrics.httpRequestDuration.observe({ route: this.#route, model, status_class: statusClassOf(status) }, secondsSince(this.#startedAtMs));
    this.#trace?.finish(status, errorCode);
  }
}
