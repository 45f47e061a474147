import { useCallback, useEffect, useState } from 'preact/hooks';
import { ApiError, api } from '../../api.ts';
import type { Project, ProjectBudget, ProjectWithSecret } from '../../api-types.ts';
import { ConfirmButton } from '../../components/confirm-button.tsx';
import { Dialog } from '../../components/dialog.tsx';
import { Field, FormError, describedBy, fieldError } from '../../components/field.tsx';
import { SecretOnce } from '../../components/secret-once.tsx';
import { Table } from '../../components/table.tsx';
import { useAction } from '../../components/use-action.ts';
import { formatIst, formatRupees, rupeesToMicros } from '../../format.ts';
import { listAll } from '../../lists.ts';
import { allows, type PageProps } from '../../page-props.ts';

/** A secret to show once, and what it belongs to. */
interface ShownSecret {
  title: string;
  secret: string;
  warning: string;
}

/** Projects of the organisation: create, rename, disable/enable, budgets, key rotation (developers and owners; viewers read). */
export function ProjectsPage(props: PageProps) {
  const { organisationId } = props;
  const can = (operationId: string) => allows(props.allowed, operationId);
  const canChange = can('updateProject') || can('setProjectBudget') || can('rotateProjectApiKey');
  const [projects, setProjects] = useState<Project[] | undefined>(undefined);
  const [budgets, setBudgets] = useState<Map<string, ProjectBudget>>(new Map());
  const [error, setError] = useState<unknown>(undefined);
  const [shown, setShown] = useState<ShownSecret | undefined>(undefined);
  const [renaming, setRenaming] = useState<Project | undefined>(undefined);
  const [budgeting, setBudgeting] = useState<Project | undefined>(undefined);

  const reload = useCallback(async () => {
    if (organisationId === undefined) return;
    try {
      const list = await listAll<Project>(`/admin/v1/organisations/${organisationId}/projects`);
      const entries = await Promise.all(list.map(async (project) =>
        [project.id, await api.get<ProjectBudget>(`/admin/v1/projects/${project.id}/budget`)] as const));
      setProjects(list);
      setBudgets(new Map(entries));
      setError(undefined);
    } catch (caught) {
      setError(caught);
    }
  }, [organisationId]);

  useEffect(() => {
    void reload();
  }, [reload]);

  async function setStatus(project: Project, status: Project['status']) {
    await api.send<Project>('PATCH', `/admin/v1/projects/${project.id}`, { status });
    await reload();
  }

  async function rotate(project: Project) {
    const answer = await api.send<ProjectWithSecret>('POST', `/admin/v1/projects/${project.id}/api-key-rotations`);
    setShown({
      title: `New API key for ${project.name}`,
      secret: answer.api_key,
      warning: 'this is the only time the new key is shown, and the old key stopped working: update every client that used it.',
    });
    await reload();
  }

  if (organisationId === undefined) return <section><h1>Projects</h1><p>Choose an organisation.</p></section>;
  return (
    <section>
      <h1>Projects</h1>
      <FormError error={error} />
      {can('createProject') ? <CreateProject organisationId={organisationId} onCreated={(answer) => {
        setShown({
          title: `API key for ${answer.project.name}`,
          secret: answer.api_key,
          warning: 'this is the only time the key is shown; only its hash is stored.',
        });
        void reload();
      }} /> : <p class="hint">You can see the projects; a developer or owner can change them.</p>}

      {shown === undefined ? null : (
        <div class="card" aria-live="polite">
          <h2>{shown.title}</h2>
          <SecretOnce label="API key" secret={shown.secret} warning={shown.warning} />
          <div class="actions"><button type="button" class="secondary" onClick={() => setShown(undefined)}>I have stored it</button></div>
        </div>
      )}

      {projects === undefined ? (error === undefined ? <p role="status">Loading…</p> : null) : (
        <Table
          caption="Projects"
          rows={projects}
          rowKey={(project) => project.id}
          empty={can('createProject') ? 'No projects yet — create one above to get an API key.' : 'No projects yet — a developer or owner creates one to get an API key.'}
          columns={[
            { header: 'Name', cell: (project) => <>{project.name}<div class="mono small">{project.id}</div></> },
            { header: 'Status', cell: (project) => <span class={`pill pill-${project.status}`}>{project.status}</span> },
            { header: 'API key', cell: (project) => project.api_key === null ? '—' : <span class="mono">{project.api_key.hint}</span> },
            { header: 'Monthly budget', cell: (project) => <BudgetSummary budget={budgets.get(project.id)} /> },
            { header: 'Created (IST)', cell: (project) => formatIst(project.created_at) },
            ...(canChange ? [{
              header: 'Actions',
              cell: (project: Project) => (
                <div class="row-actions">
                  {can('updateProject') ? <button type="button" class="secondary" onClick={() => setRenaming(project)} aria-label={`Rename ${project.name}`}>Rename</button> : null}
                  {can('setProjectBudget') ? <button type="button" class="secondary" onClick={() => setBudgeting(project)} aria-label={`Budget of ${project.name}`}>Budget</button> : null}
                  {!can('updateProject') ? null : project.status === 'active' ? (
                    <ConfirmButton label="Disable" title={`Disable ${project.name}?`} confirmLabel="Disable" danger onConfirm={() => setStatus(project, 'disabled')}>
                      <p>Every request with this project's key is refused (401) until you enable it again.</p>
                    </ConfirmButton>
                  ) : (
                    <ConfirmButton label="Enable" title={`Enable ${project.name}?`} confirmLabel="Enable" onConfirm={() => setStatus(project, 'active')}>
                      <p>The project's key works again.</p>
                    </ConfirmButton>
                  )}
                  {can('rotateProjectApiKey') ? (
                    <ConfirmButton label="Rotate key" title={`Rotate the API key of ${project.name}?`} confirmLabel="Rotate key" danger onConfirm={() => rotate(project)}>
                      <p>A new key is issued and <strong>the old key stops working at once</strong> on every gateway. The new key is shown once.</p>
                    </ConfirmButton>
                  ) : null}
                </div>
              ),
            }] : []),
          ]}
        />
      )}

      {renaming === undefined ? null : (
        <RenameDialog project={renaming} onClose={() => setRenaming(undefined)} onDone={() => { setRenaming(undefined); void reload(); }} />
      )}
      {budgeting === undefined ? null : (
        <BudgetDialog project={budgeting} budget={budgets.get(budgeting.id)} onClose={() => setBudgeting(undefined)}
          onDone={() => { setBudgeting(undefined); void reload(); }} />
      )}
    </section>
  );
}

