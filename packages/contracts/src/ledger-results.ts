/**
 * Whether each result of each ledger operation is transient, as data (TigerBeetle's
 * `transient()`): true when sending the same request again later can succeed, because the
 * result depends on state that may change (a balance, an account not yet opened) and the ledger
 * wrote nothing for it, so the id is not spent (IDEMPOTENCY); false when the answer is final for
 * that request (it succeeded, or it will be refused the same way every time).
 *
 * Hand-written beside the generated code. Each table is a Record over its generated result
 * enum, so a result added to `proto/gateway/ledger/v1/ledger.proto` does not compile until it
 * has an entry here. UNSPECIFIED (the ledger decided nothing) and UNRECOGNIZED (a result newer
 * than this build) count as transient: nothing is known to have happened, so a caller that must
 * not lose the operation (the proxy's settle outbox, NOTHING_FREE) sends it again; a caller that
 * answers a person may still treat them as a contract fault.
 */
import {
  AcquireGrantResult, AdjustGrantResult, CheckpointResult, CreditResult, GetBalanceResult, OpenAccountResult, RefundCreditResult, ReleaseResult, ReserveResult, ReverseRefundResult, SetProjectBudgetResult,
  SettleResult,
} from './gen/gateway/ledger/v1/ledger.ts';

/** ts-proto's UNRECOGNIZED (-1), the same in every result enum. */
const ledgerUnrecognized = ReserveResult.UNRECOGNIZED;

/** For every result of one operation: true when retrying the same request later can succeed. */
export type TransientTable<Result extends number> = Readonly<Record<Result, boolean>>;

const openAccount: TransientTable<OpenAccountResult> = {
  [OpenAccountResult.OPEN_ACCOUNT_RESULT_UNSPECIFIED]: true,
  [OpenAccountResult.OPEN_ACCOUNT_RESULT_OK]: false,
  [OpenAccountResult.OPEN_ACCOUNT_RESULT_INVALID_ARGUMENT]: false,
  [OpenAccountResult.UNRECOGNIZED]: true,
};

const reserve: TransientTable<ReserveResult> = {
  [ReserveResult.RESERVE_RESULT_UNSPECIFIED]: true,
  [ReserveResult.RESERVE_RESULT_OK]: false,
  [ReserveResult.RESERVE_RESULT_IDEMPOTENCY_CONFLICT]: false,
  [ReserveResult.RESERVE_RESULT_INVALID_ARGUMENT]: false,
  // A refused Reserve writes nothing, and the admin's config snapshot can reach a proxy before
  // the organisation's account is opened (or while OpenAccount is being retried): the same
  // Reserve succeeds once it is.
  [ReserveResult.RESERVE_RESULT_ORGANISATION_UNKNOWN]: true,
  // A credit, or a Settle that returns unused hold, can make the same Reserve fit (NO_OVERSPEND).
  [ReserveResult.RESERVE_RESULT_INSUFFICIENT_BALANCE]: true,
  // A Settle that returns unused hold, a raised cap or a new month can make it fit (PROJECT_BUDGET).
  [ReserveResult.RESERVE_RESULT_PROJECT_BUDGET_EXCEEDED]: true,
  // The tombstone of an earlier Release stays: this reservation id never holds anything.
  [ReserveResult.RESERVE_RESULT_RELEASED]: false,
  // The grant was returned or expired (or is short): the same carve will never fit it again.
  [ReserveResult.RESERVE_RESULT_GRANT_NOT_HELD]: false,
  [ReserveResult.UNRECOGNIZED]: true,
};

const acquireGrant: TransientTable<AcquireGrantResult> = {
  [AcquireGrantResult.ACQUIRE_GRANT_RESULT_UNSPECIFIED]: true,
  [AcquireGrantResult.ACQUIRE_GRANT_RESULT_OK]: false,
  [AcquireGrantResult.ACQUIRE_GRANT_RESULT_IDEMPOTENCY_CONFLICT]: false,
  [AcquireGrantResult.ACQUIRE_GRANT_RESULT_INVALID_ARGUMENT]: false,
  // Written nothing; succeeds once the account is opened.
  [AcquireGrantResult.ACQUIRE_GRANT_RESULT_ORGANISATION_UNKNOWN]: true,
  // Written nothing; a credit, returned holds or a quieter project can make a grant fit later.
  [AcquireGrantResult.ACQUIRE_GRANT_RESULT_NOT_GRANTED]: true,
  [AcquireGrantResult.UNRECOGNIZED]: true,
};

