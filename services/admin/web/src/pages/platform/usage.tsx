import { useCallback, useEffect, useState } from 'preact/hooks';
import { api } from '../../api.ts';
import type { Project, UsageRecord, UsageSummaryRow } from '../../api-types.ts';
import { Field, FormError } from '../../components/field.tsx';
import { Table } from '../../components/table.tsx';
import { formatCount, formatIst, formatRupees } from '../../format.ts';
import { listAll } from '../../lists.ts';
import { useLive } from '../../live.ts';
import type { PageProps } from '../../page-props.ts';
import { istDayBefore, istDayOf } from '../common/ist-dates.ts';
import { exactRupees } from '../common/rupee-text.ts';
import { classBreakdown, tokenClassLabel, type ClassBreakdown } from './token-classes.ts';
import { usageFilterQuery, type UsageFilterForm } from './usage-filters.ts';

/** A page of usage records, newest first. */
interface UsagePage {
  object: 'list';
  data: UsageRecord[];
  next_cursor: string | null;
}

/** The part of an organisation the filters use: the models it may call. */
interface OrganisationModels {
  allowed_gateway_models: string[];
}

/** Records per page. */
const pageSize = 50;

const emptyForm: UsageFilterForm = { projectId: '', model: '', fromDay: '', toDay: '' };

/**
 * The usage explorer: the organisation's usage records filtered by project, model and IST date
 * range, page by page (newest first), and a CSV export of exactly what the filters select.
 */
export function UsagePage(props: PageProps) {
  const { organisationId } = props;
  const [form, setForm] = useState<UsageFilterForm>(emptyForm);
  /** The filter query the list shows (and the export sends): the form's, once applied. */
  const [applied, setApplied] = useState<Record<string, string>>({});
  const [formProblem, setFormProblem] = useState<string | undefined>(undefined);
  /** Cursors of the pages shown so far: [] on the first page, then each page's cursor. */
  const [cursors, setCursors] = useState<string[]>([]);
  const [page, setPage] = useState<UsagePage | undefined>(undefined);
  const [error, setError] = useState<unknown>(undefined);
  const [projects, setProjects] = useState<Project[]>([]);
  const [models, setModels] = useState<string[]>([]);
  /** Models the period's summary shows used (a model no longer allowed still has usage to filter by). */
  const [usedModels, setUsedModels] = useState<string[]>([]);
  const [exporting, setExporting] = useState(false);
  const [newUsage, setNewUsage] = useState(false);
  /** The filtered period's usage by token class, from the daily summary (undefined until loaded). */
  const [breakdown, setBreakdown] = useState<ClassBreakdown | undefined>(undefined);

  useEffect(() => {
    if (organisationId === undefined) return;
    listAll<Project>(`/admin/v1/organisations/${organisationId}/projects`).then(setProjects, setError);
    api.get<OrganisationModels>(`/admin/v1/organisations/${organisationId}`)
      .then((organisation) => setModels(organisation.allowed_gateway_models), () => setModels([]));
  }, [organisationId]);

  const cursor = cursors.at(-1);
  const load = useCallback(async () => {
    if (organisationId === undefined) return;
    try {
      setPage(await api.get<UsagePage>(`/admin/v1/organisations/${organisationId}/usage`, { ...applied, limit: pageSize, cursor }));
      setError(undefined);
      setNewUsage(false);
    } catch (caught) {
      setError(caught);
    }
  }, [organisationId, applied, cursor]);

  useEffect(() => {
    void load();
  }, [load]);

  // The summary has no model filter: its rows are by day and model, so the model filter picks rows.
  const loadBreakdown = useCallback(async () => {
    if (organisationId === undefined) return;
    const { model, ...window } = applied;
    try {
      const summary = await api.get<{ data: UsageSummaryRow[] }>(`/admin/v1/organisations/${organisationId}/usage/summary`, window);
      setBreakdown(classBreakdown(summary.data.filter((row) => model === undefined || row.model === model)));
      setUsedModels(summary.data.map((row) => row.model));
    } catch (caught) {
      setError(caught);
    }
  }, [organisationId, applied]);

  useEffect(() => {
    void loadBreakdown();
  }, [loadBreakdown]);

  // New usage arrives newest first; on the first page, offer to show it (the list does not jump under the reader).
  const live = useLive(organisationId, (message) => {
    if (message.type !== 'usage' || cursors.length > 0 || page === undefined) return;
    const newest = page.data[0];
    if (message.records.some((record) => newest === undefined || Date.parse(record.created_at) > Date.parse(newest.created_at))) setNewUsage(true);
  });

  function apply(event: Event) {
    event.preventDefault();
    const result = usageFilterQuery(form);
    if (!result.ok) {
      setFormProblem(result.problem);
      return;
    }
    setFormProblem(undefined);
    setApplied(result.query);
    setCursors([]);
  }

  function clear() {
    setForm(emptyForm);
    setFormProblem(undefined);
    setApplied({});
    setCursors([]);
  }

  async function exportCsv() {
    if (organisationId === undefined) return;
    setExporting(true);
    try {
      await api.download(`/admin/v1/organisations/${organisationId}/usage/export`, applied);
      setError(undefined);
    } catch (caught) {
      setError(caught);
    } finally {
      setExporting(false);
    }
  }

  if (organisationId === undefined) return <section><h1>Usage</h1><p>Choose an organisation.</p></section>;
  const showProviderCost = props.role === 'platform';
  const filtered = Object.keys(applied).length > 0;

  return (
    <section>
      <h1>Usage</h1>
      <UsageFilters form={form} onForm={setForm} projects={projects} models={[...new Set([...models, ...usedModels])].sort()} problem={formProblem} onApply={apply} onClear={clear} />

      <div class="actions">
        <button type="button" class="secondary" onClick={() => void exportCsv()} disabled={exporting} aria-busy={exporting}>
          {exporting ? 'Exporting…' : filtered ? 'Export filtered usage (CSV)' : 'Export all usage (CSV)'}
        </button>
      </div>
      <FormError error={error} />
      {newUsage && live === 'live' ? (
        <p class="notice" role="status">
          New usage was recorded. <button type="button" class="link-button" onClick={() => { void load(); void loadBreakdown(); }}>Show the newest</button>
        </p>
      ) : null}

      {breakdown === undefined ? null : <TokenClassBreakdown breakdown={breakdown} filtered={filtered} showProviderCost={showProviderCost} />}

      {page === undefined ? (error === undefined ? <p role="status">Loading…</p> : null) : (
        <>
          <UsageRecords records={page.data} filtered={filtered} projects={projects} showProviderCost={showProviderCost} />
          <nav class="actions" aria-label="Usage pages">
            <button type="button" class="secondary" disabled={cursors.length === 0} onClick={() => setCursors([])}>Newest</button>
            <button type="button" class="secondary" disabled={cursors.length === 0} onClick={() => setCursors(cursors.slice(0, -1))}>Newer</button>
            <span class="small">Page {cursors.length + 1}</span>
            <button type="button" class="secondary" disabled={page.next_cursor === null}
              onClick={() => { if (page.next_cursor !== null) setCursors([...cursors, page.next_cursor]); }}>Older</button>
          </nav>
        </>
      )}
    </section>
  );
}

