import type { Queryable } from '@gateway/db';
import { issueTopUpDocument } from '../../invoicing/domain/tax-documents.ts';
import type { ProviderPayment } from './payment-provider.ts';
import { canMove, moveTopUp, recordTransition, type TopUpCause } from './topup-state.ts';
import { findTopUp, findTopUpByOrder, hasTransitionForPayment, recordWebhookEvent, type TopUp } from './topup-store.ts';
import { requireProvider, type TopUpsDeps } from './topups-deps.ts';
import { recordUnmatchedPayment, type UnmatchedPaymentInput, type UnmatchedSource } from './unmatched-payments.ts';

/** A webhook event's id and name, recorded with what it applied so a repeat changes nothing. */
export interface WebhookEventRef {
  id: string;
  type: string;
}

/** What became of one payment signal: `unmatched` — acknowledged and recorded, as it matches nothing the gateway sold. */
export type WebhookOutcome = 'processed' | 'repeated' | 'ignored' | 'unmatched';

/** The cause recorded when a second captured payment of an order is refunded. */
const duplicateRefundCause = 'duplicate_payment_refunded';

/** The cause recorded (once per payment) when a captured payment's amount or currency is not the top-up's. */
const amountMismatchCause = 'payment_amount_mismatch';

/**
 * Refunds a second captured payment of an already-paid order, once, and records it on the
 * top-up (cause duplicate_payment_refunded). The provider is called with no transaction open
 * (a stalled provider must hold no row lock or connection): the payment is read first (one
 * already refunded, a refund whose record was lost, is only recorded), the refund carries the
 * idempotency key `dup_<payment id>` (racing signals make one refund), and the record is written
 * afterwards under the row lock, once. A failure leaves nothing recorded, so the next signal
 * (the webhook's retry, reconciliation, the payments sweep) tries again.
 */
async function refundDuplicatePayment(deps: TopUpsDeps, topUpId: string, paymentId: string, cause: TopUpCause): Promise<void> {
  const topUp = await findTopUp(deps.db, topUpId);
  if (topUp?.providerPaymentId == null || topUp.providerPaymentId === paymentId) return;
  if (await hasTransitionForPayment(deps.db, topUpId, duplicateRefundCause, paymentId)) return;
  const current = await requireProvider(deps).fetchPayment(paymentId);
  let refundId: string | null = null;
  if (current.status === 'captured') {
    const refund = await requireProvider(deps).refundPayment({
      paymentId, amountPaise: current.amountPaise, receipt: `dup_${paymentId}`.slice(0, 40),
      notes: { organisation_id: topUp.organisationId, topup_id: topUp.id, reason: 'duplicate payment of an order already paid' },
    });
    refundId = refund.id;
  } else if (current.status !== 'refunded') {
    return;
  }
  await deps.db.transaction(async (tx) => {
    const locked = await findTopUp(tx, topUpId, { forUpdate: true });
    if (!locked || await hasTransitionForPayment(tx, topUpId, duplicateRefundCause, paymentId)) return;
    await recordTransition(tx, {
      topUpId, from: locked.state, to: locked.state, cause: duplicateRefundCause,
      details: { payment_id: paymentId, amount_paise: current.amountPaise.toString(), refund_id: refundId, signal: cause },
    });
  });
}

/**
 * Records a payment that matches nothing the gateway sold (recordUnmatchedPayment, in the
 * caller's transaction) and returns the warning to give once that transaction has committed
 * (undefined when it was already on the record): operators hear of each payment once.
 */
export async function recordUnmatched(deps: TopUpsDeps, tx: Queryable, input: UnmatchedPaymentInput): Promise<(() => void) | undefined> {
  if (!await recordUnmatchedPayment(tx, input)) return undefined;
  return () => {
    deps.logger?.warn({
      reason: input.reason, source: input.source, eventId: input.eventId, eventType: input.eventType, paymentId: input.paymentId,
      orderId: input.orderId, amountPaise: input.amountPaise?.toString() ?? null, currency: input.currency,
    }, 'payment matches no top-up; recorded as unmatched, not credited (a platform admin decides: GET /admin/v1/unmatched-payments)');
    deps.onUnmatchedPayment?.(input.source);
  };
}

/** What an unmatched record says of a payment, by the signal that brought it. */
function unmatchedOf(payment: ProviderPayment, reason: UnmatchedPaymentInput['reason'], source: UnmatchedSource, event?: WebhookEventRef): UnmatchedPaymentInput {
  return {
    source, reason, eventId: event?.id ?? null, eventType: event?.type ?? `payment.${payment.status}`, paymentId: payment.id, orderId: payment.orderId,
    amountPaise: payment.amountPaise, currency: payment.currency, paymentStatus: payment.status, method: payment.method,
  };
}

