// The Quickstart page: where to send requests (the proxy's /v1 base URL), a key to send them with
// (a new project and its key, made here and shown once, or the $GATEWAY_API_KEY placeholder), and
// copy-ready samples for curl, the OpenAI and Anthropic SDKs, Claude Code and Codex CLI.
import { useEffect, useState } from 'preact/hooks';
import { api } from '../../api.ts';
import type { ProjectWithSecret } from '../../api-types.ts';
import { CopyButton } from '../../components/copy-button.tsx';
import { Field, FormError, describedBy, fieldError } from '../../components/field.tsx';
import { SecretOnce } from '../../components/secret-once.tsx';
import { useAction } from '../../components/use-action.ts';
import { allows, type PageProps } from '../../page-props.ts';
import { loadOrganisationModels, type OrganisationModels } from './organisation-models.ts';
import { apiKeyVariable, quickstartSnippets } from './snippets.ts';

/** What the samples show when the operator has not told the admin the proxy's address. */
const unknownBaseUrl = 'https://YOUR-GATEWAY/v1';

/** Creates a project and its key, shown once; the key then fills the samples. */
function CreateKey(props: { organisationId: string; onCreated(answer: ProjectWithSecret): void }) {
  const [name, setName] = useState('Quickstart');
  const { busy, error, run } = useAction();
  const nameError = fieldError(error, 'name');
  async function submit(event: Event) {
    event.preventDefault();
    await run(async () => {
      props.onCreated(await api.send<ProjectWithSecret>('POST', `/admin/v1/organisations/${props.organisationId}/projects`, { name }));
    });
  }
  return (
    <form class="inline-form" aria-label="Create a project and API key" onSubmit={(event) => void submit(event)}>
      <Field id="quickstart-project-name" label="Project name" hint="A project has one API key; its spend is reported and can be capped per project" error={nameError}>
        <input id="quickstart-project-name" type="text" required maxLength={200} value={name}
          aria-describedby={describedBy('quickstart-project-name', { hint: true, error: nameError })}
          onInput={(event) => setName(event.currentTarget.value)} />
      </Field>
      <FormError error={error} shownParams={['name']} />
      <div class="actions"><button type="submit" class="primary" disabled={busy} aria-busy={busy}>Create project and key</button></div>
    </form>
  );
}

/** The Quickstart page. */
export function QuickstartPage(props: PageProps) {
  const { organisationId } = props;
  const [models, setModels] = useState<OrganisationModels | undefined>(undefined);
  const [error, setError] = useState<unknown>(undefined);
  const [created, setCreated] = useState<ProjectWithSecret | undefined>(undefined);
  const [model, setModel] = useState<string | undefined>(undefined);
  useEffect(() => {
    if (organisationId === undefined) return;
    loadOrganisationModels(organisationId).then(setModels, setError);
  }, [organisationId]);

  if (organisationId === undefined) return <section><h1>Quickstart</h1><p>Choose an organisation.</p></section>;
  const chatModels = models?.data.filter((entry) => entry.kind === 'chat') ?? [];
  const chosen = model ?? chatModels[0]?.slug;
  const baseUrl = models?.api_base_url ?? undefined;
  const snippets = chosen === undefined
    ? []
    : quickstartSnippets({ baseUrl: baseUrl ?? unknownBaseUrl, apiKey: created?.api_key, model: chosen });

  return (
    <section>
      <h1>Quickstart</h1>
      <p class="hint">The gateway speaks the OpenAI API (and Anthropic's Messages API): point a client at the base URL below with an API key.</p>
      <FormError error={error} />

      <section class="card" aria-labelledby="quickstart-base">
        <h2 id="quickstart-base">1. The API base URL</h2>
        {models === undefined ? (error === undefined ? <p role="status">Loading…</p> : null) : baseUrl === undefined ? (
          <p>The operator has not set this gateway's API address (ADMIN_PROXY_PUBLIC_URL), so the samples show {unknownBaseUrl}: ask them for it.</p>
        ) : (
          <div class="copy-field">
            <label>
              <span>API base URL</span>
              <input type="text" readOnly value={baseUrl} class="mono" onFocus={(event) => event.currentTarget.select()} />
            </label>
            <CopyButton text={baseUrl} label="Copy base URL" />
          </div>
        )}
      </section>

      <section class="card" aria-labelledby="quickstart-key">
        <h2 id="quickstart-key">2. An API key</h2>
        {created !== undefined ? (
          <>
            <SecretOnce label="API key" secret={created.api_key}
              warning={`this is the only time the key of ${created.project.name} is shown; only its hash is stored. The samples below include it.`} />
          </>
        ) : (
          <>
            <p>
              Each project has one API key, shown once when it is made (<a href="#/projects">Projects</a>).
              The samples below read it from <span class="mono">${apiKeyVariable}</span>: <span class="mono">export {apiKeyVariable}=gwsk_…</span>
            </p>
            {allows(props.allowed, 'createProject')
              ? <CreateKey organisationId={organisationId} onCreated={setCreated} />
              : <p class="hint">A developer or owner of the organisation can create a project and give you its key.</p>}
          </>
        )}
      </section>

      <section class="card" aria-labelledby="quickstart-call">
        <h2 id="quickstart-call">3. Call a model</h2>
        {models === undefined ? null : chatModels.length === 0 ? (
          <p>Your organisation may not call any chat model yet (<a href="#/models">Models</a>): ask the platform operator to allow one.</p>
        ) : (
          <>
            <Field id="quickstart-model" label="Model" hint="Any chat model your organisation may use (see Models for prices)">
              <select id="quickstart-model" value={chosen} aria-describedby={describedBy('quickstart-model', { hint: true })}
                onChange={(event) => setModel(event.currentTarget.value)}>
                {chatModels.map((entry) => <option key={entry.slug} value={entry.slug}>{entry.slug}</option>)}
              </select>
            </Field>
            {snippets.map((snippet, index) => (
              <section key={snippet.title} class="snippet" aria-labelledby={`snippet-${index}`}>
                <h3 id={`snippet-${index}`}>{snippet.title}</h3>
                <p class="hint">{snippet.hint}</p>
                <pre class="mono"><code>{snippet.text}</code></pre>
                <CopyButton text={snippet.text} label={`Copy ${snippet.title}`} />
              </section>
            ))}
          </>
        )}
      </section>
    </section>
  );
}
