import { ledgerV1 } from '@gateway/contracts';
import type { CheckpointResultName } from '../domain/checkpoint.ts';
import type { CreditResultName } from '../domain/credit.ts';
import type { BalanceDifference } from '../domain/find-balance-differences.ts';
import type { AcquireGrantResultName, AdjustGrantResultName } from '../domain/grants.ts';
import type { SetProjectBudgetResultName } from '../domain/set-project-budget.ts';
import type { BillingMode, UsageSource } from '../domain/ledger-types.ts';
import type { BudgetAlertView } from '../domain/list-budget-alerts.ts';
import type { UsageRecordView } from '../domain/list-usage.ts';
import type { OpenAccountResultName } from '../domain/open-account.ts';
import type { RefundCreditResultName } from '../domain/refund-credit.ts';
import type { ReverseRefundResultName } from '../domain/reverse-refund.ts';
import type { ReleaseResultName } from '../domain/release.ts';
import type { ReserveResultName } from '../domain/reserve.ts';
import type { SettleResultName } from '../domain/settle.ts';

// Proto conversion tables of the ledger's gRPC transport: domain names and views ⇄ proto values.

/** Each OpenAccountResultName result name of the domain as the proto's OpenAccountResult value. */
export const openAccountResults: Record<OpenAccountResultName, ledgerV1.OpenAccountResult> = {
  ok: ledgerV1.OpenAccountResult.OPEN_ACCOUNT_RESULT_OK,
  invalid_argument: ledgerV1.OpenAccountResult.OPEN_ACCOUNT_RESULT_INVALID_ARGUMENT,
};

/** Each ReserveResultName result name of the domain as the proto's ReserveResult value. */
export const reserveResults: Record<ReserveResultName, ledgerV1.ReserveResult> = {
  ok: ledgerV1.ReserveResult.RESERVE_RESULT_OK,
  idempotency_conflict: ledgerV1.ReserveResult.RESERVE_RESULT_IDEMPOTENCY_CONFLICT,
  invalid_argument: ledgerV1.ReserveResult.RESERVE_RESULT_INVALID_ARGUMENT,
  organisation_unknown: ledgerV1.ReserveResult.RESERVE_RESULT_ORGANISATION_UNKNOWN,
  insufficient_balance: ledgerV1.ReserveResult.RESERVE_RESULT_INSUFFICIENT_BALANCE,
  project_budget_exceeded: ledgerV1.ReserveResult.RESERVE_RESULT_PROJECT_BUDGET_EXCEEDED,
  released: ledgerV1.ReserveResult.RESERVE_RESULT_RELEASED,
  grant_not_held: ledgerV1.ReserveResult.RESERVE_RESULT_GRANT_NOT_HELD,
};

/** Each AcquireGrantResultName result name of the domain as the proto's AcquireGrantResult value. */
export const acquireGrantResults: Record<AcquireGrantResultName, ledgerV1.AcquireGrantResult> = {
  ok: ledgerV1.AcquireGrantResult.ACQUIRE_GRANT_RESULT_OK,
  idempotency_conflict: ledgerV1.AcquireGrantResult.ACQUIRE_GRANT_RESULT_IDEMPOTENCY_CONFLICT,
  invalid_argument: ledgerV1.AcquireGrantResult.ACQUIRE_GRANT_RESULT_INVALID_ARGUMENT,
  organisation_unknown: ledgerV1.AcquireGrantResult.ACQUIRE_GRANT_RESULT_ORGANISATION_UNKNOWN,
  not_granted: ledgerV1.AcquireGrantResult.ACQUIRE_GRANT_RESULT_NOT_GRANTED,
};

/** Each AdjustGrantResultName result name of the domain as the proto's AdjustGrantResult value. */
export const adjustGrantResults: Record<AdjustGrantResultName, ledgerV1.AdjustGrantResult> = {
  ok: ledgerV1.AdjustGrantResult.ADJUST_GRANT_RESULT_OK,
  idempotency_conflict: ledgerV1.AdjustGrantResult.ADJUST_GRANT_RESULT_IDEMPOTENCY_CONFLICT,
  invalid_argument: ledgerV1.AdjustGrantResult.ADJUST_GRANT_RESULT_INVALID_ARGUMENT,
  grant_unknown: ledgerV1.AdjustGrantResult.ADJUST_GRANT_RESULT_GRANT_UNKNOWN,
  already_resolved: ledgerV1.AdjustGrantResult.ADJUST_GRANT_RESULT_ALREADY_RESOLVED,
};

