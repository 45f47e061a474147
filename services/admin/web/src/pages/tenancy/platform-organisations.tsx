import { useCallback, useEffect, useState } from 'preact/hooks';
import { announceOrganisationsChanged } from '../../organisation-events.ts';
import { ApiError, api } from '../../api.ts';
import { ConfirmButton } from '../../components/confirm-button.tsx';
import { Dialog } from '../../components/dialog.tsx';
import { Field, FormError, describedBy, fieldError } from '../../components/field.tsx';
import { Table } from '../../components/table.tsx';
import { useAction } from '../../components/use-action.ts';
import { formatCount, formatIst, formatRupees, rupeesToMicros } from '../../format.ts';
import { listAll } from '../../lists.ts';
import { listGatewayModels } from '../catalog/platform-models.tsx';
import { newIdempotencyKey } from '../../components/idempotency.ts';

/** An organisation as platform admins manage it. */
interface Organisation {
  id: string;
  name: string;
  status: 'active' | 'suspended';
  billing_mode: 'commercial' | 'internal';
  rpm_limit: number;
  allowed_gateway_models: string[];
  created_at: string;
}

/** The balance figures the credit dialog shows. */
interface Balance {
  available_micros: string;
  held_micros: string;
  debited_micros: string;
}

/** The answer to a manual credit. */
interface Credit {
  credit_id: string;
  amount_micros: string;
  balance: Balance;
}

/** The organisation form: create and edit share it. */
interface OrganisationForm {
  name: string;
  billingMode: Organisation['billing_mode'];
  /** Requests per minute as typed; '' on create: the admin's default. */
  rpm: string;
  allowedModels: string[];
}

const billingModeText: Record<Organisation['billing_mode'], string> = {
  commercial: 'Commercial: prepaid wallet, debited by usage',
  internal: 'Internal: sponsored, usage recorded, nothing debited',
};

/** Organisations: create, edit (name, billing mode, RPM, allowed models), suspend or reactivate, credit. */
export function PlatformOrganisations() {
  const [organisations, setOrganisations] = useState<Organisation[] | undefined>(undefined);
  const [models, setModels] = useState<string[]>([]);
  const [error, setError] = useState<unknown>(undefined);
  const [editing, setEditing] = useState<Organisation | 'new' | undefined>(undefined);
  const [crediting, setCrediting] = useState<Organisation | undefined>(undefined);

  const reload = useCallback(async () => {
    try {
      setOrganisations(await listAll<Organisation>('/admin/v1/organisations'));
      setError(undefined);
    } catch (caught) {
      setError(caught);
    }
  }, []);

  useEffect(() => {
    void reload();
    listGatewayModels().then((list) => setModels(list.map((model) => model.slug)), setError);
  }, [reload]);

  async function setStatus(organisation: Organisation, status: Organisation['status']) {
    await api.send('PATCH', `/admin/v1/organisations/${organisation.id}`, { status });
    await reload();
  }

  return (
    <>
      <div class="actions">
        <button type="button" class="primary" onClick={() => setEditing('new')}>New organisation</button>
      </div>
      <FormError error={error} />
      {organisations === undefined ? (error === undefined ? <p role="status">Loading…</p> : null) : (
        <Table
          caption="Organisations"
          rows={organisations}
          rowKey={(organisation) => organisation.id}
          empty="No organisations yet — create one, then invite its first owner."
          columns={[
            { header: 'Name', cell: (organisation) => <>{organisation.name}<div class="mono small">{organisation.id}</div></> },
            { header: 'Status', cell: (organisation) => <span class={`pill pill-${organisation.status}`}>{organisation.status}</span> },
            { header: 'Billing', cell: (organisation) => organisation.billing_mode },
            { header: 'RPM', numeric: true, cell: (organisation) => formatCount(organisation.rpm_limit) },
            {
              header: 'Allowed models', cell: (organisation) => organisation.allowed_gateway_models.length === 0
                ? 'none'
                : <span class="mono small">{organisation.allowed_gateway_models.join(', ')}</span>,
            },
            { header: 'Created (IST)', cell: (organisation) => formatIst(organisation.created_at) },
            {
              header: 'Actions', cell: (organisation) => (
                <div class="row-actions">
                  <button type="button" class="secondary" onClick={() => setEditing(organisation)} aria-label={`Edit ${organisation.name}`}>Edit</button>
                  <button type="button" class="secondary" onClick={() => setCrediting(organisation)} aria-label={`Credit ${organisation.name}`}>Credit</button>
                  {organisation.status === 'active' ? (
                    <ConfirmButton label="Suspend" title={`Suspend ${organisation.name}?`} confirmLabel="Suspend" danger
                      onConfirm={() => setStatus(organisation, 'suspended')}>
                      <p>Every inference request of its projects is refused (403) until you reactivate it. Its members can still sign in and read.</p>
                    </ConfirmButton>
                  ) : (
                    <ConfirmButton label="Reactivate" title={`Reactivate ${organisation.name}?`} confirmLabel="Reactivate"
                      onConfirm={() => setStatus(organisation, 'active')}>
                      <p>Its projects' keys work again.</p>
                    </ConfirmButton>
                  )}
                </div>
              ),
            },
          ]}
        />
      )}
      {editing === undefined ? null : (
        <OrganisationDialog organisation={editing === 'new' ? undefined : editing} models={models}
          onClose={() => setEditing(undefined)} onDone={() => { setEditing(undefined); void reload(); }} />
      )}
      {crediting === undefined ? null : <CreditDialog organisation={crediting} onClose={() => setCrediting(undefined)} />}
    </>
  );
}

