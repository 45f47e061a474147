/**
 * The operations signals as a contract with the metric catalogue, checked without a Prometheus:
 * every alert rule (deploy/kubernetes/base/prometheus-rules.yaml) and every Grafana query
 * (deploy/grafana/gateway-overview.json) parses with the Prometheus project's own PromQL grammar
 * and names only metrics and labels the services export; every alert can page or ticket someone
 * with a runbook section that exists in docs/operations.md; the alerts the issue names exist;
 * docs/operations.md's metric table is the catalogue. A renamed metric or label therefore fails
 * here instead of leaving an alert that silently watches nothing.
 * The checks are functions returning problems so that the last block can prove each one catches
 * the mistake it is there for.
 */
import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { describe, expect, it } from 'vitest';
import { createServiceMetrics, metricCatalogue, type MetricDescriptor, type ServiceName } from '@gateway/telemetry';
import { ledgerRpcMethods, operateOperations } from '@gateway/ledger';
import { descendants, metricsOf, readSelector, selectorsOf, strictParser, withGrafanaVariablesFilled, type SyntaxNode } from './support/promql.ts';

const rulesFile = new URL('../deploy/kubernetes/base/prometheus-rules.yaml', import.meta.url);
const dashboardFile = new URL('../deploy/grafana/gateway-overview.json', import.meta.url);
const operationsDoc = new URL('../docs/operations.md', import.meta.url);
const services: readonly ServiceName[] = ['proxy', 'ledger', 'admin'];

