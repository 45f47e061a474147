import { GatewayError, toGatewayError } from '@gateway/errors';
import type { ReserveAnswer, ReserveOutcome } from '../domain/ledger-port.ts';
import type { ReserveMetricOutcome } from '../telemetry/request-labels.ts';

/**
 * The error the client sees for a Reserve that was not held, read from the ledger's answer:
 * a refusal for money is a 402 (the client must top up or raise a budget, though the result is
 * transient); our own Release having reached the ledger first is a 503 (nothing is held, and a
 * new request gets a new reservation id); otherwise a transient result (the contract's table:
 * e.g. ORGANISATION_UNKNOWN, an account not opened yet) is a 503 and a final one a 500, as is a
 * result this build does not know.
 */
export function reserveRefusal(answer: ReserveAnswer): GatewayError {
  const internalMessage = `ledger Reserve: ${answer.outcome}${answer.detail ? ` (${answer.detail})` : ''}`;
  switch (answer.outcome) {
    case 'insufficient_balance':
      return new GatewayError('insufficient_balance', { internalMessage }); // NO_OVERSPEND
    case 'project_budget_exceeded':
      return new GatewayError('budget_exceeded', { internalMessage }); // PROJECT_BUDGET
    case 'released':
      // Only a Reserve the proxy had given up on (a failed call) and then sent again can meet
      // its own Release's tombstone. Nothing is held; the client may retry with a new request.
      return new GatewayError('service_unavailable', { internalMessage });
    case 'unrecognized':
      return new GatewayError('internal_error', { internalMessage });
    default:
      return new GatewayError(answer.transient ? 'service_unavailable' : 'internal_error', { internalMessage });
  }
}

/** The proxyReserves outcome of a Reserve the ledger answered. */
export function reserveMetricOutcome(outcome: ReserveOutcome): ReserveMetricOutcome {
  switch (outcome) {
    case 'ok': return 'held';
    case 'insufficient_balance': return 'insufficient_balance';
    case 'project_budget_exceeded': return 'budget_exceeded';
    default: return 'error';
  }
}

/** Keeps only errors a failed Reserve call may show the client; anything else is ours to hide. */
export function reserveCallError(error: unknown): GatewayError {
  const gatewayError = toGatewayError(error);
  const shown = ['service_unavailable', 'insufficient_balance', 'budget_exceeded'];
  return shown.includes(gatewayError.code)
    ? gatewayError
    : new GatewayError('internal_error', { internalMessage: gatewayError.message, cause: error });
}

/** Refusals that a Settle still in flight (which returns unused hold) can turn into a fit. */
const refusalsASettleCanLift: ReadonlySet<ReserveOutcome> = new Set(['insufficient_balance', 'project_budget_exceeded']);

/**
 * True for a refusal for balance or budget that money now held could still lift (a Settle in
 * flight, a recalled grant): worth waiting for. The ledger says when none could (amount beyond
 * available + held, or beyond the cap less this month's spend); such a 402 is final at once.
 */
export function liftableRefusal(answer: ReserveAnswer): boolean {
  return refusalsASettleCanLift.has(answer.outcome) && answer.liftable;
}
