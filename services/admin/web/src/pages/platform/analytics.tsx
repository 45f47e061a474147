import type { ChartConfiguration } from 'chart.js';
import { useEffect, useMemo, useState } from 'preact/hooks';
import { api } from '../../api.ts';
import { ChartView, moneyScale } from '../../components/chart.tsx';
import { Field, FormError } from '../../components/field.tsx';
import { Table, type Column } from '../../components/table.tsx';
import { formatCount, formatRupees } from '../../format.ts';
import type { PageProps } from '../../page-props.ts';
import { istDayBefore, istDayOf } from '../common/ist-dates.ts';
import { marginPercent } from './margin.ts';
import { exactRupees } from '../common/rupee-text.ts';
import { tokenClassLabel } from './token-classes.ts';
import { usageFilterQuery } from './usage-filters.ts';

type GroupBy = 'day' | 'model' | 'organisation';

/** Counts and money of some usage (µ₹ decimal strings). */
interface UsageFigures {
  requests: number;
  input_tokens: number;
  output_tokens: number;
  customer_price_micros: string;
  provider_cost_micros: string;
  /** Per token class of the requests recorded by class, by class name (µ₹ decimal strings). */
  token_classes: ClassFigures[];
  /** Requests recorded without classes: in the figures above, in no class. */
  unclassified_requests: number;
}

/** One token class of a margin row or total. */
interface ClassFigures {
  class: string;
  tokens: number;
  customer_price_micros: string;
  provider_cost_micros: string;
}

/** One line of the by-class table: a group (or the total) and one of its classes. */
interface ClassLine extends ClassFigures {
  group: string;
}

/** The by-class lines of the report: the window's totals first, then each commercial group's classes. */
function classLines(report: MarginReport): ClassLine[] {
  const total = report.totals.token_classes.map((entry) => ({ ...entry, group: 'All commercial usage' }));
  return [...total, ...report.data.flatMap((row) => row.token_classes.map((entry) => ({ ...entry, group: rowLabel(row) })))];
}

/** One group of the margin report; margin_micros is null for internal usage (it earns nothing). */
interface MarginRow extends UsageFigures {
  key: string;
  organisation_name?: string | null;
  billing_mode: 'commercial' | 'internal';
  margin_micros: string | null;
}

/** GET /admin/v1/analytics/margin. */
interface MarginReport {
  object: 'list';
  group_by: GroupBy;
  data: MarginRow[];
  totals: UsageFigures & { margin_micros: string };
  internal: { data: MarginRow[]; totals: UsageFigures };
}

const groupByText: Record<GroupBy, string> = { day: 'Day (IST)', model: 'Gateway model', organisation: 'Organisation' };

/** A row's label: the organisation's name when grouped by organisation, else its key (day or model slug). */
function rowLabel(row: MarginRow): string {
  return row.organisation_name ?? row.key;
}

/** The columns both tables share: the group, requests, tokens, customer price and provider cost. */
function figureColumns(groupBy: GroupBy): Column<MarginRow>[] {
  return [
    {
      header: groupByText[groupBy], cell: (row) => groupBy === 'organisation'
        ? <>{rowLabel(row)}<div class="mono small">{row.key}</div></>
        : <span class={groupBy === 'model' ? 'mono' : undefined}>{row.key}</span>,
    },
    { header: 'Requests', numeric: true, cell: (row) => formatCount(row.requests) },
    { header: 'Tokens in / out', numeric: true, cell: (row) => `${formatCount(row.input_tokens)} / ${formatCount(row.output_tokens)}` },
    { header: 'Customer price', numeric: true, cell: (row) => formatRupees(row.customer_price_micros) },
    { header: 'Provider cost', numeric: true, cell: (row) => formatRupees(row.provider_cost_micros) },
  ];
}

/** One row of GET /admin/v1/analytics/deployments: a gateway model's upstream deployment over the window (µ₹ as decimal strings). */
interface DeploymentRow {
  gateway_model: string;
  /** "" for usage settled before deployments were recorded. */
  deployment: string;
  requests: number;
  customer_price_micros: string;
  provider_cost_micros: string;
  failed_attempt_provider_cost_micros: string;
  margin_micros: string;
  failed_attempts: number;
}

/** The bar chart of the commercial rows: customer price, provider cost and margin per group (₹, exact in tooltips). */
function marginChart(rows: MarginRow[]): ChartConfiguration {
  const scale = moneyScale(rows.flatMap((row) => [BigInt(row.customer_price_micros), BigInt(row.provider_cost_micros), BigInt(row.margin_micros ?? '0')])).scale;
  return {
    type: 'bar',
    data: {
      labels: rows.map(rowLabel),
      datasets: [
        { label: 'Customer price (₹)', data: rows.map((row) => Number(row.customer_price_micros)), backgroundColor: '#2f6fb2' },
        { label: 'Provider cost (₹)', data: rows.map((row) => Number(row.provider_cost_micros)), backgroundColor: '#c77d2e' },
        { label: 'Margin (₹)', data: rows.map((row) => Number(row.margin_micros ?? '0')), backgroundColor: '#2e8b57' },
      ],
    },
    options: {
      plugins: {
        tooltip: {
          // Tooltips show the exact rupees of the row, not the chart's rounded number.
          callbacks: {
            label: (item) => {
              const row = rows[item.dataIndex];
              if (row === undefined) return '';
              const micros = [row.customer_price_micros, row.provider_cost_micros, row.margin_micros ?? '0'][item.datasetIndex] ?? '0';
              return `${item.dataset.label ?? ''}: ${formatRupees(micros)}`;
            },
          },
        },
      },
      // Bars in whole µ₹ on an axis scaled to them, ticks as exact rupees.
      scales: { y: scale },
    },
  };
}

