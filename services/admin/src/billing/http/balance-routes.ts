import { balanceResponse, createCreditBody, creditResponse } from './balance-schemas.ts';
import { balanceJson, creditJson } from './balance-views.ts';
import { defineRoute, routeErrors, type AdminRoute } from '../../common/http/route-definition.ts';

const platformErrors = routeErrors.platform;
const writeErrors = routeErrors.write;
const ledgerErrors = routeErrors.ledger;

/** An organisation's balance and manual credit routes (the ledger keeps both). */
export function balanceRoutes(): AdminRoute[] {
  return [
    defineRoute({
      method: 'post', path: '/admin/v1/organisations/{id}/credits', operationId: 'creditOrganisation', tag: 'balance', authenticated: true, access: 'platform', scope: 'organisation',
      summary: 'Credit the organisation balance (idempotent per Idempotency-Key).',
      description: 'The ledger credit id is `manual:<organisation id>:<Idempotency-Key>`. The first successful call answers 201; a replay with the same key and body answers 200 with the same body and `Idempotent-Replayed: true`; the same key with a different body answers 409 idempotency_conflict.',
      body: createCreditBody, idempotencyKey: true,
      success: { status: 201, description: 'Credited.', schema: creditResponse },
      alsoSucceeds: [{ status: 200, description: 'A replay: the first call\'s result, unchanged.' }],
      errors: [...writeErrors, 'not_found', 'idempotency_conflict', ...ledgerErrors, ...platformErrors],
      async handle({ service }, { actor, params, body, idempotencyKey }) {
        const outcome = await service.billing.creditOrganisation(actor, params.id!, {
          idempotencyKey, amountMicros: body.amount_micros, reason: body.reason,
        });
        return outcome.replayed
          ? { status: 200, body: creditJson(outcome), headers: { 'idempotent-replayed': 'true' } }
          : { status: 201, body: creditJson(outcome) };
      },
    }),
    defineRoute({
      method: 'get', path: '/admin/v1/organisations/{id}/balance', operationId: 'getBalance', tag: 'balance', authenticated: true, access: 'organisation', role: 'viewer', scope: 'organisation',
      summary: 'Get the organisation balance from the ledger.',
      success: { status: 200, description: 'The balance.', schema: balanceResponse },
      errors: ['unauthenticated', 'not_found', ...ledgerErrors],
      async handle({ service }, { actor, params }) {
        return { status: 200, body: balanceJson(await service.billing.getBalance(actor, params.id!)) };
      },
    }),
  ];
}
