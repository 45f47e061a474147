// Model aliases (docs/model-aliases.md): the platform's, on the platform area's "Model aliases"
// tab, and an organisation's own, on its "Model aliases" page. One editor serves both.
import { useCallback, useEffect, useState } from 'preact/hooks';
import { api } from '../../api.ts';
import { ConfirmButton } from '../../components/confirm-button.tsx';
import { Field, FormError, describedBy, fieldError } from '../../components/field.tsx';
import { Table } from '../../components/table.tsx';
import { useAction } from '../../components/use-action.ts';
import { formatIst } from '../../format.ts';
import { allows, type PageProps } from '../../page-props.ts';

/** One alias as the admin API shows it. */
interface ModelAlias {
  alias: string;
  gateway_model: string;
  created_at: string;
  updated_at: string;
}

/** The path of one alias under a list's path: each segment encoded, the slashes of a name kept (the API takes either). */
function aliasPath(basePath: string, alias: string): string {
  return `${basePath}/${alias.split('/').map(encodeURIComponent).join('/')}`;
}

/** The fields the editor's form shows the API's errors beside. */
const formParams = ['alias', 'gateway_model'];

/**
 * The aliases under `basePath` in a table, and, when `canEdit`, a form that sets one (a new name
 * creates it, an existing one is retargeted) and a Delete button on each row. `models` are the
 * slugs the form offers as targets: undefined while they load, null when they could not be read
 * (then the form takes a slug typed in).
 */
function ModelAliasEditor(props: { basePath: string; caption: string; empty: string; canEdit: boolean; models: string[] | null | undefined }) {
  const { basePath } = props;
  const [aliases, setAliases] = useState<ModelAlias[] | undefined>(undefined);
  const [loadError, setLoadError] = useState<unknown>(undefined);
  const [form, setForm] = useState({ alias: '', gatewayModel: '' });
  const { busy, error, run } = useAction();
  const problem = (param: string) => fieldError(error, param);

  const reload = useCallback(async () => {
    try {
      setAliases((await api.get<{ data: ModelAlias[] }>(basePath)).data);
      setLoadError(undefined);
    } catch (caught) {
      setLoadError(caught);
    }
  }, [basePath]);
  useEffect(() => { void reload(); }, [reload]);

  // A list's first model until the person picks one (a select shows it chosen).
  const target = form.gatewayModel === '' && Array.isArray(props.models) ? props.models[0] ?? '' : form.gatewayModel;

  async function submit(event: Event) {
    event.preventDefault();
    await run(async () => {
      await api.send('PUT', aliasPath(basePath, form.alias.trim()), { gateway_model: target });
      setForm({ alias: '', gatewayModel: target });
      await reload();
    });
  }

  return (
    <>
      <FormError error={loadError} />
      {aliases === undefined ? (loadError === undefined ? <p role="status">Loading…</p> : null) : (
        <Table
          caption={props.caption}
          rows={aliases}
          rowKey={(alias) => alias.alias}
          empty={props.empty}
          columns={[
            { header: 'Alias (what clients send)', cell: (alias) => <span class="mono">{alias.alias}</span> },
            { header: 'Gateway model', cell: (alias) => <span class="mono">{alias.gateway_model}</span> },
            { header: 'Changed (IST)', cell: (alias) => formatIst(alias.updated_at) },
            ...(props.canEdit ? [{
              header: 'Actions', cell: (alias: ModelAlias) => (
                <ConfirmButton label="Delete" title={`Delete the alias ${alias.alias}?`} confirmLabel="Delete alias" danger
                  onConfirm={async () => { await api.send('DELETE', aliasPath(basePath, alias.alias)); await reload(); }}>
                  Requests naming <span class="mono">{alias.alias}</span> will no longer reach <span class="mono">{alias.gateway_model}</span>.
                </ConfirmButton>
              ),
            }] : []),
          ]}
        />
      )}
      {props.canEdit ? (
        <form class="card inline-form" aria-label="Set an alias" onSubmit={(event) => void submit(event)}>
          <Field id="alias-name" label="Alias" hint="The model name a client sends, e.g. claude-sonnet-5; an existing alias is retargeted" error={problem('alias')}>
            <input id="alias-name" type="text" required maxLength={128} autoComplete="off" value={form.alias}
              aria-describedby={describedBy('alias-name', { hint: true, error: problem('alias') })}
              onInput={(event) => setForm({ ...form, alias: event.currentTarget.value })} />
          </Field>
          <Field id="alias-target" label="Gateway model" error={problem('gateway_model')}>
            {props.models === null ? (
              <input id="alias-target" type="text" required autoComplete="off" value={form.gatewayModel}
                aria-describedby={describedBy('alias-target', { error: problem('gateway_model') })}
                onInput={(event) => setForm({ ...form, gatewayModel: event.currentTarget.value })} />
            ) : (
              <select id="alias-target" required value={target} disabled={props.models === undefined}
                aria-describedby={describedBy('alias-target', { error: problem('gateway_model') })}
                onChange={(event) => setForm({ ...form, gatewayModel: event.currentTarget.value })}>
                {props.models === undefined
                  ? <option value="">Loading models…</option>
                  : props.models.map((slug) => <option key={slug} value={slug}>{slug}</option>)}
              </select>
            )}
          </Field>
          <FormError error={error} shownParams={formParams} />
          <div class="actions">
            <button type="submit" class="primary" disabled={busy || props.models === undefined} aria-busy={busy}>Save alias</button>
          </div>
        </form>
      ) : null}
    </>
  );
}

