import type { PaymentReversal } from '../domain/refund-events.ts';
import { paymentReversalListQuery, paymentReversalListResponse } from './refund-event-schemas.ts';
import { defineRoute, routeErrors, type AdminRoute } from '../../common/http/route-definition.ts';

/** A payment reversal as the API shows it (paise and µ₹ as decimal strings). */
function paymentReversalJson(reversal: PaymentReversal) {
  return {
    id: reversal.id, kind: reversal.kind, organisation_id: reversal.organisationId, topup_id: reversal.topUpId,
    provider_ref: reversal.providerRef, provider_payment_id: reversal.providerPaymentId, amount_paise: reversal.amountPaise.toString(),
    debit_micros: reversal.debitMicros.toString(), taken_micros: reversal.takenMicros?.toString() ?? null,
    shortfall_micros: reversal.shortfallMicros?.toString() ?? null, state: reversal.state, dispute_status: reversal.disputeStatus,
    last_error: reversal.lastError, created_at: reversal.createdAt.toISOString(), updated_at: reversal.updatedAt.toISOString(),
  };
}

/** The payment reversal routes of the admin API (platform admins). */
export function paymentReversalRoutes(): AdminRoute[] {
  return [
    defineRoute({
      method: 'get', path: '/admin/v1/payment-reversals', operationId: 'listPaymentReversals', tag: 'billing',
      authenticated: true, access: 'platform',
      summary: 'Money payers got back outside the gateway (refunds from the provider\'s dashboard, disputes), and what the balance could not cover.',
      description: 'Newest first, at most 500. Each was debited from the organisation\'s available balance up to what it held (never below zero); `shortfall_micros` above zero flags the organisation. A dispute\'s amount is held (debited) until its outcome: won, it is given back.',
      query: paymentReversalListQuery,
      success: { status: 200, description: 'The reversals.', schema: paymentReversalListResponse },
      errors: [...routeErrors.read, ...routeErrors.platform],
      async handle({ service }, { actor, query }) {
        const reversals = await service.billing.listPaymentReversals(actor, { organisationId: query.organisation_id, shortfallOnly: query.shortfall_only === 'true' });
        return { status: 200, body: { object: 'list', data: reversals.map(paymentReversalJson) } };
      },
    }),
  ];
}
