import { useCallback, useEffect, useState } from 'preact/hooks';
import { ApiError, api } from '../../api.ts';
import type { ListPage } from '../../api-types.ts';
import { Dialog } from '../../components/dialog.tsx';
import { Field, FormError, describedBy, fieldError } from '../../components/field.tsx';
import { Table } from '../../components/table.tsx';
import { useAction } from '../../components/use-action.ts';
import { formatCount } from '../../format.ts';
import {
  createModelBody, modelFormOf, providerKinds, tokenClassPriceFields, updateModelBody, type GatewayModelJson, type ModelForm, type TokenClassPriceField,
} from './model-form.ts';
import { exactRupees } from '../common/rupee-text.ts';
import { DeploymentsSection } from './deployments.tsx';
import { UpstreamAccessFields } from './upstream-access-fields.tsx';

/** Every gateway model, following the slug-cursor pages (100 a page). */
export async function listGatewayModels(): Promise<GatewayModelJson[]> {
  const models: GatewayModelJson[] = [];
  let after: string | undefined;
  for (;;) {
    const page = await api.get<ListPage<GatewayModelJson>>('/admin/v1/gateway-models', { limit: 100, after });
    models.push(...page.data);
    if (!page.has_more || page.data.length === 0) return models;
    after = page.data.at(-1)!.slug;
  }
}

/** Gateway models: prices, provider costs and upstream targets; create and edit (the credential is write-only). */
export function PlatformModels() {
  const [models, setModels] = useState<GatewayModelJson[] | undefined>(undefined);
  const [error, setError] = useState<unknown>(undefined);
  const [editing, setEditing] = useState<GatewayModelJson | 'new' | undefined>(undefined);
  /** The slug whose deployments are shown below the table. */
  const [deploymentsOf, setDeploymentsOf] = useState<string | undefined>(undefined);

  const reload = useCallback(async () => {
    try {
      setModels(await listGatewayModels());
      setError(undefined);
    } catch (caught) {
      setError(caught);
    }
  }, []);

  useEffect(() => {
    void reload();
  }, [reload]);

  return (
    <>
      <div class="actions"><button type="button" class="primary" onClick={() => setEditing('new')}>New gateway model</button></div>
      <FormError error={error} />
      {models === undefined ? (error === undefined ? <p role="status">Loading…</p> : null) : (
        <Table
          caption="Gateway models (prices per million tokens)"
          rows={models}
          rowKey={(model) => model.slug}
          empty="No gateway models yet — add one so organisations have something to call."
          columns={[
            { header: 'Model', cell: (model) => <><span class="mono">{model.slug}</span><div class="small">{model.display_name}</div></> },
            {
              header: 'Customer price', numeric: true, cell: (model) => (
                <>in {exactRupees(model.input_price_micros_per_mtok)}<div>out {exactRupees(model.output_price_micros_per_mtok)}</div></>
              ),
            },
            {
              header: 'Provider cost', numeric: true, cell: (model) => (
                <>in {exactRupees(model.provider_input_cost_micros_per_mtok)}<div>out {exactRupees(model.provider_output_cost_micros_per_mtok)}</div></>
              ),
            },
            {
              header: 'Tokens', numeric: true, cell: (model) => (
                <>max {formatCount(model.default_max_tokens)}<div class="small">context {formatCount(model.max_context_tokens)}</div></>
              ),
            },
            {
              header: 'Upstream', cell: (model) => (
                <>
                  {model.upstream.provider_kind} · <span class="mono">{model.upstream.model}</span>
                  <div class="mono small">{model.upstream.base_url}</div>
                  <div class="small">
                    {model.upstream.has_api_key ? 'credential set' : 'no credential'}
                    {model.upstream.allow_private_network ? ' · private network allowed' : ''}
                  </div>
                </>
              ),
            },
            {
              header: 'Actions', cell: (model) => (
                <div class="row-actions">
                  <button type="button" class="secondary" onClick={() => setEditing(model)} aria-label={`Edit ${model.slug}`}>Edit</button>
                  <button type="button" class="secondary" onClick={() => setDeploymentsOf(model.slug)} aria-label={`Deployments of ${model.slug}`}>Deployments</button>
                </div>
              ),
            },
          ]}
        />
      )}
      {deploymentsOf === undefined || models === undefined ? null : (() => {
        const shown = models.find((model) => model.slug === deploymentsOf);
        return shown === undefined ? null : <DeploymentsSection model={shown} onClose={() => setDeploymentsOf(undefined)} />;
      })()}
      {editing === undefined ? null : (
        <ModelDialog model={editing === 'new' ? undefined : editing} onClose={() => setEditing(undefined)}
          onDone={() => { setEditing(undefined); void reload(); }} />
      )}
    </>
  );
}