/** The unmatched-record source of a signal's cause. */
function sourceOf(cause: TopUpCause): UnmatchedSource {
  if (cause === 'payment_sweep') return 'sweep';
  return cause.startsWith('webhook:') ? 'webhook' : 'reconciliation';
}

/**
 * An authorised payment (an account on manual capture, or a late authorisation): captured
 * through the provider when it is the first payment of an unpaid top-up's order, of its amount
 * and currency, then settled like any capture; otherwise left uncaptured (Razorpay returns an
 * authorisation not captured within 3 days to the payer) and recorded as unmatched for a person.
 * The provider is called with no transaction open. A capture that another signal made first is
 * read back and settled.
 */
export async function captureAuthorizedPayment(deps: TopUpsDeps, payment: ProviderPayment, cause: TopUpCause): Promise<void> {
  const topUp = payment.orderId === null ? undefined : await findTopUpByOrder(deps.db, payment.orderId);
  const capturable = topUp !== undefined && topUp.providerPaymentId === null && canMove(topUp.state, 'paid')
    && payment.amountPaise === topUp.pricePaise && payment.currency === 'INR';
  if (!capturable) {
    const warn = await deps.db.transaction((tx) => recordUnmatched(deps, tx, unmatchedOf(payment, 'authorized_not_captured', sourceOf(cause))));
    warn?.();
    return;
  }
  let captured: ProviderPayment;
  try {
    captured = await requireProvider(deps).capturePayment({ paymentId: payment.id, amountPaise: payment.amountPaise, currency: payment.currency });
  } catch (error) {
    const current = await requireProvider(deps).fetchPayment(payment.id);
    if (current.status !== 'captured') throw error;
    captured = current;
  }
  await settleCapturedPayment(deps, captured, cause);
}

/**
 * Puts a captured payment of the wrong amount or currency on the record, once per payment (under
 * the top-up's row lock, the caller's transaction), and warns the operators: the top-up stays
 * unpaid and nothing is credited or refunded automatically — whether to refund, or to credit by
 * hand, is a person's decision (docs/payments.md). Amounts in paise. Returns the warning to give
 * once the transaction has committed (undefined when the payment was already on the record): a
 * transaction retried on a deadlock must not warn or count twice.
 */
async function recordAmountMismatch(deps: TopUpsDeps, tx: Queryable, topUp: TopUp, payment: ProviderPayment, cause: TopUpCause): Promise<(() => void) | undefined> {
  if (await hasTransitionForPayment(tx, topUp.id, amountMismatchCause, payment.id)) return undefined;
  await recordTransition(tx, {
    topUpId: topUp.id, from: topUp.state, to: topUp.state, cause: amountMismatchCause,
    details: {
      payment_id: payment.id, expected_paise: topUp.pricePaise.toString(), expected_currency: 'INR',
      received_paise: payment.amountPaise.toString(), received_currency: payment.currency,
    },
  });
  return () => {
    deps.logger?.warn({
      topUpId: topUp.id, organisationId: topUp.organisationId, paymentId: payment.id, orderId: payment.orderId,
      expectedPaise: topUp.pricePaise.toString(), expectedCurrency: 'INR', receivedPaise: payment.amountPaise.toString(), receivedCurrency: payment.currency,
    }, 'top-up: captured payment does not match the order\'s amount or currency; not credited, not refunded (a person decides)');
    deps.onAmountMismatch?.(cause);
  };
}

/**
 * Records a captured payment against its order's top-up, in one transaction under the top-up's
 * row lock (with the webhook event's id, when it came by webhook, so a repeat changes nothing):
 * the first captured payment moves it to paid; the same payment again changes nothing; another
 * captured payment of the same order is never credited (settleCapturedPayment refunds it, after
 * this transaction); a capture of another amount or currency is only recorded
 * (recordAmountMismatch). Returns the top-up's id to finish settling (undefined when no top-up
 * has the order) and whether the webhook event had been processed before.
 */
