import { useCallback, useEffect, useState } from 'preact/hooks';
import { api } from '../../api.ts';
import type { Project } from '../../api-types.ts';
import { CopyButton } from '../../components/copy-button.tsx';
import { Dialog } from '../../components/dialog.tsx';
import { Field, FormError } from '../../components/field.tsx';
import { formatCount } from '../../format.ts';
import { listAll } from '../../lists.ts';
import type { PageProps } from '../../page-props.ts';
import { navigate } from '../../router.ts';
import { istDayBefore, istDayOf } from '../common/ist-dates.ts';
import { exactRupees } from '../common/rupee-text.ts';
import { tokenClassLabel } from './token-classes.ts';
import {
  durationText, emptyRequestFilters, istMillisecond, requestFailed, requestFilterQuery, surfaceLabels,
  type RequestFilterForm, type RequestPage, type RequestRecord, type StatusChoice,
} from './request-log.ts';

/** Requests per page ("Load more" adds the next). */
const pageSize = 50;

/** The part of an organisation the model filter lists: the models it may call. */
interface OrganisationModels {
  allowed_gateway_models: string[];
}

/**
 * The request log: every request the organisation's keys made, newest first, served or refused,
 * with its status and error code, latency, time to first token, tokens and exact cost; filtered by
 * project, model, status, surface and IST days; "Load more" for older ones; and a detail dialog
 * (#/requests?request=<id>, so a request can be linked to) with every field.
 */
export function RequestsPage(props: PageProps) {
  const { organisationId } = props;
  const [form, setForm] = useState<RequestFilterForm>(emptyRequestFilters);
  const [applied, setApplied] = useState<Record<string, string>>({});
  const [formProblem, setFormProblem] = useState<string | undefined>(undefined);
  const [records, setRecords] = useState<RequestRecord[] | undefined>(undefined);
  const [nextCursor, setNextCursor] = useState<string | null>(null);
  const [loadingMore, setLoadingMore] = useState(false);
  const [error, setError] = useState<unknown>(undefined);
  const [projects, setProjects] = useState<Project[]>([]);
  const [models, setModels] = useState<string[]>([]);
  /** Bumped by "Refresh": reloads the first page with the same filters. */
  const [refreshes, setRefreshes] = useState(0);

  useEffect(() => {
    if (organisationId === undefined) return;
    listAll<Project>(`/admin/v1/organisations/${organisationId}/projects`).then(setProjects, setError);
    api.get<OrganisationModels>(`/admin/v1/organisations/${organisationId}`)
      .then((organisation) => setModels(organisation.allowed_gateway_models), () => setModels([]));
  }, [organisationId]);

  const path = organisationId === undefined ? undefined : `/admin/v1/organisations/${organisationId}/requests`;

  const loadFirst = useCallback(async () => {
    if (path === undefined) return;
    try {
      const page = await api.get<RequestPage>(path, { ...applied, limit: pageSize });
      setRecords(page.data);
      setNextCursor(page.next_cursor);
      setError(undefined);
    } catch (caught) {
      setError(caught);
    }
  }, [path, applied, refreshes]);

  useEffect(() => {
    void loadFirst();
  }, [loadFirst]);

  async function loadMore() {
    if (path === undefined || nextCursor === null) return;
    setLoadingMore(true);
    try {
      const page = await api.get<RequestPage>(path, { ...applied, limit: pageSize, cursor: nextCursor });
      setRecords([...(records ?? []), ...page.data]);
      setNextCursor(page.next_cursor);
      setError(undefined);
    } catch (caught) {
      setError(caught);
    } finally {
      setLoadingMore(false);
    }
  }

  function apply(event: Event) {
    event.preventDefault();
    const result = requestFilterQuery(form);
    if (!result.ok) {
      setFormProblem(result.problem);
      return;
    }
    setFormProblem(undefined);
    setRecords(undefined);
    setApplied(result.query);
  }

  function clear() {
    setForm(emptyRequestFilters);
    setFormProblem(undefined);
    setRecords(undefined);
    setApplied({});
  }

  if (organisationId === undefined) return <section><h1>Requests</h1><p>Choose an organisation.</p></section>;
  const projectName = new Map(projects.map((project) => [project.id, project.name]));
  const filtered = Object.keys(applied).length > 0;
  const detailId = props.params.request;

  return (
    <section>
      <h1>Requests</h1>
      <p class="hint">Every request your API keys made, newest first: refused ones too, with the status and error code the caller got.</p>
      <RequestFilters form={form} onForm={setForm} projects={projects} models={models} problem={formProblem} onApply={apply} onClear={clear} />
      <FormError error={error} />
      <div class="actions">
        <button type="button" class="secondary" onClick={() => setRefreshes(refreshes + 1)}>Refresh</button>
      </div>

      {records === undefined ? (error === undefined ? <p role="status">Loading…</p> : null) : records.length === 0 ? (
        filtered ? <p class="empty-note">No request matches these filters.</p> : (
          <div class="empty-note">
            <p><strong>No requests yet.</strong></p>
            <p>
              Make a request to the gateway with an API key from <a href="#/projects">Projects</a> (for example a chat completion);
              it appears here a few seconds after it finishes, whether it succeeded or was refused.
            </p>
          </div>
        )
      ) : (
        <>
          <RequestTable records={records} projectName={projectName} filtered={filtered} />
          <div class="actions">
            {nextCursor === null ? <span class="small">That is every request{filtered ? ' matching the filters' : ''}.</span> : (
              <button type="button" class="secondary" onClick={() => void loadMore()} disabled={loadingMore} aria-busy={loadingMore}>
                {loadingMore ? 'Loading…' : 'Load more'}
              </button>
            )}
          </div>
        </>
      )}

      {detailId === undefined ? null : (
        <RequestDetail organisationId={organisationId} requestId={detailId} projectName={projectName}
          onClose={() => navigate('/requests', { replace: true })} />
      )}
    </section>
  );
}

