import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, api } from '../../api.ts';
import type { Balance } from '../../api-types.ts';
import { Dialog } from '../../components/dialog.tsx';
import { Field, FormError, describedBy, fieldError } from '../../components/field.tsx';
import { Table } from '../../components/table.tsx';
import { useAction } from '../../components/use-action.ts';
import { formatIst, formatRupees } from '../../format.ts';
import { foreignCountryStateCode, gstStateLabel, gstStates } from '../../gst-states.ts';
import { useLive } from '../../live.ts';
import { roleAllows, type PageProps } from '../../page-props.ts';
import { navigate } from '../../router.ts';
import {
  documentKindText, documentPdfPath, refundStateText, type BillingProfile, type CheckoutDetails, type CursorPage, type Refund, type TopUp, type TopUpPackage, type TopUpState,
} from './billing-types.ts';
import { formatPaise, paiseInput, rupeesToPaise } from './paise.ts';

/** A top-up's state in words, and the pill style it shows in. */
const stateText: Record<TopUpState, { text: string; pill: string }> = {
  created: { text: 'Created', pill: 'pill-pending' },
  pending_payment: { text: 'Awaiting payment', pill: 'pill-pending' },
  paid: { text: 'Paid, crediting', pill: 'pill-pending' },
  credited: { text: 'Credited', pill: 'pill-delivered' },
  invoiced: { text: 'Credited and invoiced', pill: 'pill-delivered' },
  failed: { text: 'Payment failed', pill: 'pill-failed' },
  expired: { text: 'Expired unpaid', pill: 'pill-failed' },
  refunded: { text: 'Refunded', pill: 'pill-suspended' },
};

/** States after which a top-up changes only by a refund: the return from payment stops watching there. */
const settledStates: ReadonlySet<TopUpState> = new Set(['credited', 'invoiced', 'failed', 'expired', 'refunded']);

/** How often a top-up just paid for is re-read until it settles, ms (the webhook or callback settles it in moments). */
const watchIntervalMs = 1_000;

/** How often the top-up list is re-read while one of its top-ups is on its way, ms. */
const pendingRefreshMs = 3_000;

/** The fields Razorpay Checkout hands its `handler` after a successful payment. */
interface CheckoutResult {
  razorpay_payment_id: string;
  razorpay_order_id: string;
  razorpay_signature: string;
}

/** The part of Razorpay Checkout's browser API the page uses (https://razorpay.com/docs/payments/payment-gateway/web-integration/standard/). */
interface RazorpayCheckout {
  open(): void;
  on(event: 'payment.failed', listener: (response: { error: { description?: string } }) => void): void;
}

/** Razorpay Checkout's constructor, as checkout.js defines it on window. */
type RazorpayConstructor = new (options: {
  key: string;
  order_id: string;
  /** Paise; Razorpay's own examples pass it as a string of digits, which keeps it off floats. */
  amount: string;
  currency: string;
  name: string;
  description: string;
  handler(result: CheckoutResult): void;
  modal: { ondismiss(): void };
}) => RazorpayCheckout;

/** Razorpay's Checkout script (allowed by the dashboard's CSP only when PAYMENT_PROVIDER=razorpay). */
const checkoutScriptUrl = 'https://checkout.razorpay.com/v1/checkout.js';
let checkoutScript: Promise<RazorpayConstructor> | undefined;

/** Loads checkout.js once per page and gives its Razorpay constructor. */
function loadRazorpayCheckout(): Promise<RazorpayConstructor> {
  checkoutScript ??= new Promise<RazorpayConstructor>((resolve, reject) => {
    const script = document.createElement('script');
    script.src = checkoutScriptUrl;
    script.async = true;
    script.addEventListener('load', () => {
      const constructor = (window as unknown as { Razorpay?: RazorpayConstructor }).Razorpay;
      if (constructor === undefined) reject(new Error('Razorpay Checkout did not load.'));
      else resolve(constructor);
    });
    script.addEventListener('error', () => reject(new Error('Razorpay Checkout could not be loaded. Check the connection and try again.')));
    document.head.append(script);
  }).catch((error: unknown) => {
    checkoutScript = undefined; // the next Buy tries again
    throw error;
  });
  return checkoutScript;
}

