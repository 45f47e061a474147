export {
  metricCatalogue, exportedMetricNames, latencyBucketsSeconds, batchSizeBuckets, type MetricDescriptor, type MetricKey,
} from './metric-catalogue.ts';
export {
  createServiceMetrics, type ServiceName, type ServiceMetrics, type ProxyMetrics, type LedgerMetrics, type AdminMetrics, type MetricsRegistry,
} from './service-metrics.ts';
export { startMetricsServer, type MetricsServerOptions } from './metrics-server.ts';
export {
  startTracing, tracingOff, tracingRequested, tracesEndpointOf, samplerOf, traceparentOf, traceparentOfSpanContext, spanContextFromTraceparent,
  contextFromTraceparent, linksFromTraceparents, requestContextOf, activeTraceparent, withContext,
  type ServiceTracing, type TracingEnv, type OutgoingSpanSlot,
} from './tracing.ts';
export { SpanKind, SpanStatusCode, type Span, type Context, type Link } from '@opentelemetry/api';