/** The filter form: project, model, status, surface and IST day range. */
function RequestFilters(props: {
  form: RequestFilterForm;
  onForm: (form: RequestFilterForm) => void;
  projects: Project[];
  models: string[];
  problem: string | undefined;
  onApply: (event: Event) => void;
  onClear: () => void;
}) {
  const { form, onForm: setForm } = props;
  const today = istDayOf(Date.now());
  // The model chosen stays listed even if the organisation may no longer call it.
  const models = form.model === '' || props.models.includes(form.model) ? props.models : [...props.models, form.model];
  return (
    <form class="card inline-form request-filters" onSubmit={props.onApply} aria-labelledby="request-filters-title">
      <h2 id="request-filters-title">Filters</h2>
      <Field id="requests-project" label="Project">
        <select id="requests-project" value={form.projectId} onChange={(event) => setForm({ ...form, projectId: event.currentTarget.value })}>
          <option value="">All projects</option>
          {props.projects.map((project) => <option key={project.id} value={project.id}>{project.name}</option>)}
        </select>
      </Field>
      <Field id="requests-model" label="Model">
        <select id="requests-model" value={form.model} onChange={(event) => setForm({ ...form, model: event.currentTarget.value })}>
          <option value="">All models</option>
          {models.map((model) => <option key={model} value={model}>{model}</option>)}
        </select>
      </Field>
      <Field id="requests-status" label="Status">
        <select id="requests-status" value={form.status} onChange={(event) => setForm({ ...form, status: event.currentTarget.value as StatusChoice })}>
          <option value="all">All</option>
          <option value="success">Success (2xx)</option>
          <option value="4xx">Refused (4xx)</option>
          <option value="5xx">Failed (5xx)</option>
          <option value="exact">Exact status…</option>
        </select>
      </Field>
      {form.status !== 'exact' ? null : (
        <Field id="requests-exact-status" label="HTTP status">
          <input id="requests-exact-status" type="text" inputMode="numeric" maxLength={3} placeholder="402" value={form.exactStatus}
            onInput={(event) => setForm({ ...form, exactStatus: event.currentTarget.value })} />
        </Field>
      )}
      <Field id="requests-surface" label="API">
        <select id="requests-surface" value={form.surface} onChange={(event) => setForm({ ...form, surface: event.currentTarget.value })}>
          <option value="">All APIs</option>
          {Object.entries(surfaceLabels).map(([value, label]) => <option key={value} value={value}>{label}</option>)}
        </select>
      </Field>
      <Field id="requests-from" label="From (IST day)">
        <input id="requests-from" type="date" value={form.fromDay} max={today} onInput={(event) => setForm({ ...form, fromDay: event.currentTarget.value })} />
      </Field>
      <Field id="requests-to" label="To (IST day, included)">
        <input id="requests-to" type="date" value={form.toDay} max={today} onInput={(event) => setForm({ ...form, toDay: event.currentTarget.value })} />
      </Field>
      {props.problem === undefined ? null : <p class="form-error" role="alert">{props.problem}</p>}
      <div class="actions">
        <button type="button" class="secondary" onClick={() => setForm({ ...form, fromDay: today, toDay: today })}>Today</button>
        <button type="button" class="secondary" onClick={() => setForm({ ...form, fromDay: istDayBefore(Date.now(), 6), toDay: today })}>Last 7 days</button>
        <button type="button" class="secondary" onClick={props.onClear}>Clear</button>
        <button type="submit" class="primary">Apply filters</button>
      </div>
    </form>
  );
}