/** Creates an organisation, or changes one (only the fields that changed are sent). */
function OrganisationDialog(props: { organisation: Organisation | undefined; models: string[]; onClose(): void; onDone(): void }) {
  const { organisation } = props;
  const [form, setForm] = useState<OrganisationForm>(organisation === undefined
    ? { name: '', billingMode: 'commercial', rpm: '', allowedModels: [] }
    : { name: organisation.name, billingMode: organisation.billing_mode, rpm: String(organisation.rpm_limit), allowedModels: organisation.allowed_gateway_models });
  const { busy, error, setError, run } = useAction();
  const nameError = fieldError(error, 'name');
  const rpmError = fieldError(error, 'rpm_limit');
  // Slugs the organisation may use that no longer exist stay listed, so saving does not drop them unseen.
  const choices = [...new Set([...props.models, ...form.allowedModels])].sort();

  async function submit(event: Event) {
    event.preventDefault();
    const rpm = form.rpm.trim();
    if (rpm !== '' && !/^\d{1,7}$/.test(rpm)) {
      setError(new ApiError('Enter a whole number of requests per minute.', 400, 'invalid_request', 'rpm_limit'));
      return;
    }
    const name = form.name.trim();
    const allowed = [...form.allowedModels].sort();
    const body: Record<string, unknown> = {};
    if (organisation === undefined) {
      Object.assign(body, { name, billing_mode: form.billingMode, allowed_gateway_models: allowed }, rpm === '' ? {} : { rpm_limit: Number(rpm) });
    } else {
      if (name !== organisation.name) body.name = name;
      if (form.billingMode !== organisation.billing_mode) body.billing_mode = form.billingMode;
      if (rpm !== '' && rpm !== String(organisation.rpm_limit)) body.rpm_limit = Number(rpm);
      if (allowed.join('\n') !== [...organisation.allowed_gateway_models].sort().join('\n')) body.allowed_gateway_models = allowed;
      if (Object.keys(body).length === 0) {
        props.onClose();
        return;
      }
    }
    await run(async () => {
      if (organisation === undefined) await api.send('POST', '/admin/v1/organisations', body);
      else await api.send('PATCH', `/admin/v1/organisations/${organisation.id}`, body);
      announceOrganisationsChanged();
      props.onDone();
    }, { staysBusyOnSuccess: true });
  }

  function toggle(slug: string, on: boolean) {
    setForm({ ...form, allowedModels: on ? [...form.allowedModels, slug] : form.allowedModels.filter((item) => item !== slug) });
  }

  return (
    <Dialog open title={organisation === undefined ? 'New organisation' : `Edit ${organisation.name}`} onClose={props.onClose}>
      <form onSubmit={(event) => void submit(event)}>
        <Field id="organisation-name" label="Name" error={nameError}>
          <input id="organisation-name" type="text" required maxLength={200} value={form.name} autoFocus
            aria-describedby={describedBy('organisation-name', { error: nameError })}
            onInput={(event) => setForm({ ...form, name: event.currentTarget.value })} />
        </Field>
        <Field id="organisation-billing" label="Billing mode">
          <select id="organisation-billing" value={form.billingMode}
            onChange={(event) => setForm({ ...form, billingMode: event.currentTarget.value as Organisation['billing_mode'] })}>
            <option value="commercial">{billingModeText.commercial}</option>
            <option value="internal">{billingModeText.internal}</option>
          </select>
        </Field>
        <Field id="organisation-rpm" label="Requests per minute" hint={organisation === undefined ? 'Shared by all its projects; empty for the default' : 'Shared by all its projects'} error={rpmError}>
          <input id="organisation-rpm" type="text" inputMode="numeric" value={form.rpm} required={organisation !== undefined}
            aria-describedby={describedBy('organisation-rpm', { hint: true, error: rpmError })}
            onInput={(event) => setForm({ ...form, rpm: event.currentTarget.value })} />
        </Field>
        <fieldset class="checkboxes">
          <legend>Allowed gateway models</legend>
          {choices.length === 0 ? <p class="hint">No gateway models exist yet.</p> : choices.map((slug) => (
            <label key={slug} class="checkbox">
              <input type="checkbox" checked={form.allowedModels.includes(slug)} onChange={(event) => toggle(slug, event.currentTarget.checked)} />
              <span class="mono">{slug}</span>
            </label>
          ))}
        </fieldset>
        <FormError error={error} shownParams={['name', 'rpm_limit']} />
        <div class="actions">
          <button type="button" class="secondary" onClick={props.onClose}>Cancel</button>
          <button type="submit" class="primary" disabled={busy} aria-busy={busy}>{organisation === undefined ? 'Create organisation' : 'Save changes'}</button>
        </div>
      </form>
    </Dialog>
  );
}