/**
 * Billing: the balance (live), the billing profile invoices are made out to, the packages on sale
 * with Buy (Razorpay Checkout, or the local provider's pay page), the organisation's top-ups with
 * their state and documents, and refunds for platform admins. The pay page comes back to
 * #/billing?topup=…&razorpay_…=… (posted as the Checkout callback) or with error=payment_failed.
 */
export function BillingPage(props: PageProps) {
  const { organisationId, params } = props;
  const [topUpsVersion, setTopUpsVersion] = useState(0);
  const [profile, setProfile] = useState<BillingProfile | null | undefined>(undefined);
  const [watched, setWatched] = useState<{ topUpId: string; failed: boolean } | undefined>(undefined);
  const refreshTopUps = useCallback(() => setTopUpsVersion((version) => version + 1), []);

  // Back from paying: the signed fields go to the callback once, then leave the address bar (and the history).
  const returnedTopUp = params.topup;
  useEffect(() => {
    if (organisationId === undefined || returnedTopUp === undefined) return;
    const failed = params.error === 'payment_failed';
    setWatched({ topUpId: returnedTopUp, failed });
    const signed = params.razorpay_payment_id !== undefined && params.razorpay_order_id !== undefined && params.razorpay_signature !== undefined;
    if (!signed && params.error === undefined) return;
    const kept = new URLSearchParams({ topup: returnedTopUp, ...(params.organisation === undefined ? {} : { organisation: params.organisation }) });
    if (signed) {
      const result: CheckoutResult = {
        razorpay_payment_id: params.razorpay_payment_id!, razorpay_order_id: params.razorpay_order_id!, razorpay_signature: params.razorpay_signature!,
      };
      void api.send('POST', `/admin/v1/organisations/${organisationId}/topups/${returnedTopUp}/checkout-callback`, result)
        .catch(() => undefined) // the watch below shows the top-up's state, which the webhook settles even if this failed
        .finally(() => {
          refreshTopUps();
          navigate(`/billing?${kept}`, { replace: true });
        });
    } else {
      navigate(`/billing?${kept}${failed ? '&error=payment_failed' : ''}`, { replace: true });
    }
  }, [organisationId, returnedTopUp, params.razorpay_payment_id, params.razorpay_order_id, params.razorpay_signature, params.error, params.organisation, refreshTopUps]);

  if (organisationId === undefined) return <section><h1>Billing</h1><p>Choose an organisation.</p></section>;
  return (
    <section>
      <h1>Billing</h1>
      <BalanceCard organisationId={organisationId} onBalance={refreshTopUps} />
      {watched === undefined ? null : (
        <TopUpWatch key={watched.topUpId} organisationId={organisationId} topUpId={watched.topUpId} failed={watched.failed} onSettled={refreshTopUps} />
      )}
      <ProfileCard organisationId={organisationId} isOwner={roleAllows(props.role, 'owner')} profile={profile} onProfile={setProfile} />
      <PackagesCard organisationId={organisationId} isOwner={roleAllows(props.role, 'owner')} hasProfile={profile != null}
        onPaidHere={(topUpId) => { setWatched({ topUpId, failed: false }); refreshTopUps(); }} />
      <TopUpList organisationId={organisationId} version={topUpsVersion} isPlatform={props.role === 'platform'} onChanged={refreshTopUps} />
    </section>
  );
}