/** A request's start in IST to the millisecond, the day and the time each kept on one line (the text reads as one). */
function TimeCell(props: { iso: string }) {
  const text = istMillisecond(props.iso);
  const comma = text.indexOf(', ');
  if (comma < 0) return <>{text}</>;
  return <><span class="keep-line">{text.slice(0, comma + 1)}</span> <span class="keep-line">{text.slice(comma + 2)}</span></>;
}

/** A request's status as a pill (failed ones marked in words as well as colour) and its error code. */
function StatusCell(props: { record: RequestRecord }) {
  const { record } = props;
  const failed = requestFailed(record);
  return (
    <>
      <span class={failed ? 'pill pill-failed' : 'pill pill-active'}>{record.status}{failed ? ' failed' : ''}</span>
      {record.error_code === null ? null : <div class="mono small">{record.error_code}</div>}
    </>
  );
}

/** A request's tokens: input and output, then each token class's tokens when its usage was itemised. */
function TokensCell(props: { record: RequestRecord }) {
  const { record } = props;
  return (
    <>
      {formatCount(record.input_tokens)} in / {formatCount(record.output_tokens)} out
      {record.cost_by_class === undefined ? null : Object.entries(record.cost_by_class).map(([tokenClass, figures]) => (
        <div key={tokenClass} class="small">{tokenClassLabel(tokenClass)} {formatCount(figures.tokens)}</div>
      ))}
    </>
  );
}

