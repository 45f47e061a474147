import type { Database, Queryable } from '@gateway/db';
import { GatewayError } from '@gateway/errors';
import type { Logger } from '@gateway/logger';
import type { AdminConfig } from '../config.ts';
import { personIdOf, requirePlatformAdmin, requireRole, type Actor } from './actor.ts';
import { changedFields, recordAuditEvent } from './audit-log.ts';
import {
  billingProfileProblems, billingSnapshotOf, findBillingProfile, upsertBillingProfile, type BillingProfile, type BillingProfileInput,
} from './billing-profile.ts';
import { isId, newId } from './ids.ts';
import type { LedgerPort } from './ledger-port.ts';
import type { LiveEvents } from './live-events.ts';
import type { PaymentProvider, ProviderPayment } from './payment-provider.ts';
import { notFound, type ResourceAccess } from './resource-access.ts';
import { issueTopUpDocument } from './tax-documents.ts';
import { canMove, moveTopUp, recordTransition, type TopUpCause } from './topup-state.ts';
import {
  attachProviderOrder, claimTopUpsToReconcile, findPackage, findTopUp, findTopUpByOrder, hasTransitionForPayment, insertPackage, insertTopUp,
  listPackages, listTopUpDocuments, listTopUps, listTransitions, recordWebhookEvent, updatePackage,
  type TopUp, type TopUpDocumentRef, type TopUpPackage, type TopUpTransition,
} from './topup-store.ts';
import { markProviderRefundProcessed } from './refunds-service.ts';

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
  | { type: 'payment.captured' | 'order.paid' | 'payment.failed'; payment: ProviderPayment }
  | { type: 'refund.processed'; refundId: string; paymentId: string; receipt: string | null }
  | { type: 'other'; name: string };

/** What became of one webhook delivery. */
export type WebhookOutcome = 'processed' | 'repeated' | 'ignored';

/** The cause recorded when a second captured payment of an order is refunded. */
const duplicateRefundCause = 'duplicate_payment_refunded';

/** The cause recorded (once per payment) when a captured payment's amount or currency is not the top-up's. */
const amountMismatchCause = 'payment_amount_mismatch';

/** Top-ups reconciled per pass at most (the next pass takes the next ones). */
const reconcileBatch = 50;

