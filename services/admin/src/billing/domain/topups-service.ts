import { createHash } from 'node:crypto';
import type { Database, Queryable } from '@gateway/db';
import { GatewayError } from '@gateway/errors';
import type { Logger } from '@gateway/logger';
import type { AdminConfig } from '../../config.ts';
import { personIdOf, requirePlatformAdmin, type Actor } from '../../common/domain/actor.ts';
import { changedFields, recordAuditEvent } from '../../common/domain/audit-log.ts';
import {
  billingProfileProblems, billingSnapshotOf, findBillingProfile, upsertBillingProfile, type BillingProfile, type BillingProfileInput,
} from './billing-profile.ts';
import { isId, newId } from '../../common/domain/ids.ts';
import type { LedgerPort } from '../../common/domain/ledger-port.ts';
import type { LiveEvents } from '../../common/domain/live-events.ts';
import type { PaymentProvider, ProviderPayment } from './payment-provider.ts';
import { notFound, type ResourceAccess } from '../../common/domain/resource-access.ts';
import { issueTopUpDocument } from '../../invoicing/domain/tax-documents.ts';
import { canMove, moveTopUp, recordTransition, type TopUpCause } from './topup-state.ts';
import {
  attachProviderOrder, claimTopUpsToReconcile, findPackage, findTopUp, findTopUpByOrder, hasTransitionForPayment, insertPackage, insertTopUp,
  listPackages, listTopUpDocuments, listTopUps, listTransitions, recordWebhookEvent, updatePackage,
  type TopUp, type TopUpDocumentRef, type TopUpPackage, type TopUpTransition,
} from './topup-store.ts';
import { listUnmatchedPayments, recordUnmatchedPayment, type UnmatchedPayment, type UnmatchedPaymentInput, type UnmatchedSource } from './unmatched-payments.ts';
import { applyRefundWebhookEvent, type RefundWebhookEvent } from './refund-events.ts';

/** What the top-ups aggregate is built from. */
export interface TopUpsServiceDeps {
  db: Database;
  ledger: LedgerPort;
  access: ResourceAccess;
  config: AdminConfig;
  /** undefined: PAYMENT_PROVIDER unset, no purchases. */
  provider: PaymentProvider | undefined;
  liveEvents: LiveEvents;
  /** Where a captured payment the admin will not credit (amount mismatch) is reported; silent when absent. */
  logger?: Logger | undefined;
  /** Told of each captured payment newly recorded as not matching its order (metrics), with the signal that brought it. */
  onAmountMismatch?: ((cause: TopUpCause) => void) | undefined;
  /** Told of each payment newly recorded as matching nothing the gateway sold (metrics), with the signal that brought it. */
  onUnmatchedPayment?: ((source: UnmatchedSource) => void) | undefined;
  /** Told of each payment reversal a webhook recorded with a shortfall (metrics). */
  onPaymentShortfall?: (() => void) | undefined;
}

/** A top-up as the API shows it: the purchase, its documents and its transitions. */
export interface TopUpView extends TopUp {
  documents: TopUpDocumentRef[];
  transitions: TopUpTransition[];
}

/** What the browser needs to pay a new top-up: Razorpay Checkout's options, or the local provider's pay page. */
export interface CheckoutBlock {
  provider: 'razorpay' | 'local';
  keyId: string;
  orderId: string;
  /** Paise, GST included. */
  amountPaise: bigint;
  currency: 'INR';
  /** The seller's name Checkout shows. */
  name: string;
  description: string;
  /** The local provider's pay page (returns to the dashboard); null with Razorpay (Checkout opens in the page). */
  payPageUrl: string | null;
}

/**
 * A provider webhook's event, as far as top-ups read it (the HTTP layer reads it from the body,
 * only after the signature over the raw bytes has been verified). Amounts in paise.
 */
export type PaymentWebhookEvent =
  | { type: 'payment.captured' | 'order.paid' | 'payment.failed' | 'payment.authorized'; payment: ProviderPayment }
  | RefundWebhookEvent
  | { type: 'other'; name: string }
  /** A correctly signed body that is not an event this admin can read (its `event` name when it had one). */
  | { type: 'unreadable'; name: string | null };

/** What became of one webhook delivery: `unmatched` — acknowledged and recorded, as it matches nothing the gateway sold. */
export type WebhookOutcome = 'processed' | 'repeated' | 'ignored' | 'unmatched';