/** The API's names of the fields this form shows errors beside. */
const formParams = [
  'slug', 'display_name', 'default_max_tokens', 'max_context_tokens', 'input_price_micros_per_mtok', 'output_price_micros_per_mtok',
  'provider_input_cost_micros_per_mtok', 'provider_output_cost_micros_per_mtok', ...tokenClassPriceFields, 'upstream.base_url', 'upstream.model', 'upstream.api_key',
  'upstream.priority', 'upstream.weight',
  'reasoning_efforts', 'thinking_modes', 'max_thinking_budget_tokens',
];

/** The label of each token class price field (₹ per million tokens). */
const classPriceLabels: Record<TokenClassPriceField, string> = {
  cached_input_price_micros_per_mtok: 'Customer price, cached input (cache reads)',
  cache_write_5m_price_micros_per_mtok: 'Customer price, cache writes (5 minutes)',
  cache_write_1h_price_micros_per_mtok: 'Customer price, cache writes (1 hour)',
  reasoning_price_micros_per_mtok: 'Customer price, reasoning output',
  audio_input_price_micros_per_mtok: 'Customer price, audio input',
  image_input_price_micros_per_mtok: 'Customer price, image input',
  provider_cached_input_cost_micros_per_mtok: 'Provider cost, cached input',
  provider_cache_write_5m_cost_micros_per_mtok: 'Provider cost, cache writes (5 minutes)',
  provider_cache_write_1h_cost_micros_per_mtok: 'Provider cost, cache writes (1 hour)',
  provider_reasoning_cost_micros_per_mtok: 'Provider cost, reasoning output',
  provider_audio_input_cost_micros_per_mtok: 'Provider cost, audio input',
  provider_image_input_cost_micros_per_mtok: 'Provider cost, image input',
};