/** Each CheckpointResultName result name of the domain as the proto's CheckpointResult value. */
export const checkpointResults: Record<CheckpointResultName, ledgerV1.CheckpointResult> = {
  ok: ledgerV1.CheckpointResult.CHECKPOINT_RESULT_OK,
  invalid_argument: ledgerV1.CheckpointResult.CHECKPOINT_RESULT_INVALID_ARGUMENT,
  reservation_unknown: ledgerV1.CheckpointResult.CHECKPOINT_RESULT_RESERVATION_UNKNOWN,
  already_resolved: ledgerV1.CheckpointResult.CHECKPOINT_RESULT_ALREADY_RESOLVED,
};

/** Each SetProjectBudgetResultName result name of the domain as the proto's SetProjectBudgetResult value. */
export const setProjectBudgetResults: Record<SetProjectBudgetResultName, ledgerV1.SetProjectBudgetResult> = {
  ok: ledgerV1.SetProjectBudgetResult.SET_PROJECT_BUDGET_RESULT_OK,
  idempotency_conflict: ledgerV1.SetProjectBudgetResult.SET_PROJECT_BUDGET_RESULT_IDEMPOTENCY_CONFLICT,
  invalid_argument: ledgerV1.SetProjectBudgetResult.SET_PROJECT_BUDGET_RESULT_INVALID_ARGUMENT,
  organisation_unknown: ledgerV1.SetProjectBudgetResult.SET_PROJECT_BUDGET_RESULT_ORGANISATION_UNKNOWN,
};

/** Each SettleResultName result name of the domain as the proto's SettleResult value. */
export const settleResults: Record<SettleResultName, ledgerV1.SettleResult> = {
  ok: ledgerV1.SettleResult.SETTLE_RESULT_OK,
  idempotency_conflict: ledgerV1.SettleResult.SETTLE_RESULT_IDEMPOTENCY_CONFLICT,
  invalid_argument: ledgerV1.SettleResult.SETTLE_RESULT_INVALID_ARGUMENT,
  reservation_unknown: ledgerV1.SettleResult.SETTLE_RESULT_RESERVATION_UNKNOWN,
  already_resolved: ledgerV1.SettleResult.SETTLE_RESULT_ALREADY_RESOLVED,
};

/** Each ReleaseResultName result name of the domain as the proto's ReleaseResult value. */
export const releaseResults: Record<ReleaseResultName, ledgerV1.ReleaseResult> = {
  ok: ledgerV1.ReleaseResult.RELEASE_RESULT_OK,
  invalid_argument: ledgerV1.ReleaseResult.RELEASE_RESULT_INVALID_ARGUMENT,
  reservation_unknown: ledgerV1.ReleaseResult.RELEASE_RESULT_RESERVATION_UNKNOWN,
  already_resolved: ledgerV1.ReleaseResult.RELEASE_RESULT_ALREADY_RESOLVED,
};

/** Each CreditResultName result name of the domain as the proto's CreditResult value. */
export const creditResults: Record<CreditResultName, ledgerV1.CreditResult> = {
  ok: ledgerV1.CreditResult.CREDIT_RESULT_OK,
  idempotency_conflict: ledgerV1.CreditResult.CREDIT_RESULT_IDEMPOTENCY_CONFLICT,
  invalid_argument: ledgerV1.CreditResult.CREDIT_RESULT_INVALID_ARGUMENT,
  organisation_unknown: ledgerV1.CreditResult.CREDIT_RESULT_ORGANISATION_UNKNOWN,
};

/** Each RefundCreditResultName result name of the domain as the proto's RefundCreditResult value. */
export const refundCreditResults: Record<RefundCreditResultName, ledgerV1.RefundCreditResult> = {
  ok: ledgerV1.RefundCreditResult.REFUND_CREDIT_RESULT_OK,
  idempotency_conflict: ledgerV1.RefundCreditResult.REFUND_CREDIT_RESULT_IDEMPOTENCY_CONFLICT,
  invalid_argument: ledgerV1.RefundCreditResult.REFUND_CREDIT_RESULT_INVALID_ARGUMENT,
  organisation_unknown: ledgerV1.RefundCreditResult.REFUND_CREDIT_RESULT_ORGANISATION_UNKNOWN,
  credit_unknown: ledgerV1.RefundCreditResult.REFUND_CREDIT_RESULT_CREDIT_UNKNOWN,
  exceeds_credit: ledgerV1.RefundCreditResult.REFUND_CREDIT_RESULT_EXCEEDS_CREDIT,
  insufficient_balance: ledgerV1.RefundCreditResult.REFUND_CREDIT_RESULT_INSUFFICIENT_BALANCE,
};

