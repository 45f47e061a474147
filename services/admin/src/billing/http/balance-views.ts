import type { Balance } from '../../common/domain/admin-records.ts';
import type { CreditOutcome } from '../domain/balance-service.ts';

/** The JSON of a balance, in INR micro-rupees as decimal strings. */
export function balanceJson(balance: Balance) {
  return {
    organisation_id: balance.organisationId,
    currency: 'INR' as const,
    credited_micros: balance.creditedMicros.toString(),
    available_micros: balance.availableMicros.toString(),
    held_micros: balance.heldMicros.toString(),
    debited_micros: balance.debitedMicros.toString(),
  };
}

/** The JSON of a manual credit's result. */
export function creditJson(outcome: CreditOutcome) {
  return {
    credit_id: outcome.creditId,
    organisation_id: outcome.organisationId,
    amount_micros: outcome.amountMicros.toString(),
    reason: outcome.reason,
    balance: balanceJson(outcome.balance),
  };
}
