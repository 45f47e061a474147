import type { Queryable } from '@gateway/db';
import { GatewayError } from '@gateway/errors';
import { personIdOf, type Actor } from '../../common/domain/actor.ts';
import { recordAuditEvent } from '../../common/domain/audit-log.ts';
import { isId, newId } from '../../common/domain/ids.ts';
import { notFound } from '../../common/domain/resource-access.ts';
import { billingSnapshotOf } from './billing-profile.ts';
import { findBillingProfile } from './billing-profile-store.ts';
import type { PaymentProvider } from './payment-provider.ts';
import { moveTopUp, recordTransition } from './topup-state.ts';
import {
  attachProviderOrder, findPackage, findTopUp, insertTopUp, listTopUpDocuments, listTopUps as listTopUpRows, listTransitions,
  type TopUp, type TopUpDocumentRef, type TopUpPackage, type TopUpTransition,
} from './topup-store.ts';
import { requireProvider, type TopUpsDeps } from './topups-deps.ts';
import { recordFailedPayment, settleCapturedPayment } from './settlement.ts';

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

/** The top-up with its documents and transitions. */
async function viewOf(db: Queryable, topUp: TopUp): Promise<TopUpView> {
  return { ...topUp, documents: await listTopUpDocuments(db, topUp.id), transitions: await listTransitions(db, topUp.id) };
}

/** The organisation's top-up, or not_found (another organisation's looks the same as none). */
async function topUpOf(db: Queryable, organisationId: string, topUpId: string): Promise<TopUp> {
  const topUp = isId('topUp', topUpId) ? await findTopUp(db, topUpId) : undefined;
  if (!topUp || topUp.organisationId !== organisationId) throw notFound('top-up', topUpId, 'topup_id');
  return topUp;
}

/** Records a new top-up of a package on sale with the billing profile as it is now (created), in one transaction. */
async function createTopUp(deps: TopUpsDeps, actor: Actor, organisationId: string, packageId: string, provider: PaymentProvider): Promise<{ id: string; package: TopUpPackage }> {
  return deps.db.transaction(async (tx) => {
    const found = isId('topUpPackage', packageId) ? await findPackage(tx, packageId) : undefined;
    if (!found?.active) throw notFound('top-up package on sale', packageId, 'package_id');
    const profile = await findBillingProfile(tx, organisationId);
    if (!profile) {
      throw new GatewayError('conflict', { publicMessage: 'Set the organisation\'s billing profile (PUT .../billing-profile) before buying a top-up: invoices are made out to it.' });
    }
    const id = newId('topUp');
    await insertTopUp(tx, {
      id, organisationId, packageId: found.id, pricePaise: found.pricePaise, creditMicros: found.creditMicros, provider: provider.kind,
      billingSnapshot: billingSnapshotOf(profile), createdByPersonId: personIdOf(actor), expiresAt: new Date(Date.now() + deps.settings.topUpExpiryMs),
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
}

/**
 * Buys a package (owners): a top-up with the package's terms and the billing profile as they
 * are now, then the provider's order for its price (receipt = top-up id, asked with no
 * transaction open), then pending_payment. The local pay page sends the browser back to the
 * dashboard: at the configured dashboard URL, or else at `requestOrigin` (where the purchase came from).
 */
export async function purchaseTopUp(
  deps: TopUpsDeps, actor: Actor, organisationId: string, input: { packageId: string; requestOrigin: string },
): Promise<{ topUp: TopUpView; checkout: CheckoutBlock }> {
  const { db } = deps;
  await deps.access.requireOrganisation(actor, organisationId);
  const paymentProvider = requireProvider(deps);
  const created = await createTopUp(deps, actor, organisationId, input.packageId, paymentProvider);
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
  const returnUrl = `${(deps.settings.dashboardUrl ?? input.requestOrigin).replace(/\/+$/, '')}/#/billing?topup=${created.id}`;
  return {
    topUp: await viewOf(db, (await findTopUp(db, created.id))!),
    checkout: {
      provider: paymentProvider.kind, keyId: paymentProvider.keyId, orderId, amountPaise: created.package.pricePaise, currency: 'INR',
      name: deps.invoicing.supplierName, description: `Top-up: ${created.package.name}`,
      payPageUrl: paymentProvider.payPageUrl?.(orderId, returnUrl) ?? null,
    },
  };
}

/** The organisation's top-ups, newest first (cursor: the previous page's last id). */
export async function listTopUps(
  deps: TopUpsDeps, actor: Actor, organisationId: string, page: { limit: number; cursor?: string | undefined },
): Promise<{ items: TopUpView[]; nextCursor: string | null }> {
  await deps.access.requireOrganisation(actor, organisationId);
  const { items, hasMore } = await listTopUpRows(deps.db, organisationId, { beforeId: page.cursor, limit: page.limit });
  const views: TopUpView[] = [];
  for (const item of items) views.push(await viewOf(deps.db, item));
  return { items: views, nextCursor: hasMore ? items.at(-1)!.id : null };
}

/** One of the organisation's top-ups, with its documents and transitions. */
export async function getTopUp(deps: TopUpsDeps, actor: Actor, organisationId: string, topUpId: string): Promise<TopUpView> {
  await deps.access.requireOrganisation(actor, organisationId);
  return viewOf(deps.db, await topUpOf(deps.db, organisationId, topUpId));
}

/**
 * The browser's Checkout callback (owners): the signature is verified, then the payment is
 * read from the provider (the browser's word is not taken for a capture) and settled exactly
 * as a webhook would settle it. Returns the top-up as it is then.
 */
export async function completeTopUpCheckout(
  deps: TopUpsDeps,
  actor: Actor,
  organisationId: string,
  topUpId: string,
  input: { orderId: string; paymentId: string; signature: string },
): Promise<TopUpView> {
  await deps.access.requireOrganisation(actor, organisationId);
  const paymentProvider = requireProvider(deps);
  const topUp = await topUpOf(deps.db, organisationId, topUpId);
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
  if (payment.status === 'captured') await settleCapturedPayment(deps, payment, 'checkout_callback');
  else if (payment.status === 'failed') await recordFailedPayment(deps, payment, 'checkout_callback');
  return viewOf(deps.db, (await findTopUp(deps.db, topUpId))!);
}