const adjustGrant: TransientTable<AdjustGrantResult> = {
  [AdjustGrantResult.ADJUST_GRANT_RESULT_UNSPECIFIED]: true,
  [AdjustGrantResult.ADJUST_GRANT_RESULT_OK]: false,
  [AdjustGrantResult.ADJUST_GRANT_RESULT_IDEMPOTENCY_CONFLICT]: false,
  [AdjustGrantResult.ADJUST_GRANT_RESULT_INVALID_ARGUMENT]: false,
  [AdjustGrantResult.ADJUST_GRANT_RESULT_GRANT_UNKNOWN]: false,
  // Closed or expired first: what it held is back in the wallet already.
  [AdjustGrantResult.ADJUST_GRANT_RESULT_ALREADY_RESOLVED]: false,
  [AdjustGrantResult.UNRECOGNIZED]: true,
};

const settle: TransientTable<SettleResult> = {
  [SettleResult.SETTLE_RESULT_UNSPECIFIED]: true,
  [SettleResult.SETTLE_RESULT_OK]: false,
  [SettleResult.SETTLE_RESULT_IDEMPOTENCY_CONFLICT]: false,
  [SettleResult.SETTLE_RESULT_INVALID_ARGUMENT]: false,
  [SettleResult.SETTLE_RESULT_RESERVATION_UNKNOWN]: false,
  // Released or expired first (ONE_OUTCOME); a late Settle after expiry is answered OK instead.
  [SettleResult.SETTLE_RESULT_ALREADY_RESOLVED]: false,
  [SettleResult.UNRECOGNIZED]: true,
};

const release: TransientTable<ReleaseResult> = {
  [ReleaseResult.RELEASE_RESULT_UNSPECIFIED]: true,
  [ReleaseResult.RELEASE_RESULT_OK]: false,
  [ReleaseResult.RELEASE_RESULT_INVALID_ARGUMENT]: false,
  // Final: the ledger left a tombstone, so a Reserve of this id queued behind it holds nothing.
  [ReleaseResult.RELEASE_RESULT_RESERVATION_UNKNOWN]: false,
  [ReleaseResult.RELEASE_RESULT_ALREADY_RESOLVED]: false,
  [ReleaseResult.UNRECOGNIZED]: true,
};

const credit: TransientTable<CreditResult> = {
  [CreditResult.CREDIT_RESULT_UNSPECIFIED]: true,
  [CreditResult.CREDIT_RESULT_OK]: false,
  [CreditResult.CREDIT_RESULT_IDEMPOTENCY_CONFLICT]: false,
  [CreditResult.CREDIT_RESULT_INVALID_ARGUMENT]: false,
  // A refused Credit writes nothing; it succeeds once the account is opened.
  [CreditResult.CREDIT_RESULT_ORGANISATION_UNKNOWN]: true,
  [CreditResult.UNRECOGNIZED]: true,
};

const refundCredit: TransientTable<RefundCreditResult> = {
  [RefundCreditResult.REFUND_CREDIT_RESULT_UNSPECIFIED]: true,
  [RefundCreditResult.REFUND_CREDIT_RESULT_OK]: false,
  [RefundCreditResult.REFUND_CREDIT_RESULT_IDEMPOTENCY_CONFLICT]: false,
  [RefundCreditResult.REFUND_CREDIT_RESULT_INVALID_ARGUMENT]: false,
  // A refused refund writes nothing: it succeeds once the account is opened or the credit made.
  [RefundCreditResult.REFUND_CREDIT_RESULT_ORGANISATION_UNKNOWN]: true,
  [RefundCreditResult.REFUND_CREDIT_RESULT_CREDIT_UNKNOWN]: true,
  // The credit's refunds only grow: this amount never fits it again.
  [RefundCreditResult.REFUND_CREDIT_RESULT_EXCEEDS_CREDIT]: false,
  // A credit, or a Settle or Release that returns held money, can make it fit (NO_OVERSPEND).
  [RefundCreditResult.REFUND_CREDIT_RESULT_INSUFFICIENT_BALANCE]: true,
  [RefundCreditResult.UNRECOGNIZED]: true,
};

