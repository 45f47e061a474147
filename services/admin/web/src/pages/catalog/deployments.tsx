import { useCallback, useEffect, useState } from 'preact/hooks';
import { ApiError, api } from '../../api.ts';
import type { ListPage } from '../../api-types.ts';
import { ConfirmButton } from '../../components/confirm-button.tsx';
import { Dialog } from '../../components/dialog.tsx';
import { Field, FormError, describedBy, fieldError } from '../../components/field.tsx';
import { Table } from '../../components/table.tsx';
import { useAction } from '../../components/use-action.ts';
import { exactRupees } from '../common/rupee-text.ts';
import { createDeploymentBody, deploymentFormOf, updateDeploymentBody, type DeploymentForm, type DeploymentJson } from './deployment-form.ts';
import { providerKinds, type GatewayModelJson } from './model-form.ts';
import { UpstreamAccessFields } from './upstream-access-fields.tsx';

/** Every further deployment of a gateway model, following the cursor pages (100 a page). */
async function listDeployments(slug: string): Promise<DeploymentJson[]> {
  const found: DeploymentJson[] = [];
  let after: string | undefined;
  for (;;) {
    const page = await api.get<ListPage<DeploymentJson>>('/admin/v1/upstream-deployments', { gateway_model: slug, limit: 100, after });
    found.push(...page.data);
    if (!page.has_more || page.data.length === 0) return found;
    after = page.data.at(-1)!.id;
  }
}

/** One line of the deployments table: the model's own upstream ("primary") or a further deployment. */
type DeploymentLine = { kind: 'primary'; model: GatewayModelJson } | { kind: 'further'; deployment: DeploymentJson };

/**
 * A gateway model's upstream deployments (docs/proxy.md "Routing"): its own upstream as
 * "primary" (edited with the model) and the further ones, which can be added, edited and
 * deleted here. Credentials are write-only. Names never reach customers.
 */
export function DeploymentsSection(props: { model: GatewayModelJson; onClose(): void }) {
  const { model } = props;
  const [deployments, setDeployments] = useState<DeploymentJson[] | undefined>(undefined);
  const [error, setError] = useState<unknown>(undefined);
  const [editing, setEditing] = useState<DeploymentJson | 'new' | undefined>(undefined);

  const reload = useCallback(async () => {
    try {
      setDeployments(await listDeployments(model.slug));
      setError(undefined);
    } catch (caught) {
      setError(caught);
    }
  }, [model.slug]);

  useEffect(() => {
    setDeployments(undefined);
    void reload();
  }, [reload]);

  const lines: DeploymentLine[] = [{ kind: 'primary', model }, ...(deployments ?? []).map((deployment) => ({ kind: 'further' as const, deployment }))];
  const titleId = `deployments-${model.slug}`;
  return (
    <section class="card" aria-labelledby={titleId}>
      <h2 id={titleId}>Deployments of <span class="mono">{model.slug}</span></h2>
      <p class="hint">
        Requests try the lowest priority first, shared by weight within a priority, and fail over to the next on a connect error,
        timeout, 429 or 5xx before anything reaches the client. The primary is the model's own upstream: edit it with the model.
      </p>
      <div class="actions">
        <button type="button" class="secondary" onClick={props.onClose}>Close</button>
        <button type="button" class="primary" onClick={() => setEditing('new')} disabled={deployments === undefined}>Add deployment</button>
      </div>
      <FormError error={error} />
      {deployments === undefined ? (error === undefined ? <p role="status">Loading…</p> : null) : (
        <Table
          caption={`Upstream deployments of ${model.slug}`}
          rows={lines}
          rowKey={(line) => (line.kind === 'primary' ? 'primary' : line.deployment.id)}
          empty="No deployments."
          columns={[
            { header: 'Name', cell: (line) => <span class="mono">{line.kind === 'primary' ? 'primary' : line.deployment.name}</span> },
            {
              header: 'Upstream', cell: (line) => {
                const upstream = line.kind === 'primary' ? line.model.upstream : line.deployment.upstream;
                return (
                  <>
                    {upstream.provider_kind} · <span class="mono">{upstream.model}</span>
                    <div class="mono small">{upstream.base_url}</div>
                    <div class="small">{upstream.has_api_key ? 'credential set' : 'no credential'}{upstream.allow_private_network ? ' · private network allowed' : ''}</div>
                  </>
                );
              },
            },
            { header: 'Priority', numeric: true, cell: (line) => String(line.kind === 'primary' ? line.model.upstream.priority : line.deployment.priority) },
            { header: 'Weight', numeric: true, cell: (line) => String(line.kind === 'primary' ? line.model.upstream.weight : line.deployment.weight) },
            {
              header: 'Provider cost', numeric: true, cell: (line) => {
                const costs = line.kind === 'primary' ? line.model : line.deployment;
                return <>in {exactRupees(costs.provider_input_cost_micros_per_mtok)}<div>out {exactRupees(costs.provider_output_cost_micros_per_mtok)}</div></>;
              },
            },
            {
              header: 'Actions', cell: (line) => (line.kind === 'primary' ? <span class="small">edit with the model</span> : (
                <div class="row-actions">
                  <button type="button" class="secondary" onClick={() => setEditing(line.deployment)} aria-label={`Edit ${line.deployment.name}`}>Edit</button>
                  <ConfirmButton label="Delete" title={`Delete the deployment ${line.deployment.name}?`} confirmLabel="Delete deployment" danger
                    onConfirm={async () => { await api.send('DELETE', `/admin/v1/upstream-deployments/${line.deployment.id}`); await reload(); }}>
                    Requests for {model.slug} stop going to {line.deployment.upstream.base_url}. Its usage stays in the analytics under its name.
                  </ConfirmButton>
                </div>
              )),
            },
          ]}
        />
      )}
      {editing === undefined ? null : (
        <DeploymentDialog model={model} deployment={editing === 'new' ? undefined : editing} onClose={() => setEditing(undefined)}
          onDone={() => { setEditing(undefined); void reload(); }} />
      )}
    </section>
  );
}