/** A project's budget in a table cell: cap, spend this month and soft-alert threshold. */
function BudgetSummary(props: { budget: ProjectBudget | undefined }) {
  const { budget } = props;
  if (budget === undefined) return <>—</>;
  if (budget.monthly_cap_micros === null) return <>No budget · spent {formatRupees(budget.spent_micros)}</>;
  const stopped = BigInt(budget.spent_micros) >= BigInt(budget.monthly_cap_micros);
  return (
    <>
      {formatRupees(budget.spent_micros)} of {formatRupees(budget.monthly_cap_micros)}
      <div class="small">alert at {budget.soft_alert_percent}%{budget.soft_alert_raised ? ' · alert raised' : ''}{stopped ? ' · hard stop' : ''}</div>
    </>
  );
}

/** The form creating a project; its key's secret goes to `onCreated`, to be shown once. */
function CreateProject(props: { organisationId: string; onCreated(answer: ProjectWithSecret): void }) {
  const [name, setName] = useState('');
  const { busy, error, run } = useAction();
  const nameError = fieldError(error, 'name');

  async function submit(event: Event) {
    event.preventDefault();
    await run(async () => {
      props.onCreated(await api.send<ProjectWithSecret>('POST', `/admin/v1/organisations/${props.organisationId}/projects`, { name }));
      setName('');
    });
  }

  return (
    <form class="card inline-form" onSubmit={(event) => void submit(event)}>
      <h2>New project</h2>
      <Field id="new-project-name" label="Project name" error={nameError}>
        <input id="new-project-name" type="text" required maxLength={200} value={name}
          aria-describedby={describedBy('new-project-name', { error: nameError })}
          onInput={(event) => setName(event.currentTarget.value)} />
      </Field>
      <FormError error={error} shownParams={['name']} />
      <div class="actions"><button type="submit" class="primary" disabled={busy} aria-busy={busy}>Create project</button></div>
    </form>
  );
}

