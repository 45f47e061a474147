import type { ChartConfiguration } from 'chart.js';
import { useCallback, useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { api } from '../../api.ts';
import type { Balance, Project, ProjectBudget, UsageRecord, UsageSummaryRow } from '../../api-types.ts';
import { useBanners } from '../../banners.ts';
import { ChartView, moneyScale, niceAxis } from '../../components/chart.tsx';
import { FormError } from '../../components/field.tsx';
import { Table } from '../../components/table.tsx';
import { formatCount, formatIst, formatRupees } from '../../format.ts';
import { useLive } from '../../live.ts';
import { allows, type PageProps } from '../../page-props.ts';
import { navigate, useLocation } from '../../router.ts';
import { ResponseStorageSettings } from './response-storage.tsx';

/** The answer of GET /admin/v1/organisations/{id}/overview: everything the page shows, in one read. */
interface OverviewResponse {
  from: string;
  to: string;
  balance: Balance;
  month: string;
  projects: Array<{ project: Project; budget: ProjectBudget }>;
  usage_by_day: UsageSummaryRow[];
  usage_by_project: UsageSummaryRow[];
  recent: UsageRecord[];
}

/** Everything the overview shows, loaded together. */
interface OverviewData {
  balance: Balance;
  projects: Project[];
  budgets: Map<string, ProjectBudget>;
  /** The chosen range, by day and model. */
  summary: UsageSummaryRow[];
  /** The chosen range by project. */
  byProject: UsageSummaryRow[];
  recent: UsageRecord[];
}

/** The Overview's date ranges: presets and a custom one (days in India Standard Time, both ends included). */
type OverviewRange = { preset: 'today' | '7d' | '30d' | 'month' } | { preset: 'custom'; from: string; to: string };

const presetNames = { today: 'Today', '7d': 'Last 7 days', '30d': 'Last 30 days', month: 'This month', custom: 'Custom' } as const;

/** Today's date in India Standard Time, "2026-11-28". */
function istToday(now = Date.now()): string {
  return new Date(now + 330 * 60_000).toISOString().slice(0, 10); // UTC fields of this Date are IST wall-clock fields
}

/** A calendar day moved by whole days: "2026-11-28", -6 → "2026-11-22". */
function addDays(day: string, days: number): string {
  return new Date(Date.parse(`${day}T00:00:00Z`) + days * 86_400_000).toISOString().slice(0, 10);
}

const dayPattern = /^\d{4}-\d{2}-\d{2}$/;

/** The range the hash's query names (range=today|7d|30d|month, or range=custom&from=…&to=…); 30 days otherwise. */
function rangeFromQuery(query: Record<string, string>): OverviewRange {
  const preset = query['range'];
  if (preset === 'today' || preset === '7d' || preset === '30d' || preset === 'month') return { preset };
  const from = query['from'] ?? '';
  const to = query['to'] ?? '';
  if (preset === 'custom' && dayPattern.test(from) && dayPattern.test(to) && !Number.isNaN(Date.parse(from)) && !Number.isNaN(Date.parse(to)) && from <= to) {
    return { preset: 'custom', from, to };
  }
  return { preset: '30d' };
}

/** The first and last day (IST, inclusive) of a range. */
function rangeDays(range: OverviewRange, now = Date.now()): { first: string; last: string } {
  const today = istToday(now);
  switch (range.preset) {
    case 'today': return { first: today, last: today };
    case '7d': return { first: addDays(today, -6), last: today };
    case '30d': return { first: addDays(today, -29), last: today };
    case 'month': return { first: `${today.slice(0, 8)}01`, last: today };
    case 'custom': return { first: range.from, last: range.to };
  }
}

/** The API window of a range: from the first day's IST midnight to the midnight after its last day. */
function rangeWindow(range: OverviewRange): { from: string; to: string } {
  const { first, last } = rangeDays(range);
  return { from: `${first}T00:00:00+05:30`, to: `${addDays(last, 1)}T00:00:00+05:30` };
}

/** A range as words for headings: "Last 7 days", "1 Nov 2026 – 28 Nov 2026". */
function rangeText(range: OverviewRange): string {
  if (range.preset !== 'custom') return presetNames[range.preset];
  const day = (text: string) => formatIst(`${text}T12:00:00+05:30`).replace(/, .*$/, '');
  return range.from === range.to ? day(range.from) : `${day(range.from)} – ${day(range.to)}`;
}

async function loadOverview(organisationId: string, range: OverviewRange): Promise<OverviewData> {
  const overview = await api.get<OverviewResponse>(`/admin/v1/organisations/${organisationId}/overview`, rangeWindow(range));
  return {
    balance: overview.balance,
    projects: overview.projects.map((entry) => entry.project),
    budgets: new Map(overview.projects.map((entry) => [entry.project.id, entry.budget])),
    summary: overview.usage_by_day,
    byProject: overview.usage_by_project,
    recent: overview.recent,
  };
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

/** The largest of some bigints (0 for none). */
function largestOf(values: bigint[]): bigint {
  return values.reduce((max, value) => (value > max ? value : max), 0n);
}

/**
 * A bar chart of money per label. Bars are plotted in µ₹ (whole numbers, exact as a chart's
 * numbers up to 2^53 µ₹, about ₹900 crore a bar), on an axis from ₹0 to a nice bound just above
 * the largest bar; ticks and tooltips are exact rupee texts from bigints.
 */
function moneyBarConfig(labels: string[], micros: bigint[], label: string, horizontal = false): { config: ChartConfiguration; axisMax: bigint } {
  const axis = moneyScale(micros);
  const config: ChartConfiguration = {
    type: 'bar',
    data: { labels, datasets: [{ label, data: micros.map((value) => Number(value)), backgroundColor: horizontal ? labels.map((_, i) => palette[i % palette.length]!) : palette[0]! }] },
    options: {
      indexAxis: horizontal ? 'y' : 'x',
      plugins: {
        legend: { display: false },
        tooltip: { callbacks: { label: (item) => formatRupees(micros[item.dataIndex] ?? 0n) } },
      },
      scales: { [horizontal ? 'x' : 'y']: axis.scale },
    },
  };
  return { config, axisMax: axis.max };
}

/** The overview's charts and their text summaries (for screen readers, with each axis's range), from the loaded data. */
function overviewCharts(data: OverviewData) {
  const byDay = totalsBy(data.summary, (row) => row.day);
  const days = [...byDay.keys()].sort();
  const byModel = [...totalsBy(data.summary, (row) => row.model)].sort((a, b) => (b[1].cost > a[1].cost ? 1 : b[1].cost < a[1].cost ? -1 : 0));
  const names = new Map(data.projects.map((project) => [project.id, project.name]));
  const byProject = [...totalsBy(data.byProject, (row) => row.project_id ?? '')].sort((a, b) => (b[1].cost > a[1].cost ? 1 : b[1].cost < a[1].cost ? -1 : 0));
  const tokenAxis = niceAxis(largestOf(days.map((day) => BigInt(byDay.get(day)!.input + byDay.get(day)!.output))));
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
      scales: {
        x: { stacked: true },
        y: { stacked: true, min: 0, max: Number(tokenAxis.max), ticks: { stepSize: Number(tokenAxis.step), callback: (value) => formatCount(Math.round(Number(value))) } },
      },
    },
  };
  const totalCost = sumMicros(data.summary.map((row) => row.cost_micros));
  const totalTokens = data.summary.reduce((sum, row) => sum + row.input_tokens + row.output_tokens, 0);
  const costByDay = moneyBarConfig(days, days.map((day) => byDay.get(day)!.cost), 'Cost');
  const costByModel = moneyBarConfig(byModel.map(([model]) => model), byModel.map(([, total]) => total.cost), 'Cost', true);
  const costByProject = moneyBarConfig(byProject.map(([id]) => names.get(id) ?? id), byProject.map(([, total]) => total.cost), 'Cost', true);
  const axisText = (max: bigint) => `; axis ₹0.00 to ${formatRupees(max)}`;
  return {
    costByDay: costByDay.config,
    costSummary: `${formatRupees(totalCost)} over ${days.length} days with usage${axisText(costByDay.axisMax)}`,
    tokensByDay: tokens,
    tokensSummary: `${formatCount(totalTokens)} tokens over ${days.length} days with usage; axis 0 to ${formatCount(tokenAxis.max)} tokens`,
    costByModel: costByModel.config,
    modelSummary: `${byModel.map(([model, total]) => `${model} ${formatRupees(total.cost)}`).join(', ') || 'no usage'}${axisText(costByModel.axisMax)}`,
    costByProject: costByProject.config,
    projectSummary: `${byProject.map(([id, total]) => `${names.get(id) ?? id} ${formatRupees(total.cost)}`).join(', ') || 'no usage'}${axisText(costByProject.axisMax)}`,
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

/** How long live updates are gathered before the one reload they cause, ms (a burst of usage costs one read). */
const liveReloadDelayMs = 1_000;

/** The organisation at a glance for a date range: balance, budgets, charts and recent requests, kept current by live updates (one read each). */
export function OverviewPage(props: PageProps) {
  const { organisationId } = props;
  const location = useLocation();
  const range = useMemo(() => rangeFromQuery(location.query), [location.query['range'], location.query['from'], location.query['to']]);
  const [data, setData] = useState<OverviewData | undefined>(undefined);
  const [error, setError] = useState<unknown>(undefined);
  const loading = useRef<{ running: boolean; again: boolean }>({ running: false, again: false });
  const timer = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);

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
          setData(await loadOverview(organisationId, range));
          setError(undefined);
        } catch (caught) {
          setError(caught);
        }
      } while (loading.current.again);
    } finally {
      loading.current.running = false;
    }
  }, [organisationId, range]);

  // Live updates within liveReloadDelayMs of each other cause one reload.
  const reloadSoon = useCallback(() => {
    if (timer.current !== undefined) return;
    timer.current = setTimeout(() => {
      timer.current = undefined;
      void reload();
    }, liveReloadDelayMs);
  }, [reload]);
  useEffect(() => () => clearTimeout(timer.current), []);

  useEffect(() => {
    void reload();
  }, [reload]);

  useLive(organisationId, (message) => {
    if (message.type === 'balance') setData((current) => current && { ...current, balance: message.balance });
    if (message.type === 'usage') {
      setData((current) => current && { ...current, recent: message.records });
      reloadSoon(); // the charts and this month's spend move with the new usage
    }
    if (message.type === 'alert') reloadSoon();
  });

  useHardStopBanners(data?.projects, data?.budgets);

  const charts = useMemo(() => (data === undefined ? undefined : overviewCharts(data)), [data]);

  if (organisationId === undefined) return <section><h1>Overview</h1><p>Choose an organisation.</p></section>;
  const picker = <RangePicker range={range} onChange={(next) => navigate(`${location.path}?${rangeQuery(next)}`, { replace: true })} />;
  if (data === undefined) {
    return (
      <section>
        <h1>Overview</h1>
        {picker}
        {error === undefined ? <p role="status">Loading…</p> : <FormError error={error} />}
      </section>
    );
  }
  const words = rangeText(range);
  return (
    <section class="overview">
      <h1>Overview</h1>
      {picker}
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
          // Spent is what was debited (settled); what requests and credit grants hold counts against the
          // budget (the bar, PROJECT_BUDGET) but is not spent: a grant's unused hold goes back.
          { header: 'Spent', numeric: true, cell: (project) => formatRupees(data.budgets.get(project.id)?.settled_micros ?? '0') },
          { header: 'Budget', numeric: true, cell: (project) => {
            const cap = data.budgets.get(project.id)?.monthly_cap_micros;
            return cap == null ? 'No budget' : formatRupees(cap);
          } },
          { header: 'Use of budget', cell: (project) => <BudgetBar budget={data.budgets.get(project.id)} /> },
        ]}
      />

      <h2>Usage, {words.toLowerCase() === words ? words : words.charAt(0).toLowerCase() + words.slice(1)}</h2>
      {data.summary.length === 0 ? <p class="empty-note">No usage in this range.</p> : (
      <div class="charts">
        <ChartView label="Cost by day (₹)" summary={charts!.costSummary} config={charts!.costByDay} />
        <ChartView label="Tokens by day" summary={charts!.tokensSummary} config={charts!.tokensByDay} />
        <ChartView label="Cost by model (₹)" summary={charts!.modelSummary} config={charts!.costByModel} />
        <ChartView label="Cost by project (₹)" summary={charts!.projectSummary} config={charts!.costByProject} />
      </div>
      )}

      <h2>Recent requests</h2>
      <RecentRequests records={data.recent} projects={data.projects} />

      <ResponseStorageSettings organisationId={organisationId} canChange={allows(props.allowed, 'setResponseStorage')} />
    </section>
  );
}

