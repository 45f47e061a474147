import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { metricCatalogue, type MetricDescriptor } from './metric-catalogue.ts';

/** A gateway service, as the `service` label on every metric it exports. */
export type ServiceName = 'proxy' | 'ledger' | 'admin';

/** The label names of a catalogue entry, as a union of strings. */
type LabelsOf<D extends MetricDescriptor> = D['labelNames'][number];
/** The prom-client object a catalogue entry becomes. */
type MetricOf<D extends MetricDescriptor> =
  D['type'] extends 'counter' ? Counter<LabelsOf<D>>
  : D['type'] extends 'gauge' ? Gauge<LabelsOf<D>>
  : Histogram<LabelsOf<D>>;

/** The catalogue's entries a service exports, keyed as in the catalogue. */
type MetricsOf<S extends ServiceName> = {
  [K in keyof typeof metricCatalogue as S extends (typeof metricCatalogue)[K]['services'][number] ? K : never]: MetricOf<(typeof metricCatalogue)[K]>;
};

/** What every service's metrics have beside the catalogue's objects. */
export interface MetricsRegistry {
  registry: Registry;
  /**
   * Registers a refresh that runs before every scrape: gauges that mirror a state (outbox depth,
   * config staleness) are set from it instead of on every change. A refresh that throws, or has
   * not finished within refreshTimeoutMs (a database that hangs), is skipped for that scrape: its
   * gauges keep their last values and the scrape still answers; the others still run.
   */
  onCollect(refresh: () => void | Promise<void>): void;
  /** Runs the refreshes, then renders every metric in the Prometheus text format. */
  render(): Promise<string>;
}

/** The registry and metric objects of one service: what its code observes into and /metrics reads. */
export type ServiceMetrics<S extends ServiceName> = MetricsOf<S> & MetricsRegistry;

/** The metrics of the proxy. */
export type ProxyMetrics = ServiceMetrics<'proxy'>;
/** The metrics of the ledger. */
export type LedgerMetrics = ServiceMetrics<'ledger'>;
/** The metrics of the admin. */
export type AdminMetrics = ServiceMetrics<'admin'>;

/** How long a scrape waits for each onCollect refresh before rendering without it, ms. */
const refreshTimeoutMs = 1_000;

/** Runs one refresh, waiting at most refreshTimeoutMs; a late one finishes in the background and sets its gauges then. */
async function refreshWithin(refresh: () => void | Promise<void>): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<void>((resolve) => { timer = setTimeout(resolve, refreshTimeoutMs); });
  try {
    await Promise.race([Promise.resolve().then(refresh).catch(() => undefined), late]);
  } finally {
    clearTimeout(timer);
  }
}

/** Builds the prom-client object of one catalogue entry in a registry. */
function instantiate(descriptor: MetricDescriptor, registry: Registry): Counter | Gauge | Histogram {
  const configuration = { name: descriptor.name, help: descriptor.help, labelNames: [...descriptor.labelNames], registers: [registry] };
  switch (descriptor.type) {
    case 'counter': return new Counter(configuration);
    case 'gauge': return new Gauge(configuration);
    case 'histogram': return new Histogram({ ...configuration, buckets: [...descriptor.buckets ?? []] });
  }
}

/**
 * Creates a service's own registry (labelled `service=<name>`), with the Node.js defaults
 * (event-loop lag, heap, GC, CPU, handles: `nodejs_*`, `process_*`) and every catalogue entry the
 * service exports. Each call makes a new registry, so several services (or tests) in one process
 * never share or double-register a metric.
 */
export function createServiceMetrics<S extends ServiceName>(service: S): ServiceMetrics<S> {
  const registry = new Registry();
  registry.setDefaultLabels({ service });
  collectDefaultMetrics({ register: registry });
  const refreshes: Array<() => void | Promise<void>> = [];
  const metrics: Record<string, unknown> = {
    registry,
    onCollect: (refresh: () => void | Promise<void>) => { refreshes.push(refresh); },
    render: async () => {
      await Promise.all(refreshes.map(refreshWithin));
      return registry.metrics();
    },
  } satisfies MetricsRegistry;
  for (const [key, descriptor] of Object.entries(metricCatalogue) as [string, MetricDescriptor][]) {
    if ((descriptor.services as readonly string[]).includes(service)) metrics[key] = instantiate(descriptor, registry);
  }
  return metrics as ServiceMetrics<S>;
}