/**
 * Credits an organisation's wallet in rupees (sent as exact µ₹). One Idempotency-Key per dialog,
 * so sending again after a lost answer cannot credit twice.
 */
function CreditDialog(props: { organisation: Organisation; onClose(): void }) {
  const [idempotencyKey] = useState(newIdempotencyKey);
  const [balance, setBalance] = useState<Balance | undefined>(undefined);
  const [rupees, setRupees] = useState('');
  const [reason, setReason] = useState('');
  const { busy, error, setError, run } = useAction();
  const [done, setDone] = useState<Credit | undefined>(undefined);
  const amountError = fieldError(error, 'amount_micros');
  const reasonError = fieldError(error, 'reason');

  useEffect(() => {
    api.get<Balance>(`/admin/v1/organisations/${props.organisation.id}/balance`).then(setBalance, setError);
  }, [props.organisation.id]);

  async function submit(event: Event) {
    event.preventDefault();
    let amount: string;
    try {
      amount = rupeesToMicros(rupees);
    } catch (caught) {
      setError(new ApiError((caught as Error).message, 400, 'invalid_request', 'amount_micros'));
      return;
    }
    await run(async () => {
      const credit = await api.send<Credit>('POST', `/admin/v1/organisations/${props.organisation.id}/credits`,
        { amount_micros: amount, reason: reason.trim() }, { 'Idempotency-Key': idempotencyKey });
      setDone(credit);
      setBalance(credit.balance);
    });
  }

  return (
    <Dialog open title={`Credit ${props.organisation.name}`} onClose={props.onClose}>
      <p>Available now: <strong>{balance === undefined ? '…' : formatRupees(balance.available_micros)}</strong></p>
      {done === undefined ? (
        <form onSubmit={(event) => void submit(event)}>
          <Field id="credit-amount" label="Amount (₹)" hint="For example 50,000 or 1,00,000.50" error={amountError}>
            <input id="credit-amount" type="text" inputMode="decimal" required value={rupees} autoFocus
              aria-describedby={describedBy('credit-amount', { hint: true, error: amountError })}
              onInput={(event) => setRupees(event.currentTarget.value)} />
          </Field>
          <Field id="credit-reason" label="Reason" hint="Kept on the ledger movement, e.g. an invoice number" error={reasonError}>
            <input id="credit-reason" type="text" required maxLength={500} value={reason}
              aria-describedby={describedBy('credit-reason', { hint: true, error: reasonError })}
              onInput={(event) => setReason(event.currentTarget.value)} />
          </Field>
          <FormError error={error} shownParams={['amount_micros', 'reason']} />
          <div class="actions">
            <button type="button" class="secondary" onClick={props.onClose}>Cancel</button>
            <button type="submit" class="primary" disabled={busy} aria-busy={busy}>Credit</button>
          </div>
        </form>
      ) : (
        <>
          <p class="notice" role="status">Credited {formatRupees(done.amount_micros)}. Available balance: {formatRupees(done.balance.available_micros)}.</p>
          <div class="actions"><button type="button" class="primary" onClick={props.onClose}>Close</button></div>
        </>
      )}
    </Dialog>
  );
}