/** The platform area's "Model aliases" tab: the platform-wide aliases, edited by platform admins. */
export function PlatformModelAliases() {
  const [models, setModels] = useState<string[] | null | undefined>(undefined);
  useEffect(() => {
    // The form's targets; a failed read leaves a text field instead of the list.
    api.get<{ data: Array<{ slug: string }> }>('/admin/v1/gateway-models', { limit: '100' })
      .then((answer) => setModels(answer.data.map((model) => model.slug)), () => setModels(null));
  }, []);
  return (
    <>
      <p class="hint">A client may send an alias as <code>model</code> (an agent's built-in model name, say); it reaches the gateway model beside it. Every organisation gets these unless it sets its own of the same name; a gateway model's slug always means that model.</p>
      <ModelAliasEditor basePath="/admin/v1/model-aliases" caption="Platform model aliases" empty="No platform aliases." canEdit models={models} />
    </>
  );
}

/** An organisation's "Model aliases" page: its own aliases (owners edit them) and the platform's it gets otherwise. */
export function ModelAliasesPage(props: PageProps) {
  const organisationId = props.organisationId;
  const [allowed, setAllowed] = useState<string[] | null | undefined>(undefined);
  useEffect(() => {
    if (organisationId === undefined) return;
    api.get<{ allowed_gateway_models: string[] }>(`/admin/v1/organisations/${organisationId}`)
      .then((organisation) => setAllowed(organisation.allowed_gateway_models), () => setAllowed(null));
  }, [organisationId]);
  if (organisationId === undefined) return <p>Choose an organisation first.</p>;
  return (
    <section>
      <h1>Model aliases</h1>
      <p class="hint">Your aliases let your clients send their own model names (Claude Code's or Codex's built-in names, say) and reach one of your gateway models. They override the platform's aliases of the same name; answers and usage show the gateway model.</p>
      <ModelAliasEditor basePath={`/admin/v1/organisations/${organisationId}/model-aliases`} caption="Your organisation's model aliases"
        empty="No aliases of your own — add one to call a model by a name of yours." canEdit={allows(props.allowed, 'putOrganisationModelAlias')} models={allowed} />
      <h2>Platform aliases</h2>
      <ModelAliasEditor basePath="/admin/v1/model-aliases" caption="Platform model aliases (apply unless you set your own)" empty="No platform aliases."
        canEdit={false} models={null} />
    </section>
  );
}