/** The page's requests as a table that scrolls sideways inside its own box on narrow screens; failed rows stand out. */
function RequestTable(props: { records: RequestRecord[]; projectName: Map<string, string>; filtered: boolean }) {
  const caption = props.filtered ? 'Requests matching the filters, newest first' : 'Requests, newest first';
  return (
    <>
      <div class="table-scroll request-scroll" role="region" aria-label={caption} tabIndex={0}>
        <table class="request-table">
          <caption class="visually-hidden">{caption}</caption>
          <thead>
            <tr>
              <th scope="col">Time (IST)</th>
              <th scope="col">Project</th>
              <th scope="col">API<span class="visually-hidden"> and stream</span></th>
              <th scope="col">Model</th>
              <th scope="col">Status</th>
              <th scope="col" class="numeric">Latency</th>
              <th scope="col" class="numeric">First token</th>
              <th scope="col" class="numeric">Tokens</th>
              <th scope="col" class="numeric">Cost</th>
              <th scope="col"><span class="visually-hidden">Details</span></th>
            </tr>
          </thead>
          <tbody>
            {props.records.map((record) => (
              <tr key={record.request_id} class={requestFailed(record) ? 'request-failed' : undefined} data-request-id={record.request_id}>
                <td><TimeCell iso={record.started_at} /></td>
                <td>{props.projectName.get(record.project_id) ?? <span class="mono small">{record.project_id}</span>}</td>
                <td>
                  {surfaceLabels[record.surface] ?? record.surface}
                  {record.stream ? <div><span class="pill">stream</span></div> : null}
                </td>
                <td class="nowrap"><span class="mono">{record.model === '' ? '—' : record.model}</span></td>
                <td><StatusCell record={record} /></td>
                <td class="numeric">{durationText(record.latency_ms)}</td>
                <td class="numeric">{durationText(record.time_to_first_token_ms)}</td>
                <td class="numeric"><TokensCell record={record} /></td>
                <td class="numeric">{exactRupees(record.cost_micros)}</td>
                <td>
                  <a href={`#/requests?request=${encodeURIComponent(record.request_id)}`}>
                    Details<span class="visually-hidden"> of request {record.request_id}</span>
                  </a>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </>
  );
}

/** Every field of one request, read from GET …/requests/{request_id}, in a dialog. */
function RequestDetail(props: { organisationId: string; requestId: string; projectName: Map<string, string>; onClose: () => void }) {
  const [record, setRecord] = useState<RequestRecord | undefined>(undefined);
  const [error, setError] = useState<unknown>(undefined);

  useEffect(() => {
    setRecord(undefined);
    setError(undefined);
    api.get<RequestRecord>(`/admin/v1/organisations/${props.organisationId}/requests/${encodeURIComponent(props.requestId)}`)
      .then(setRecord, setError);
  }, [props.organisationId, props.requestId]);

  return (
    <Dialog open title="Request details" onClose={props.onClose}>
      <FormError error={error} />
      {record === undefined ? (error === undefined ? <p role="status">Loading…</p> : null) : (
        <>
          <dl class="request-facts">
            <dt>Request id</dt>
            <dd><span class="mono">{record.request_id}</span> <CopyButton text={record.request_id} label="Copy request id" /></dd>
            <dt>Time</dt>
            <dd>{istMillisecond(record.started_at)} <span class="small mono">({record.started_at})</span></dd>
            <dt>Project</dt>
            <dd>{props.projectName.get(record.project_id) ?? ''} <span class="mono small">{record.project_id}</span></dd>
            <dt>API</dt>
            <dd>{surfaceLabels[record.surface] ?? record.surface}</dd>
            <dt>Model</dt>
            <dd class="mono">{record.model === '' ? '— (none named)' : record.model}</dd>
            <dt>Status</dt>
            <dd><StatusCell record={record} /></dd>
            <dt>Error code</dt>
            <dd class="mono">{record.error_code ?? '—'}</dd>
            <dt>Stream</dt>
            <dd>{record.stream ? 'Yes' : 'No'}</dd>
            <dt>Latency</dt>
            <dd>{durationText(record.latency_ms)}</dd>
            <dt>Time to first token</dt>
            <dd>{durationText(record.time_to_first_token_ms)}</dd>
            <dt>Input tokens</dt>
            <dd>{formatCount(record.input_tokens)}</dd>
            <dt>Output tokens</dt>
            <dd>{formatCount(record.output_tokens)}</dd>
            <dt>Cost</dt>
            <dd>{exactRupees(record.cost_micros)}</dd>
          </dl>
          {record.cost_by_class === undefined ? <p class="hint">No token classes: a plain usage (input and output tokens at the model's prices), or none.</p> : (
            <div class="table-scroll" role="region" aria-label="Tokens and cost by token class" tabIndex={0}>
              <table>
                <caption>Tokens and cost by token class</caption>
                <thead><tr><th scope="col">Class</th><th scope="col" class="numeric">Tokens</th><th scope="col" class="numeric">Cost</th></tr></thead>
                <tbody>
                  {Object.entries(record.cost_by_class).map(([tokenClass, figures]) => (
                    <tr key={tokenClass}>
                      <td>{tokenClassLabel(tokenClass)}</td>
                      <td class="numeric">{formatCount(figures.tokens)}</td>
                      <td class="numeric">{exactRupees(figures.cost_micros)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
          <p class="hint">The cost is what the request's usage was billed; the usage records (Usage) are the money.</p>
        </>
      )}
      <div class="actions">
        <button type="button" class="primary" onClick={props.onClose}>Close</button>
      </div>
    </Dialog>
  );
}