/** Top-up packages, billing profiles, purchases and their payment signals (route tag "billing"). */
export function createTopUpsService(deps: TopUpsServiceDeps) {
  const { db, ledger, access, config, provider, logger } = deps;

  /** The organisation, if the actor sees it (404) and holds `role` in it (403). */
  async function organisationFor(actor: Actor, organisationId: string, role: 'viewer' | 'owner') {
    const organisation = await access.requireOrganisation(actor, organisationId);
    requireRole(actor, organisationId, role);
    return organisation;
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
   * Refunds a second captured payment of an already-paid order, once: under the top-up's row lock
   * (the caller's transaction), unless a transition already records it. The payment is read from
   * the provider first: one already refunded (a refund whose record was lost) is only recorded.
   */
  async function refundDuplicatePayment(tx: Queryable, topUp: TopUp, paymentId: string, cause: TopUpCause): Promise<void> {
    if (await hasTransitionForPayment(tx, topUp.id, duplicateRefundCause, paymentId)) return;
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
    await recordTransition(tx, {
      topUpId: topUp.id, from: topUp.state, to: topUp.state, cause: duplicateRefundCause,
      details: { payment_id: paymentId, amount_paise: current.amountPaise.toString(), refund_id: refundId, signal: cause },
    });
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
   * captured payment of the same order is refunded through the provider and recorded, never
   * credited; a capture of another amount or currency is only recorded (recordAmountMismatch). Returns the top-up's id to finish settling (undefined when no top-up has the order)
   * and whether the webhook event had been processed before.
   */
  async function recordCapturedPayment(
    payment: ProviderPayment, cause: TopUpCause, event?: { id: string; type: string },
  ): Promise<{ topUpId: string | undefined; repeated: boolean }> {
    // Set by the attempt that commits (each retry starts afresh), given after the commit.
    let warnMismatch: (() => void) | undefined;
    const recorded = await db.transaction(async (tx) => {
      warnMismatch = undefined;
      if (event !== undefined && !await recordWebhookEvent(tx, event.id, event.type)) {
        // A repeated delivery: nothing is applied again, but an unfinished settlement may be finished.
        return { topUpId: (await findTopUpByOrder(tx, payment.orderId))?.id, repeated: true };
      }
      const topUp = await findTopUpByOrder(tx, payment.orderId, { forUpdate: true });
      if (!topUp) return { topUpId: undefined, repeated: false };
      if (topUp.providerPaymentId === null) {
        // Orders fix the amount, so a capture of another amount or currency is not ours to credit.
        if (payment.amountPaise !== topUp.pricePaise || payment.currency !== 'INR') {
          warnMismatch = await recordAmountMismatch(tx, topUp, payment, cause);
          return { topUpId: topUp.id, repeated: false };
        }
        if (!canMove(topUp.state, 'paid')) return { topUpId: topUp.id, repeated: false };
        await moveTopUp(tx, {
          topUpId: topUp.id, from: topUp.state, to: 'paid', cause, providerPaymentId: payment.id,
          details: { payment_id: payment.id, method: payment.method },
        });
      } else if (topUp.providerPaymentId !== payment.id) {
        await refundDuplicatePayment(tx, topUp, payment.id, cause);
      }
      return { topUpId: topUp.id, repeated: false };
    });
    warnMismatch?.();
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
      await ledger.credit({ creditId, organisationId: topUp.organisationId, amountMicros: topUp.creditMicros, reason: `top-up ${topUp.id}` });
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
   * Settles a captured payment: recorded (paid), credited once, invoiced. The one path of every
   * signal. Returns whether the webhook event had been processed before.
   */
  async function settleCapturedPayment(payment: ProviderPayment, cause: TopUpCause, event?: { id: string; type: string }): Promise<boolean> {
    const { topUpId, repeated } = await recordCapturedPayment(payment, cause, event);
    if (topUpId !== undefined) await finishSettlement(topUpId, cause);
    return repeated;
  }

  /**
   * Records a failed payment: the top-up fails only if it is still awaiting payment (a capture,
   * earlier or later, wins). With the webhook event's id in the same transaction; returns whether
   * that event had been processed before.
   */
  async function recordFailedPayment(payment: ProviderPayment, cause: TopUpCause, event?: { id: string; type: string }): Promise<boolean> {
    return db.transaction(async (tx) => {
      if (event !== undefined && !await recordWebhookEvent(tx, event.id, event.type)) return true;
      const topUp = await findTopUpByOrder(tx, payment.orderId, { forUpdate: true });
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
    if (topUp.providerOrderId !== null && (topUp.state === 'pending_payment' || topUp.state === 'failed')) {
      const payments = await fetchPaymentsOfOrder(topUp.providerOrderId);
      providerForgotOrder = payments === undefined;
      const captured = (payments ?? []).filter((payment) => payment.status === 'captured');
      for (const payment of captured) await settleCapturedPayment(payment, 'reconciliation');
      if (captured.length > 0) return;
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
      await organisationFor(actor, organisationId, 'viewer');
      return (await findBillingProfile(db, organisationId)) ?? null;
    },

    /**
     * Sets the organisation's billing profile (owners): the state code must be a GST state code,
     * a GSTIN well formed with its check character, registered in that state.
     */
    async putBillingProfile(actor: Actor, organisationId: string, input: BillingProfileInput): Promise<BillingProfile> {
      await organisationFor(actor, organisationId, 'owner');
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
      await organisationFor(actor, organisationId, 'owner');
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
      await organisationFor(actor, organisationId, 'viewer');
      const { items, hasMore } = await listTopUps(db, organisationId, { beforeId: page.cursor, limit: page.limit });
      const views: TopUpView[] = [];
      for (const item of items) views.push(await viewOf(item));
      return { items: views, nextCursor: hasMore ? items.at(-1)!.id : null };
    },

    /** One of the organisation's top-ups, with its documents and transitions. */
    async getTopUp(actor: Actor, organisationId: string, topUpId: string): Promise<TopUpView> {
      await organisationFor(actor, organisationId, 'viewer');
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
      await organisationFor(actor, organisationId, 'owner');
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
     * records the id. Events may come in any order and more than once; unknown events are ignored.
     */
    async receivePaymentWebhook(
      input: { rawBody: Buffer; signature: string | undefined; eventId: string | undefined },
      readEvent: (rawBody: Buffer) => PaymentWebhookEvent | undefined,
    ): Promise<WebhookOutcome> {
      const paymentProvider = requireProvider();
      if (!paymentProvider.verifyWebhookSignature(input.rawBody, input.signature)) {
        throw new GatewayError('invalid_request', { publicMessage: 'The webhook signature (X-Razorpay-Signature) does not match the body.' });
      }
      const event = readEvent(input.rawBody);
      if (event === undefined) throw new GatewayError('invalid_request', { publicMessage: 'The webhook body is not a payment event this admin can read.' });
      if (event.type === 'other') return 'ignored';
      const eventId = input.eventId;
      if (eventId === undefined || !/^[A-Za-z0-9_.:-]{1,200}$/.test(eventId)) {
        throw new GatewayError('invalid_request', { publicMessage: 'The x-razorpay-event-id header is missing or malformed.' });
      }
      const ref = { id: eventId, type: event.type };
      switch (event.type) {
        case 'payment.captured': case 'order.paid':
          if (event.payment.status !== 'captured') return 'ignored';
          return await settleCapturedPayment(event.payment, `webhook:${event.type}`, ref) ? 'repeated' : 'processed';
        case 'payment.failed':
          return await recordFailedPayment(event.payment, `webhook:${event.type}`, ref) ? 'repeated' : 'processed';
        case 'refund.processed':
          // A refund of unspent balance moves on (its credit note follows); a duplicate payment's refund was recorded when made.
          return await db.transaction(async (tx) => {
            if (!await recordWebhookEvent(tx, eventId, event.type)) return 'repeated';
            await markProviderRefundProcessed(tx, { providerRefundId: event.refundId, receipt: event.receipt });
            return 'processed';
          });
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
      const ids = await db.transaction((tx) => claimTopUpsToReconcile(tx, { quietMs: config.PAYMENT_RECONCILE_AFTER_MS, limit: reconcileBatch }));
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
  };
}