/** The API's names of the fields the deployment form shows errors beside. */
const formParams = [
  'name', 'priority', 'weight', 'upstream.provider_kind', 'upstream.base_url', 'upstream.model', 'upstream.api_key',
  'provider_input_cost_micros_per_mtok', 'provider_output_cost_micros_per_mtok',
];

/** Adds a deployment to `model` or edits one; the credential field is never filled in, and left empty keeps the stored credential. */
function DeploymentDialog(props: { model: GatewayModelJson; deployment: DeploymentJson | undefined; onClose(): void; onDone(): void }) {
  const { model, deployment } = props;
  const [form, setForm] = useState<DeploymentForm>(() => deploymentFormOf(deployment, model.upstream.provider_kind));
  const { busy, error, setError, run } = useAction();
  const errorOf = (param: string) => fieldError(error, param);

  async function submit(event: Event) {
    event.preventDefault();
    const built = deployment === undefined ? createDeploymentBody(model.slug, form) : updateDeploymentBody(deployment, form);
    if (!built.ok) {
      setError(new ApiError(built.problem, 400, 'invalid_request', built.param));
      return;
    }
    if (deployment !== undefined && Object.keys(built.body).length === 0) {
      props.onClose();
      return;
    }
    await run(async () => {
      if (deployment === undefined) await api.send('POST', '/admin/v1/upstream-deployments', built.body);
      else await api.send('PATCH', `/admin/v1/upstream-deployments/${deployment.id}`, built.body);
      props.onDone();
    }, { staysBusyOnSuccess: true });
  }

  /** One text field of the form, with its label, hint and the API's error for `param`. */
  function text(key: 'name' | 'baseUrl' | 'upstreamModel' | 'priority' | 'weight' | 'providerInputCost' | 'providerOutputCost', param: string, label: string,
    options: { hint?: string | undefined; inputMode?: 'decimal' | 'numeric' | 'url' } = {}) {
    const id = `deployment-${key}`;
    const fieldProblem = errorOf(param);
    return (
      <Field id={id} label={label} hint={options.hint} error={fieldProblem}>
        <input id={id} type="text" inputMode={options.inputMode} required value={form[key]} autoComplete="off"
          aria-describedby={describedBy(id, { hint: options.hint !== undefined, error: fieldProblem })}
          onInput={(event) => setForm({ ...form, [key]: event.currentTarget.value })} />
      </Field>
    );
  }

  const credentialId = 'deployment-apiKey';
  const credentialError = errorOf('upstream.api_key');
  return (
    <Dialog open title={deployment === undefined ? `New deployment of ${model.slug}` : `Edit ${deployment.name}`} onClose={props.onClose}>
      <form onSubmit={(event) => void submit(event)} aria-label="Deployment">
        {deployment === undefined ? text('name', 'name', 'Name', { hint: 'e.g. backup-eu; lowercase letters, digits and hyphens; never shown to customers; cannot change later' }) : null}
        <Field id="deployment-providerKind" label="Provider kind" hint={deployment === undefined ? undefined : 'Cannot change'} error={errorOf('upstream.provider_kind')}>
          <select id="deployment-providerKind" value={form.providerKind} disabled={deployment !== undefined}
            onChange={(event) => setForm({ ...form, providerKind: event.currentTarget.value })}>
            {providerKinds.map((kind) => <option key={kind} value={kind}>{kind}</option>)}
          </select>
        </Field>
        {text('baseUrl', 'upstream.base_url', 'Upstream base URL', { inputMode: 'url', hint: 'e.g. https://api.openai.com/v1' })}
        {text('upstreamModel', 'upstream.model', 'Upstream model name', { hint: "The provider's name for it; never shown to customers" })}
        <UpstreamAccessFields id={credentialId} stored={deployment?.upstream} values={form} error={credentialError}
          onChange={(change) => setForm({ ...form, ...change })} />
        {text('priority', 'priority', 'Priority', { inputMode: 'numeric', hint: 'Lower is tried first (0..100); the primary has ' + String(model.upstream.priority) })}
        {text('weight', 'weight', 'Weight', { inputMode: 'numeric', hint: 'Its share of requests within its priority (1..1000)' })}
        {text('providerInputCost', 'provider_input_cost_micros_per_mtok', 'Provider cost, input (₹ per million tokens)', { inputMode: 'decimal' })}
        {text('providerOutputCost', 'provider_output_cost_micros_per_mtok', 'Provider cost, output (₹ per million tokens)', { inputMode: 'decimal' })}
        <FormError error={error} shownParams={formParams} />
        <div class="actions">
          <button type="button" class="secondary" onClick={props.onClose}>Cancel</button>
          <button type="submit" class="primary" disabled={busy} aria-busy={busy}>{deployment === undefined ? 'Add deployment' : 'Save changes'}</button>
        </div>
      </form>
    </Dialog>
  );
}
