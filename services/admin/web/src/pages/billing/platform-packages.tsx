import { useCallback, useEffect, useState } from 'preact/hooks';
import { ApiError, api } from '../../api.ts';
import { Dialog } from '../../components/dialog.tsx';
import { Field, FormError, describedBy, fieldError } from '../../components/field.tsx';
import { Table } from '../../components/table.tsx';
import { useAction } from '../../components/use-action.ts';
import { formatRupees, rupeesToMicros } from '../../format.ts';
import type { TopUpPackage } from './billing-types.ts';
import { formatPaise, paiseInput, rupeesToPaise } from './paise.ts';
import { exactRupees, rupeeInput } from '../common/rupee-text.ts';

/** Top-up packages, active or not: what buyers pay (GST included) and the credit they get; create, edit, take off sale. */
export function PlatformPackages() {
  const [packages, setPackages] = useState<TopUpPackage[] | undefined>(undefined);
  const [error, setError] = useState<unknown>(undefined);
  const [editing, setEditing] = useState<TopUpPackage | 'new' | undefined>(undefined);

  const reload = useCallback(async () => {
    try {
      const answer = await api.get<{ data: TopUpPackage[] }>('/admin/v1/topup-packages', { include_inactive: 'true' });
      setPackages(answer.data);
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
      <p class="hint">Prices include GST (the buyer pays exactly the price; the invoice splits out the tax). Owners see active packages on their Billing page, in this order.</p>
      <div class="actions"><button type="button" class="primary" onClick={() => setEditing('new')}>New package</button></div>
      <FormError error={error} />
      {packages === undefined ? (error === undefined ? <p role="status">Loading…</p> : null) : (
        <Table
          caption="Top-up packages"
          rows={packages}
          rowKey={(pack) => pack.id}
          empty="No packages yet: owners cannot buy credit until one is active."
          columns={[
            { header: 'Order', numeric: true, cell: (pack) => String(pack.sort_order) },
            { header: 'Package', cell: (pack) => <>{pack.name}<div class="mono small">{pack.id}</div></> },
            { header: 'Price (incl. GST)', numeric: true, cell: (pack) => formatPaise(pack.price_paise) },
            { header: 'Credit', numeric: true, cell: (pack) => exactRupees(pack.credit_micros) },
            { header: 'State', cell: (pack) => (pack.active ? <span class="pill pill-active">on sale</span> : <span class="pill pill-disabled">off sale</span>) },
            {
              header: 'Actions', cell: (pack) => (
                <button type="button" class="secondary" onClick={() => setEditing(pack)} aria-label={`Edit ${pack.name}`}>Edit</button>
              ),
            },
          ]}
        />
      )}
      {editing === undefined ? null : (
        <PackageDialog pack={editing === 'new' ? undefined : editing} onClose={() => setEditing(undefined)}
          onDone={() => { setEditing(undefined); void reload(); }} />
      )}
    </>
  );
}

/** The fields this form shows the API's errors beside. */
const formParams = ['name', 'price_paise', 'credit_micros', 'sort_order'];

/** Creates a package or edits one (only the fields changed are sent). */
function PackageDialog(props: { pack: TopUpPackage | undefined; onClose(): void; onDone(): void }) {
  const { pack } = props;
  const [form, setForm] = useState(() => ({
    name: pack?.name ?? '',
    price: pack === undefined ? '' : paiseInput(pack.price_paise),
    credit: pack === undefined ? '' : rupeeInput(pack.credit_micros),
    sortOrder: String(pack?.sort_order ?? 0),
    active: pack?.active ?? true,
  }));
  const { busy, error, setError, run } = useAction();
  const problem = (param: string) => fieldError(error, param);

  async function submit(event: Event) {
    event.preventDefault();
    let body: Record<string, unknown>;
    try {
      body = bodyOf(form);
    } catch (caught) {
      setError(caught);
      return;
    }
    if (pack !== undefined) {
      const current: Record<string, unknown> = { name: pack.name, price_paise: pack.price_paise, credit_micros: pack.credit_micros, sort_order: pack.sort_order, active: pack.active };
      body = Object.fromEntries(Object.entries(body).filter(([key, value]) => current[key] !== value));
      if (Object.keys(body).length === 0) {
        props.onClose();
        return;
      }
    }
    await run(async () => {
      if (pack === undefined) await api.send('POST', '/admin/v1/topup-packages', body);
      else await api.send('PATCH', `/admin/v1/topup-packages/${pack.id}`, body);
      props.onDone();
    }, { staysBusyOnSuccess: true });
  }

  const previewCredit = (() => {
    try {
      return formatRupees(rupeesToMicros(form.credit));
    } catch {
      return undefined;
    }
  })();
  return (
    <Dialog open title={pack === undefined ? 'New top-up package' : `Edit ${pack.name}`} onClose={props.onClose}>
      <form onSubmit={(event) => void submit(event)}>
        <Field id="package-name" label="Name" error={problem('name')}>
          <input id="package-name" type="text" required maxLength={100} value={form.name} autoComplete="off"
            aria-describedby={describedBy('package-name', { error: problem('name') })}
            onInput={(event) => setForm({ ...form, name: event.currentTarget.value })} />
        </Field>
        <Field id="package-price" label="Price (₹, incl. GST)" hint="What the buyer pays, to the paisa, e.g. 1,180" error={problem('price_paise')}>
          <input id="package-price" type="text" inputMode="decimal" required value={form.price}
            aria-describedby={describedBy('package-price', { hint: true, error: problem('price_paise') })}
            onInput={(event) => setForm({ ...form, price: event.currentTarget.value })} />
        </Field>
        <Field id="package-credit" label="Credit (₹)" hint={`Added to the balance when paid${previewCredit === undefined ? '' : `: ${previewCredit}`}`} error={problem('credit_micros')}>
          <input id="package-credit" type="text" inputMode="decimal" required value={form.credit}
            aria-describedby={describedBy('package-credit', { hint: true, error: problem('credit_micros') })}
            onInput={(event) => setForm({ ...form, credit: event.currentTarget.value })} />
        </Field>
        <Field id="package-order" label="Order" hint="Lower numbers are listed first" error={problem('sort_order')}>
          <input id="package-order" type="text" inputMode="numeric" required value={form.sortOrder}
            aria-describedby={describedBy('package-order', { hint: true, error: problem('sort_order') })}
            onInput={(event) => setForm({ ...form, sortOrder: event.currentTarget.value })} />
        </Field>
        <label class="checkbox">
          <input type="checkbox" checked={form.active} onChange={(event) => setForm({ ...form, active: event.currentTarget.checked })} />
          <span>On sale (owners can buy it)</span>
        </label>
        <FormError error={error} shownParams={formParams} />
        <div class="actions">
          <button type="button" class="secondary" onClick={props.onClose}>Cancel</button>
          <button type="submit" class="primary" disabled={busy} aria-busy={busy}>{pack === undefined ? 'Create package' : 'Save changes'}</button>
        </div>
      </form>
    </Dialog>
  );
}

/** The API body of the form, amounts exact (paise, µ₹ as decimal strings); throws an ApiError naming the field at fault. */
function bodyOf(form: { name: string; price: string; credit: string; sortOrder: string; active: boolean }): Record<string, unknown> {
  const fieldProblem = (param: string, caught: unknown) => new ApiError((caught as Error).message, 400, 'invalid_request', param);
  let pricePaise: string;
  let creditMicros: string;
  try {
    pricePaise = rupeesToPaise(form.price);
  } catch (caught) {
    throw fieldProblem('price_paise', caught);
  }
  try {
    creditMicros = rupeesToMicros(form.credit);
  } catch (caught) {
    throw fieldProblem('credit_micros', caught);
  }
  if (!/^\d{1,6}$/.test(form.sortOrder.trim())) throw fieldProblem('sort_order', new Error('A whole number such as 10'));
  return { name: form.name.trim(), price_paise: pricePaise, credit_micros: creditMicros, sort_order: Number(form.sortOrder.trim()), active: form.active };
}