/**
 * Platform analytics: what customers paid, what providers charge and the margin, by IST day,
 * gateway model or organisation over an IST date range, as a chart and a table; internal
 * (sponsored) organisations' usage apart, since it is never debited; and a CSV export.
 */
export function AnalyticsPage(_props: PageProps) {
  const today = istDayOf(Date.now());
  const [fromDay, setFromDay] = useState(() => istDayBefore(Date.now(), 29));
  const [toDay, setToDay] = useState(today);
  const [groupBy, setGroupBy] = useState<GroupBy>('day');
  /** The query the report shows (and the export sends). */
  const [applied, setApplied] = useState<Record<string, string> | undefined>(undefined);
  const [problem, setProblem] = useState<string | undefined>(undefined);
  const [report, setReport] = useState<MarginReport | undefined>(undefined);
  const [deployments, setDeployments] = useState<DeploymentRow[] | undefined>(undefined);
  const [error, setError] = useState<unknown>(undefined);
  const [exporting, setExporting] = useState(false);

  function apply(event?: Event) {
    event?.preventDefault();
    const range = usageFilterQuery({ projectId: '', model: '', fromDay, toDay });
    if (!range.ok) {
      setProblem(range.problem);
      return;
    }
    setProblem(undefined);
    setApplied({ ...range.query, group_by: groupBy });
  }

  // The first report: the last 30 days by day.
  useEffect(() => apply(), []);

  useEffect(() => {
    if (applied === undefined) return;
    api.get<MarginReport>('/admin/v1/analytics/margin', applied).then((answer) => {
      setReport(answer);
      setError(undefined);
    }, setError);
    // The same window by upstream deployment (the grouping does not apply to it).
    const { group_by: _groupBy, ...window } = applied;
    api.get<{ data: DeploymentRow[] }>('/admin/v1/analytics/deployments', window).then((answer) => setDeployments(answer.data), setError);
  }, [applied]);

  const chart = useMemo(() => (report === undefined ? undefined : marginChart(report.data)), [report]);

  async function exportCsv() {
    if (applied === undefined) return;
    setExporting(true);
    try {
      await api.download('/admin/v1/analytics/margin/export', applied);
      setError(undefined);
    } catch (caught) {
      setError(caught);
    } finally {
      setExporting(false);
    }
  }

  const reportGroup = report?.group_by ?? groupBy;
  return (
    <section>
      <h1>Analytics</h1>
      <form class="card inline-form" onSubmit={apply} aria-labelledby="analytics-window-title">
        <h2 id="analytics-window-title">Window</h2>
        <Field id="analytics-from" label="From (IST day)">
          <input id="analytics-from" type="date" required value={fromDay} max={today} onInput={(event) => setFromDay(event.currentTarget.value)} />
        </Field>
        <Field id="analytics-to" label="To (IST day, included)">
          <input id="analytics-to" type="date" required value={toDay} max={today} onInput={(event) => setToDay(event.currentTarget.value)} />
        </Field>
        <Field id="analytics-group" label="Group by">
          <select id="analytics-group" value={groupBy} onChange={(event) => setGroupBy(event.currentTarget.value as GroupBy)}>
            <option value="day">Day (IST)</option>
            <option value="model">Gateway model</option>
            <option value="organisation">Organisation</option>
          </select>
        </Field>
        {problem === undefined ? null : <p class="form-error" role="alert">{problem}</p>}
        <div class="actions">
          <button type="button" class="secondary" onClick={() => void exportCsv()} disabled={exporting || applied === undefined} aria-busy={exporting}>
            {exporting ? 'Exporting…' : 'Export CSV'}
          </button>
          <button type="submit" class="primary">Show</button>
        </div>
      </form>
      <FormError error={error} />
      {report === undefined || chart === undefined ? (error === undefined ? <p role="status">Loading…</p> : null) : (
        <MarginReportView report={report} chart={chart} groupBy={reportGroup} />
      )}
      {deployments === undefined ? null : <DeploymentsView rows={deployments} />}
    </section>
  );
}