const reverseRefund: TransientTable<ReverseRefundResult> = {
  [ReverseRefundResult.REVERSE_REFUND_RESULT_UNSPECIFIED]: true,
  [ReverseRefundResult.REVERSE_REFUND_RESULT_OK]: false,
  [ReverseRefundResult.REVERSE_REFUND_RESULT_IDEMPOTENCY_CONFLICT]: false,
  [ReverseRefundResult.REVERSE_REFUND_RESULT_INVALID_ARGUMENT]: false,
  // A refused reversal writes nothing: it succeeds once the refund is made.
  [ReverseRefundResult.REVERSE_REFUND_RESULT_REFUND_UNKNOWN]: true,
  // A refund is reversed once: another reversal id never fits it again.
  [ReverseRefundResult.REVERSE_REFUND_RESULT_ALREADY_REVERSED]: false,
  [ReverseRefundResult.UNRECOGNIZED]: true,
};

const getBalance: TransientTable<GetBalanceResult> = {
  [GetBalanceResult.GET_BALANCE_RESULT_UNSPECIFIED]: true,
  [GetBalanceResult.GET_BALANCE_RESULT_OK]: false,
  [GetBalanceResult.GET_BALANCE_RESULT_ORGANISATION_UNKNOWN]: true,
  [GetBalanceResult.UNRECOGNIZED]: true,
};

const checkpoint: TransientTable<CheckpointResult> = {
  [CheckpointResult.CHECKPOINT_RESULT_UNSPECIFIED]: true,
  [CheckpointResult.CHECKPOINT_RESULT_OK]: false,
  [CheckpointResult.CHECKPOINT_RESULT_INVALID_ARGUMENT]: false,
  [CheckpointResult.CHECKPOINT_RESULT_RESERVATION_UNKNOWN]: false,
  [CheckpointResult.CHECKPOINT_RESULT_ALREADY_RESOLVED]: false,
  [CheckpointResult.UNRECOGNIZED]: true,
};

const setProjectBudget: TransientTable<SetProjectBudgetResult> = {
  [SetProjectBudgetResult.SET_PROJECT_BUDGET_RESULT_UNSPECIFIED]: true,
  [SetProjectBudgetResult.SET_PROJECT_BUDGET_RESULT_OK]: false,
  [SetProjectBudgetResult.SET_PROJECT_BUDGET_RESULT_IDEMPOTENCY_CONFLICT]: false,
  [SetProjectBudgetResult.SET_PROJECT_BUDGET_RESULT_INVALID_ARGUMENT]: false,
  // Written nothing; succeeds once the account is opened.
  [SetProjectBudgetResult.SET_PROJECT_BUDGET_RESULT_ORGANISATION_UNKNOWN]: true,
  [SetProjectBudgetResult.UNRECOGNIZED]: true,
};

/**
 * Per ledger operation with a result enum, per result: true when the result is transient
 * (retrying the same request later can succeed). Read as `ledgerResultTransient.reserve[result]`.
 */
export const ledgerResultTransient = {
  openAccount, reserve, settle, release, credit, refundCredit, reverseRefund, getBalance, checkpoint, setProjectBudget, acquireGrant, adjustGrant,
} as const;

/** The ledger operations that answer with a result enum (the keys of ledgerResultTransient). */
export type LedgerResultOperation = keyof typeof ledgerResultTransient;

/**
 * Whether one result is transient. A number outside the enum (a newer ledger's result, which
 * ts-proto passes through as it came rather than as UNRECOGNIZED) counts as UNRECOGNIZED.
 */
export function isTransientResult<Result extends number>(table: TransientTable<Result>, result: Result): boolean {
  return (table as Readonly<Partial<Record<number, boolean>>>)[result] ?? table[ledgerUnrecognized as Result];
}
