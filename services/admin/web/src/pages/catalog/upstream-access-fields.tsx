import { Field, describedBy } from '../../components/field.tsx';

/** What the upstream access fields edit: a new credential ('' keeps the stored one), its removal, and the SSRF exception. */
interface UpstreamAccess {
  apiKey: string;
  removeApiKey: boolean;
  allowPrivateNetwork: boolean;
}

/**
 * An upstream's write-only credential (never filled in; empty keeps the stored one, a checkbox
 * removes it) and its private-network exception, as the gateway model and the deployment forms
 * both edit them. `stored` is the upstream being edited (undefined: a new one).
 */
export function UpstreamAccessFields(props: {
  id: string;
  stored: { has_api_key: boolean } | undefined;
  values: UpstreamAccess;
  error: string | undefined;
  onChange(change: Partial<UpstreamAccess>): void;
}) {
  const { id, stored, values, error } = props;
  return (
    <>
      <Field id={id} label="Upstream credential"
        hint={stored === undefined ? 'Optional. Stored encrypted and never shown again' : `${stored.has_api_key ? 'A credential is set. ' : ''}Leave empty to keep the stored one; a new one replaces it`}
        error={error}>
        <input id={id} type="password" value={values.apiKey} autoComplete="new-password" spellcheck={false}
          aria-describedby={describedBy(id, { hint: true, error })}
          onInput={(event) => props.onChange({ apiKey: event.currentTarget.value })} />
      </Field>
      {stored?.has_api_key === true ? (
        <label class="checkbox">
          <input type="checkbox" checked={values.removeApiKey} disabled={values.apiKey !== ''}
            onChange={(event) => props.onChange({ removeApiKey: event.currentTarget.checked })} />
          <span>Remove the stored credential</span>
        </label>
      ) : null}
      <label class="checkbox">
        <input type="checkbox" checked={values.allowPrivateNetwork} onChange={(event) => props.onChange({ allowPrivateNetwork: event.currentTarget.checked })} />
        <span>Allow a private-network upstream (http, private or loopback address): an audited SSRF exception</span>
      </label>
    </>
  );
}