/** The report: totals, the chart, the commercial table, its token classes, and internal usage apart. */
function MarginReportView(props: { report: MarginReport; chart: ChartConfiguration; groupBy: GroupBy }) {
  const { report, chart, groupBy: reportGroup } = props;
  return (
    <>
      <dl class="stats">
        <div class="stat"><dt>Customer price</dt><dd>{formatRupees(report.totals.customer_price_micros)}</dd></div>
        <div class="stat"><dt>Provider cost</dt><dd>{formatRupees(report.totals.provider_cost_micros)}</dd></div>
        <div class="stat">
          <dt>Margin</dt>
          <dd>{formatRupees(report.totals.margin_micros)} <span class="small">({marginPercent(report.totals.margin_micros, report.totals.customer_price_micros)})</span></dd>
        </div>
        <div class="stat"><dt>Requests</dt><dd>{formatCount(report.totals.requests)}</dd></div>
      </dl>
      {report.data.length === 0 ? <p class="empty-note">No commercial usage in this window.</p> : (
        <div class="charts">
          <ChartView config={chart} label={`Margin by ${groupByText[reportGroup].toLowerCase()}`}
            summary={`customer price ${formatRupees(report.totals.customer_price_micros)}, provider cost ${formatRupees(report.totals.provider_cost_micros)}, margin ${formatRupees(report.totals.margin_micros)} over ${report.data.length} groups`} />
        </div>
      )}
      <h2>Commercial usage</h2>
      <Table
        caption={`Commercial usage and margin by ${groupByText[reportGroup].toLowerCase()}`}
        rows={report.data}
        rowKey={(row) => row.key}
        empty="No commercial usage in this window."
        columns={[
          ...figureColumns(reportGroup),
          { header: 'Margin', numeric: true, cell: (row) => (row.margin_micros === null ? '—' : formatRupees(row.margin_micros)) },
          { header: 'Margin %', numeric: true, cell: (row) => (row.margin_micros === null ? '—' : marginPercent(row.margin_micros, row.customer_price_micros)) },
        ]}
      />
      <h2>Commercial usage by token class</h2>
      <p class="hint" data-testid="analytics-unclassified">
        Customer price and provider cost of each token class, for the window and by {groupByText[reportGroup].toLowerCase()};
        {' '}{formatCount(report.totals.unclassified_requests)} requests without token classes are in the figures above and in no class.
      </p>
      <Table
        caption={`Commercial usage by token class, in total and by ${groupByText[reportGroup].toLowerCase()}`}
        rows={classLines(report)}
        rowKey={(line) => `${line.group} ${line.class}`}
        empty="No usage recorded by token class in this window."
        columns={[
          { header: groupByText[reportGroup], cell: (line) => line.group },
          { header: 'Class', cell: (line) => tokenClassLabel(line.class) },
          { header: 'Tokens', numeric: true, cell: (line) => formatCount(line.tokens) },
          { header: 'Customer price', numeric: true, cell: (line) => exactRupees(line.customer_price_micros) },
          { header: 'Provider cost', numeric: true, cell: (line) => exactRupees(line.provider_cost_micros) },
        ]}
      />
      <h2>Internal organisations</h2>
      <p class="hint">
        Sponsored usage, never debited: shown at customer price and at provider cost
        (total {formatRupees(report.internal.totals.customer_price_micros)} at customer price,
        {' '}{formatRupees(report.internal.totals.provider_cost_micros)} at provider cost, {formatCount(report.internal.totals.requests)} requests).
      </p>
      <Table
        caption={`Internal usage by ${groupByText[reportGroup].toLowerCase()}`}
        rows={report.internal.data}
        rowKey={(row) => row.key}
        empty="No internal usage in this window."
        columns={figureColumns(reportGroup)}
      />
    </>
  );
}

/**
 * Each gateway model's upstream deployments over the window: the requests each answered, what
 * customers paid for them, what its provider charges (failed attempts it may have billed
 * included) and the margin, exact to the µ₹. Platform admins only: organisations never see deployments.
 */
function DeploymentsView(props: { rows: DeploymentRow[] }) {
  return (
    <>
      <h2>By upstream deployment</h2>
      <p class="hint">
        Which deployment answered, and what failover cost: provider cost includes attempts that failed over but that the
        provider may have billed (never charged to customers). Customer price counts commercial usage only.
      </p>
      <Table
        caption="Requests, customer price, provider cost and margin by gateway model and upstream deployment"
        rows={props.rows}
        rowKey={(row) => `${row.gateway_model} ${row.deployment}`}
        empty="No usage in this window."
        columns={[
          { header: 'Gateway model', cell: (row) => row.gateway_model },
          { header: 'Deployment', cell: (row) => (row.deployment === '' ? '(before deployments)' : row.deployment) },
          { header: 'Requests', numeric: true, cell: (row) => formatCount(row.requests) },
          { header: 'Customer price', numeric: true, cell: (row) => formatRupees(row.customer_price_micros) },
          { header: 'Provider cost', numeric: true, cell: (row) => formatRupees(row.provider_cost_micros) },
          { header: 'Margin', numeric: true, cell: (row) => formatRupees(row.margin_micros) },
          { header: 'Failed attempts', numeric: true, cell: (row) => `${formatCount(row.failed_attempts)} (${formatRupees(row.failed_attempt_provider_cost_micros)})` },
        ]}
      />
    </>
  );
}
