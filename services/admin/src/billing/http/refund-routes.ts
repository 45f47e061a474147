import type { Refund } from '../domain/refund-store.ts';
import { createRefundBody, refundEnvelope, refundListResponse } from './refund-schemas.ts';
import { defineRoute, routeErrors, type AdminRoute } from '../../common/http/route-definition.ts';

/** A refund as the API shows it. */
function refundJson(refund: Refund) {
  return {
    id: refund.id,
    topup_id: refund.topUpId,
    amount_paise: refund.amountPaise.toString(),
    debit_micros: refund.debitMicros.toString(),
    state: refund.state,
    provider_refund_id: refund.providerRefundId,
    credit_note_id: refund.creditNoteId,
    failure_reason: refund.failureReason,
    last_error: refund.lastError,
    attempts: refund.attempts,
    next_attempt_at: refund.nextAttemptAt?.toISOString() ?? null,
    created_at: refund.createdAt.toISOString(),
  };
}

/** The refund routes of the admin API. */
export function refundRoutes(): AdminRoute[] {
  return [
    defineRoute({
      method: 'post', path: '/admin/v1/organisations/{id}/topups/{topup_id}/refunds', operationId: 'createRefund', tag: 'billing',
      authenticated: true, access: 'platform', scope: 'organisation',
      summary: 'Refund part or all of a top-up\'s unspent balance (idempotent per Idempotency-Key).',
      description: 'Only an invoiced top-up, and only balance not yet spent or held: the ledger debits `debit_micros` (credit_micros × amount_paise / price_paise, rounded down) from the available balance, the payment provider refunds `amount_paise` of the payment, and a credit note referencing the top-up\'s invoice is issued; a top-up refunded in full becomes `refunded`. 409 `conflict` "The refund exceeds the unspent balance." when the ledger refuses (nothing changed; the refund is recorded as refused), or when the amount exceeds what is left of the price. When the provider refuses the refund for good (a 400: the payment older than six months, the merchant balance short, already refunded) the answer is 201 with state `failed`, its `failure_reason`, and the money back in the balance (platform admins get a `refund_failed` alert); when the provider reports it pending, `provider_pending` (the credit note follows once it is processed); when the provider call fails transiently, `debited` with `last_error`, and the refund job retries with doubling waits. A replay with the same key and body answers 200 with the refund as it stands and `Idempotent-Replayed: true` (a refused one: the same 409); the same key with another amount answers 409 idempotency_conflict.',
      body: createRefundBody, idempotencyKey: true,
      success: { status: 201, description: 'The refund as it stands.', schema: refundEnvelope },
      alsoSucceeds: [{ status: 200, description: 'A replay: the refund of this Idempotency-Key as it stands.' }],
      errors: [...routeErrors.write, 'not_found', 'conflict', 'idempotency_conflict', ...routeErrors.ledger, ...routeErrors.platform],
      async handle({ service }, { actor, params, body, idempotencyKey }) {
        const outcome = await service.billing.createRefund(actor, params.id!, params.topup_id!, { amountPaise: body.amount_paise, idempotencyKey });
        return outcome.replayed
          ? { status: 200, body: { refund: refundJson(outcome.refund) }, headers: { 'idempotent-replayed': 'true' } }
          : { status: 201, body: { refund: refundJson(outcome.refund) } };
      },
    }),
    defineRoute({
      method: 'get', path: '/admin/v1/organisations/{id}/topups/{topup_id}/refunds', operationId: 'listRefunds', tag: 'billing',
      authenticated: true, access: 'organisation', role: 'viewer', scope: 'organisation',
      summary: 'List a top-up\'s refunds, newest first.',
      success: { status: 200, description: 'The refunds.', schema: refundListResponse },
      errors: routeErrors.read,
      async handle({ service }, { actor, params }) {
        const refunds = await service.billing.listRefunds(actor, params.id!, params.topup_id!);
        return { status: 200, body: { object: 'list', data: refunds.map(refundJson) } };
      },
    }),
  ];
}