async function recordCapturedPayment(
  deps: TopUpsDeps, payment: ProviderPayment, cause: TopUpCause, event?: WebhookEventRef,
): Promise<{ topUpId: string | undefined; repeated: boolean; unmatched: boolean }> {
  // Set by the attempt that commits (each retry starts afresh), given after the commit.
  let warn: (() => void) | undefined;
  const orderId = payment.orderId;
  const recorded = await deps.db.transaction(async (tx) => {
    warn = undefined;
    if (event !== undefined && !await recordWebhookEvent(tx, event.id, event.type)) {
      // A repeated delivery: nothing is applied again, but an unfinished settlement may be finished.
      return { topUpId: orderId === null ? undefined : (await findTopUpByOrder(tx, orderId))?.id, repeated: true, unmatched: false };
    }
    const topUp = orderId === null ? undefined : await findTopUpByOrder(tx, orderId, { forUpdate: true });
    if (!topUp) {
      // A capture with no order, or of an order no top-up has: money received that nothing here sold.
      warn = await recordUnmatched(deps, tx, unmatchedOf(payment, orderId === null ? 'no_order' : 'unknown_order', sourceOf(cause), event));
      return { topUpId: undefined, repeated: false, unmatched: true };
    }
    if (topUp.providerPaymentId === null) {
      // Orders fix the amount, so a capture of another amount or currency is not ours to credit.
      if (payment.amountPaise !== topUp.pricePaise || payment.currency !== 'INR') {
        warn = await recordAmountMismatch(deps, tx, topUp, payment, cause);
        return { topUpId: topUp.id, repeated: false, unmatched: false };
      }
      if (!canMove(topUp.state, 'paid')) return { topUpId: topUp.id, repeated: false, unmatched: false };
      await moveTopUp(tx, {
        topUpId: topUp.id, from: topUp.state, to: 'paid', cause, providerPaymentId: payment.id,
        details: { payment_id: payment.id, method: payment.method },
      });
    }
    return { topUpId: topUp.id, repeated: false, unmatched: false };
  });
  warn?.();
  return recorded;
}

/**
 * Finishes a paid top-up: the ledger Credit `topup:<id>` (idempotent, outside any lock) → credited,
 * then its tax document → invoiced. Each move re-checks the state under the row lock, so
 * concurrent settlers credit once (the ledger keeps one credit per id) and record each move once.
 * A failure (ledger down) leaves the top-up paid or credited: the reconciliation job finishes it.
 */
export async function finishSettlement(deps: TopUpsDeps, topUpId: string, cause: TopUpCause): Promise<void> {
  const topUp = await findTopUp(deps.db, topUpId);
  if (!topUp) return;
  if (topUp.state === 'paid') {
    const creditId = `topup:${topUp.id}`;
    await deps.ledger.credit({ creditId, organisationId: topUp.organisationId, amountMicros: topUp.creditMicros, reason: `top-up ${topUp.id}`, purchased: true });
    await deps.db.transaction(async (tx) => {
      const locked = await findTopUp(tx, topUpId, { forUpdate: true });
      if (locked?.state === 'paid') await moveTopUp(tx, { topUpId, from: 'paid', to: 'credited', cause, details: { credit_id: creditId } });
    });
  }
  await deps.db.transaction(async (tx) => {
    const locked = await findTopUp(tx, topUpId, { forUpdate: true });
    if (locked?.state !== 'credited') return;
    const document = await issueTopUpDocument(tx, deps.invoicing, topUpId);
    await moveTopUp(tx, { topUpId, from: 'credited', to: 'invoiced', cause, details: { document_id: document.documentId, serial: document.serial, kind: document.kind } });
  });
}

/**
 * Settles a captured payment: recorded (paid), credited once, invoiced; a second payment of an
 * order already paid is refunded; one no top-up has is recorded as unmatched. The one path of
 * every signal. Returns what became of it: `repeated` when the webhook event had been processed
 * before (a repeat still finishes what an earlier delivery left undone).
 */
export async function settleCapturedPayment(deps: TopUpsDeps, payment: ProviderPayment, cause: TopUpCause, event?: WebhookEventRef): Promise<WebhookOutcome> {
  const { topUpId, repeated, unmatched } = await recordCapturedPayment(deps, payment, cause, event);
  if (topUpId !== undefined) {
    await finishSettlement(deps, topUpId, cause);
    await refundDuplicatePayment(deps, topUpId, payment.id, cause);
  }
  return repeated ? 'repeated' : unmatched ? 'unmatched' : 'processed';
}

/**
 * Records a failed payment: the top-up fails only if it is still awaiting payment (a capture,
 * earlier or later, wins). With the webhook event's id in the same transaction; returns whether
 * that event had been processed before.
 */
export async function recordFailedPayment(deps: TopUpsDeps, payment: ProviderPayment, cause: TopUpCause, event?: WebhookEventRef): Promise<boolean> {
  return deps.db.transaction(async (tx) => {
    if (event !== undefined && !await recordWebhookEvent(tx, event.id, event.type)) return true;
    const topUp = payment.orderId === null ? undefined : await findTopUpByOrder(tx, payment.orderId, { forUpdate: true });
    if (topUp?.state !== 'pending_payment') return false;
    await moveTopUp(tx, {
      topUpId: topUp.id, from: 'pending_payment', to: 'failed', cause,
      details: { payment_id: payment.id, method: payment.method, error_description: payment.errorDescription },
    });
    return false;
  });
}
