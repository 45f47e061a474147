import {
  ROOT_CONTEXT, context as contextApi, createContextKey, diag, DiagLogLevel, isSpanContextValid, trace,
  type Context, type DiagLogger, type Link, type Span, type SpanContext, type Tracer,
} from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { parseKeyPairsIntoRecord, parseTraceParent } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { defaultResource, resourceFromAttributes } from '@opentelemetry/resources';
import {
  AlwaysOffSampler, AlwaysOnSampler, BatchSpanProcessor, ParentBasedSampler, TraceIdRatioBasedSampler, TracerProvider, type Sampler,
} from '@opentelemetry/sdk-trace';
import { ATTR_SERVICE_NAME } from '@opentelemetry/semantic-conventions';
import { ConfigError } from '@gateway/config';
import type { Logger } from '@gateway/logger';
import type { ServiceName } from './service-metrics.ts';

/**
 * OpenTelemetry tracing of one service, configured by the standard OTEL_* variables and off
 * unless an OTLP endpoint is named. Each service has its own TracerProvider (its own
 * `service.name` resource and exporter), because `pnpm start` runs all three in one process; the
 * context manager (AsyncLocalStorage) is process-wide, as Node.js has one async context. Nothing
 * here registers a global tracer provider, so a library's own instrumentation cannot start
 * exporting behind the gateway's back.
 */

/** The variables startTracing reads (the standard names; a subset of the spec's). */
export type TracingEnv = Record<string, string | undefined>;

/** A service's tracing: callers test `enabled` before creating a span, so tracing off allocates nothing. */
export interface ServiceTracing {
  /** True when spans are exported (an OTLP endpoint is set, and tracing is not disabled). */
  readonly enabled: boolean;
  /** The service's tracer; with tracing off, the API's no-op tracer. */
  readonly tracer: Tracer;
  /** Where spans go (the OTLP/HTTP traces URL), for the start-up log line; undefined when off. */
  readonly endpoint: string | undefined;
  /** Exports the spans still buffered and stops the exporter; a no-op when off. Resolves even if the collector is gone. */
  shutdown(): Promise<void>;
}

/** Tracing off: what every service gets when no OTLP endpoint is configured. */
export const tracingOff: ServiceTracing = Object.freeze({
  enabled: false,
  tracer: trace.getTracer('inr-gateway-off'),
  endpoint: undefined,
  shutdown: async () => {},
});

/** How long shutdown waits for the last export, ms (a collector that is gone must not hold up a service's stop; a service's stop bound counts it). */
export const tracingShutdownTimeoutMs = 5_000;

/** Whether a variable is set to something (Kubernetes and shells often produce empty strings). */
function present(env: TracingEnv, name: string): string | undefined {
  const value = env[name]?.trim();
  return value === undefined || value === '' ? undefined : value;
}

/**
 * The OTLP/HTTP traces URL the variables name, as the specification resolves it:
 * OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as given, else OTEL_EXPORTER_OTLP_ENDPOINT + `/v1/traces`;
 * undefined when neither is set. A URL that does not parse is a ConfigError.
 */
export function tracesEndpointOf(env: TracingEnv): string | undefined {
  const specific = present(env, 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT');
  const general = present(env, 'OTEL_EXPORTER_OTLP_ENDPOINT');
  const [variable, url] = specific !== undefined
    ? ['OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', specific]
    : general !== undefined ? ['OTEL_EXPORTER_OTLP_ENDPOINT', `${general.replace(/\/+$/, '')}/v1/traces`] : [undefined, undefined];
  if (variable === undefined) return undefined;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    // The value itself is not echoed: an endpoint may carry a token in its query or user part.
    throw new ConfigError('tracing', [`${variable}: must be an http:// or https:// URL`]);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new ConfigError('tracing', [`${variable}: must be an http:// or https:// URL (OTLP over HTTP)`]);
  }
  return url;
}

