import { isTransientResult, ledgerResultNames, ledgerResultTransient, resultNamesByValue, type LedgerResultOperation } from '@gateway/contracts';
import { GatewayError } from '@gateway/errors';
import type { callUnary } from '@gateway/grpc';

/** One unary ledger call with the admin's deadline and error mapping (grpc-ledger.ts). */
export type LedgerCall = <Req, Res>(method: Parameters<typeof callUnary<Req, Res>>[0], request: Req, timeoutMs?: number) => Promise<Res>;

/**
 * The ledger answered with a result this build does not map (UNSPECIFIED, or one newer than it):
 * a contract mismatch, not the caller's fault, so a 500 whatever the contract's transient table
 * says; the log line says whether retrying could help.
 */
export function unexpectedResult(operation: LedgerResultOperation, method: string, result: number): GatewayError {
  const transient = isTransientResult(ledgerResultTransient[operation] as Readonly<Record<number, boolean>>, result);
  return new GatewayError('internal_error', { internalMessage: `ledger ${method} returned unexpected result ${result} (${transient ? 'transient' : 'final'})` });
}

// Proto result -> the contract's result name, per operation; UNSPECIFIED and unknown values have none (unexpectedResult).
/** OpenAccount's result names by proto value. */
export const openAccountNames = resultNamesByValue(ledgerResultNames.openAccount);
/** Credit's result names by proto value. */
export const creditNames = resultNamesByValue(ledgerResultNames.credit);
/** RefundCredit's result names by proto value. */
export const refundCreditNames = resultNamesByValue(ledgerResultNames.refundCredit);
/** ReverseRefund's result names by proto value. */
export const reverseRefundNames = resultNamesByValue(ledgerResultNames.reverseRefund);
/** GetBalance's result names by proto value. */
export const getBalanceNames = resultNamesByValue(ledgerResultNames.getBalance);
/** SetProjectBudget's result names by proto value. */
export const setProjectBudgetNames = resultNamesByValue(ledgerResultNames.setProjectBudget);

/** The ledger refused a request as malformed: the caller's 400, with the ledger's detail in the log only. */
export function invalidArgument(method: string, detail: string): GatewayError {
  return new GatewayError('invalid_request', {
    publicMessage: 'The ledger refused the request as invalid.',
    internalMessage: `ledger ${method}: INVALID_ARGUMENT: ${detail}`,
  });
}

/** The ledger has no account for the organisation: a 404 naming the id. */
export function organisationUnknown(organisationId: string): GatewayError {
  return new GatewayError('not_found', { publicMessage: `The ledger has no account for organisation "${organisationId}".`, param: 'id' });
}