/** Renames a project; the dialog closes once the API accepts the name. */
function RenameDialog(props: { project: Project; onClose(): void; onDone(): void }) {
  const [name, setName] = useState(props.project.name);
  const { busy, error, run } = useAction();
  const nameError = fieldError(error, 'name');

  async function submit(event: Event) {
    event.preventDefault();
    await run(async () => {
      await api.send<Project>('PATCH', `/admin/v1/projects/${props.project.id}`, { name });
      props.onDone();
    }, { staysBusyOnSuccess: true });
  }

  return (
    <Dialog open title={`Rename ${props.project.name}`} onClose={props.onClose}>
      <form onSubmit={(event) => void submit(event)}>
        <Field id="rename-project" label="New name" error={nameError}>
          <input id="rename-project" type="text" required maxLength={200} value={name} autoFocus
            aria-describedby={describedBy('rename-project', { error: nameError })}
            onInput={(event) => setName(event.currentTarget.value)} />
        </Field>
        <FormError error={error} shownParams={['name']} />
        <div class="actions">
          <button type="button" class="secondary" onClick={props.onClose}>Cancel</button>
          <button type="submit" class="primary" disabled={busy}>Rename</button>
        </div>
      </form>
    </Dialog>
  );
}

/** Rupees of µ₹ as the budget field shows them: exact, without grouping or ₹ ("1500.5"). */
function plainRupees(micros: string): string {
  const value = BigInt(micros);
  const whole = (value / 1_000_000n).toString();
  const fraction = (value % 1_000_000n).toString().padStart(6, '0').replace(/0+$/, '');
  return fraction === '' ? whole : `${whole}.${fraction}`;
}

/** Sets (in ₹, sent as exact µ₹) or clears a project's monthly budget and its soft-alert percentage. */
function BudgetDialog(props: { project: Project; budget: ProjectBudget | undefined; onClose(): void; onDone(): void }) {
  const cap = props.budget?.monthly_cap_micros ?? null;
  const [rupees, setRupees] = useState(cap === null ? '' : plainRupees(cap));
  const [percent, setPercent] = useState(String(props.budget?.soft_alert_percent ?? 80));
  const { busy, error, setError, run } = useAction();
  const capError = fieldError(error, 'monthly_cap_micros');
  const percentError = fieldError(error, 'soft_alert_percent');

  /** Sends `change`, then closes the dialog. */
  async function send(change: () => Promise<unknown>) {
    await run(async () => {
      await change();
      props.onDone();
    }, { staysBusyOnSuccess: true });
  }

  function save(event: Event) {
    event.preventDefault();
    let micros: string;
    try {
      micros = rupeesToMicros(rupees);
    } catch (caught) {
      setError(new ApiError((caught as Error).message, 400, 'invalid_request', 'monthly_cap_micros'));
      return;
    }
    const softAlertPercent = Number(percent);
    if (!Number.isInteger(softAlertPercent) || softAlertPercent < 1 || softAlertPercent > 100) {
      setError(new ApiError('Enter a whole percentage from 1 to 100.', 400, 'invalid_request', 'soft_alert_percent'));
      return;
    }
    void send(() => api.send('PUT', `/admin/v1/projects/${props.project.id}/budget`, { monthly_cap_micros: micros, soft_alert_percent: softAlertPercent }));
  }

  return (
    <Dialog open title={`Monthly budget of ${props.project.name}`} onClose={props.onClose}>
      <form onSubmit={save}>
        <p class="hint">Requests that would take this month's spend (Asia/Kolkata calendar month) past the cap are refused (402).</p>
        <Field id="budget-cap" label="Monthly cap (₹)" hint="For example 25,000 or 1,00,000.50" error={capError}>
          <input id="budget-cap" type="text" inputMode="decimal" required value={rupees} autoFocus
            aria-describedby={describedBy('budget-cap', { hint: true, error: capError })}
            onInput={(event) => setRupees(event.currentTarget.value)} />
        </Field>
        <Field id="budget-percent" label="Soft alert at (% of the cap)" error={percentError}>
          <input id="budget-percent" type="number" min={1} max={100} step={1} required value={percent}
            aria-describedby={describedBy('budget-percent', { error: percentError })}
            onInput={(event) => setPercent(event.currentTarget.value)} />
        </Field>
        <FormError error={error} shownParams={['monthly_cap_micros', 'soft_alert_percent']} />
        <div class="actions">
          {cap === null ? null : (
            <button type="button" class="danger" disabled={busy}
              onClick={() => void send(() => api.send('DELETE', `/admin/v1/projects/${props.project.id}/budget`))}>Clear budget</button>
          )}
          <button type="button" class="secondary" onClick={props.onClose}>Cancel</button>
          <button type="submit" class="primary" disabled={busy}>Save budget</button>
        </div>
      </form>
    </Dialog>
  );
}