/** Whether the variables turn tracing on: an endpoint, OTEL_SDK_DISABLED not `true`, OTEL_TRACES_EXPORTER not `none`. */
export function tracingRequested(env: TracingEnv): boolean {
  if (present(env, 'OTEL_SDK_DISABLED')?.toLowerCase() === 'true') return false;
  const exporters = present(env, 'OTEL_TRACES_EXPORTER')?.toLowerCase().split(',').map((name) => name.trim());
  if (exporters !== undefined && (exporters.includes('none') || !exporters.includes('otlp'))) return false;
  return present(env, 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT') !== undefined || present(env, 'OTEL_EXPORTER_OTLP_ENDPOINT') !== undefined;
}

/** OTEL_TRACES_SAMPLER_ARG as a ratio in [0, 1] (default 1); anything else is a ConfigError. */
function samplerRatio(env: TracingEnv): number {
  const text = present(env, 'OTEL_TRACES_SAMPLER_ARG');
  if (text === undefined) return 1;
  const ratio = Number(text);
  if (!Number.isFinite(ratio) || ratio < 0 || ratio > 1) {
    throw new ConfigError('tracing', ['OTEL_TRACES_SAMPLER_ARG: must be a number from 0 to 1 (the share of traces sampled)']);
  }
  return ratio;
}

/**
 * The sampler OTEL_TRACES_SAMPLER names (default `parentbased_always_on`: every request traced,
 * and a ledger span follows the proxy's decision). An unknown name is a ConfigError rather than
 * the SDK's silent fallback, so a typo does not turn sampling into something else.
 */
export function samplerOf(env: TracingEnv): Sampler {
  const name = present(env, 'OTEL_TRACES_SAMPLER')?.toLowerCase() ?? 'parentbased_always_on';
  switch (name) {
    case 'always_on': return new AlwaysOnSampler();
    case 'always_off': return new AlwaysOffSampler();
    case 'traceidratio': return new TraceIdRatioBasedSampler(samplerRatio(env));
    case 'parentbased_always_on': return new ParentBasedSampler({ root: new AlwaysOnSampler() });
    case 'parentbased_always_off': return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case 'parentbased_traceidratio': return new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(samplerRatio(env)) });
    default:
      throw new ConfigError('tracing', [
        'OTEL_TRACES_SAMPLER: must be one of always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off, parentbased_traceidratio',
      ]);
  }
}

/** The exporter's headers: OTEL_EXPORTER_OTLP_HEADERS, then OTEL_EXPORTER_OTLP_TRACES_HEADERS over them (`k=v,k2=v2`, URL-encoded). */
function headersOf(env: TracingEnv): Record<string, string> {
  return {
    ...parseKeyPairsIntoRecord(present(env, 'OTEL_EXPORTER_OTLP_HEADERS')),
    ...parseKeyPairsIntoRecord(present(env, 'OTEL_EXPORTER_OTLP_TRACES_HEADERS')),
  };
}

/** A positive integer variable (OTEL_BSP_*), or undefined when unset; anything else is a ConfigError. */
function positiveIntegerOf(env: TracingEnv, name: string): number | undefined {
  const text = present(env, name);
  if (text === undefined) return undefined;
  const value = Number(text);
  if (!Number.isSafeInteger(value) || value <= 0) throw new ConfigError('tracing', [`${name}: must be a positive integer`]);
  return value;
}

let contextManagerInstalled = false;

/**
 * Installs the process-wide AsyncLocalStorage context manager once: a span made active around a
 * request's work is the parent of what that work starts, across awaits and timers. Only when
 * some service traces: with tracing off, the API's no-op manager stays (context.with just calls).
 */
function installContextManager(): void {
  if (contextManagerInstalled) return;
  contextManagerInstalled = true;
  contextApi.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
}

/** The SDK's own warnings (an export that failed, a dropped span) in the service's log. */
function installDiagLogger(logger: Logger): void {
  const diagLogger: DiagLogger = {
    error: (message, ...args) => logger.warn({ args }, `opentelemetry: ${message}`),
    warn: (message, ...args) => logger.warn({ args }, `opentelemetry: ${message}`),
    info: () => {},
    debug: () => {},
    verbose: () => {},
  };
  // One diag logger per process: under `pnpm start` the last service to start reports for all three.
  diag.setLogger(diagLogger, { logLevel: DiagLogLevel.WARN, suppressOverrideMessage: true });
}

/**
 * Starts a service's tracing from the standard variables: OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT
 * (on only when one is set), OTEL_EXPORTER_OTLP_(TRACES_)HEADERS, OTEL_SERVICE_NAME (default
 * `inr-gateway-<service>`), OTEL_RESOURCE_ATTRIBUTES, OTEL_TRACES_SAMPLER(_ARG), OTEL_SDK_DISABLED,
 * OTEL_TRACES_EXPORTER (`none` turns it off) and OTEL_BSP_SCHEDULE_DELAY / OTEL_BSP_MAX_QUEUE_SIZE. Spans leave in batches over OTLP/HTTP (JSON).
 * Throws ConfigError on a malformed value. The app registers `shutdown` as a lifecycle step.
 */