/** Creates a gateway model or edits one; the credential field is never filled in, and left empty keeps the stored credential. */
function ModelDialog(props: { model: GatewayModelJson | undefined; onClose(): void; onDone(): void }) {
  const { model } = props;
  const [form, setForm] = useState<ModelForm>(() => modelFormOf(model));
  const { busy, error, setError, run } = useAction();
  const errorOf = (param: string) => fieldError(error, param);

  async function submit(event: Event) {
    event.preventDefault();
    const built = model === undefined ? createModelBody(form) : updateModelBody(model, form);
    if (!built.ok) {
      setError(new ApiError(built.problem, 400, 'invalid_request', built.param));
      return;
    }
    if (model !== undefined && Object.keys(built.body).length === 0) {
      props.onClose();
      return;
    }
    await run(async () => {
      if (model === undefined) await api.send('POST', '/admin/v1/gateway-models', built.body);
      else await api.send('PATCH', `/admin/v1/gateway-models/${model.slug}`, built.body);
      props.onDone();
    }, { staysBusyOnSuccess: true });
  }

  /** One text field of the form, with its label, hint and the API's error for `param`. */
  function text(key: keyof ModelForm, param: string, label: string, options: { hint?: string | undefined; inputMode?: 'decimal' | 'numeric' | 'url'; required?: boolean } = {}) {
    const id = `model-${key}`;
    const fieldProblem = errorOf(param);
    return (
      <Field id={id} label={label} hint={options.hint} error={fieldProblem}>
        <input id={id} type="text" inputMode={options.inputMode} required={options.required ?? true} value={form[key] as string}
          autoComplete="off" aria-describedby={describedBy(id, { hint: options.hint !== undefined, error: fieldProblem })}
          onInput={(event) => setForm({ ...form, [key]: event.currentTarget.value })} />
      </Field>
    );
  }

  const credentialId = 'model-apiKey';
  const credentialError = errorOf('upstream.api_key');
  return (
    <Dialog open title={model === undefined ? 'New gateway model' : `Edit ${model.slug}`} onClose={props.onClose}>
      <form onSubmit={(event) => void submit(event)}>
        {model === undefined ? text('slug', 'slug', 'Slug', { hint: 'The name customers call, e.g. acme-chat; cannot change later' }) : null}
        {text('displayName', 'display_name', 'Display name', { required: false, hint: model === undefined ? 'Empty: the slug' : undefined })}
        {text('defaultMaxTokens', 'default_max_tokens', 'Default max tokens', { inputMode: 'numeric', hint: 'Sizes the reserve when a request gives no max_tokens' })}
        {text('maxContextTokens', 'max_context_tokens', 'Max context tokens', { inputMode: 'numeric' })}
        {text('inputPrice', 'input_price_micros_per_mtok', 'Customer price, input (₹ per million tokens)', { inputMode: 'decimal' })}
        {text('outputPrice', 'output_price_micros_per_mtok', 'Customer price, output (₹ per million tokens)', { inputMode: 'decimal' })}
        {text('providerInputCost', 'provider_input_cost_micros_per_mtok', 'Provider cost, input (₹ per million tokens)', { inputMode: 'decimal' })}
        {text('providerOutputCost', 'provider_output_cost_micros_per_mtok', 'Provider cost, output (₹ per million tokens)', { inputMode: 'decimal' })}
        <details>
          <summary>Prices by token class</summary>
          {tokenClassPriceFields.map((field) => {
            const id = `model-${field}`;
            const fieldProblem = errorOf(field);
            const reasoning = field.includes('reasoning');
            const hint = reasoning ? 'Empty: priced as output' : model === undefined ? 'Empty: the input price' : 'Empty: unchanged';
            return (
              <Field key={field} id={id} label={`${classPriceLabels[field]} (₹ per million tokens)`} hint={hint} error={fieldProblem}>
                {/* Never required: the section may be folded away, where a browser could not show the missing field. */}
                <input id={id} type="text" inputMode="decimal" required={false} value={form.classPrices[field]}
                  autoComplete="off" aria-describedby={describedBy(id, { hint: hint !== undefined, error: fieldProblem })}
                  onInput={(event) => setForm({ ...form, classPrices: { ...form.classPrices, [field]: event.currentTarget.value } })} />
              </Field>
            );
          })}
        </details>
        <Field id="model-providerKind" label="Provider kind" hint={model === undefined ? undefined : 'Cannot change'}>
          <select id="model-providerKind" value={form.providerKind} disabled={model !== undefined}
            aria-describedby={model === undefined ? undefined : 'model-providerKind-hint'}
            onChange={(event) => setForm({ ...form, providerKind: event.currentTarget.value })}>
            {providerKinds.map((kind) => <option key={kind} value={kind}>{kind}</option>)}
          </select>
        </Field>
        {text('baseUrl', 'upstream.base_url', 'Upstream base URL', { inputMode: 'url', hint: 'e.g. https://api.openai.com/v1' })}
        {text('upstreamModel', 'upstream.model', 'Upstream model name', { hint: "The provider's name for it; never shown to customers" })}
        <UpstreamAccessFields id={credentialId} stored={model?.upstream} values={form} error={credentialError}
          onChange={(change) => setForm({ ...form, ...change })} />
        {text('priority', 'upstream.priority', 'Upstream priority', { inputMode: 'numeric', hint: 'Among the model\'s deployments: lower is tried first (0..100)' })}
        {text('weight', 'upstream.weight', 'Upstream weight', { inputMode: 'numeric', hint: 'Its share of requests within its priority (1..1000)' })}
        {text('reasoningEfforts', 'reasoning_efforts', 'Reasoning efforts', {
          required: false, hint: 'Comma-separated levels the upstream takes: none, minimal, low, medium, high, xhigh (OpenAI-compatible) or low, medium, high, max (anthropic). Empty: none',
        })}
        {text('thinkingModes', 'thinking_modes', 'Thinking modes', { required: false, hint: 'anthropic only: enabled (a budget), adaptive. Empty: no extended thinking' })}
        {text('maxThinkingBudgetTokens', 'max_thinking_budget_tokens', 'Max thinking budget tokens', { inputMode: 'numeric', hint: '0: bounded by max_tokens only' })}
        <label class="checkbox">
          <input type="checkbox" checked={form.returnsReasoning} onChange={(event) => setForm({ ...form, returnsReasoning: event.currentTarget.checked })} />
          <span>The upstream returns its reasoning (clients receive it)</span>
        </label>
        <FormError error={error} shownParams={formParams} />
        <div class="actions">
          <button type="button" class="secondary" onClick={props.onClose}>Cancel</button>
          <button type="submit" class="primary" disabled={busy} aria-busy={busy}>{model === undefined ? 'Create model' : 'Save changes'}</button>
        </div>
      </form>
    </Dialog>
  );
}