/** The available balance, read once and then kept current by live updates (a credited top-up moves it). */
function BalanceCard(props: { organisationId: string; onBalance(): void }) {
  const [balance, setBalance] = useState<Balance | undefined>(undefined);
  const [error, setError] = useState<unknown>(undefined);
  useEffect(() => {
    api.get<Balance>(`/admin/v1/organisations/${props.organisationId}/balance`).then(setBalance, setError);
  }, [props.organisationId]);
  useLive(props.organisationId, (message) => {
    if (message.type !== 'balance') return;
    setBalance(message.balance);
    props.onBalance(); // a balance change is often a top-up being credited: its row changes too
  });
  return (
    <>
      <h2 class="visually-hidden">Balance</h2>
      <FormError error={error} />
      <dl class="stats" aria-live="polite">
        <div class="stat"><dt>Available balance</dt><dd>{balance === undefined ? '…' : formatRupees(balance.available_micros)}</dd></div>
      </dl>
    </>
  );
}

/** A top-up just paid for (or whose payment failed): its state, re-read until it settles. */
function TopUpWatch(props: { organisationId: string; topUpId: string; failed: boolean; onSettled(): void }) {
  const [topUp, setTopUp] = useState<TopUp | undefined>(undefined);
  const [error, setError] = useState<unknown>(undefined);
  const onSettled = useRef(props.onSettled);
  onSettled.current = props.onSettled;

  useEffect(() => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    let stopped = false;
    const read = async () => {
      try {
        const current = await api.get<TopUp>(`/admin/v1/organisations/${props.organisationId}/topups/${props.topUpId}`);
        if (stopped) return;
        setTopUp(current);
        setError(undefined);
        if (settledStates.has(current.state)) {
          onSettled.current();
          return;
        }
      } catch (caught) {
        if (stopped) return;
        setError(caught);
        if (caught instanceof ApiError && caught.status === 404) return;
      }
      timer = setTimeout(() => void read(), watchIntervalMs);
    };
    void read();
    return () => {
      stopped = true;
      clearTimeout(timer);
    };
  }, [props.organisationId, props.topUpId]);

  let message: string;
  let tone = 'notice';
  if (topUp === undefined) message = error === undefined ? 'Checking the payment…' : '';
  else if (topUp.state === 'credited' || topUp.state === 'invoiced') {
    message = `Payment received: ${formatRupees(topUp.credit_micros)} was added to the balance (${topUp.package_name}).`;
  } else if (topUp.state === 'failed' || props.failed) {
    message = `The payment for ${topUp.package_name} failed; nothing was charged to the balance. You can buy again.`;
    tone = 'form-error';
  } else if (topUp.state === 'expired') {
    message = `The order for ${topUp.package_name} expired unpaid.`;
    tone = 'form-error';
  } else if (topUp.state === 'refunded') {
    message = `The top-up for ${topUp.package_name} was refunded.`;
  } else {
    message = `Waiting for the payment of ${topUp.package_name} to be confirmed (${stateText[topUp.state].text.toLowerCase()})…`;
  }
  return (
    <div class="card" aria-live="polite">
      <h2>Top-up {props.topUpId}</h2>
      {message === '' ? null : <p class={tone} role={tone === 'form-error' ? 'alert' : 'status'}>{message}</p>}
      <FormError error={error} />
    </div>
  );
}

