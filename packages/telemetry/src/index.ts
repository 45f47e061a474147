export {
  metricCatalogue, exportedMetricNames, latencyBucketsSeconds, batchSizeBuckets, type MetricDescriptor, type MetricKey,
} from './metric-catalogue.ts';
export {
  createServiceMetrics, type ServiceName, type ServiceMetrics, type ProxyMetrics, type LedgerMetrics, type AdminMetrics, type MetricsRegistry,
} from './service-metrics.ts';
export { startMetricsServer, type MetricsServerOptions } from './metrics-server.ts';
