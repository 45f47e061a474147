import type { BillingProfile } from '../domain/billing-profile.ts';
import type { CheckoutBlock, TopUpView } from '../domain/purchase.ts';
import type { TopUpPackage } from '../domain/topup-store.ts';
import {
  billingProfileEnvelope, checkoutCallbackBody, createPackageBody, defaultTopUpPageSize, packageListQuery, packageListResponse, packageResponse,
  purchaseBody, purchaseResponse, putBillingProfileBody, topUpListQuery, topUpListResponse, topUpResponse, unmatchedPaymentListQuery,
  unmatchedPaymentListResponse, updatePackageBody, webhookAckResponse,
} from './billing-schemas.ts';
import type { UnmatchedPayment } from '../domain/unmatched-payments.ts';
import { readPaymentWebhook } from './payment-webhook.ts';
import { defineRoute, routeErrors, type AdminRoute, type RouteRequest } from '../../common/http/route-definition.ts';

function packageJson(found: TopUpPackage) {
  return {
    id: found.id, name: found.name, price_paise: found.pricePaise.toString(), credit_micros: found.creditMicros.toString(),
    active: found.active, sort_order: found.sortOrder, created_at: found.createdAt.toISOString(),
  };
}

function billingProfileJson(profile: BillingProfile) {
  return {
    legal_name: profile.legalName, address: profile.address, state_code: profile.stateCode, gstin: profile.gstin, country: profile.country,
    email: profile.email, updated_at: profile.updatedAt.toISOString(),
  };
}

function topUpJson(topUp: TopUpView) {
  return {
    id: topUp.id,
    package_id: topUp.packageId,
    package_name: topUp.packageName,
    price_paise: topUp.pricePaise.toString(),
    credit_micros: topUp.creditMicros.toString(),
    state: topUp.state,
    provider: topUp.provider,
    provider_order_id: topUp.providerOrderId,
    provider_payment_id: topUp.providerPaymentId,
    created_at: topUp.createdAt.toISOString(),
    paid_at: topUp.paidAt?.toISOString() ?? null,
    credited_at: topUp.creditedAt?.toISOString() ?? null,
    expires_at: topUp.expiresAt.toISOString(),
    documents: topUp.documents.map((document) => ({ id: document.id, kind: document.kind, serial: document.serial })),
    transitions: topUp.transitions.map((transition) => ({
      from_state: transition.fromState, to_state: transition.toState, cause: transition.cause, occurred_at: transition.occurredAt.toISOString(),
    })),
  };
}

function unmatchedPaymentJson(payment: UnmatchedPayment) {
  return {
    id: payment.id, reason: payment.reason, source: payment.source, event_id: payment.eventId, event_type: payment.eventType,
    payment_id: payment.paymentId, order_id: payment.orderId, amount_paise: payment.amountPaise?.toString() ?? null, currency: payment.currency,
    payment_status: payment.paymentStatus, method: payment.method, first_seen_at: payment.firstSeenAt.toISOString(),
    last_seen_at: payment.lastSeenAt.toISOString(), seen_count: payment.seenCount,
  };
}

function checkoutJson(checkout: CheckoutBlock) {
  return {
    provider: checkout.provider, key_id: checkout.keyId, order_id: checkout.orderId, amount_paise: checkout.amountPaise.toString(),
    currency: checkout.currency, name: checkout.name, description: checkout.description, pay_page_url: checkout.payPageUrl,
  };
}

/** Where a request came from, for the local pay page's way back: its Origin, else its scheme and Host. */
function requestOriginOf(request: Pick<RouteRequest<unknown, unknown>, 'origin' | 'secure' | 'host'>): string {
  return request.origin ?? `${request.secure ? 'https' : 'http'}://${request.host}`;
}

const orgRoute = { tag: 'billing', authenticated: true, access: 'organisation', scope: 'organisation' } as const;
const platformRoute = { tag: 'billing', authenticated: true, access: 'platform' } as const;