/** One alerting rule of a PrometheusRule; only the fields the checks read are typed. */
type AlertRule = { alert?: string; record?: string; expr: string; for?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
/** A PrometheusRule object. */
type PrometheusRule = { apiVersion: string; kind: string; metadata: { name: string; namespace?: string; labels?: Record<string, string> }; spec: { groups: { name: string; rules: AlertRule[] }[] } };
/** A Grafana panel (a row holds its own panels when collapsed). */
type Panel = { id: number; type: string; title: string; datasource?: { type?: string; uid?: string }; gridPos: { x: number; y: number; w: number; h: number }; targets?: { refId: string; expr: string; datasource?: { type?: string; uid?: string } }[]; panels?: Panel[] };
/** A Grafana dashboard as exported; only the fields the checks read are typed. */
type Dashboard = { uid: string; title: string; schemaVersion: number; templating: { list: { name: string; type: string; query?: string | { query: string } }[] }; panels: Panel[] };
/** A PromQL expression and where it came from (for the problem messages). */
type Query = { where: string; expr: string };

const rules = parseYaml(readFileSync(rulesFile, 'utf8')) as PrometheusRule;
const dashboard = JSON.parse(readFileSync(dashboardFile, 'utf8')) as Dashboard;
const operationsText = readFileSync(operationsDoc, 'utf8');

// ---------------------------------------------------------------------------------------------
// What exists: the catalogue, the Node.js defaults prom-client really exports, the scrape labels.
// ---------------------------------------------------------------------------------------------

/**
 * Labels Prometheus attaches to every scraped series (ServiceMonitor target labels), beside a
 * metric's own; `cluster` is the external label a multi-cluster setup (Thanos, Mimir, a
 * federation) adds, absent on a single Prometheus, where `cluster=""` matches every series.
 */
const targetLabels = new Set(['service', 'namespace', 'pod', 'job', 'instance', 'container', 'endpoint', 'cluster']);

/** A series name a query may select: the labels it carries and the services exporting it. */
type KnownSeries = { labels: ReadonlySet<string>; services: ReadonlySet<string> };

/** Every series name the gateway exports: catalogue entries (a histogram as `_bucket`, `_sum`, `_count`), the Node.js defaults, `up`. */
async function knownSeries(): Promise<Map<string, KnownSeries>> {
  const known = new Map<string, KnownSeries>();
  for (const descriptor of Object.values(metricCatalogue) as MetricDescriptor[]) {
    const own = new Set([...descriptor.labelNames, ...targetLabels]);
    const exporters = new Set<string>(descriptor.services);
    if (descriptor.type === 'histogram') {
      known.set(`${descriptor.name}_bucket`, { labels: new Set([...own, 'le']), services: exporters });
      known.set(`${descriptor.name}_sum`, { labels: own, services: exporters });
      known.set(`${descriptor.name}_count`, { labels: own, services: exporters });
    } else {
      known.set(descriptor.name, { labels: own, services: exporters });
    }
  }
  // The runtime metrics are whatever prom-client's collectDefaultMetrics registers in a real service registry.
  for (const service of services) {
    const metrics = createServiceMetrics(service);
    for (const metric of await metrics.registry.getMetricsAsJSON()) {
      if (!metric.name.startsWith('nodejs_') && !metric.name.startsWith('process_')) continue;
      const names = String(metric.type) === 'histogram' ? ['_bucket', '_sum', '_count'].map((suffix) => metric.name + suffix) : [metric.name];
      for (const name of names) {
        const entry = known.get(name) ?? { labels: new Set([...targetLabels, ...(name.endsWith('_bucket') ? ['le'] : [])]), services: new Set<string>() };
        for (const value of metric.values) for (const label of Object.keys(value.labels)) (entry.labels as Set<string>).add(label);
        (entry.services as Set<string>).add(service);
        known.set(name, entry);
      }
    }
  }
  known.set('up', { labels: targetLabels, services: new Set(services) });
  return known;
}

const known = await knownSeries();

// ---------------------------------------------------------------------------------------------
// PromQL: parse strictly, then walk the tree for selectors and grouping labels.
// ---------------------------------------------------------------------------------------------

/**
 * What is wrong with one query: a syntax error; a selector naming no exported series (or none by
 * name); a label matcher on a label the series does not carry; a `service` value that does not
 * export the metric; a `by (...)` label that no selector inside the aggregation carries.
 */
function queryProblems(query: Query, series: Map<string, KnownSeries> = known): string[] {
  const text = withGrafanaVariablesFilled(query.expr);
  let root: SyntaxNode;
  try {
    root = strictParser.parse(text).topNode;
  } catch (error) {
    return [`${query.where}: PromQL does not parse: ${(error as Error).message}: ${query.expr}`];
  }
  const problems: string[] = [];
  const selectorsIn = (node: SyntaxNode) => descendants(node, 'VectorSelector').map((selector) => readSelector(selector, text));
  for (const selector of selectorsIn(root)) {
    if (selector.metric === undefined) { problems.push(`${query.where}: a selector names no metric`); continue; }
    const entry = series.get(selector.metric);
    if (!entry) { problems.push(`${query.where}: ${selector.metric} is not a metric the gateway exports (metric-catalogue.ts)`); continue; }
    for (const matcher of selector.matchers) {
      if (!entry.labels.has(matcher.label)) problems.push(`${query.where}: ${selector.metric} has no label ${matcher.label}`);
      if (matcher.label === 'service' && matcher.op === '=' && !entry.services.has(matcher.value)) {
        problems.push(`${query.where}: service ${matcher.value} does not export ${selector.metric}`);
      }
    }
  }
  for (const aggregate of [root, ...descendants(root, 'AggregateExpr')].filter((node) => node.name === 'AggregateExpr')) {
    const modifier = aggregate.getChild('AggregateModifier');
    if (!modifier || !modifier.getChild('By')) continue;
    const body = aggregate.getChild('FunctionCallBody')!;
    const available = new Set(selectorsIn(body).flatMap((selector) => [...(series.get(selector.metric ?? '')?.labels ?? [])]));
    for (const label of descendants(modifier, 'LabelName').map((name) => text.slice(name.from, name.to))) {
      if (!available.has(label)) problems.push(`${query.where}: by (${label}): no series inside the aggregation carries ${label}`);
    }
  }
  return problems;
}

// ---------------------------------------------------------------------------------------------
// Alerts, runbooks, dashboard, docs.
// ---------------------------------------------------------------------------------------------

/** The anchors GitHub gives the headings of a Markdown document (lower case, punctuation dropped, spaces to hyphens, repeats numbered). */
function headingAnchors(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  let inFence = false;
  for (const line of markdown.split('\n')) {
    if (line.startsWith('```')) inFence = !inFence;
    const heading = !inFence && /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!heading) continue;
    const base = heading[1]!.replace(/`/g, '').trim().toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, '').replace(/\s/g, '-');
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    anchors.add(count === 0 ? base : `${base}-${count}`);
  }
  return anchors;
}

const runbookPrefix = 'docs/operations.md#';

/** The alerting rules of a PrometheusRule. */
const alertsOf = (rule: PrometheusRule): AlertRule[] => rule.spec.groups.flatMap((group) => group.rules).filter((entry) => entry.alert !== undefined);

/** What makes a PrometheusRule unusable for the cluster's Prometheus: wrong kind, namespace or no selecting label. */
function ruleObjectProblems(rule: PrometheusRule): string[] {
  const problems: string[] = [];
  if (rule.apiVersion !== 'monitoring.coreos.com/v1' || rule.kind !== 'PrometheusRule') problems.push(`not a monitoring.coreos.com/v1 PrometheusRule: ${rule.apiVersion} ${rule.kind}`);
  if (rule.metadata.namespace !== 'inr-gateway') problems.push(`namespace ${rule.metadata.namespace}, not inr-gateway`);
  if (rule.metadata.labels?.release !== 'kube-prometheus-stack') problems.push('no release: kube-prometheus-stack label (the kube-prometheus-stack ruleSelector)');
  const names = alertsOf(rule).map((alert) => alert.alert!);
  for (const name of new Set(names)) if (names.filter((other) => other === name).length > 1) problems.push(`alert ${name} is defined twice`);
  return problems;
}

/** What an alert needs to wake the right person usefully: a `for`, a severity, a summary, a description and a runbook section that exists. */
function alertProblems(alert: AlertRule, anchors: ReadonlySet<string>): string[] {
  const problems: string[] = [];
  const name = alert.alert ?? '(unnamed)';
  if (!alert.for || !/^\d+[smh]$/.test(alert.for)) problems.push(`${name}: no for: duration`);
  if (!['page', 'ticket'].includes(alert.labels?.severity ?? '')) problems.push(`${name}: severity ${alert.labels?.severity} is not page or ticket`);
  for (const annotation of ['summary', 'description']) if (!alert.annotations?.[annotation]?.trim()) problems.push(`${name}: no ${annotation}`);
  const runbook = alert.annotations?.runbook_url ?? '';
  if (!runbook.startsWith(runbookPrefix)) problems.push(`${name}: runbook_url ${runbook} is not in ${runbookPrefix}`);
  else if (!anchors.has(runbook.slice(runbookPrefix.length))) problems.push(`${name}: docs/operations.md has no heading for #${runbook.slice(runbookPrefix.length)}`);
  return problems;
}

/** The alerts the issue names, by what each must watch: [alert, a metric its expression uses]. */
const requiredAlerts: readonly [string, string][] = [
  ['GatewayProxyHigh5xxRatio', 'gateway_http_requests_total'],
  ['GatewayUpstreamErrorRatio', 'gateway_proxy_upstream_requests_total'],
  ['GatewaySettleOutboxOld', 'gateway_proxy_settle_outbox_oldest_age_seconds'],
  ['GatewayProxyConfigStale', 'gateway_proxy_config_fresh'],
  ['GatewayLedgerVerifyDifferences', 'gateway_ledger_verify_differences'],
  ['GatewayLedgerVerifyNotRunning', 'gateway_ledger_verify_last_success_timestamp_seconds'],
  ['GatewayLedgerHoldsPastDeadline', 'gateway_ledger_holds_past_deadline'],
  // Abandoned Settles seen from the ledger: the proxy's own counter dies with the proxy.
  ['GatewayLedgerReservationsExpired', 'gateway_ledger_sweeper_expired_total'],
  ['GatewayTargetDown', 'up'],
  ['GatewayLedgerCommitLatencyHigh', 'gateway_ledger_commit_duration_seconds_bucket'],
  ['GatewayRpmRefusalSpike', 'gateway_proxy_rpm_refusals_total'],
  // Redis lost: the proxies admit a share of each limit for a bounded time, then refuse (docs/operations.md "When Redis is down").
  ['GatewayRedisDown', 'gateway_proxy_redis_up'],
  // Request-log records given up (display only, so a ticket): the ledger away past the buffer, or refusing batches.
  ['GatewayRequestLogDropping', 'gateway_proxy_request_log_dropped_total'],
  ['GatewayEventLoopLagHigh', 'nodejs_eventloop_lag_p99_seconds'],
  // A refund the provider refused for good, and money returned outside the gateway that the balance could not cover.
  ['GatewayRefundFailed', 'gateway_admin_refund_outcomes_total'],
  ['GatewayPaymentShortfall', 'gateway_admin_refund_outcomes_total'],
  // Internal mTLS certificates reloaded from disk: an expiry that comes close means a renewal was not taken up.
  ['GatewayCertificateExpiresSoon', 'gateway_tls_certificate_expiry_timestamp_seconds'],
  ['GatewayCertificateExpiresWithinADay', 'gateway_tls_certificate_expiry_timestamp_seconds'],
];

/** Which required alerts are missing or no longer watch their metric. */
function requiredAlertProblems(alerts: AlertRule[]): string[] {
  return requiredAlerts.flatMap(([name, metric]) => {
    const alert = alerts.find((candidate) => candidate.alert === name);
    if (!alert) return [`alert ${name} is missing`];
    return metricsOf(alert.expr).includes(metric) ? [] : [`alert ${name} no longer watches ${metric}`];
  });
}

/** Every panel of a dashboard, rows' nested panels included. */
const panelsOf = (board: Dashboard): Panel[] => board.panels.flatMap((panel) => [panel, ...(panel.panels ?? [])]);

/** Every query of a dashboard, named by panel title and refId. */
const dashboardQueries = (board: Dashboard): Query[] =>
  panelsOf(board).flatMap((panel) => (panel.targets ?? []).map((target) => ({ where: `panel "${panel.title}" ${target.refId}`, expr: target.expr })));

/** What makes the dashboard hard to import or wrong: old schema, no datasource variable, a hard-wired datasource, duplicate ids, a panel off the grid or without queries. */
function dashboardProblems(board: Dashboard): string[] {
  const problems: string[] = [];
  if (!(board.schemaVersion >= 39)) problems.push(`schemaVersion ${board.schemaVersion} < 39`);
  const variable = board.templating.list.find((entry) => entry.name === 'datasource');
  if (variable?.type !== 'datasource' || variable.query !== 'prometheus') problems.push('no ${datasource} variable of Prometheus data sources');
  const ids = panelsOf(board).map((panel) => panel.id);
  if (new Set(ids).size !== ids.length) problems.push('panel ids repeat');
  for (const panel of panelsOf(board)) {
    if (panel.gridPos.x < 0 || panel.gridPos.x + panel.gridPos.w > 24) problems.push(`panel "${panel.title}" is off the 24-column grid`);
    if (panel.type === 'row') continue;
    if (!panel.targets?.length) problems.push(`panel "${panel.title}" has no query`);
    for (const source of [panel.datasource, ...(panel.targets ?? []).map((target) => target.datasource)]) {
      if (source?.uid !== '${datasource}') problems.push(`panel "${panel.title}" is not on the \${datasource} variable`);
    }
  }
  return problems;
}

/** What the issue asks the dashboard to show, by a metric each panel must query. */
const requiredDashboardMetrics: readonly string[] = [
  'gateway_http_request_duration_seconds_count', 'gateway_http_requests_total', 'gateway_http_request_duration_seconds_bucket',
  'gateway_proxy_time_to_first_byte_seconds_bucket', 'gateway_proxy_upstream_duration_seconds_bucket', 'gateway_proxy_upstream_requests_total',
  'gateway_proxy_ledger_call_duration_seconds_bucket', 'gateway_proxy_tokens_total', 'gateway_proxy_charged_micros_total', 'gateway_proxy_rpm_refusals_total',
  'gateway_proxy_settle_outbox_depth', 'gateway_proxy_settle_outbox_oldest_age_seconds', 'gateway_proxy_request_log_dropped_total', 'gateway_proxy_config_version', 'gateway_proxy_config_staleness_seconds',
  'gateway_ledger_batch_size_bucket', 'gateway_ledger_commit_duration_seconds_bucket', 'gateway_ledger_sweeper_expired_total', 'gateway_ledger_holds_past_deadline',
  'gateway_ledger_verify_differences', 'nodejs_eventloop_lag_p99_seconds', 'nodejs_heap_size_used_bytes',
];

/** Which required metrics no dashboard query shows. */
function dashboardCoverageProblems(board: Dashboard): string[] {
  const shown = new Set(dashboardQueries(board).flatMap((query) => metricsOf(query.expr)));
  return requiredDashboardMetrics.filter((metric) => !shown.has(metric)).map((metric) => `the dashboard shows no ${metric}`);
}

/**
 * docs/operations.md's metric reference table against the catalogue: every catalogue metric has a
 * row whose type, labels and services are the catalogue's, and no row names a metric that is gone.
 * A row: | `name` | type | `label`, `label` (or —) | service, service | meaning |
 */
function metricTableProblems(markdown: string): string[] {
  const rows = new Map<string, string[]>();
  for (const line of markdown.split('\n')) {
    const cells = /^\|\s*`(gateway_[a-z0-9_]+)`\s*\|(.*)\|\s*$/.exec(line);
    if (cells) rows.set(cells[1]!, cells[2]!.split('|').map((cell) => cell.trim()));
  }
  const problems: string[] = [];
  const catalogueNames = new Set<string>();
  for (const descriptor of Object.values(metricCatalogue) as MetricDescriptor[]) {
    catalogueNames.add(descriptor.name);
    const row = rows.get(descriptor.name);
    if (!row) { problems.push(`docs/operations.md: no row for ${descriptor.name}`); continue; }
    const [type, labels, exporters] = row;
    const documentedLabels = labels === '—' ? [] : [...(labels ?? '').matchAll(/`([a-z_]+)`/g)].map((match) => match[1]);
    if (type !== descriptor.type) problems.push(`docs/operations.md: ${descriptor.name} is a ${descriptor.type}, the row says ${type}`);
    if (documentedLabels.join(',') !== descriptor.labelNames.join(',')) problems.push(`docs/operations.md: ${descriptor.name} labels are ${descriptor.labelNames.join(', ') || 'none'}, the row says ${labels}`);
    if ((exporters ?? '').split(/,\s*/).join(',') !== descriptor.services.join(',')) problems.push(`docs/operations.md: ${descriptor.name} is exported by ${descriptor.services.join(', ')}, the row says ${exporters}`);
  }
  for (const name of rows.keys()) if (!catalogueNames.has(name)) problems.push(`docs/operations.md: ${name} is not in the catalogue`);
  return problems;
}

// ---------------------------------------------------------------------------------------------
// A shared cluster: every rule and panel selects the gateway's namespace; the ledger's label values.
// ---------------------------------------------------------------------------------------------

/** Every selector of a rule expression that does not pin the namespace its PrometheusRule lives in (Prometheus evaluates rules over every series it holds). */
function ruleNamespaceProblems(rule: PrometheusRule): string[] {
  const own = rule.metadata.namespace;
  return rule.spec.groups.flatMap((group) => group.rules).flatMap((entry) => selectorsOf(entry.expr)
    .filter((selector) => !selector.matchers.some((matcher) => matcher.label === 'namespace' && matcher.op === '=' && matcher.value === own))
    .map((selector) => `rule ${entry.alert ?? entry.record}: ${selector.metric} selects no namespace="${own}"`));
}

/** The dashboard's scope: each a query variable over a gateway metric, and a matcher every selector must carry. */
const dashboardScope = [{ label: 'cluster', variable: '$cluster' }, { label: 'namespace', variable: '$namespace' }] as const;

/** What lets a dashboard panel chart another workload: a missing $cluster / $namespace variable, a selector without both matchers. */
function dashboardScopeProblems(board: Dashboard): string[] {
  const problems: string[] = [];
  for (const { label } of dashboardScope) {
    const variable = board.templating.list.find((entry) => entry.name === label);
    const query = typeof variable?.query === 'object' ? variable.query.query : variable?.query;
    const values = query === undefined ? null : /^label_values\((\w+)(\{[^}]*\})?,\s*(\w+)\)$/.exec(query);
    if (variable?.type !== 'query' || !values) problems.push(`no $${label} query variable of label_values(<metric>, ${label})`);
    else if (!known.has(values[1]!) || values[3] !== label) problems.push(`$${label} reads ${values[3]} of ${values[1]}, not ${label} of an exported metric`);
  }
  for (const query of dashboardQueries(board)) {
    for (const selector of selectorsOf(query.expr)) {
      for (const { label, variable } of dashboardScope) {
        if (!selector.matchers.some((matcher) => matcher.label === label && matcher.op === '=' && matcher.value === variable)) problems.push(`${query.where}: ${selector.metric} has no ${label}="${variable}"`);
      }
    }
  }
  return problems;
}

/** The values the ledger's RPC metrics carry, by label: `method` as the proto names it, `operation` for Operate-stream messages ('' for unary calls). */
const ledgerRpcLabelValues: Record<string, readonly string[]> = { method: ledgerRpcMethods, operation: ['', ...operateOperations] };

/** A literal as a regular expression source. */
const escapeRegExp = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** Every `method` / `operation` value a query matches on the ledger's RPC metrics that the ledger never exports (a regex: each alternative must match one). */
function ledgerLabelValueProblems(queries: Query[]): string[] {
  const problems: string[] = [];
  for (const query of queries) {
    for (const selector of selectorsOf(query.expr).filter((candidate) => candidate.metric?.startsWith('gateway_ledger_rpc_'))) {
      for (const matcher of selector.matchers) {
        const exported = ledgerRpcLabelValues[matcher.label];
        if (exported === undefined) continue;
        const alternatives = matcher.op.endsWith('~') ? matcher.value.split('|') : [matcher.value];
        for (const alternative of alternatives) {
          const pattern = new RegExp(`^(?:${matcher.op.endsWith('~') ? alternative : escapeRegExp(alternative)})$`);
          if (!exported.some((value) => pattern.test(value))) problems.push(`${query.where}: ${matcher.label} "${alternative}" is not one the ledger exports (${exported.filter(Boolean).join(', ')})`);
        }
      }
    }
  }
  return problems;
}

const anchors = headingAnchors(operationsText);
const alerts = alertsOf(rules);
const alertQueries: Query[] = rules.spec.groups.flatMap((group) => group.rules.map((rule) => ({ where: `rule ${rule.alert ?? rule.record}`, expr: rule.expr })));

describe('alert rules and dashboard against the metric catalogue', () => {
  it('the PrometheusRule is one a kube-prometheus-stack Prometheus in the namespace picks up', () => {
    expect(ruleObjectProblems(rules)).toEqual([]);
    expect(alerts.length).toBeGreaterThanOrEqual(requiredAlerts.length);
  });

  it('every alert expression parses and names only exported metrics and labels', () => {
    expect(alertQueries.flatMap((query) => queryProblems(query))).toEqual([]);
  });

  it('every alert has for, a page/ticket severity, summary, description and a runbook section in docs/operations.md', () => {
    expect(alerts.flatMap((alert) => alertProblems(alert, anchors))).toEqual([]);
  });

  it('the alerts the issue names exist and watch their metric', () => {
    expect(requiredAlertProblems(alerts)).toEqual([]);
  });

  it('every dashboard query parses and names only exported metrics and labels', () => {
    const queries = dashboardQueries(dashboard);
    expect(queries.length).toBeGreaterThan(30);
    expect(queries.flatMap((query) => queryProblems(query))).toEqual([]);
  });

  it('the dashboard imports cleanly (schema 39+, ${datasource} everywhere) and shows what the issue lists', () => {
    expect(dashboardProblems(dashboard)).toEqual([]);
    expect(dashboardCoverageProblems(dashboard)).toEqual([]);
  });

  it('every rule selector pins the namespace of its PrometheusRule; every panel selector $cluster and $namespace, both variables', () => {
    expect(ruleNamespaceProblems(rules)).toEqual([]);
    expect(dashboardScopeProblems(dashboard)).toEqual([]);
  });

  it('every ledger method and operation a rule or panel names is one the ledger exports, in its spelling', () => {
    expect(ledgerLabelValueProblems([...alertQueries, ...dashboardQueries(dashboard)])).toEqual([]);
  });

  it("docs/operations.md's metric table is the catalogue", () => {
    expect(metricTableProblems(operationsText)).toEqual([]);
  });
});

describe('the operations-signal checks catch the mistakes they are for', () => {
  const rulesCopy = (): PrometheusRule => structuredClone(rules);
  const query = (expr: string): Query => ({ where: 'test', expr });

  it.each([
    ['a syntax error', 'sum(rate(gateway_http_requests_total[5m])', 'does not parse'],
    ['an unknown function', 'rates(gateway_http_requests_total[5m])', 'does not parse'],
    ['a misspelt metric', 'sum(rate(gateway_http_request_total[5m]))', 'gateway_http_request_total is not a metric'],
    ['a histogram without its suffix', 'histogram_quantile(0.99, sum by (le) (rate(gateway_ledger_commit_duration_seconds[5m])))', 'gateway_ledger_commit_duration_seconds is not a metric'],
    ['a made-up Node.js metric', 'nodejs_eventloop_lag_p999_seconds > 1', 'nodejs_eventloop_lag_p999_seconds is not a metric'],
    ['a label the metric does not have', 'sum(rate(gateway_http_requests_total{status_class="5xx"}[5m]))', 'has no label status_class'],
    ['a service that does not export the metric', 'gateway_ledger_holds_past_deadline{service="proxy"} > 0', 'service proxy does not export'],
    ['grouping by a label nobody carries', 'sum by (provider) (rate(gateway_proxy_upstream_requests_total[5m]))', 'by (provider)'],
    ['le outside a histogram bucket', 'sum by (le) (rate(gateway_http_request_duration_seconds_count[5m]))', 'by (le)'],
    ['an unknown Grafana variable', 'sum(rate(gateway_http_requests_total[$window]))', 'does not parse'],
  ])('a query with %s', (_mistake, expr, expected) => {
    expect(queryProblems(query(expr)).join('\n')).toContain(expected);
  });

  it('the checker accepts what is right (the selector by __name__, a Grafana interval, a histogram count)', () => {
    expect(queryProblems(query('sum by (status_class) (rate({__name__="gateway_http_request_duration_seconds_count", service="admin"}[$__rate_interval]))'))).toEqual([]);
  });

  it('an alert in the rules file with a misspelt metric', () => {
    const broken = rulesCopy();
    const rule = alertsOf(broken).find((alert) => alert.alert === 'GatewayLedgerHoldsPastDeadline')!;
    rule.expr = rule.expr.replace('gateway_ledger_holds_past_deadline', 'gateway_ledger_holds_past_deadlines');
    expect(alertsOf(broken).flatMap((alert) => queryProblems({ where: alert.alert!, expr: alert.expr }))).not.toEqual([]);
    expect(requiredAlertProblems(alertsOf(broken))).not.toEqual([]);
  });

  it.each([
    ['no for', (alert: AlertRule) => { delete alert.for; }],
    ['a severity nobody routes', (alert: AlertRule) => { alert.labels!.severity = 'critical'; }],
    ['no summary', (alert: AlertRule) => { delete alert.annotations!.summary; }],
    ['a runbook anchor that is no heading', (alert: AlertRule) => { alert.annotations!.runbook_url = `${runbookPrefix}gatewaysomethingelse`; }],
    ['a runbook elsewhere', (alert: AlertRule) => { alert.annotations!.runbook_url = 'https://example.com/runbook'; }],
  ])('an alert with %s', (_mistake, breakIt) => {
    const broken = rulesCopy();
    breakIt(alertsOf(broken)[0]!);
    expect(alertsOf(broken).flatMap((alert) => alertProblems(alert, anchors))).not.toEqual([]);
  });

  it('a runbook section removed from docs/operations.md', () => {
    const anchorsWithout = headingAnchors(operationsText.replace(/^### GatewayProxyConfigStale$/m, '### Config'));
    expect(alerts.flatMap((alert) => alertProblems(alert, anchorsWithout))).not.toEqual([]);
  });

  it('a required alert removed, a rule object outside the namespace or unselected, a duplicate alert', () => {
    const broken = rulesCopy();
    broken.spec.groups = broken.spec.groups.map((group) => ({ ...group, rules: group.rules.filter((rule) => rule.alert !== 'GatewaySettleOutboxOld') }));
    expect(requiredAlertProblems(alertsOf(broken))).not.toEqual([]);
    const elsewhere = rulesCopy();
    elsewhere.metadata.namespace = 'monitoring';
    expect(ruleObjectProblems(elsewhere)).not.toEqual([]);
    const unselected = rulesCopy();
    delete unselected.metadata.labels!.release;
    expect(ruleObjectProblems(unselected)).not.toEqual([]);
    const twice = rulesCopy();
    twice.spec.groups[0]!.rules.push(structuredClone(twice.spec.groups[0]!.rules[0]!));
    expect(ruleObjectProblems(twice)).not.toEqual([]);
  });

  it('a dashboard with a hard-wired datasource, an old schema, repeated ids, a missing panel', () => {
    const hardWired = structuredClone(dashboard);
    panelsOf(hardWired).find((panel) => panel.type !== 'row')!.datasource = { type: 'prometheus', uid: 'P1809F7CD0C75ACF3' };
    expect(dashboardProblems(hardWired)).not.toEqual([]);
    const old = structuredClone(dashboard);
    old.schemaVersion = 27;
    expect(dashboardProblems(old)).not.toEqual([]);
    const repeated = structuredClone(dashboard);
    repeated.panels[2]!.id = repeated.panels[1]!.id;
    expect(dashboardProblems(repeated)).not.toEqual([]);
    const missing = structuredClone(dashboard);
    missing.panels = missing.panels.filter((panel) => !(panel.targets ?? []).some((target) => target.expr.includes('gateway_ledger_verify_differences')));
    expect(dashboardCoverageProblems(missing)).not.toEqual([]);
  });

  it('a rule selector without the namespace, or with another one', () => {
    const missing = rulesCopy();
    const rule = alertsOf(missing).find((alert) => alert.alert === 'GatewayEventLoopLagHigh')!;
    rule.expr = rule.expr.replace(/\{[^}]*\}/, '');
    expect(ruleNamespaceProblems(missing)).toEqual(['rule GatewayEventLoopLagHigh: nodejs_eventloop_lag_p99_seconds selects no namespace="inr-gateway"']);
    const other = rulesCopy();
    alertsOf(other)[0]!.expr = alertsOf(other)[0]!.expr.replace('namespace="inr-gateway"', 'namespace=~"inr-.*"');
    expect(ruleNamespaceProblems(other)).toHaveLength(1);
  });

  it('a panel without $namespace or $cluster, a dashboard without the variables', () => {
    const unscoped = structuredClone(dashboard);
    const target = panelsOf(unscoped).find((panel) => panel.title === 'CPU')!.targets![0]!;
    target.expr = target.expr.replace('cluster="$cluster", ', '');
    expect(dashboardScopeProblems(unscoped)).toEqual(['panel "CPU" A: process_cpu_seconds_total has no cluster="$cluster"']);
    const noVariables = structuredClone(dashboard);
    noVariables.templating.list = noVariables.templating.list.filter((entry) => entry.name !== 'namespace');
    expect(dashboardScopeProblems(noVariables)).toEqual(['no $namespace query variable of label_values(<metric>, namespace)']);
  });

  it.each([
    ['the stream spelling as a method', 'sum(rate(gateway_ledger_rpc_requests_total{method="reserve"}[5m]))', 'method "reserve"'],
    ['a method no proto has', 'sum(rate(gateway_ledger_rpc_requests_total{method=~"Reserve|SettleMany"}[5m]))', 'method "SettleMany"'],
    ['the unary spelling as an operation', 'gateway_ledger_rpc_duration_seconds_count{method="Operate", operation="Settle"}', 'operation "Settle"'],
  ])('a ledger label value in the wrong spelling: %s', (_mistake, expr, expected) => {
    expect(ledgerLabelValueProblems([query(expr)]).join('\n')).toContain(expected);
  });

  it('the ledger label check accepts the one spelling', () => {
    expect(ledgerLabelValueProblems([query('sum(rate(gateway_ledger_rpc_requests_total{method=~"Reserve|Settle|Operate", operation=~"|reserve|settle_batch"}[5m]))')])).toEqual([]);
  });

  it('a metric table row missing, wrong or left over in docs/operations.md', () => {
    expect(metricTableProblems(operationsText.replace(/^\| `gateway_ledger_batch_size` .*$/m, ''))).not.toEqual([]);
    expect(metricTableProblems(operationsText.replace(/^(\| `gateway_proxy_tokens_total` \| )counter/m, '$1gauge'))).not.toEqual([]);
    expect(metricTableProblems(operationsText.replace(/^(\| `gateway_proxy_rpm_refusals_total` \| counter \| )`scope`/m, '$1`pool`'))).not.toEqual([]);
    expect(metricTableProblems(`${operationsText}\n| \`gateway_proxy_gone_total\` | counter | — | proxy | gone |\n`)).not.toEqual([]);
  });
});
