import type { Actor } from '../../common/domain/actor.ts';
import type { BillingProfileInput } from './billing-profile.ts';
import { getBillingProfile, putBillingProfile } from './billing-profiles.ts';
import { createTopUpPackage, listTopUpPackages, updateTopUpPackage } from './packages.ts';
import { receivePaymentWebhook, verifyPaymentWebhookSignature, type PaymentWebhookDelivery } from './payment-webhook.ts';
import { completeTopUpCheckout, getTopUp, listTopUps, purchaseTopUp } from './purchase.ts';
import { listUnmatched, reconcileTopUps, sweepPayments } from './reconciliation.ts';
import type { TopUpPackage } from './topup-store.ts';
import type { TopUpsDeps } from './topups-deps.ts';

/**
 * Top-up packages, billing profiles, purchases and their payment signals (route tag "billing"),
 * bound to their dependencies: each method is one function of packages.ts, billing-profiles.ts,
 * purchase.ts, payment-webhook.ts or reconciliation.ts.
 */
export function createTopUpsService(deps: TopUpsDeps) {
  return {
    /** The packages on sale (active), or all of them for a platform admin asking `includeInactive`. */
    listTopUpPackages: (actor: Actor, options: { includeInactive: boolean }) => listTopUpPackages(deps, actor, options),
    /** Creates a package (platform admins). */
    createTopUpPackage: (actor: Actor, input: Parameters<typeof createTopUpPackage>[2]) => createTopUpPackage(deps, actor, input),
    /** Changes a package (platform admins); purchases already made keep their terms. */
    updateTopUpPackage: (actor: Actor, packageId: string, changes: Partial<Pick<TopUpPackage, 'name' | 'pricePaise' | 'creditMicros' | 'active' | 'sortOrder'>>) =>
      updateTopUpPackage(deps, actor, packageId, changes),
    /** The organisation's billing profile, or null when it has none yet. */
    getBillingProfile: (actor: Actor, organisationId: string) => getBillingProfile(deps, actor, organisationId),
    /** Sets the organisation's billing profile (owners). */
    putBillingProfile: (actor: Actor, organisationId: string, input: BillingProfileInput) => putBillingProfile(deps, actor, organisationId, input),
    /** Buys a package (owners): the top-up and the provider's order, with what the browser needs to pay. */
    purchaseTopUp: (actor: Actor, organisationId: string, input: { packageId: string; requestOrigin: string }) => purchaseTopUp(deps, actor, organisationId, input),
    /** The organisation's top-ups, newest first. */
    listTopUps: (actor: Actor, organisationId: string, page: { limit: number; cursor?: string | undefined }) => listTopUps(deps, actor, organisationId, page),
    /** One of the organisation's top-ups, with its documents and transitions. */
    getTopUp: (actor: Actor, organisationId: string, topUpId: string) => getTopUp(deps, actor, organisationId, topUpId),
    /** The browser's Checkout callback (owners): verified, then settled from the provider's word. */
    completeTopUpCheckout: (actor: Actor, organisationId: string, topUpId: string, input: { orderId: string; paymentId: string; signature: string }) =>
      completeTopUpCheckout(deps, actor, organisationId, topUpId, input),
    /** Whether a webhook body carries the configured provider's signature (service_unavailable without a provider). */
    verifyPaymentWebhookSignature: (rawBody: Buffer, signature: string | undefined) => verifyPaymentWebhookSignature(deps, rawBody, signature),
    /** Applies one verified provider webhook delivery, once per event id. */
    receivePaymentWebhook: (delivery: PaymentWebhookDelivery) => receivePaymentWebhook(deps, delivery),
    /** One reconciliation pass over top-ups whose outcome may still change. */
    reconcileTopUps: () => reconcileTopUps(deps),
    /** One sweep of the provider's recent payments. */
    sweepPayments: () => sweepPayments(deps),
    /** Payments that matched nothing the gateway sold, newest first (platform admins). */
    listUnmatchedPayments: (actor: Actor, page: { limit: number; cursor?: string | undefined }) => listUnmatched(deps, actor, page),
  };
}
