export {
  metricCatalogue, exportedMetricNames, latencyBucketsSeconds, batchSizeBuckets, type MetricDescriptor, type MetricKey,
} from './metric-catalogue.ts';
export {
  createServiceMetrics, type ServiceName, type ServiceMetrics, type ProxyMetrics, type LedgerMetrics, type AdminMetrics, type MetricsRegistry,
} from './service-metrics.ts';
export { startMetricsServer, type MetricsServerOptions } from './metrics-server.ts';
export {
  startTracing, tracingOff, tracingShutdownTimeoutMs, tracingRequested, tracesEndpointOf, samplerOf, traceparentOf, traceparentOfSpanContext, spanContextFromTraceparent,
  contextFromTraceparent, linksFromTraceparents, requestContextOf, activeTraceparent, withContext, contextWithSpan, activeSpan,
  type ServiceTracing, type TracingEnv, type OutgoingSpanSlot,
} from './tracing.ts';
export { SpanKind, SpanStatusCode, type Span, type Context, type Link, type Tracer } from '@opentelemetry/api';
export {
  ATTR_ERROR_TYPE, ATTR_HTTP_REQUEST_METHOD, ATTR_HTTP_RESPONSE_STATUS_CODE, ATTR_HTTP_ROUTE, ATTR_RPC_METHOD, ATTR_RPC_STATUS_CODE, ATTR_RPC_SYSTEM_NAME,
} from '@opentelemetry/semantic-conventions';