export function startTracing(service: ServiceName, env: TracingEnv, logger?: Logger): ServiceTracing {
  if (!tracingRequested(env)) return tracingOff;
  const endpoint = tracesEndpointOf(env)!;
  const sampler = samplerOf(env);
  installContextManager();
  if (logger !== undefined) installDiagLogger(logger);
  const resource = defaultResource().merge(resourceFromAttributes({
    ...parseKeyPairsIntoRecord(present(env, 'OTEL_RESOURCE_ATTRIBUTES')),
    [ATTR_SERVICE_NAME]: present(env, 'OTEL_SERVICE_NAME') ?? `inr-gateway-${service}`,
  }));
  const exporter = new OTLPTraceExporter({ url: endpoint, headers: headersOf(env) });
  // The SDK reads no variables itself: the batch's standard ones are passed on (default 5 s delay, 2,048 queued).
  const scheduledDelayMillis = positiveIntegerOf(env, 'OTEL_BSP_SCHEDULE_DELAY');
  const maxQueueSize = positiveIntegerOf(env, 'OTEL_BSP_MAX_QUEUE_SIZE');
  const processor = new BatchSpanProcessor({
    exporter, ...(scheduledDelayMillis !== undefined ? { scheduledDelayMillis } : {}), ...(maxQueueSize !== undefined ? { maxQueueSize } : {}),
  });
  const provider = new TracerProvider({ resource, sampler, spanProcessors: [processor] });
  const tracer = provider.getTracer(`inr-gateway-${service}`);
  let stopped: Promise<void> | undefined;
  return {
    enabled: true,
    tracer,
    endpoint,
    shutdown() {
      stopped ??= (async () => {
        let timer: NodeJS.Timeout | undefined;
        const timeout = new Promise<void>((resolve) => { timer = setTimeout(resolve, tracingShutdownTimeoutMs); });
        try {
          await Promise.race([provider.shutdown().catch((error: unknown) => logger?.warn({ err: error }, 'tracing shutdown failed')), timeout]);
        } finally {
          clearTimeout(timer);
        }
      })();
      return stopped;
    },
  };
}

/**
 * The W3C `traceparent` of the span in `context` (`00-<trace id>-<span id>-<flags>`), or undefined
 * when it holds no valid span (tracing off: the check costs a map lookup, nothing is built).
 */
export function traceparentOf(context: Context): string | undefined {
  const spanContext = trace.getSpanContext(context);
  return spanContext === undefined ? undefined : traceparentOfSpanContext(spanContext);
}

/** The W3C `traceparent` of a span context, or undefined when it is not valid. */
export function traceparentOfSpanContext(spanContext: SpanContext): string | undefined {
  if (!isSpanContextValid(spanContext)) return undefined;
  return `00-${spanContext.traceId}-${spanContext.spanId}-${(spanContext.traceFlags & 0xff).toString(16).padStart(2, '0')}`;
}

/** The remote span context a `traceparent` names, or undefined when it is missing or malformed (a caller's bad header starts a new trace). */
export function spanContextFromTraceparent(value: string | undefined): SpanContext | undefined {
  if (value === undefined || value === '') return undefined;
  const parsed = parseTraceParent(value);
  if (parsed === null || !isSpanContextValid(parsed)) return undefined;
  return { ...parsed, isRemote: true };
}

/** `base` (default the root context) continued from a remote `traceparent`: spans started in it are its children. */
export function contextFromTraceparent(value: string | undefined, base: Context = ROOT_CONTEXT): Context {
  const spanContext = spanContextFromTraceparent(value);
  return spanContext === undefined ? base : trace.setSpanContext(base, spanContext);
}

/** Links to the span contexts the `traceparent` values name (malformed or missing ones skipped): a batch span's links to its members' requests. */
export function linksFromTraceparents(values: ReadonlyArray<string | undefined>): Link[] {
  const links: Link[] = [];
  for (const value of values) {
    const spanContext = spanContextFromTraceparent(value);
    if (spanContext !== undefined) links.push({ context: spanContext });
  }
  return links;
}

/**
 * What a request's outgoing calls carry right now: the span of the step in progress (a request's
 * `reserve` or `settle` span) if one is set, else the active span. A request keeps one of these in
 * its context; its observer moves `span` as steps start and end, and the ledger client reads it
 * when a call leaves, so call sites need no wrapping.
 */
export interface OutgoingSpanSlot {
  span: Span | undefined;
  /** Set once the request's work is over: a timer it left behind then carries no context of it. */
  closed?: boolean;
}

const outgoingSlotKey = createContextKey('inr-gateway outgoing span slot');

/** `context` with the span as the active one and a slot for outgoing calls' parent: what a request's work runs in. */
export function requestContextOf(span: Span, slot: OutgoingSpanSlot, base: Context = ROOT_CONTEXT): Context {
  return trace.setSpan(base, span).setValue(outgoingSlotKey, slot);
}

/**
 * The `traceparent` an outgoing call made now should carry: the active request's step span, else
 * the active span; undefined when nothing is traced (tracing off: two lookups, nothing built).
 */
export function activeTraceparent(): string | undefined {
  const active = contextApi.active();
  const slot = active.getValue(outgoingSlotKey) as OutgoingSpanSlot | undefined;
  if (slot !== undefined) {
    if (slot.closed === true) return undefined;
    if (slot.span !== undefined) return traceparentOfSpanContext(slot.span.spanContext());
  }
  return traceparentOf(active);
}

/** `base` (default the root context) with `span` as its active span: what a span's own work runs in. */
export function contextWithSpan(span: Span, base: Context = ROOT_CONTEXT): Context {
  return trace.setSpan(base, span);
}

/** The span active now (made so by withContext), or undefined: with tracing off, always undefined. */
export function activeSpan(): Span | undefined {
  return trace.getActiveSpan();
}

/** Runs `work` with `context` active (the process's context manager carries it across awaits). */
export function withContext<T>(context: Context, work: () => T): T {
  return contextApi.with(context, work);
}
