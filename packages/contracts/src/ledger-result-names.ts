/**
 * The name of every ledger result, one table per result enum: name ⇄ proto value. The ledger
 * encodes its domain outcome with it, and the proxy and the admin decode answers with it, so a
 * result is named in one place. UNSPECIFIED and UNRECOGNIZED have no name: a caller that gets
 * one decides nothing from it (see ledger-results.ts for whether to retry).
 *
 * Hand-written beside the generated code; `ledger-result-names.test.ts` fails when an enum has a
 * value (other than UNSPECIFIED and UNRECOGNIZED) this file does not name.
 */
import {
  AcquireGrantResult, AdjustGrantResult, CheckpointResult, CreditResult, GetBalanceResult, OpenAccountResult, RefundCreditResult, ReleaseResult, ReserveResult, ReverseRefundResult, SetProjectBudgetResult,
  SettleResult,
} from './gen/gateway/ledger/v1/ledger.ts';

const openAccount = {
  ok: OpenAccountResult.OPEN_ACCOUNT_RESULT_OK,
  invalid_argument: OpenAccountResult.OPEN_ACCOUNT_RESULT_INVALID_ARGUMENT,
} as const;

const reserve = {
  ok: ReserveResult.RESERVE_RESULT_OK,
  idempotency_conflict: ReserveResult.RESERVE_RESULT_IDEMPOTENCY_CONFLICT,
  invalid_argument: ReserveResult.RESERVE_RESULT_INVALID_ARGUMENT,
  organisation_unknown: ReserveResult.RESERVE_RESULT_ORGANISATION_UNKNOWN,
  insufficient_balance: ReserveResult.RESERVE_RESULT_INSUFFICIENT_BALANCE,
  project_budget_exceeded: ReserveResult.RESERVE_RESULT_PROJECT_BUDGET_EXCEEDED,
  released: ReserveResult.RESERVE_RESULT_RELEASED,
  grant_not_held: ReserveResult.RESERVE_RESULT_GRANT_NOT_HELD,
} as const;

const acquireGrant = {
  ok: AcquireGrantResult.ACQUIRE_GRANT_RESULT_OK,
  idempotency_conflict: AcquireGrantResult.ACQUIRE_GRANT_RESULT_IDEMPOTENCY_CONFLICT,
  invalid_argument: AcquireGrantResult.ACQUIRE_GRANT_RESULT_INVALID_ARGUMENT,
  organisation_unknown: AcquireGrantResult.ACQUIRE_GRANT_RESULT_ORGANISATION_UNKNOWN,
  not_granted: AcquireGrantResult.ACQUIRE_GRANT_RESULT_NOT_GRANTED,
} as const;

const adjustGrant = {
  ok: AdjustGrantResult.ADJUST_GRANT_RESULT_OK,
  idempotency_conflict: AdjustGrantResult.ADJUST_GRANT_RESULT_IDEMPOTENCY_CONFLICT,
  invalid_argument: AdjustGrantResult.ADJUST_GRANT_RESULT_INVALID_ARGUMENT,
  grant_unknown: AdjustGrantResult.ADJUST_GRANT_RESULT_GRANT_UNKNOWN,
  already_resolved: AdjustGrantResult.ADJUST_GRANT_RESULT_ALREADY_RESOLVED,
} as const;

const checkpoint = {
  ok: CheckpointResult.CHECKPOINT_RESULT_OK,
  invalid_argument: CheckpointResult.CHECKPOINT_RESULT_INVALID_ARGUMENT,
  reservation_unknown: CheckpointResult.CHECKPOINT_RESULT_RESERVATION_UNKNOWN,
  already_resolved: CheckpointResult.CHECKPOINT_RESULT_ALREADY_RESOLVED,
} as const;

const setProjectBudget = {
  ok: SetProjectBudgetResult.SET_PROJECT_BUDGET_RESULT_OK,
  idempotency_conflict: SetProjectBudgetResult.SET_PROJECT_BUDGET_RESULT_IDEMPOTENCY_CONFLICT,
  invalid_argument: SetProjectBudgetResult.SET_PROJECT_BUDGET_RESULT_INVALID_ARGUMENT,
  organisation_unknown: SetProjectBudgetResult.SET_PROJECT_BUDGET_RESULT_ORGANISATION_UNKNOWN,
} as const;