/** The billing routes of the admin API: packages, billing profiles, top-ups and the provider's webhook. */
export function billingRoutes(): AdminRoute[] {
  return [
    defineRoute({
      tag: 'billing', authenticated: true, access: 'organisation',
      method: 'get', path: '/admin/v1/topup-packages', operationId: 'listTopUpPackages',
      summary: 'The top-up packages on sale, in display order (platform admins: all with include_inactive=true).',
      query: packageListQuery,
      success: { status: 200, description: 'The packages.', schema: packageListResponse },
      errors: ['unauthenticated', 'invalid_request', 'permission_denied'],
      async handle({ service }, { actor, query }) {
        const packages = await service.billing.listTopUpPackages(actor, { includeInactive: query.include_inactive === 'true' });
        return { status: 200, body: { object: 'list', data: packages.map(packageJson) } };
      },
    }),
    defineRoute({
      ...platformRoute, method: 'post', path: '/admin/v1/topup-packages', operationId: 'createTopUpPackage',
      summary: 'Create a top-up package: its price in paise (GST included) and the credit it gives in µ₹.',
      body: createPackageBody,
      success: { status: 201, description: 'The package.', schema: packageResponse },
      errors: routeErrors.write,
      async handle({ service }, { actor, body }) {
        const created = await service.billing.createTopUpPackage(actor, {
          name: body.name, pricePaise: body.price_paise, creditMicros: body.credit_micros, active: body.active ?? true, sortOrder: body.sort_order ?? 0,
        });
        return { status: 201, body: packageJson(created) };
      },
    }),
    defineRoute({
      ...platformRoute, method: 'patch', path: '/admin/v1/topup-packages/{package_id}', operationId: 'updateTopUpPackage',
      summary: 'Change a top-up package; purchases already made keep the terms they were bought at.',
      body: updatePackageBody,
      success: { status: 200, description: 'The package after the change.', schema: packageResponse },
      errors: [...routeErrors.write, 'not_found'],
      async handle({ service }, { actor, params, body }) {
        const updated = await service.billing.updateTopUpPackage(actor, params.package_id!, {
          ...(body.name === undefined ? {} : { name: body.name }),
          ...(body.price_paise === undefined ? {} : { pricePaise: body.price_paise }),
          ...(body.credit_micros === undefined ? {} : { creditMicros: body.credit_micros }),
          ...(body.active === undefined ? {} : { active: body.active }),
          ...(body.sort_order === undefined ? {} : { sortOrder: body.sort_order }),
        });
        return { status: 200, body: packageJson(updated) };
      },
    }),
    defineRoute({
      ...orgRoute, role: 'viewer', method: 'get', path: '/admin/v1/organisations/{id}/billing-profile', operationId: 'getBillingProfile',
      summary: 'The organisation\'s billing profile (whom its invoices are made out to), or null.',
      success: { status: 200, description: 'The profile or null.', schema: billingProfileEnvelope },
      errors: ['unauthenticated', 'not_found'],
      async handle({ service }, { actor, params }) {
        const profile = await service.billing.getBillingProfile(actor, params.id!);
        return { status: 200, body: { billing_profile: profile && billingProfileJson(profile) } };
      },
    }),
    defineRoute({
      ...orgRoute, role: 'owner', method: 'put', path: '/admin/v1/organisations/{id}/billing-profile', operationId: 'putBillingProfile',
      summary: 'Set the organisation\'s billing profile: legal name, address, state (place of supply), GSTIN when registered.',
      description: 'Required before the first purchase. A GSTIN is checked for its layout and check character, and must be registered in state_code. state_code 96 (a recipient outside India) needs the country and is invoiced as an export of services (docs/invoices.md). Top-ups keep the profile as it was when bought.',
      body: putBillingProfileBody,
      success: { status: 200, description: 'The profile after the change.', schema: billingProfileEnvelope },
      errors: [...routeErrors.write, 'not_found'],
      async handle({ service }, { actor, params, body }) {
        const profile = await service.billing.putBillingProfile(actor, params.id!, {
          legalName: body.legal_name, address: body.address, stateCode: body.state_code, gstin: body.gstin, country: body.country, email: body.email,
        });
        return { status: 200, body: { billing_profile: billingProfileJson(profile) } };
      },
    }),
    defineRoute({
      ...orgRoute, role: 'owner', method: 'post', path: '/admin/v1/organisations/{id}/topups', operationId: 'purchaseTopUp',
      summary: 'Buy a top-up package: creates the top-up and the provider\'s order, and returns how the browser pays it.',
      description: 'The balance is credited (ledger credit `topup:<id>`, exactly once) when the provider reports the payment captured: by the Checkout callback, a webhook, or the reconciliation job. 409 without a billing profile; 503 when no payment provider is configured.',
      body: purchaseBody,
      success: { status: 201, description: 'The top-up (pending_payment) and the checkout details.', schema: purchaseResponse },
      errors: [...routeErrors.write, 'not_found', 'conflict', 'service_unavailable'],
      async handle({ service }, request) {
        const { topUp, checkout } = await service.billing.purchaseTopUp(request.actor, request.params.id!, {
          packageId: request.body.package_id, requestOrigin: requestOriginOf(request),
        });
        return { status: 201, body: { topup: topUpJson(topUp), checkout: checkoutJson(checkout) } };
      },
    }),
    defineRoute({
      ...orgRoute, role: 'viewer', method: 'get', path: '/admin/v1/organisations/{id}/topups', operationId: 'listTopUps',
      summary: 'The organisation\'s top-ups, newest first (cursor paging).',
      query: topUpListQuery,
      success: { status: 200, description: 'A page of top-ups.', schema: topUpListResponse },
      errors: routeErrors.read,
      async handle({ service }, { actor, params, query }) {
        const page = await service.billing.listTopUps(actor, params.id!, { limit: query.limit ?? defaultTopUpPageSize, cursor: query.cursor });
        return { status: 200, body: { object: 'list', data: page.items.map(topUpJson), next_cursor: page.nextCursor } };
      },
    }),
    defineRoute({
      ...orgRoute, role: 'viewer', method: 'get', path: '/admin/v1/organisations/{id}/topups/{topup_id}', operationId: 'getTopUp',
      summary: 'One top-up, with its documents and every transition.',
      success: { status: 200, description: 'The top-up.', schema: topUpResponse },
      errors: routeErrors.read,
      async handle({ service }, { actor, params }) {
        return { status: 200, body: topUpJson(await service.billing.getTopUp(actor, params.id!, params.topup_id!)) };
      },
    }),
    defineRoute({
      ...orgRoute, role: 'owner', method: 'post', path: '/admin/v1/organisations/{id}/topups/{topup_id}/checkout-callback', operationId: 'completeTopUpCheckout',
      summary: 'Hand over what Checkout returned: the signature is verified, then the payment is read from the provider and settled.',
      description: 'The signature is HMAC-SHA256(key secret, "<order_id>|<payment_id>"). The browser\'s word is not taken for a capture: the payment is fetched from the provider, and a captured one is settled exactly as a webhook would (one credit, one invoice, whatever else arrives).',
      body: checkoutCallbackBody,
      success: { status: 200, description: 'The top-up as it is after settling.', schema: topUpResponse },
      errors: [...routeErrors.write, 'not_found', 'service_unavailable'],
      async handle({ service }, { actor, params, body }) {
        const topUp = await service.billing.completeTopUpCheckout(actor, params.id!, params.topup_id!, {
          orderId: body.razorpay_order_id, paymentId: body.razorpay_payment_id, signature: body.razorpay_signature,
        });
        return { status: 200, body: topUpJson(topUp) };
      },
    }),
    defineRoute({
      ...platformRoute, method: 'get', path: '/admin/v1/unmatched-payments', operationId: 'listUnmatchedPayments',
      summary: 'Payments the provider reported that match nothing the gateway sold, newest first (platform admins).',
      description: 'A payment captured without an order (a payment link, a QR code, another integration on the same account), a capture of an order no top-up has, an authorised payment the admin did not capture, or a correctly signed webhook body it could not read: each was acknowledged to the provider and recorded once; nothing was credited. A person decides: refund it from the provider\'s dashboard, or credit the organisation it belongs to by hand.',
      query: unmatchedPaymentListQuery,
      success: { status: 200, description: 'A page of unmatched payments.', schema: unmatchedPaymentListResponse },
      errors: ['unauthenticated', 'invalid_request', 'permission_denied'],
      async handle({ service }, { actor, query }) {
        const page = await service.billing.listUnmatchedPayments(actor, { limit: query.limit ?? defaultTopUpPageSize, cursor: query.cursor });
        return { status: 200, body: { object: 'list', data: page.items.map(unmatchedPaymentJson), next_cursor: page.nextCursor } };
      },
    }),
    defineRoute({
      tag: 'billing', authenticated: false, access: 'public',
      method: 'post', path: '/webhooks/razorpay', operationId: 'receiveRazorpayWebhook',
      summary: 'The payment provider\'s webhook: payment.captured, order.paid, payment.failed, refund.processed, refund.failed, payment.dispute.created/won/lost/closed.',
      description: 'Verified by X-Razorpay-Signature (hex HMAC-SHA256 of the raw body with RAZORPAY_WEBHOOK_SECRET, or within its window RAZORPAY_WEBHOOK_SECRET_PREVIOUS, constant time): a forged or re-serialised body is 400 and changes nothing. Every correctly signed delivery gets a 200 (Razorpay retries anything else for 24 hours and then disables the webhook): deduplicated by x-razorpay-event-id (by the body\'s digest without one); events are accepted in any order; events top-ups do not act on are `ignored`; one that matches no top-up, or that could not be read, is `unmatched` and listed at GET /admin/v1/unmatched-payments.',
      success: { status: 200, description: 'The event was applied, was a repeat, or is not one top-ups act on.', schema: webhookAckResponse },
      errors: ['invalid_request', 'invalid_json', 'request_too_large', 'unsupported_media_type', 'service_unavailable'],
      async handle({ service }, { rawBody, header }) {
        const delivery = readPaymentWebhook(service.billing.verifyPaymentWebhookSignature, {
          rawBody, signature: header('x-razorpay-signature'), eventId: header('x-razorpay-event-id'),
        });
        const status = await service.billing.receivePaymentWebhook(delivery);
        return { status: 200, body: { status } };
      },
    }),
  ];
}