/** The cause recorded when a second captured payment of an order is refunded. */
const duplicateRefundCause = 'duplicate_payment_refunded';

/** The cause recorded (once per payment) when a captured payment's amount or currency is not the top-up's. */
const amountMismatchCause = 'payment_amount_mismatch';

/** Top-ups reconciled per pass at most (the next pass takes the next ones). */
const reconcileBatch = 50;

/** Payments per page of the sweep's list (Razorpay's maximum). */
const sweepPageSize = 100;

/** Pages one sweep reads at most (10,000 payments), so a pass ends; the next pass starts again from the newest. */
const sweepMaxPages = 100;

/** A webhook event id: Razorpay's x-razorpay-event-id, word characters and a few separators. */
const eventIdPattern = /^[A-Za-z0-9_.:-]{1,200}$/;

/** Top-up packages, billing profiles, purchases and their payment signals (route tag "billing"). */
export function createTopUpsService(deps: TopUpsServiceDeps) {
  const { db, ledger, access, config, provider, logger } = deps;

  /**
   * The organisation, if the actor sees it (404). The role each call needs is its route's, checked
   * once before the call (http/admin-http-app.ts authorizeRoute), not restated here.
   */
  async function organisationFor(actor: Actor, organisationId: string) {
    return access.requireOrganisation(actor, organisationId);
  }

  function requireProvider(): PaymentProvider {
    if (provider === undefined) {
      throw new GatewayError('service_unavailable', { publicMessage: 'Top-ups are not available: no payment provider is configured (PAYMENT_PROVIDER).' });
    }
    return provider;
  }

  async function viewOf(topUp: TopUp): Promise<TopUpView> {
    return { ...topUp, documents: await listTopUpDocuments(db, topUp.id), transitions: await listTransitions(db, topUp.id) };
  }

  /** The organisation's top-up, or not_found (another organisation's looks the same as none). */
  async function topUpOf(organisationId: string, topUpId: string): Promise<TopUp> {
    const topUp = isId('topUp', topUpId) ? await findTopUp(db, topUpId) : undefined;
    if (!topUp || topUp.organisationId !== organisationId) throw notFound('top-up', topUpId, 'topup_id');
    return topUp;
  }

  /**
   * Refunds a second captured payment of an already-paid order, once, and records it on the
   * top-up (cause duplicate_payment_refunded). The provider is called with no transaction open
   * (a stalled provider must hold no row lock or connection): the payment is read first (one
   * already refunded, a refund whose record was lost, is only recorded), the refund carries the
   * idempotency key `dup_<payment id>` (racing signals make one refund), and the record is written
   * afterwards under the row lock, once. A failure leaves nothing recorded, so the next signal
   * (the webhook's retry, reconciliation, the payments sweep) tries again.
   */
  async function refundDuplicatePayment(topUpId: string, paymentId: string, cause: TopUpCause): Promise<void> {
    const topUp = await findTopUp(db, topUpId);
    if (topUp?.providerPaymentId == null || topUp.providerPaymentId === paymentId) return;
    if (await hasTransitionForPayment(db, topUpId, duplicateRefundCause, paymentId)) return;
    const current = await requireProvider().fetchPayment(paymentId);
    let refundId: string | null = null;
    if (current.status === 'captured') {
      const refund = await requireProvider().refundPayment({
        paymentId, amountPaise: current.amountPaise, receipt: `dup_${paymentId}`.slice(0, 40),
        notes: { organisation_id: topUp.organisationId, topup_id: topUp.id, reason: 'duplicate payment of an order already paid' },
      });
      refundId = refund.id;
    } else if (current.status !== 'refunded') {
      return;
    }
    await db.transaction(async (tx) => {
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
  async function recordUnmatched(tx: Queryable, input: UnmatchedPaymentInput): Promise<(() => void) | undefined> {
    if (!await recordUnmatchedPayment(tx, input)) return undefined;
    return () => {
      logger?.warn({
        reason: input.reason, source: input.source, eventId: input.eventId, eventType: input.eventType, paymentId: input.paymentId,
        orderId: input.orderId, amountPaise: input.amountPaise?.toString() ?? null, currency: input.currency,
      }, 'payment matches no top-up; recorded as unmatched, not credited (a platform admin decides: GET /admin/v1/unmatched-payments)');
      deps.onUnmatchedPayment?.(input.source);
    };
  }

  /** What an unmatched record says of a payment, by the signal that brought it. */
  function unmatchedOf(payment: ProviderPayment, reason: UnmatchedPaymentInput['reason'], source: UnmatchedSource, event?: { id: string; type: string }): UnmatchedPaymentInput {
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
  async function captureAuthorizedPayment(payment: ProviderPayment, cause: TopUpCause): Promise<void> {
    const topUp = payment.orderId === null ? undefined : await findTopUpByOrder(db, payment.orderId);
    const capturable = topUp !== undefined && topUp.providerPaymentId === null && canMove(topUp.state, 'paid')
      && payment.amountPaise === topUp.pricePaise && payment.currency === 'INR';
    if (!capturable) {
      const warn = await db.transaction((tx) => recordUnmatched(tx, unmatchedOf(payment, 'authorized_not_captured', sourceOf(cause))));
      warn?.();
      return;
    }
    let captured: ProviderPayment;
    try {
      captured = await requireProvider().capturePayment({ paymentId: payment.id, amountPaise: payment.amountPaise, currency: payment.currency });
    } catch (error) {
      const current = await requireProvider().fetchPayment(payment.id);
      if (current.status !== 'captured') throw error;
      captured = current;
    }
    await settleCapturedPayment(captured, cause);
  }

  /**
   * Puts a captured payment of the wrong amount or currency on the record, once per payment (under
   * the top-up's row lock, the caller's transaction), and warns the operators: the top-up stays
   * unpaid and nothing is credited or refunded automatically — whether to refund, or to credit by
   * hand, is a person's decision (docs/payments.md). Amounts in paise. Returns the warning to give
   * once the transaction has committed (undefined when the payment was already on the record): a
   * transaction retried on a deadlock must not warn or count twice.
   */
  async function recordAmountMismatch(tx: Queryable, topUp: TopUp, payment: ProviderPayment, cause: TopUpCause): Promise<(() => void) | undefined> {
    if (await hasTransitionForPayment(tx, topUp.id, amountMismatchCause, payment.id)) return undefined;
    await recordTransition(tx, {
      topUpId: topUp.id, from: topUp.state, to: topUp.state, cause: amountMismatchCause,
      details: {
        payment_id: payment.id, expected_paise: topUp.pricePaise.toString(), expected_currency: 'INR',
        received_paise: payment.amountPaise.toString(), received_currency: payment.currency,
      },
    });
    return () => {
      logger?.warn({
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
    payment: ProviderPayment, cause: TopUpCause, event?: { id: string; type: string },
  ): Promise<{ topUpId: string | undefined; repeated: boolean; unmatched: boolean }> {
    // Set by the attempt that commits (each retry starts afresh), given after the commit.
    let warn: (() => void) | undefined;
    const orderId = payment.orderId;
    const recorded = await db.transaction(async (tx) => {
      warn = undefined;
      if (event !== undefined && !await recordWebhookEvent(tx, event.id, event.type)) {
        // A repeated delivery: nothing is applied again, but an unfinished settlement may be finished.
        return { topUpId: orderId === null ? undefined : (await findTopUpByOrder(tx, orderId))?.id, repeated: true, unmatched: false };
      }
      const topUp = orderId === null ? undefined : await findTopUpByOrder(tx, orderId, { forUpdate: true });
      if (!topUp) {
        // A capture with no order, or of an order no top-up has: money received that nothing here sold.
        warn = await recordUnmatched(tx, unmatchedOf(payment, orderId === null ? 'no_order' : 'unknown_order', sourceOf(cause), event));
        return { topUpId: undefined, repeated: false, unmatched: true };
      }
      if (topUp.providerPaymentId === null) {
        // Orders fix the amount, so a capture of another amount or currency is not ours to credit.
        if (payment.amountPaise !== topUp.pricePaise || payment.currency !== 'INR') {
          warn = await recordAmountMismatch(tx, topUp, payment, cause);
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
  async function finishSettlement(topUpId: string, cause: TopUpCause): Promise<void> {
    const topUp = await findTopUp(db, topUpId);
    if (!topUp) return;
    if (topUp.state === 'paid') {
      const creditId = `topup:${topUp.id}`;
      await ledger.credit({ creditId, organisationId: topUp.organisationId, amountMicros: topUp.creditMicros, reason: `top-up ${topUp.id}`, purchased: true });
      await db.transaction(async (tx) => {
        const locked = await findTopUp(tx, topUpId, { forUpdate: true });
        if (locked?.state === 'paid') await moveTopUp(tx, { topUpId, from: 'paid', to: 'credited', cause, details: { credit_id: creditId } });
      });
    }
    await db.transaction(async (tx) => {
      const locked = await findTopUp(tx, topUpId, { forUpdate: true });
      if (locked?.state !== 'credited') return;
      const document = await issueTopUpDocument(tx, config, topUpId);
      await moveTopUp(tx, { topUpId, from: 'credited', to: 'invoiced', cause, details: { document_id: document.documentId, serial: document.serial, kind: document.kind } });
    });
  }

  /**
   * Settles a captured payment: recorded (paid), credited once, invoiced; a second payment of an
   * order already paid is refunded; one no top-up has is recorded as unmatched. The one path of
   * every signal. Returns what became of it: `repeated` when the webhook event had been processed
   * before (a repeat still finishes what an earlier delivery left undone).
   */
  async function settleCapturedPayment(payment: ProviderPayment, cause: TopUpCause, event?: { id: string; type: string }): Promise<WebhookOutcome> {
    const { topUpId, repeated, unmatched } = await recordCapturedPayment(payment, cause, event);
    if (topUpId !== undefined) {
      await finishSettlement(topUpId, cause);
      await refundDuplicatePayment(topUpId, payment.id, cause);
    }
    return repeated ? 'repeated' : unmatched ? 'unmatched' : 'processed';
  }

  /**
   * Records a failed payment: the top-up fails only if it is still awaiting payment (a capture,
   * earlier or later, wins). With the webhook event's id in the same transaction; returns whether
   * that event had been processed before.
   */
  async function recordFailedPayment(payment: ProviderPayment, cause: TopUpCause, event?: { id: string; type: string }): Promise<boolean> {
    return db.transaction(async (tx) => {
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

  /** Settles one claimed top-up from the provider's answer (or expires it); see reconcileTopUps. */
  /**
   * An order's payments as the provider has them; undefined when the provider does not know the
   * order (it answers 400: the local provider after a restart, or an order made with other keys).
   * No payment can have been captured on an order the provider does not know, so such a top-up
   * simply expires at its deadline instead of failing every reconciliation pass forever.
   */
  async function fetchPaymentsOfOrder(orderId: string): Promise<ProviderPayment[] | undefined> {
    try {
      return await requireProvider().fetchOrderPayments(orderId);
    } catch (error) {
      if (error instanceof GatewayError && error.code === 'invalid_request') return undefined;
      throw error;
    }
  }

  async function reconcileTopUp(topUpId: string): Promise<void> {
    const topUp = await findTopUp(db, topUpId);
    if (!topUp) return;
    if (topUp.state === 'paid' || topUp.state === 'credited') {
      await finishSettlement(topUpId, 'reconciliation');
      return;
    }
    const expired = topUp.expiresAt.getTime() <= Date.now();
    let providerForgotOrder = false;
    // Every top-up whose order can still be paid: a capture after a failure or after the expiry is
    // money received, credited whenever it comes.
    if (topUp.providerOrderId !== null && (topUp.state === 'pending_payment' || topUp.state === 'failed' || topUp.state === 'expired')) {
      const payments = await fetchPaymentsOfOrder(topUp.providerOrderId);
      providerForgotOrder = payments === undefined;
      const captured = (payments ?? []).filter((payment) => payment.status === 'captured');
      for (const payment of captured) await settleCapturedPayment(payment, 'reconciliation');
      if (captured.length > 0) return;
      const authorized = (payments ?? []).filter((payment) => payment.status === 'authorized');
      for (const payment of authorized) await captureAuthorizedPayment(payment, 'reconciliation');
      if (authorized.length > 0) return;
      const failed = (payments ?? []).filter((payment) => payment.status === 'failed');
      if (!expired && failed.length > 0) await recordFailedPayment(failed.at(-1)!, 'reconciliation');
    }
    if (!expired) return;
    // Unpaid past expires_at (the provider was asked first, so no capture is missed).
    await db.transaction(async (tx) => {
      const locked = await findTopUp(tx, topUpId, { forUpdate: true });
      if (locked && (locked.state === 'created' || locked.state === 'pending_payment') && canMove(locked.state, 'expired')) {
        await moveTopUp(tx, {
          topUpId, from: locked.state, to: 'expired', cause: 'expiry',
          details: { expires_at: locked.expiresAt.toISOString(), ...(providerForgotOrder ? { provider_order: 'unknown to the provider' } : {}) },
        });
      }
    });
  }

  /**
   * Applies one payment the sweep found: a capture is settled like any signal (credited once, a
   * second payment of a paid order refunded, one no top-up has recorded as unmatched); an
   * authorised one is captured or recorded (captureAuthorizedPayment); others change nothing.
   */
  async function applySweptPayment(payment: ProviderPayment): Promise<void> {
    if (payment.status === 'captured') await settleCapturedPayment(payment, 'payment_sweep');
    else if (payment.status === 'authorized') await captureAuthorizedPayment(payment, 'payment_sweep');
  }

  return {
    /** The packages on sale (active), or all of them for a platform admin asking `includeInactive`. */
    async listTopUpPackages(actor: Actor, options: { includeInactive: boolean }): Promise<TopUpPackage[]> {
      if (options.includeInactive) requirePlatformAdmin(actor);
      return listPackages(db, options);
    },

    /** Creates a package (platform admins). */
    async createTopUpPackage(actor: Actor, input: { name: string; pricePaise: bigint; creditMicros: bigint; active: boolean; sortOrder: number }): Promise<TopUpPackage> {
      requirePlatformAdmin(actor);
      return db.transaction(async (tx) => {
        const created = await insertPackage(tx, { id: newId('topUpPackage'), ...input });
        await recordAuditEvent(tx, {
          actor, organisationId: null, action: 'topup_package.create', resourceType: 'topup_package', resourceId: created.id,
          changes: changedFields(undefined, created, { name: 'name', pricePaise: 'price_paise', creditMicros: 'credit_micros', active: 'active', sortOrder: 'sort_order' }),
        });
        return created;
      });
    },

    /** Changes a package (platform admins); purchases already made keep their terms. */
    async updateTopUpPackage(
      actor: Actor,
      packageId: string,
      changes: Partial<Pick<TopUpPackage, 'name' | 'pricePaise' | 'creditMicros' | 'active' | 'sortOrder'>>,
    ): Promise<TopUpPackage> {
      requirePlatformAdmin(actor);
      return db.transaction(async (tx) => {
        const before = isId('topUpPackage', packageId) ? await findPackage(tx, packageId, { forUpdate: true }) : undefined;
        if (!before) throw notFound('top-up package', packageId, 'package_id');
        const after = await updatePackage(tx, packageId, changes);
        const changed = changedFields(before, after, { name: 'name', pricePaise: 'price_paise', creditMicros: 'credit_micros', active: 'active', sortOrder: 'sort_order' });
        if (Object.keys(changed).length > 0) {
          await recordAuditEvent(tx, { actor, organisationId: null, action: 'topup_package.update', resourceType: 'topup_package', resourceId: packageId, changes: changed });
        }
        return after;
      });
    },

    /** The organisation's billing profile, or null when it has none yet. */
    async getBillingProfile(actor: Actor, organisationId: string): Promise<BillingProfile | null> {
      await organisationFor(actor, organisationId);
      return (await findBillingProfile(db, organisationId)) ?? null;
    },

    /**
     * Sets the organisation's billing profile (owners): the state code must be a GST state code,
     * a GSTIN well formed with its check character, registered in that state.
     */
    async putBillingProfile(actor: Actor, organisationId: string, input: BillingProfileInput): Promise<BillingProfile> {
      await organisationFor(actor, organisationId);
      const problems = billingProfileProblems(input);
      if (problems.length > 0) {
        throw new GatewayError('invalid_request', {
          publicMessage: problems.map(({ field, problem }) => `${field} ${problem}.`).join(' '),
          param: problems[0]!.field,
        });
      }
      return db.transaction(async (tx) => {
        await access.requireOrganisation(actor, organisationId, tx, { forUpdate: true });
        const before = await findBillingProfile(tx, organisationId, { forUpdate: true });
        const after = await upsertBillingProfile(tx, organisationId, input);
        const changed = changedFields(before, after, { legalName: 'legal_name', address: 'address', stateCode: 'state_code', gstin: 'gstin', country: 'country', email: 'email' });
        if (Object.keys(changed).length > 0) {
          await recordAuditEvent(tx, {
            actor, organisationId, action: before ? 'billing_profile.update' : 'billing_profile.create', resourceType: 'billing_profile',
            resourceId: organisationId, changes: changed,
          });
        }
        return after;
      });
    },

    /**
     * Buys a package (owners): a top-up with the package's terms and the billing profile as they
     * are now, then the provider's order for its price (receipt = top-up id), then pending_payment.
     * The local pay page sends the browser back to the dashboard: at ADMIN_PUBLIC_URL, or else at
     * `requestOrigin` (where the purchase came from).
     */
    async purchaseTopUp(actor: Actor, organisationId: string, input: { packageId: string; requestOrigin: string }): Promise<{ topUp: TopUpView; checkout: CheckoutBlock }> {
      await organisationFor(actor, organisationId);
      const paymentProvider = requireProvider();
      const created = await db.transaction(async (tx) => {
        const found = isId('topUpPackage', input.packageId) ? await findPackage(tx, input.packageId) : undefined;
        if (!found?.active) throw notFound('top-up package on sale', input.packageId, 'package_id');
        const profile = await findBillingProfile(tx, organisationId);
        if (!profile) {
          throw new GatewayError('conflict', { publicMessage: 'Set the organisation\'s billing profile (PUT .../billing-profile) before buying a top-up: invoices are made out to it.' });
        }
        const id = newId('topUp');
        await insertTopUp(tx, {
          id, organisationId, packageId: found.id, pricePaise: found.pricePaise, creditMicros: found.creditMicros, provider: paymentProvider.kind,
          billingSnapshot: billingSnapshotOf(profile), createdByPersonId: personIdOf(actor), expiresAt: new Date(Date.now() + config.TOPUP_EXPIRY_MS),
        });
        await recordTransition(tx, { topUpId: id, from: null, to: 'created', cause: 'purchase', details: { package_id: found.id } });
        await recordAuditEvent(tx, {
          actor, organisationId, action: 'topup.create', resourceType: 'topup', resourceId: id,
          changes: {
            package_id: { before: null, after: found.id },
            price_paise: { before: null, after: found.pricePaise.toString() },
            credit_micros: { before: null, after: found.creditMicros.toString() },
          },
        });
        return { id, package: found };
      });

      let orderId: string;
      try {
        orderId = (await paymentProvider.createOrder({
          amountPaise: created.package.pricePaise, receipt: created.id, notes: { organisation_id: organisationId, topup_id: created.id },
        })).id;
      } catch (error) {
        await db.transaction((tx) => moveTopUp(tx, {
          topUpId: created.id, from: 'created', to: 'failed', cause: 'provider_order_failed',
          details: { error: error instanceof GatewayError ? error.code : 'internal_error' },
        }));
        throw error;
      }
      await db.transaction(async (tx) => {
        await attachProviderOrder(tx, created.id, orderId);
        await moveTopUp(tx, { topUpId: created.id, from: 'created', to: 'pending_payment', cause: 'purchase', details: { order_id: orderId } });
      });
      const returnUrl = `${(config.ADMIN_PUBLIC_URL ?? input.requestOrigin).replace(/\/+$/, '')}/#/billing?topup=${created.id}`;
      return {
        topUp: await viewOf((await findTopUp(db, created.id))!),
        checkout: {
          provider: paymentProvider.kind, keyId: paymentProvider.keyId, orderId, amountPaise: created.package.pricePaise, currency: 'INR',
          name: config.INVOICE_SUPPLIER_NAME, description: `Top-up: ${created.package.name}`,
          payPageUrl: paymentProvider.payPageUrl?.(orderId, returnUrl) ?? null,
        },
      };
    },

    /** The organisation's top-ups, newest first (cursor: the previous page's last id). */
    async listTopUps(actor: Actor, organisationId: string, page: { limit: number; cursor?: string | undefined }): Promise<{ items: TopUpView[]; nextCursor: string | null }> {
      await organisationFor(actor, organisationId);
      const { items, hasMore } = await listTopUps(db, organisationId, { beforeId: page.cursor, limit: page.limit });
      const views: TopUpView[] = [];
      for (const item of items) views.push(await viewOf(item));
      return { items: views, nextCursor: hasMore ? items.at(-1)!.id : null };
    },

    /** One of the organisation's top-ups, with its documents and transitions. */
    async getTopUp(actor: Actor, organisationId: string, topUpId: string): Promise<TopUpView> {
      await organisationFor(actor, organisationId);
      return viewOf(await topUpOf(organisationId, topUpId));
    },

    /**
     * The browser's Checkout callback (owners): the signature is verified, then the payment is
     * read from the provider (the browser's word is not taken for a capture) and settled exactly
     * as a webhook would settle it. Returns the top-up as it is then.
     */
    async completeTopUpCheckout(
      actor: Actor,
      organisationId: string,
      topUpId: string,
      input: { orderId: string; paymentId: string; signature: string },
    ): Promise<TopUpView> {
      await organisationFor(actor, organisationId);
      const paymentProvider = requireProvider();
      const topUp = await topUpOf(organisationId, topUpId);
      if (topUp.providerOrderId === null || input.orderId !== topUp.providerOrderId) {
        throw new GatewayError('invalid_request', { publicMessage: 'razorpay_order_id is not this top-up\'s order.', param: 'razorpay_order_id' });
      }
      if (!paymentProvider.verifyCheckoutSignature(input)) {
        throw new GatewayError('invalid_request', { publicMessage: 'razorpay_signature does not match the order and payment.', param: 'razorpay_signature' });
      }
      const payment = await paymentProvider.fetchPayment(input.paymentId);
      if (payment.orderId !== topUp.providerOrderId) {
        throw new GatewayError('invalid_request', { publicMessage: 'razorpay_payment_id is not a payment of this top-up\'s order.', param: 'razorpay_payment_id' });
      }
      if (payment.status === 'captured') await settleCapturedPayment(payment, 'checkout_callback');
      else if (payment.status === 'failed') await recordFailedPayment(payment, 'checkout_callback');
      return viewOf((await findTopUp(db, topUpId))!);
    },

    /**
     * A provider webhook (public): the signature over the raw bytes is verified first (a forged or
     * re-serialised body is refused and changes nothing), only then is the body read (`readEvent`,
     * the wire format's parser), and the event applied once per event id, in the transaction that
     * records the id. Events may come in any order and more than once; unknown events are ignored;
     * a genuine event that matches no top-up (or cannot be read) is recorded as unmatched — every
     * correctly signed delivery is answered 2xx.
     */
    async receivePaymentWebhook(
      input: { rawBody: Buffer; signature: string | undefined; eventId: string | undefined },
      readEvent: (rawBody: Buffer) => PaymentWebhookEvent,
    ): Promise<WebhookOutcome> {
      const paymentProvider = requireProvider();
      if (!paymentProvider.verifyWebhookSignature(input.rawBody, input.signature)) {
        throw new GatewayError('invalid_request', { publicMessage: 'The webhook signature (X-Razorpay-Signature) does not match the body.' });
      }
      // From here on the event is genuine: it gets a 2xx whatever it holds, since Razorpay retries
      // anything else for 24 hours and then disables the endpoint, losing the events that matter.
      const event = readEvent(input.rawBody);
      if (event.type === 'other') return 'ignored';
      // Razorpay always sends an event id; without a usable one, the body's digest stands in, so a
      // repeat of the same body is still recognised.
      const eventId = input.eventId !== undefined && eventIdPattern.test(input.eventId)
        ? input.eventId
        : `body:${createHash('sha256').update(input.rawBody).digest('hex')}`;
      const ref = { id: eventId, type: event.type };
      switch (event.type) {
        case 'unreadable': {
          let warn: (() => void) | undefined;
          const repeated = await db.transaction(async (tx) => {
            warn = undefined;
            if (!await recordWebhookEvent(tx, eventId, event.name ?? 'unreadable')) return true;
            warn = await recordUnmatched(tx, {
              source: 'webhook', reason: 'unreadable_event', eventId, eventType: event.name ?? 'unknown', paymentId: null, orderId: null,
              amountPaise: null, currency: null, paymentStatus: null, method: null,
            });
            return false;
          });
          warn?.();
          return repeated ? 'repeated' : 'unmatched';
        }
        case 'payment.authorized':
          // With automatic capture (how orders are made) a capture follows at once; an account on
          // manual capture is captured by reconciliation and the sweep (captureAuthorizedPayment),
          // which also record an authorisation no top-up has.
          return 'ignored';
        case 'payment.captured': case 'order.paid':
          if (event.payment.status !== 'captured') return 'ignored';
          return settleCapturedPayment(event.payment, `webhook:${event.type}`, ref);
        case 'payment.failed':
          return await recordFailedPayment(event.payment, `webhook:${event.type}`, ref) ? 'repeated' : 'processed';
        default:
          // Refund and dispute events: domain/refund-events.ts.
          return applyRefundWebhookEvent({ db, ledger, config, logger, onPaymentShortfall: deps.onPaymentShortfall }, event, eventId);
      }
    },

    /**
     * One reconciliation pass (the payment jobs run it every PAYMENT_RECONCILE_INTERVAL_MS): claims
     * top-ups untouched for PAYMENT_RECONCILE_AFTER_MS whose outcome may still change, asks the
     * provider for each order's payments and settles from its answer (a missed webhook), finishes
     * settlements cut short (credit, document), and expires the unpaid past expires_at. A top-up
     * whose provider call fails is retried at a later pass. Returns how many were looked at and
     * the ids that failed.
     */
    async reconcileTopUps(): Promise<{ checked: number; failed: Array<{ topUpId: string; error: unknown }> }> {
      if (provider === undefined) return { checked: 0, failed: [] };
      const ids = await db.transaction((tx) => claimTopUpsToReconcile(tx, {
        quietMs: config.PAYMENT_RECONCILE_AFTER_MS, lateQuietMs: config.PAYMENT_SWEEP_INTERVAL_MS, lateWindowMs: config.PAYMENT_SWEEP_WINDOW_MS, limit: reconcileBatch,
      }));
      const failed: Array<{ topUpId: string; error: unknown }> = [];
      for (const topUpId of ids) {
        try {
          await reconcileTopUp(topUpId);
        } catch (error) {
          failed.push({ topUpId, error });
        }
      }
      return { checked: ids.length, failed };
    },

    /**
     * One payments sweep (the payment jobs run it every PAYMENT_SWEEP_INTERVAL_MS): lists the
     * provider's payments created in the last PAYMENT_SWEEP_WINDOW_MS, page by page, and applies
     * each (applySweptPayment) — a capture whose webhook was lost and whose top-up reconciliation no
     * longer asks about (already invoiced: a second capture, refunded), a capture no order matches
     * (recorded), an authorised payment (captured or recorded). Idempotent: a payment already
     * applied changes nothing. Returns how many payments were read and the ones that failed (tried
     * again at the next sweep).
     */
    async sweepPayments(): Promise<{ checked: number; failed: Array<{ paymentId: string; error: unknown }> }> {
      if (provider === undefined) return { checked: 0, failed: [] };
      const toUnixSeconds = Math.floor(Date.now() / 1000);
      const fromUnixSeconds = toUnixSeconds - Math.ceil(config.PAYMENT_SWEEP_WINDOW_MS / 1000);
      const failed: Array<{ paymentId: string; error: unknown }> = [];
      let checked = 0;
      for (let page = 0; page < sweepMaxPages; page += 1) {
        const payments = await provider.listPayments({ fromUnixSeconds, toUnixSeconds, count: sweepPageSize, skip: page * sweepPageSize });
        for (const payment of payments) {
          checked += 1;
          try {
            await applySweptPayment(payment);
          } catch (error) {
            failed.push({ paymentId: payment.id, error });
          }
        }
        if (payments.length < sweepPageSize) break;
      }
      return { checked, failed };
    },

    /** Payments that matched nothing the gateway sold, newest first (platform admins; cursor: the previous page's last id). */
    async listUnmatchedPayments(actor: Actor, page: { limit: number; cursor?: string | undefined }): Promise<{ items: UnmatchedPayment[]; nextCursor: string | null }> {
      requirePlatformAdmin(actor);
      if (page.cursor !== undefined && !/^[1-9][0-9]{0,18}$/.test(page.cursor)) {
        throw new GatewayError('invalid_request', { publicMessage: 'Invalid request: cursor: not a cursor this list returned.', param: 'cursor' });
      }
      const { items, hasMore } = await listUnmatchedPayments(db, { beforeId: page.cursor, limit: page.limit });
      return { items, nextCursor: hasMore ? items.at(-1)!.id : null };
    },
  };
}
