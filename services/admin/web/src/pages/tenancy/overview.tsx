import type { ChartConfiguration } from 'chart.js';
import { useCallback, useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { chartRupees } from '../common/rupee-text.ts';
import { api } from '../../api.ts';
import type { Balance, Project, ProjectBudget, UsageRecord, UsageSummaryRow } from '../../api-types.ts';
import { useBanners } from '../../banners.ts';
import { ChartView } from '../../components/chart.tsx';
import { FormError } from '../../components/field.tsx';
import { Table } from '../../components/table.tsx';
import { formatCount, formatIst, formatRupees } from '../../format.ts';
import { listAll } from '../../lists.ts';
import { useLive } from '../../live.ts';
import { allows, type PageProps } from '../../page-props.ts';
import { ResponseStorageSettings } from './response-storage.tsx';

/** Days of usage the charts by day and by model cover. */
const chartDays = 30;

/** Everything the overview shows, loaded together. */
interface OverviewData {
  balance: Balance;
  projects: Project[];
  budgets: Map<string, ProjectBudget>;
  /** Last `chartDays` days, by day and model. */
  summary: UsageSummaryRow[];
  /** This month by project; undefined when the admin cannot group by project. */
  byProject: UsageSummaryRow[] | undefined;
  recent: UsageRecord[];
}

/** The first instant of the current calendar month in India Standard Time, as ISO-8601 with +05:30. */
function istMonthStart(now = Date.now()): string {
  const ist = new Date(now + 330 * 60_000); // UTC fields of this Date are IST wall-clock fields
  return `${ist.getUTCFullYear()}-${String(ist.getUTCMonth() + 1).padStart(2, '0')}-01T00:00:00+05:30`;
}

async function loadOverview(organisationId: string): Promise<OverviewData> {
  const base = `/admin/v1/organisations/${organisationId}`;
  const from = new Date(Date.now() - chartDays * 86_400_000).toISOString();
  const [balance, projects, summary, byProject, recent] = await Promise.all([
    api.get<Balance>(`${base}/balance`),
    listAll<Project>(`${base}/projects`),
    api.get<{ data: UsageSummaryRow[] }>(`${base}/usage/summary`, { from }),
    // group_by=project came with the dashboard; an admin without it still shows the rest.
    api.get<{ data: UsageSummaryRow[] }>(`${base}/usage/summary`, { from: istMonthStart(), group_by: 'project' }).then((page) => page.data, () => undefined),
    api.get<{ data: UsageRecord[] }>(`${base}/usage`, { limit: 20 }),
  ]);
  const budgets = new Map<string, ProjectBudget>();
  await Promise.all(projects.map(async (project) => {
    budgets.set(project.id, await api.get<ProjectBudget>(`/admin/v1/projects/${project.id}/budget`));
  }));
  return { balance, projects, budgets, summary: summary.data, byProject, recent: recent.data };
}

/** Sums µ₹ decimal strings exactly. */
function sumMicros(values: Iterable<string>): bigint {
  let total = 0n;
  for (const value of values) total += BigInt(value);
  return total;
}

/** Spend as a share of the cap, percent (for the bar; not money). */
function percentOf(spent: string, cap: string): number {
  const capMicros = BigInt(cap);
  if (capMicros <= 0n) return 100;
  return Number((BigInt(spent) * 10_000n) / capMicros) / 100;
}

/** Groups rows by a key, summing cost (µ₹) and tokens. */
function totalsBy(rows: UsageSummaryRow[], keyOf: (row: UsageSummaryRow) => string) {
  const totals = new Map<string, { cost: bigint; input: number; output: number; requests: number }>();
  for (const row of rows) {
    const key = keyOf(row);
    const total = totals.get(key) ?? { cost: 0n, input: 0, output: 0, requests: 0 };
    total.cost += BigInt(row.cost_micros);
    total.input += row.input_tokens;
    total.output += row.output_tokens;
    total.requests += row.requests;
    totals.set(key, total);
  }
  return totals;
}

const palette = ['#1f5fbf', '#c2570c', '#1b7f4b', '#8a3ab9', '#b3261e', '#00707a', '#6b6b00', '#8c4a2f'];

/** A bar chart of money per label, with exact amounts in its tooltips. */
function moneyBarConfig(labels: string[], micros: bigint[], label: string, horizontal = false): ChartConfiguration {
  return {
    type: 'bar',
    data: { labels, datasets: [{ label, data: micros.map((value) => chartRupees(value.toString())), backgroundColor: horizontal ? labels.map((_, i) => palette[i % palette.length]!) : palette[0]! }] },
    options: {
      indexAxis: horizontal ? 'y' : 'x',
      plugins: {
        legend: { display: false },
        tooltip: { callbacks: { label: (item) => formatRupees(micros[item.dataIndex] ?? 0n) } },
      },
      scales: { [horizontal ? 'x' : 'y']: { beginAtZero: true, ticks: { callback: (value) => `₹${String(value)}` } } },
    },
  };
}

/** The overview's charts and their text summaries (for screen readers), from the loaded data. */
function overviewCharts(data: OverviewData) {
  const byDay = totalsBy(data.summary, (row) => row.day);
  const days = [...byDay.keys()].sort();
  const byModel = [...totalsBy(data.summary, (row) => row.model)].sort((a, b) => (b[1].cost > a[1].cost ? 1 : b[1].cost < a[1].cost ? -1 : 0));
  const names = new Map(data.projects.map((project) => [project.id, project.name]));
  const byProject = data.byProject === undefined
    ? undefined
    : [...totalsBy(data.byProject, (row) => row.project_id ?? '')].sort((a, b) => (b[1].cost > a[1].cost ? 1 : b[1].cost < a[1].cost ? -1 : 0));
  const tokens: ChartConfiguration = {
    type: 'bar',
    data: {
      labels: days,
      datasets: [
        { label: 'Input tokens', data: days.map((day) => byDay.get(day)!.input), backgroundColor: palette[0] },
        { label: 'Output tokens', data: days.map((day) => byDay.get(day)!.output), backgroundColor: palette[1] },
      ],
    },
    options: {
      plugins: { tooltip: { callbacks: { label: (item) => `${item.dataset.label ?? ''}: ${formatCount(Number(item.raw))}` } } },
      scales: { x: { stacked: true }, y: { stacked: true, beginAtZero: true } },
    },
  };
  const totalCost = sumMicros(data.summary.map((row) => row.cost_micros));
  const totalTokens = data.summary.reduce((sum, row) => sum + row.input_tokens + row.output_tokens, 0);
  return {
    costByDay: moneyBarConfig(days, days.map((day) => byDay.get(day)!.cost), 'Cost'),
    costSummary: `${formatRupees(totalCost)} over ${days.length} days with usage`,
    tokensByDay: tokens,
    tokensSummary: `${formatCount(totalTokens)} tokens over ${days.length} days with usage`,
    costByModel: moneyBarConfig(byModel.map(([model]) => model), byModel.map(([, total]) => total.cost), 'Cost', true),
    modelSummary: byModel.map(([model, total]) => `${model} ${formatRupees(total.cost)}`).join(', ') || 'no usage',
    costByProject: byProject && moneyBarConfig(byProject.map(([id]) => names.get(id) ?? id), byProject.map(([, total]) => total.cost), 'Cost', true),
    projectSummary: byProject?.map(([id, total]) => `${names.get(id) ?? id} ${formatRupees(total.cost)}`).join(', ') || 'no usage',
  };
}

/**
 * Raises a hard-stop banner for each project whose spend reached its cap (its requests are refused
 * with 402 until next month or a higher cap), and clears it when the project is below again.
 */
function useHardStopBanners(projects: Project[] | undefined, budgets: Map<string, ProjectBudget> | undefined): void {
  const banners = useBanners();
  useEffect(() => {
    const stopped = new Set<string>();
    for (const project of projects ?? []) {
      const budget = budgets?.get(project.id);
      if (budget?.monthly_cap_micros == null || BigInt(budget.spent_micros) < BigInt(budget.monthly_cap_micros)) continue;
      stopped.add(project.id);
      banners.set(`stop:${project.id}`, {
        tone: 'stop',
        text: `Hard stop: project "${project.name}" has spent ${formatRupees(budget.spent_micros)} of its ${formatRupees(budget.monthly_cap_micros)} monthly budget. Its requests are refused until next month or a higher budget.`,
      });
    }
    for (const project of projects ?? []) if (!stopped.has(project.id)) banners.set(`stop:${project.id}`, undefined);
    return () => {
      for (const id of stopped) banners.set(`stop:${id}`, undefined);
    };
  }, [projects, budgets, banners]);
}

/** The organisation at a glance: balance, budgets, charts and recent requests, kept current by live updates. */
export function OverviewPage(props: PageProps) {
  const { organisationId } = props;
  const [data, setData] = useState<OverviewData | undefined>(undefined);
  const [error, setError] = useState<unknown>(undefined);
  const loading = useRef<{ running: boolean; again: boolean }>({ running: false, again: false });

  // One load at a time; a change arriving during a load asks for one more afterwards.
  const reload = useCallback(async () => {
    if (organisationId === undefined) return;
    if (loading.current.running) {
      loading.current.again = true;
      return;
    }
    loading.current.running = true;
    try {
      do {
        loading.current.again = false;
        try {
          setData(await loadOverview(organisationId));
          setError(undefined);
        } catch (caught) {
          setError(caught);
        }
      } while (loading.current.again);
    } finally {
      loading.current.running = false;
    }
  }, [organisationId]);

  useEffect(() => {
    void reload();
  }, [reload]);

  useLive(organisationId, (message) => {
    if (message.type === 'balance') setData((current) => current && { ...current, balance: message.balance });
    if (message.type === 'usage') {
      setData((current) => current && { ...current, recent: message.records });
      void reload(); // the charts and this month's spend move with the new usage
    }
    if (message.type === 'alert') void reload();
  });

  useHardStopBanners(data?.projects, data?.budgets);

  const charts = useMemo(() => (data === undefined ? undefined : overviewCharts(data)), [data]);

  if (organisationId === undefined) return <section><h1>Overview</h1><p>Choose an organisation.</p></section>;
  if (data === undefined) {
    return (
      <section>
        <h1>Overview</h1>
        {error === undefined ? <p role="status">Loading…</p> : <FormError error={error} />}
      </section>
    );
  }
  return (
    <section class="overview">
      <h1>Overview</h1>
      <FormError error={error} />
      <h2 class="visually-hidden">Balance</h2>
      <dl class="stats" aria-live="polite">
        <div class="stat"><dt>Available</dt><dd>{formatRupees(data.balance.available_micros)}</dd></div>
        <div class="stat"><dt>Held by requests in flight</dt><dd>{formatRupees(data.balance.held_micros)}</dd></div>
        <div class="stat"><dt>Debited</dt><dd>{formatRupees(data.balance.debited_micros)}</dd></div>
      </dl>

      <h2>This month's spend by project</h2>
      <Table
        caption="This month's spend by project against its budget"
        rows={data.projects}
        rowKey={(project) => project.id}
        empty="No projects yet."
        columns={[
          { header: 'Project', cell: (project) => <>{project.name}{project.status === 'disabled' ? <span class="pill">disabled</span> : null}</> },
          { header: 'Spent', numeric: true, cell: (project) => formatRupees(data.budgets.get(project.id)?.spent_micros ?? '0') },
          { header: 'Budget', numeric: true, cell: (project) => {
            const cap = data.budgets.get(project.id)?.monthly_cap_micros;
            return cap == null ? 'No budget' : formatRupees(cap);
          } },
          { header: 'Use of budget', cell: (project) => <BudgetBar budget={data.budgets.get(project.id)} /> },
        ]}
      />

      <h2>Usage, last {chartDays} days</h2>
      {data.summary.length === 0 ? <p class="empty-note">No usage in the last {chartDays} days.</p> : (
      <div class="charts">
        <ChartView label="Cost by day (₹)" summary={charts!.costSummary} config={charts!.costByDay} />
        <ChartView label="Tokens by day" summary={charts!.tokensSummary} config={charts!.tokensByDay} />
        <ChartView label="Cost by model (₹)" summary={charts!.modelSummary} config={charts!.costByModel} />
        {charts!.costByProject === undefined ? null : (
          <ChartView label="Cost by project this month (₹)" summary={charts!.projectSummary} config={charts!.costByProject} />
        )}
      </div>
      )}

      <h2>Recent requests</h2>
      <RecentRequests records={data.recent} projects={data.projects} />

      <ResponseStorageSettings organisationId={organisationId} canChange={allows(props.allowed, 'setResponseStorage')} />
    </section>
  );
}

/** A project's spend against its cap as a bar (with its soft-alert mark), or a dash without a budget. */
function BudgetBar(props: { budget: ProjectBudget | undefined }) {
  const { budget } = props;
  if (budget?.monthly_cap_micros == null) return <span aria-label="No budget">—</span>;
  const percent = percentOf(budget.spent_micros, budget.monthly_cap_micros);
  const state = percent >= 100 ? 'stopped' : budget.soft_alert_percent !== null && percent >= budget.soft_alert_percent ? 'alert' : 'ok';
  return (
    <div class="budget">
      <div class={`bar bar-${state}`} role="progressbar" aria-valuemin={0} aria-valuemax={100} aria-valuenow={Math.min(100, Math.round(percent))}
        aria-valuetext={`${percent.toFixed(0)}% of the budget`}>
        <span style={{ width: `${Math.min(100, percent)}%` }} />
      </div>
      <span class="budget-text">{percent.toFixed(0)}%{state === 'stopped' ? ' · hard stop' : state === 'alert' ? ' · alert' : ''}</span>
    </div>
  );
}

/** The most recent requests (the overview loads 20), newest first. */
function RecentRequests(props: { records: UsageRecord[]; projects: Project[] }) {
  const names = new Map(props.projects.map((project) => [project.id, project.name]));
  return (
    <Table
      caption="The 20 most recent requests, newest first"
      rows={props.records}
      rowKey={(record) => record.id}
      empty="No requests yet."
      columns={[
        { header: 'Time (IST)', cell: (record) => formatIst(record.created_at) },
        { header: 'Project', cell: (record) => names.get(record.project_id) ?? record.project_id },
        { header: 'Model', cell: (record) => record.model },
        { header: 'Input tokens', numeric: true, cell: (record) => formatCount(record.input_tokens) },
        { header: 'Output tokens', numeric: true, cell: (record) => formatCount(record.output_tokens) },
        { header: 'Cost', numeric: true, cell: (record) => formatRupees(record.cost_micros, 4) },
      ]}
    />
  );
}