const settle = {
  ok: SettleResult.SETTLE_RESULT_OK,
  idempotency_conflict: SettleResult.SETTLE_RESULT_IDEMPOTENCY_CONFLICT,
  invalid_argument: SettleResult.SETTLE_RESULT_INVALID_ARGUMENT,
  reservation_unknown: SettleResult.SETTLE_RESULT_RESERVATION_UNKNOWN,
  already_resolved: SettleResult.SETTLE_RESULT_ALREADY_RESOLVED,
} as const;

const release = {
  ok: ReleaseResult.RELEASE_RESULT_OK,
  invalid_argument: ReleaseResult.RELEASE_RESULT_INVALID_ARGUMENT,
  reservation_unknown: ReleaseResult.RELEASE_RESULT_RESERVATION_UNKNOWN,
  already_resolved: ReleaseResult.RELEASE_RESULT_ALREADY_RESOLVED,
} as const;

const credit = {
  ok: CreditResult.CREDIT_RESULT_OK,
  idempotency_conflict: CreditResult.CREDIT_RESULT_IDEMPOTENCY_CONFLICT,
  invalid_argument: CreditResult.CREDIT_RESULT_INVALID_ARGUMENT,
  organisation_unknown: CreditResult.CREDIT_RESULT_ORGANISATION_UNKNOWN,
} as const;

const refundCredit = {
  ok: RefundCreditResult.REFUND_CREDIT_RESULT_OK,
  idempotency_conflict: RefundCreditResult.REFUND_CREDIT_RESULT_IDEMPOTENCY_CONFLICT,
  invalid_argument: RefundCreditResult.REFUND_CREDIT_RESULT_INVALID_ARGUMENT,
  organisation_unknown: RefundCreditResult.REFUND_CREDIT_RESULT_ORGANISATION_UNKNOWN,
  credit_unknown: RefundCreditResult.REFUND_CREDIT_RESULT_CREDIT_UNKNOWN,
  exceeds_credit: RefundCreditResult.REFUND_CREDIT_RESULT_EXCEEDS_CREDIT,
  insufficient_balance: RefundCreditResult.REFUND_CREDIT_RESULT_INSUFFICIENT_BALANCE,
} as const;

const reverseRefund = {
  ok: ReverseRefundResult.REVERSE_REFUND_RESULT_OK,
  idempotency_conflict: ReverseRefundResult.REVERSE_REFUND_RESULT_IDEMPOTENCY_CONFLICT,
  invalid_argument: ReverseRefundResult.REVERSE_REFUND_RESULT_INVALID_ARGUMENT,
  refund_unknown: ReverseRefundResult.REVERSE_REFUND_RESULT_REFUND_UNKNOWN,
  already_reversed: ReverseRefundResult.REVERSE_REFUND_RESULT_ALREADY_REVERSED,
} as const;

const getBalance = {
  ok: GetBalanceResult.GET_BALANCE_RESULT_OK,
  organisation_unknown: GetBalanceResult.GET_BALANCE_RESULT_ORGANISATION_UNKNOWN,
} as const;

/** Each ledger operation's result names as their proto values (the operations of ledgerResultTransient). */
export const ledgerResultNames = {
  openAccount, reserve, settle, release, credit, refundCredit, reverseRefund, getBalance, checkpoint, setProjectBudget, acquireGrant, adjustGrant,
} as const;

/** The result names of one ledger operation, e.g. LedgerResultName<'reserve'> is 'ok' | 'insufficient_balance' | …. */
export type LedgerResultName<Operation extends keyof typeof ledgerResultNames> = keyof (typeof ledgerResultNames)[Operation];

/** One operation's table read backwards, proto value → name, for decoding answers; a value it lacks has no name. */
export function resultNamesByValue<Name extends string>(table: Readonly<Record<Name, number>>): ReadonlyMap<number, Name> {
  return new Map((Object.entries(table) as Array<[Name, number]>).map(([name, value]) => [value, name]));
}
