import { useCallback, useEffect, useState } from 'preact/hooks';
import { api } from '../../api.ts';
import { Field, FormError, describedBy, fieldError } from '../../components/field.tsx';
import { useAction } from '../../components/use-action.ts';
import { foreignCountryStateCode, gstStateLabel, gstStates } from '../../gst-states.ts';
import type { BillingProfile } from './billing-types.ts';

/** The billing profile: owners fill or change it (required before the first purchase); others read it. */
export function ProfileCard(props: { organisationId: string; canChange: boolean; profile: BillingProfile | null | undefined; onProfile(profile: BillingProfile | null): void }) {
  const path = `/admin/v1/organisations/${props.organisationId}/billing-profile`;
  const { profile, onProfile } = props;
  const [form, setForm] = useState({ legalName: '', address: '', stateCode: '', gstin: '', country: '', email: '' });
  const [editing, setEditing] = useState(false);
  const [saved, setSaved] = useState<string | undefined>(undefined);
  const { busy, error, setError, run } = useAction();

  const adopt = useCallback((answer: BillingProfile | null) => {
    onProfile(answer);
    setForm({
      legalName: answer?.legal_name ?? '', address: answer?.address ?? '', stateCode: answer?.state_code ?? '',
      gstin: answer?.gstin ?? '', country: answer?.country ?? '', email: answer?.email ?? '',
    });
  }, [onProfile]);

  useEffect(() => {
    api.get<{ billing_profile: BillingProfile | null }>(path).then((answer) => adopt(answer.billing_profile), setError);
  }, [path, adopt, setError]);

  async function save(event: Event) {
    event.preventDefault();
    await run(async () => {
      setSaved(undefined);
      const answer = await api.send<{ billing_profile: BillingProfile }>('PUT', path, {
        legal_name: form.legalName.trim(), address: form.address.trim(), state_code: form.stateCode,
        gstin: form.gstin.trim() === '' ? null : form.gstin.trim().toUpperCase(), email: form.email.trim() === '' ? null : form.email.trim(),
        // Only a recipient abroad (96) has a country; a stale entry is dropped when the state changes back.
        country: form.stateCode === foreignCountryStateCode ? form.country.trim() : null,
      });
      adopt(answer.billing_profile);
      setEditing(false);
      setSaved('Billing profile saved. Invoices from now on are made out to it.');
    });
  }

  const problem = (param: string) => fieldError(error, param);
  const showForm = props.canChange && (editing || profile === null);
  return (
    <div class="card">
      <h2>Billing profile</h2>
      {profile === undefined ? (error === undefined ? <p role="status">Loading…</p> : <FormError error={error} />) : (
        <>
          {profile === null ? (
            <p>No billing profile yet. {props.canChange ? 'Fill it in before the first purchase: invoices are made out to it.' : 'An owner of the organisation fills it in before the first purchase.'}</p>
          ) : showForm ? null : (
            <ul class="webhook-facts" aria-label="Billing profile">
              <li>Legal name: {profile.legal_name}</li>
              <li>Address: <span class="address">{profile.address}</span></li>
              <li>State (place of supply): {gstStateLabel(profile.state_code)}</li>
              {profile.country === null ? <li>GSTIN: {profile.gstin ?? 'not registered'}</li> : <li>Country: {profile.country} (invoiced as an export of services)</li>}
              <li>Invoice email: {profile.email ?? '—'}</li>
            </ul>
          )}
          {saved === undefined ? null : <p class="notice" role="status">{saved}</p>}
          {props.canChange && !showForm ? (
            <div class="actions"><button type="button" class="secondary" onClick={() => { setSaved(undefined); setEditing(true); }}>Edit billing profile</button></div>
          ) : null}
          {showForm ? (
            <form class="inline-form" onSubmit={(event) => void save(event)}>
              <Field id="billing-legal-name" label="Legal name" error={problem('legal_name')}>
                <input id="billing-legal-name" type="text" required maxLength={200} value={form.legalName} autoComplete="organization"
                  aria-describedby={describedBy('billing-legal-name', { error: problem('legal_name') })}
                  onInput={(event) => setForm({ ...form, legalName: event.currentTarget.value })} />
              </Field>
              <Field id="billing-address" label="Address" error={problem('address')}>
                <textarea id="billing-address" required rows={3} maxLength={1000} value={form.address} autoComplete="street-address"
                  aria-describedby={describedBy('billing-address', { error: problem('address') })}
                  onInput={(event) => setForm({ ...form, address: event.currentTarget.value })} />
              </Field>
              <Field id="billing-state" label="State (place of supply)" hint="Decides CGST + SGST (same state as the supplier) or IGST" error={problem('state_code')}>
                <select id="billing-state" required value={form.stateCode}
                  aria-describedby={describedBy('billing-state', { hint: true, error: problem('state_code') })}
                  onChange={(event) => setForm({ ...form, stateCode: event.currentTarget.value })}>
                  <option value="" disabled>Choose a state</option>
                  {gstStates.map((state) => <option key={state.code} value={state.code}>{state.code} · {state.name}</option>)}
                </select>
              </Field>
              {form.stateCode === foreignCountryStateCode ? (
                <Field id="billing-country" label="Country" hint="Outside India: invoices are for an export of services and name the country" error={problem('country')}>
                  <input id="billing-country" type="text" required maxLength={100} value={form.country} autoComplete="country-name"
                    aria-describedby={describedBy('billing-country', { hint: true, error: problem('country') })}
                    onInput={(event) => setForm({ ...form, country: event.currentTarget.value })} />
                </Field>
              ) : null}
              <Field id="billing-gstin" label="GSTIN (optional)" hint="15 characters when registered for GST; its first two digits are the state code" error={problem('gstin')}>
                <input id="billing-gstin" type="text" maxLength={15} value={form.gstin} autoComplete="off" spellcheck={false}
                  aria-describedby={describedBy('billing-gstin', { hint: true, error: problem('gstin') })}
                  onInput={(event) => setForm({ ...form, gstin: event.currentTarget.value.toUpperCase() })} />
              </Field>
              <Field id="billing-email" label="Invoice email (optional)" error={problem('email')}>
                <input id="billing-email" type="email" maxLength={320} value={form.email} autoComplete="email"
                  aria-describedby={describedBy('billing-email', { error: problem('email') })}
                  onInput={(event) => setForm({ ...form, email: event.currentTarget.value })} />
              </Field>
              <FormError error={error} shownParams={['legal_name', 'address', 'state_code', 'country', 'gstin', 'email']} />
              <div class="actions">
                {profile === null ? null : <button type="button" class="secondary" disabled={busy} onClick={() => { adopt(profile); setEditing(false); setError(undefined); }}>Cancel</button>}
                <button type="submit" class="primary" disabled={busy} aria-busy={busy}>Save billing profile</button>
              </div>
            </form>
          ) : null}
        </>
      )}
    </div>
  );
}
