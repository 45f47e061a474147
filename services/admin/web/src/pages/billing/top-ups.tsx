// The organisation's top-ups: the one just paid for, watched until it settles; the list with its
// documents; and, for platform admins, refunds of invoiced ones.
import { useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, api } from '../../api.ts';
import { Dialog } from '../../components/dialog.tsx';
import { Field, FormError, describedBy, fieldError } from '../../components/field.tsx';
import { Table } from '../../components/table.tsx';
import { useAction } from '../../components/use-action.ts';
import { formatIst, formatRupees } from '../../format.ts';
import { documentKindText, documentPdfPath, refundStateText, type CursorPage, type Refund, type TopUp, type TopUpState } from './billing-types.ts';
import { formatPaise, paiseInput, rupeesToPaise } from './paise.ts';
import { newIdempotencyKey } from '../../components/idempotency.ts';

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

/** A top-up just paid for (or whose payment failed): its state, re-read until it settles. */
export function TopUpWatch(props: { organisationId: string; topUpId: string; failed: boolean; onSettled(): void }) {
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
      <h2>{topUp === undefined ? 'Your top-up' : `Top-up: ${topUp.package_name} (${formatRupees(topUp.credit_micros)} credit)`}</h2>
      {message === '' ? null : <p class={tone} role={tone === 'form-error' ? 'alert' : 'status'}>{message}</p>}
      <FormError error={error} />
    </div>
  );
}

/** The organisation's top-ups, newest first: state, documents (PDF links) and, for platform admins, refunds of invoiced ones. */
export function TopUpList(props: { organisationId: string; version: number; canRefund: boolean; onChanged(): void }) {
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
            empty="No top-ups yet — buy a package above to add credit."
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
              ...(props.canRefund ? [{
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
  const [idempotencyKey] = useState(newIdempotencyKey);
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