/** The billing profile: owners fill or change it (required before the first purchase); others read it. */
function ProfileCard(props: { organisationId: string; isOwner: boolean; profile: BillingProfile | null | undefined; onProfile(profile: BillingProfile | null): void }) {
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
  const showForm = props.isOwner && (editing || profile === null);
  return (
    <div class="card">
      <h2>Billing profile</h2>
      {profile === undefined ? (error === undefined ? <p role="status">Loading…</p> : <FormError error={error} />) : (
        <>
          {profile === null ? (
            <p>No billing profile yet. {props.isOwner ? 'Fill it in before the first purchase: invoices are made out to it.' : 'An owner of the organisation fills it in before the first purchase.'}</p>
          ) : showForm ? null : (
            <ul class="webhook-facts" aria-label="Billing profile">
              <li>Legal name: {profile.legal_name}</li>
              <li>Address: {profile.address}</li>
              <li>State (place of supply): {gstStateLabel(profile.state_code)}</li>
              {profile.country === null ? <li>GSTIN: {profile.gstin ?? 'not registered'}</li> : <li>Country: {profile.country} (invoiced as an export of services)</li>}
              <li>Invoice email: {profile.email ?? '—'}</li>
            </ul>
          )}
          {saved === undefined ? null : <p class="notice" role="status">{saved}</p>}
          {props.isOwner && !showForm ? (
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

/** The packages on sale (price includes GST) with Buy for owners; Buy opens Checkout or the local pay page. */
function PackagesCard(props: { organisationId: string; isOwner: boolean; hasProfile: boolean; onPaidHere(topUpId: string): void }) {
  const [packages, setPackages] = useState<TopUpPackage[] | undefined>(undefined);
  const [buying, setBuying] = useState<string | undefined>(undefined);
  const { error, setError, run } = useAction();

  useEffect(() => {
    api.get<{ data: TopUpPackage[] }>('/admin/v1/topup-packages').then((answer) => setPackages(answer.data), setError);
  }, [setError]);

  async function buy(pack: TopUpPackage) {
    setBuying(pack.id);
    await run(async () => {
      const base = `/admin/v1/organisations/${props.organisationId}/topups`;
      const { topup, checkout } = await api.send<{ topup: TopUp; checkout: CheckoutDetails }>('POST', base, { package_id: pack.id });
      if (checkout.provider === 'local') {
        if (checkout.pay_page_url === null) throw new Error('The payment provider gave no pay page.');
        window.location.assign(checkout.pay_page_url);
        return;
      }
      const Razorpay = await loadRazorpayCheckout();
      await new Promise<void>((resolve, reject) => {
        const checkoutWindow = new Razorpay({
          key: checkout.key_id, order_id: checkout.order_id, amount: checkout.amount_paise, currency: checkout.currency,
          name: checkout.name, description: checkout.description,
          handler: (result) => {
            api.send('POST', `${base}/${topup.id}/checkout-callback`, result).then(() => {
              props.onPaidHere(topup.id);
              resolve();
            }, reject);
          },
          modal: { ondismiss: () => resolve() },
        });
        checkoutWindow.on('payment.failed', (response) => {
          reject(new Error(`The payment failed${response.error.description === undefined ? '' : `: ${response.error.description}`}. You can try again.`));
        });
        checkoutWindow.open();
      });
    });
    setBuying(undefined);
  }

  return (
    <div class="card">
      <h2>Buy credit</h2>
      <p class="hint">Prices include GST. The credit is added to the organisation's prepaid balance once the payment is confirmed; it cannot be cashed out or moved to another organisation.</p>
      {props.isOwner && !props.hasProfile ? <p class="warning">Fill in the billing profile above before buying: invoices are made out to it.</p> : null}
      <FormError error={error} />
      {packages === undefined ? (error === undefined ? <p role="status">Loading…</p> : null) : (
        <Table
          caption="Top-up packages"
          rows={packages.filter((pack) => pack.active)}
          rowKey={(pack) => pack.id}
          empty="No packages are on sale."
          columns={[
            { header: 'Package', cell: (pack) => pack.name },
            { header: 'Price (incl. GST)', numeric: true, cell: (pack) => <>{formatPaise(pack.price_paise)} <span class="small">incl. GST</span></> },
            { header: 'Credit', numeric: true, cell: (pack) => formatRupees(pack.credit_micros) },
            ...(props.isOwner ? [{
              header: 'Actions', cell: (pack: TopUpPackage) => (
                <button type="button" class="primary" disabled={buying !== undefined || !props.hasProfile} aria-busy={buying === pack.id}
                  aria-label={`Buy ${pack.name}`} onClick={() => void buy(pack)}>Buy</button>
              ),
            }] : []),
          ]}
        />
      )}
    </div>
  );
}

/** The organisation's top-ups, newest first: state, documents (PDF links) and, for platform admins, refunds of invoiced ones. */
function TopUpList(props: { organisationId: string; version: number; isPlatform: boolean; onChanged(): void }) {
  const path = `/admin/v1/organisations/${props.organisationId}/topups`;
  const [topUps, setTopUps] = useState<TopUp[] | undefined>(undefined);
  const [nextCursor, setNextCursor] = useState<string | null>(null);
  const [error, setError] = useState<unknown>(undefined);
  const [refunding, setRefunding] = useState<TopUp | undefined>(undefined);

  useEffect(() => {
    api.get<CursorPage<TopUp>>(path).then((page) => {
      setTopUps(page.data);
      setNextCursor(page.next_cursor);
      setError(undefined);
    }, setError);
  }, [path, props.version]);

  // A top-up on its way (awaiting payment, paid, credited but not yet invoiced) changes without
  // moving the balance again, or in another tab: re-read the newest page until none is on its way.
  const onTheirWay = topUps?.some((topUp) => !settledStates.has(topUp.state) || topUp.state === 'credited') ?? false;
  useEffect(() => {
    if (!onTheirWay) return undefined;
    const timer = setInterval(() => {
      api.get<CursorPage<TopUp>>(path).then((page) => {
        setTopUps((current) => [...page.data, ...(current ?? []).filter((shown) => !page.data.some((item) => item.id === shown.id))]);
      }, () => undefined); // the next tick tries again; a lasting failure shows on the next full load
    }, pendingRefreshMs);
    return () => clearInterval(timer);
  }, [path, onTheirWay]);

  async function more() {
    if (nextCursor === null) return;
    try {
      const page = await api.get<CursorPage<TopUp>>(path, { cursor: nextCursor });
      setTopUps((current) => [...(current ?? []), ...page.data.filter((item) => !(current ?? []).some((shown) => shown.id === item.id))]);
      setNextCursor(page.next_cursor);
    } catch (caught) {
      setError(caught);
    }
  }

  return (
    <div class="card">
      <h2>Top-ups</h2>
      <FormError error={error} />
      {topUps === undefined ? (error === undefined ? <p role="status">Loading…</p> : null) : (
        <>
          <Table
            caption="Top-ups, newest first"
            rows={topUps}
            rowKey={(topUp) => topUp.id}
            empty="No top-ups yet."
            columns={[
              { header: 'Created (IST)', cell: (topUp) => formatIst(topUp.created_at) },
              { header: 'Package', cell: (topUp) => <>{topUp.package_name}<div class="mono small">{topUp.id}</div></> },
              { header: 'Paid (incl. GST)', numeric: true, cell: (topUp) => formatPaise(topUp.price_paise) },
              { header: 'Credit', numeric: true, cell: (topUp) => formatRupees(topUp.credit_micros) },
              { header: 'State', cell: (topUp) => <span class={`pill ${stateText[topUp.state].pill}`}>{stateText[topUp.state].text}</span> },
              {
                header: 'Documents', cell: (topUp) => (topUp.documents.length === 0 ? '—' : (
                  <ul class="changes">
                    {topUp.documents.map((document) => (
                      <li key={document.id}>
                        <a href={documentPdfPath(props.organisationId, document.id)} download={`${document.serial}.pdf`}
                          aria-label={`Download ${documentKindText[document.kind].toLowerCase()} ${document.serial} (PDF)`}>
                          {documentKindText[document.kind]} {document.serial}
                        </a>
                      </li>
                    ))}
                  </ul>
                )),
              },
              {
                header: 'Refunds', cell: (topUp: TopUp) => (topUp.state === 'invoiced' || topUp.state === 'refunded'
                  ? <TopUpRefunds organisationId={props.organisationId} topUpId={topUp.id} version={props.version} />
                  : '—'),
              },
              ...(props.isPlatform ? [{
                header: 'Actions', cell: (topUp: TopUp) => (topUp.state === 'invoiced' ? (
                  <button type="button" class="secondary" aria-label={`Refund ${topUp.id}`} onClick={() => setRefunding(topUp)}>Refund</button>
                ) : null),
              }] : []),
            ]}
          />
          {nextCursor === null ? null : (
            <div class="actions"><button type="button" class="secondary" onClick={() => void more()}>Show older top-ups</button></div>
          )}
        </>
      )}
      {refunding === undefined ? null : (
        <RefundDialog organisationId={props.organisationId} topUp={refunding} onClose={() => setRefunding(undefined)}
          onDone={() => { setRefunding(undefined); props.onChanged(); }} />
      )}
    </div>
  );
}

/** A top-up's refunds with their state and, when the provider refused one, its reason. */
function TopUpRefunds(props: { organisationId: string; topUpId: string; version: number }) {
  const [refunds, setRefunds] = useState<Refund[] | undefined>(undefined);
  useEffect(() => {
    api.get<{ data: Refund[] }>(`/admin/v1/organisations/${props.organisationId}/topups/${props.topUpId}/refunds`)
      .then((answer) => setRefunds(answer.data), () => setRefunds([]));
  }, [props.organisationId, props.topUpId, props.version]);
  if (refunds === undefined || refunds.length === 0) return <>—</>;
  return (
    <ul class="changes small">
      {refunds.map((refund) => <li key={refund.id}>{formatPaise(refund.amount_paise)}: {refundStateText(refund)}</li>)}
    </ul>
  );
}

/**
 * A platform admin refunds (part of) a top-up: only balance not yet spent can go back (the ledger
 * refuses more), through the provider, with a credit note. One Idempotency-Key per dialog, so a
 * repeated click or a retry after a lost answer refunds once.
 */
function RefundDialog(props: { organisationId: string; topUp: TopUp; onClose(): void; onDone(): void }) {
  const { topUp } = props;
  const [rupees, setRupees] = useState(() => paiseInput(topUp.price_paise));
  const [idempotencyKey] = useState(() => crypto.randomUUID());
  const [refund, setRefund] = useState<Refund | undefined>(undefined);
  const { busy, error, setError, run } = useAction();
  const amountError = fieldError(error, 'amount_paise');

  async function submit(event: Event) {
    event.preventDefault();
    let amountPaise: string;
    try {
      amountPaise = rupeesToPaise(rupees);
    } catch (caught) {
      setError(new ApiError((caught as Error).message, 400, 'invalid_request', 'amount_paise'));
      return;
    }
    await run(async () => {
      const answer = await api.send<{ refund: Refund }>('POST', `/admin/v1/organisations/${props.organisationId}/topups/${topUp.id}/refunds`,
        { amount_paise: amountPaise }, { 'idempotency-key': idempotencyKey });
      setRefund(answer.refund);
    });
  }

  return (
    <Dialog open title={`Refund ${topUp.package_name}`} onClose={refund === undefined ? props.onClose : props.onDone}>
      {refund === undefined ? (
        <form onSubmit={(event) => void submit(event)}>
          <p>Paid {formatPaise(topUp.price_paise)} (incl. GST) for {formatRupees(topUp.credit_micros)} of credit. A refund takes back balance that is still unspent, returns the money through the payment provider and issues a credit note.</p>
          <Field id="refund-amount" label="Refund (₹, incl. GST)" hint="At most what was paid; the matching credit must still be unspent" error={amountError}>
            <input id="refund-amount" type="text" inputMode="decimal" required value={rupees}
              aria-describedby={describedBy('refund-amount', { hint: true, error: amountError })}
              onInput={(event) => setRupees(event.currentTarget.value)} />
          </Field>
          <FormError error={error} shownParams={['amount_paise']} />
          <div class="actions">
            <button type="button" class="secondary" onClick={props.onClose} disabled={busy}>Cancel</button>
            <button type="submit" class="danger" disabled={busy} aria-busy={busy}>Refund</button>
          </div>
        </form>
      ) : (
        <>
          <p role="status">Refund {refund.id} of {formatPaise(refund.amount_paise)}: {refundStateText(refund)}{refund.state === 'failed' ? '' : ` (${formatRupees(refund.debit_micros)} of balance).`}</p>
          <div class="actions"><button type="button" class="primary" onClick={props.onDone}>Close</button></div>
        </>
      )}
    </Dialog>
  );
}
