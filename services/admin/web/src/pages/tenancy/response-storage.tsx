import { useCallback, useEffect, useState } from 'preact/hooks';
import { api } from '../../api.ts';
import { Field, FormError, describedBy, fieldError } from '../../components/field.tsx';
import { useAction } from '../../components/use-action.ts';

/** How the organisation's stored Responses are kept, as the admin API shows them on the organisation. */
interface ResponseStorage {
  store_responses: boolean;
  /** Seconds; null: the platform's retention. */
  response_retention_s: number | null;
}

/** Seconds in a day: the form edits the retention in days (the API takes seconds). */
const daySeconds = 86_400;

/**
 * Stored Responses (`POST /v1/responses` keeps them by default, sealed per organisation): owners
 * turn storing off or set a retention shorter than the platform's; others read the setting.
 */
export function ResponseStorageSettings(props: { organisationId: string; canChange: boolean }) {
  const [settings, setSettings] = useState<ResponseStorage | undefined>(undefined);
  const [enabled, setEnabled] = useState(true);
  const [days, setDays] = useState('');
  const [saved, setSaved] = useState<string | undefined>(undefined);
  const { busy, error, setError, run } = useAction();
  const retentionError = fieldError(error, 'response_retention_s');

  const adopt = useCallback((answer: ResponseStorage) => {
    setSettings({ store_responses: answer.store_responses, response_retention_s: answer.response_retention_s });
    setEnabled(answer.store_responses);
    setDays(answer.response_retention_s === null ? '' : String(answer.response_retention_s / daySeconds));
  }, []);

  useEffect(() => {
    api.get<ResponseStorage>(`/admin/v1/organisations/${props.organisationId}`).then(adopt, setError);
  }, [props.organisationId, adopt]);

  function save(event: Event) {
    event.preventDefault();
    const trimmed = days.trim();
    // Whole seconds from a decimal count of days; the API names the field when it is out of range.
    const retention = trimmed === '' ? null : Math.round(Number(trimmed) * daySeconds);
    void run(async () => {
      setSaved(undefined);
      adopt(await api.send<ResponseStorage>('PUT', `/admin/v1/organisations/${props.organisationId}/response-storage`, {
        store_responses: enabled, response_retention_s: retention !== null && Number.isFinite(retention) ? retention : (trimmed === '' ? null : -1),
      }));
      setSaved('Saved. Every proxy applies it within seconds.');
    });
  }

  const retentionText = (seconds: number | null) => (seconds === null ? "the platform's retention" : `${seconds / daySeconds} day(s)`);
  return (
    <div class="card">
      <h2>Stored responses</h2>
      {settings === undefined ? (error === undefined ? <p role="status">Loading…</p> : <FormError error={error} />) : (
        <>
          <p>
            {settings.store_responses
              ? <>Responses API answers are stored (encrypted for this organisation) for {retentionText(settings.response_retention_s)}, so clients can continue and fetch them.</>
              : <>Responses API answers are not stored: a request with <code>store: true</code> is refused.</>}
          </p>
          {props.canChange ? (
            <form class="inline-form" onSubmit={save}>
              <Field id="store-responses" label="Store responses">
                <input id="store-responses" type="checkbox" checked={enabled} onChange={(event) => setEnabled(event.currentTarget.checked)} />
              </Field>
              <Field id="response-retention" label="Keep for (days)" hint="Empty: the platform's retention; at most that" error={retentionError}>
                <input id="response-retention" type="text" inputMode="decimal" value={days}
                  aria-describedby={describedBy('response-retention', { hint: true, error: retentionError })}
                  onInput={(event) => setDays(event.currentTarget.value)} />
              </Field>
              <FormError error={error} shownParams={['response_retention_s']} />
              {saved === undefined ? null : <p class="notice" role="status">{saved}</p>}
              <div class="actions">
                <button type="submit" class="primary" disabled={busy} aria-busy={busy}>Save storage settings</button>
              </div>
            </form>
          ) : null}
        </>
      )}
    </div>
  );
}
