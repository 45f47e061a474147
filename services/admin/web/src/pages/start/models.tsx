// The Models page: every gateway model the organisation may call (what its keys see on
// /v1/models), with the aliases that reach it, its kind and its price per million tokens of each
// token class it charges, in exact rupees. Every member sees it, viewers too; provider costs never.
import { useEffect, useState } from 'preact/hooks';
import { FormError } from '../../components/field.tsx';
import type { PageProps } from '../../page-props.ts';
import { exactRupees } from '../common/rupee-text.ts';
import { loadOrganisationModels, tokenClassNames, type OrganisationModels } from './organisation-models.ts';

/** The Models page. */
export function ModelsPage(props: PageProps) {
  const { organisationId } = props;
  const [answer, setAnswer] = useState<OrganisationModels | undefined>(undefined);
  const [error, setError] = useState<unknown>(undefined);
  useEffect(() => {
    if (organisationId === undefined) return;
    loadOrganisationModels(organisationId).then(setAnswer, setError);
  }, [organisationId]);

  if (organisationId === undefined) return <section><h1>Models</h1><p>Choose an organisation.</p></section>;
  return (
    <section>
      <h1>Models</h1>
      <p class="hint">
        The models your API keys may call: send the slug (or an alias) as <span class="mono">model</span>.
        Prices are per million tokens, in rupees; each request is charged for the tokens of each class it used.
      </p>
      <FormError error={error} />
      {answer === undefined ? (error === undefined ? <p role="status">Loading…</p> : null) : answer.data.length === 0 ? (
        <p>Your organisation may not call any model yet. Ask the platform operator to allow some.</p>
      ) : answer.data.map((model) => (
        <article key={model.slug} class="card model-card" aria-labelledby={`model-${model.slug}`}>
          <h2 id={`model-${model.slug}`}><span class="mono">{model.slug}</span></h2>
          <dl class="model-facts">
            {model.display_name === model.slug ? null : <><dt>Name</dt><dd>{model.display_name}</dd></>}
            <dt>Kind</dt><dd>{model.kind === 'chat' ? 'Chat (chat completions, Responses, Messages)' : 'Embedding (/v1/embeddings)'}</dd>
            <dt>Aliases</dt>
            <dd>{model.aliases.length === 0 ? 'None' : model.aliases.map((alias, index) => (
              <span key={alias}>{index === 0 ? '' : ', '}<span class="mono">{alias}</span></span>
            ))}</dd>
          </dl>
          <table>
            <caption>Prices of {model.slug} per million tokens</caption>
            <thead><tr><th scope="col">Token class</th><th scope="col" class="numeric">Price per million tokens</th></tr></thead>
            <tbody>
              {model.prices.map((price) => (
                <tr key={price.token_class}>
                  <th scope="row">{tokenClassNames[price.token_class]}</th>
                  <td class="numeric">{exactRupees(price.price_micros_per_mtok)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </article>
      ))}
    </section>
  );
}
