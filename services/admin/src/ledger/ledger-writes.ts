import { ledgerV1 } from '@gateway/contracts';
import { GatewayError } from '@gateway/errors';
import type { LedgerPort } from '../common/domain/ledger-port.ts';
import {
  creditNames, invalidArgument, openAccountNames, organisationUnknown, refundCreditNames, reverseRefundNames, setProjectBudgetNames, unexpectedResult,
  type LedgerCall,
} from './ledger-results.ts';

/**
 * The ledger calls that move money or set limits, each answer's result mapped to its catalogue
 * error. `budgetCallTimeoutMs`: SetProjectBudget's deadline, ms (it answers once the project's
 * credit grants are recalled).
 */
export function ledgerWrites(
  client: ledgerV1.LedgerServiceClient, call: LedgerCall, budgetCallTimeoutMs: number,
): Pick<LedgerPort, 'openAccount' | 'credit' | 'refundCredit' | 'reverseRefund' | 'setProjectBudget'> {
  return {
    async openAccount(organisationId) {
      const response = await call(client.openAccount, ledgerV1.OpenAccountRequest.fromPartial({ organisationId }));
      switch (openAccountNames.get(response.result)) {
        case 'ok': return;
        case 'invalid_argument': throw invalidArgument('OpenAccount', response.detail);
        default: throw unexpectedResult('openAccount', 'OpenAccount', response.result);
      }
    },

    async credit(request) {
      const response = await call(client.credit, ledgerV1.CreditRequest.fromPartial(request));
      switch (creditNames.get(response.result)) {
        case 'ok': return { availableMicros: response.availableMicros };
        case 'idempotency_conflict':
          throw new GatewayError('idempotency_conflict', {
            publicMessage: 'The ledger already holds a credit under this Idempotency-Key with a different amount or reason.',
            param: 'Idempotency-Key',
          });
        case 'invalid_argument': throw invalidArgument('Credit', response.detail);
        case 'organisation_unknown': throw organisationUnknown(request.organisationId);
        default: throw unexpectedResult('credit', 'Credit', response.result);
      }
    },

    async refundCredit(request) {
      const response = await call(client.refundCredit, ledgerV1.RefundCreditRequest.fromPartial(request));
      switch (refundCreditNames.get(response.result)) {
        case 'ok': return { availableMicros: response.availableMicros, refundedMicros: response.refundedMicros };
        case 'idempotency_conflict':
          throw new GatewayError('idempotency_conflict', {
            publicMessage: 'The ledger already holds a refund under this id with a different amount.',
            internalMessage: `ledger RefundCredit: IDEMPOTENCY_CONFLICT: ${response.detail}`,
          });
        case 'invalid_argument': throw invalidArgument('RefundCredit', response.detail);
        case 'organisation_unknown': throw organisationUnknown(request.organisationId);
        case 'credit_unknown':
          throw new GatewayError('conflict', {
            publicMessage: 'The ledger holds no credit of this organisation to refund.',
            internalMessage: `ledger RefundCredit: CREDIT_UNKNOWN: ${request.creditId}`,
          });
        case 'exceeds_credit':
        case 'insufficient_balance':
          throw new GatewayError('conflict', {
            publicMessage: 'The refund exceeds the unspent balance.',
            internalMessage: `ledger RefundCredit: result ${response.result}: ${response.detail}`,
          });
        default: throw unexpectedResult('refundCredit', 'RefundCredit', response.result);
      }
    },

    async reverseRefund(request) {
      const response = await call(client.reverseRefund, ledgerV1.ReverseRefundRequest.fromPartial(request));
      switch (reverseRefundNames.get(response.result)) {
        case 'ok': return { reversedMicros: response.reversedMicros, availableMicros: response.availableMicros };
        case 'idempotency_conflict':
          throw new GatewayError('idempotency_conflict', {
            publicMessage: 'The ledger already holds a reversal under this id for another refund.',
            internalMessage: `ledger ReverseRefund: IDEMPOTENCY_CONFLICT: ${response.detail}`,
          });
        case 'invalid_argument': throw invalidArgument('ReverseRefund', response.detail);
        case 'refund_unknown':
        case 'already_reversed':
          throw new GatewayError('conflict', {
            publicMessage: 'The ledger cannot reverse this refund.',
            internalMessage: `ledger ReverseRefund: result ${response.result}: ${response.detail}`,
          });
        default: throw unexpectedResult('reverseRefund', 'ReverseRefund', response.result);
      }
    },

    async setProjectBudget(request) {
      const response = await call(client.setProjectBudget, ledgerV1.SetProjectBudgetRequest.fromPartial(request), budgetCallTimeoutMs);
      switch (setProjectBudgetNames.get(response.result)) {
        case 'ok': return;
        case 'idempotency_conflict':
          throw new GatewayError('idempotency_conflict', { internalMessage: `ledger SetProjectBudget: request id ${request.requestId} reused` });
        case 'invalid_argument': throw invalidArgument('SetProjectBudget', response.detail);
        case 'organisation_unknown': throw organisationUnknown(request.organisationId);
        default: throw unexpectedResult('setProjectBudget', 'SetProjectBudget', response.result);
      }
    },
  };
}