/** A range as the hash's query: "range=7d", "range=custom&from=2026-11-01&to=2026-11-28". */
function rangeQuery(range: OverviewRange): string {
  return new URLSearchParams(range.preset === 'custom' ? { range: 'custom', from: range.from, to: range.to } : { range: range.preset }).toString();
}

/** The date range control: a preset, or custom days (IST, both included), kept in the URL. */
function RangePicker(props: { range: OverviewRange; onChange: (range: OverviewRange) => void }) {
  const { range } = props;
  const days = rangeDays(range);
  return (
    <form class="range-picker" aria-label="Date range" onSubmit={(event) => event.preventDefault()}>
      <label>
        Date range{' '}
        <select value={range.preset} onChange={(event) => {
          const preset = (event.currentTarget as HTMLSelectElement).value as OverviewRange['preset'];
          props.onChange(preset === 'custom' ? { preset, from: days.first, to: days.last } : { preset });
        }}>
          {Object.entries(presetNames).map(([value, name]) => <option key={value} value={value}>{name}</option>)}
        </select>
      </label>
      {range.preset !== 'custom' ? null : (
        <>
          <label>From <input type="date" value={range.from} max={range.to} onChange={(event) => {
            const from = (event.currentTarget as HTMLInputElement).value;
            if (dayPattern.test(from) && from <= range.to) props.onChange({ ...range, from });
          }} /></label>
          <label>To <input type="date" value={range.to} min={range.from} onChange={(event) => {
            const to = (event.currentTarget as HTMLInputElement).value;
            if (dayPattern.test(to) && to >= range.from) props.onChange({ ...range, to });
          }} /></label>
        </>
      )}
    </form>
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
        { header: 'Cost', numeric: true, cell: (record) => formatRupees(record.cost_micros) },
      ]}
    />
  );
}