/** The filter form: project, model and IST day range, with the last-7/30-days shortcuts. */
function UsageFilters(props: {
  form: UsageFilterForm;
  onForm: (form: UsageFilterForm) => void;
  projects: Project[];
  models: string[];
  problem: string | undefined;
  onApply: (event: Event) => void;
  onClear: () => void;
}) {
  const { form, onForm: setForm } = props;
  const today = istDayOf(Date.now());
  return (
    <form class="card inline-form" onSubmit={props.onApply} aria-labelledby="usage-filters-title">
      <h2 id="usage-filters-title">Filters</h2>
      <Field id="usage-project" label="Project">
        <select id="usage-project" value={form.projectId} onChange={(event) => setForm({ ...form, projectId: event.currentTarget.value })}>
          <option value="">All projects</option>
          {props.projects.map((project) => <option key={project.id} value={project.id}>{project.name}</option>)}
        </select>
      </Field>
      <Field id="usage-model" label="Model">
        <select id="usage-model" value={form.model} onChange={(event) => setForm({ ...form, model: event.currentTarget.value })}>
          <option value="">All models</option>
          {(form.model === '' || props.models.includes(form.model) ? props.models : [form.model, ...props.models])
            .map((model) => <option key={model} value={model}>{model}</option>)}
        </select>
      </Field>
      <Field id="usage-from" label="From (IST day)">
        <input id="usage-from" type="date" value={form.fromDay} max={today} onInput={(event) => setForm({ ...form, fromDay: event.currentTarget.value })} />
      </Field>
      <Field id="usage-to" label="To (IST day, included)">
        <input id="usage-to" type="date" value={form.toDay} max={today} onInput={(event) => setForm({ ...form, toDay: event.currentTarget.value })} />
      </Field>
      {props.problem === undefined ? null : <p class="form-error" role="alert">{props.problem}</p>}
      <div class="actions">
        <button type="button" class="secondary" onClick={() => setForm({ ...form, fromDay: istDayBefore(Date.now(), 6), toDay: today })}>Last 7 days</button>
        <button type="button" class="secondary" onClick={() => setForm({ ...form, fromDay: istDayBefore(Date.now(), 29), toDay: today })}>Last 30 days</button>
        <button type="button" class="secondary" onClick={props.onClear}>Clear</button>
        <button type="submit" class="primary">Apply filters</button>
      </div>
    </form>
  );
}