/** Each ReverseRefundResultName result name of the domain as the proto's ReverseRefundResult value. */
export const reverseRefundResults: Record<ReverseRefundResultName, ledgerV1.ReverseRefundResult> = {
  ok: ledgerV1.ReverseRefundResult.REVERSE_REFUND_RESULT_OK,
  idempotency_conflict: ledgerV1.ReverseRefundResult.REVERSE_REFUND_RESULT_IDEMPOTENCY_CONFLICT,
  invalid_argument: ledgerV1.ReverseRefundResult.REVERSE_REFUND_RESULT_INVALID_ARGUMENT,
  refund_unknown: ledgerV1.ReverseRefundResult.REVERSE_REFUND_RESULT_REFUND_UNKNOWN,
  already_reversed: ledgerV1.ReverseRefundResult.REVERSE_REFUND_RESULT_ALREADY_REVERSED,
};

/** The proto billing mode as the domain's, or null for UNSPECIFIED and values this build does not know. */
export function billingModeFromProto(value: ledgerV1.BillingMode): BillingMode | null {
  if (value === ledgerV1.BillingMode.BILLING_MODE_COMMERCIAL) return 'commercial';
  if (value === ledgerV1.BillingMode.BILLING_MODE_INTERNAL) return 'internal';
  return null;
}

/** The proto usage source as the domain's, or null for UNSPECIFIED and values this build does not know. */
export function usageSourceFromProto(value: ledgerV1.UsageSource): UsageSource | null {
  if (value === ledgerV1.UsageSource.USAGE_SOURCE_UPSTREAM) return 'upstream';
  if (value === ledgerV1.UsageSource.USAGE_SOURCE_GATEWAY_ESTIMATE) return 'gateway_estimate';
  return null;
}

/** The domain billing mode as the proto carries it. */
export const billingModesToProto: Record<BillingMode, ledgerV1.BillingMode> = {
  commercial: ledgerV1.BillingMode.BILLING_MODE_COMMERCIAL,
  internal: ledgerV1.BillingMode.BILLING_MODE_INTERNAL,
};

/** The domain usage source as the proto carries it. */
const usageSourcesToProto: Record<UsageSource, ledgerV1.UsageSource> = {
  upstream: ledgerV1.UsageSource.USAGE_SOURCE_UPSTREAM,
  gateway_estimate: ledgerV1.UsageSource.USAGE_SOURCE_GATEWAY_ESTIMATE,
};

/** A usage record as the proto carries it. */
export function usageRecordToProto(record: UsageRecordView): ledgerV1.UsageRecord {
  return { ...record, billingMode: billingModesToProto[record.billingMode], usageSource: usageSourcesToProto[record.usageSource] };
}

/** A balance difference as the proto carries it; a project's month, or an orphan row, names itself in `balance`. */
export function balanceDifferenceToProto(difference: BalanceDifference): ledgerV1.BalanceDifference {
  const balance = difference.projectMonth
    ? `${difference.balance}:${difference.projectMonth.projectId}:${difference.projectMonth.month}`
    : difference.orphan
      ? `${difference.balance}:${difference.orphan.table}:${difference.orphan.rowId}:missing_${difference.orphan.missing}`
      : difference.grantId
        ? `${difference.balance}:${difference.grantId}`
        : difference.usageRollup
          ? `${difference.balance}:${difference.usageRollup.day}:${difference.usageRollup.projectId}:${difference.usageRollup.modelSlug}:${difference.usageRollup.billingMode}:${difference.usageRollup.column}`
          : difference.reservationId
            ? `${difference.balance}:${difference.reservationId}`
            : difference.balance;
  return {
    organisationId: difference.organisationId, check: difference.check, balance,
    accountMicros: difference.accountMicros, recomputedMicros: difference.recomputedMicros,
  };
}

/** A budget alert as the proto carries it. */
export function budgetAlertToProto(alert: BudgetAlertView): ledgerV1.BudgetAlert {
  return alert;
}