/** The filtered period's tokens and cost by token class, and what no class covers. */
function TokenClassBreakdown(props: { breakdown: ClassBreakdown; filtered: boolean; showProviderCost: boolean }) {
  const { breakdown, showProviderCost } = props;
  return (
    <>
      <h2>By token class</h2>
      <Table
        caption={props.filtered ? 'Tokens and cost by token class, for the filters' : 'Tokens and cost by token class'}
        showCaption
        rows={breakdown.classes}
        rowKey={(entry) => entry.class}
        empty="No usage recorded by token class in this period."
        columns={[
          { header: 'Class', cell: (entry) => tokenClassLabel(entry.class) },
          { header: 'Tokens', numeric: true, cell: (entry) => formatCount(entry.tokens) },
          { header: 'Cost', numeric: true, cell: (entry) => exactRupees(entry.costMicros) },
          ...(showProviderCost ? [{ header: 'Provider cost', numeric: true, cell: (entry: ClassBreakdown['classes'][number]) => exactRupees(entry.providerCostMicros) }] : []),
        ]}
      />
      {/* Usage recorded before classes existed (or a plain one) is in no class: say so rather than hide it. */}
      {breakdown.unclassified.requests === '0' ? null : (
        <p class="hint" data-testid="usage-unclassified">
          {formatCount(breakdown.unclassified.requests)} requests without token classes (plain input and output):
          {' '}{exactRupees(breakdown.unclassified.costMicros)}
          {showProviderCost ? `, provider cost ${exactRupees(breakdown.unclassified.providerCostMicros)}` : ''}.
        </p>
      )}
    </>
  );
}

/** One page of usage records as a table (provider cost only for platform admins). */
function UsageRecords(props: { records: UsageRecord[]; filtered: boolean; projects: Project[]; showProviderCost: boolean }) {
  const { filtered, showProviderCost } = props;
  const projectName = new Map(props.projects.map((project) => [project.id, project.name]));
  return (
    <Table
      caption={filtered ? 'Usage records matching the filters, newest first' : 'Usage records, newest first'}
      rows={props.records}
      rowKey={(record) => record.id}
      empty={filtered ? 'No usage matches these filters — widen the dates or clear the filters.' : 'No usage yet — call the gateway with a project\'s API key (see Projects) and each request shows here.'}
      columns={[
        { header: 'Time (IST)', cell: (record) => formatIst(record.created_at) },
        { header: 'Project', cell: (record) => projectName.get(record.project_id) ?? <span class="mono small">{record.project_id}</span> },
        { header: 'Model', cell: (record) => <span class="mono">{record.model}</span> },
        { header: 'Input tokens', numeric: true, cell: (record) => formatCount(record.input_tokens) },
        {
          header: 'Output tokens', numeric: true, cell: (record) => (
            <>
              {formatCount(record.output_tokens)}
              {record.overrun_output_tokens > 0 ? <div class="small">+{formatCount(record.overrun_output_tokens)} beyond the reserve, not billed</div> : null}
            </>
          ),
        },
        {
          header: 'Cost', numeric: true, cell: (record) => (
            <>
              {formatRupees(record.cost_micros)}
              {/* By token class, when the provider reported classes: e.g. "cached_input 40: ₹0.000012". */}
              {record.cost_by_class === undefined ? null : Object.entries(record.cost_by_class).map(([tokenClass, figures]) => (
                <div key={tokenClass} class="small">{tokenClass.replaceAll('_', ' ')} {formatCount(figures.tokens)}: {formatRupees(figures.cost_micros)}</div>
              ))}
            </>
          ),
        },
        { header: 'Debited', numeric: true, cell: (record) => formatRupees(record.debited_micros) },
        ...(showProviderCost ? [{ header: 'Provider cost', numeric: true, cell: (record: UsageRecord) => formatRupees(record.provider_cost_micros) }] : []),
        { header: 'Tokens from', cell: (record) => (record.usage_source === 'upstream' ? 'provider' : 'gateway estimate') },
        { header: 'Request id', cell: (record) => <span class="mono small">{record.request_id}</span> },
      ]}
    />
  );
}
