import { ledgerResultNames, ledgerV1, type LedgerResultName } from '@gateway/contracts';
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
// The result tables are the contract's (ledgerResultNames), typed by the domain's result names.

/** True when two unions of names are the same set. */
type SameNames<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;

/** Compile-time check that each domain's result names are exactly the contract's, neither more nor fewer. */
const _resultNamesMatch: [
  SameNames<OpenAccountResultName, LedgerResultName<'openAccount'>>,
  SameNames<ReserveResultName, LedgerResultName<'reserve'>>,
  SameNames<AcquireGrantResultName, LedgerResultName<'acquireGrant'>>,
  SameNames<AdjustGrantResultName, LedgerResultName<'adjustGrant'>>,
  SameNames<CheckpointResultName, LedgerResultName<'checkpoint'>>,
  SameNames<SetProjectBudgetResultName, LedgerResultName<'setProjectBudget'>>,
  SameNames<SettleResultName, LedgerResultName<'settle'>>,
  SameNames<ReleaseResultName, LedgerResultName<'release'>>,
  SameNames<CreditResultName, LedgerResultName<'credit'>>,
  SameNames<RefundCreditResultName, LedgerResultName<'refundCredit'>>,
  SameNames<ReverseRefundResultName, LedgerResultName<'reverseRefund'>>,
] = [true, true, true, true, true, true, true, true, true, true, true];

/** Each OpenAccountResultName result name of the domain as the proto's OpenAccountResult value. */
export const openAccountResults: Record<OpenAccountResultName, ledgerV1.OpenAccountResult> = ledgerResultNames.openAccount;

/** Each ReserveResultName result name of the domain as the proto's ReserveResult value. */
export const reserveResults: Record<ReserveResultName, ledgerV1.ReserveResult> = ledgerResultNames.reserve;

/** Each AcquireGrantResultName result name of the domain as the proto's AcquireGrantResult value. */
export const acquireGrantResults: Record<AcquireGrantResultName, ledgerV1.AcquireGrantResult> = ledgerResultNames.acquireGrant;

/** Each AdjustGrantResultName result name of the domain as the proto's AdjustGrantResult value. */
export const adjustGrantResults: Record<AdjustGrantResultName, ledgerV1.AdjustGrantResult> = ledgerResultNames.adjustGrant;

/** Each CheckpointResultName result name of the domain as the proto's CheckpointResult value. */
export const checkpointResults: Record<CheckpointResultName, ledgerV1.CheckpointResult> = ledgerResultNames.checkpoint;

/** Each SetProjectBudgetResultName result name of the domain as the proto's SetProjectBudgetResult value. */
export const setProjectBudgetResults: Record<SetProjectBudgetResultName, ledgerV1.SetProjectBudgetResult> = ledgerResultNames.setProjectBudget;

/** Each SettleResultName result name of the domain as the proto's SettleResult value. */
export const settleResults: Record<SettleResultName, ledgerV1.SettleResult> = ledgerResultNames.settle;

/** Each ReleaseResultName result name of the domain as the proto's ReleaseResult value. */
export const releaseResults: Record<ReleaseResultName, ledgerV1.ReleaseResult> = ledgerResultNames.release;

/** Each CreditResultName result name of the domain as the proto's CreditResult value. */
export const creditResults: Record<CreditResultName, ledgerV1.CreditResult> = ledgerResultNames.credit;

/** Each RefundCreditResultName result name of the domain as the proto's RefundCreditResult value. */
export const refundCreditResults: Record<RefundCreditResultName, ledgerV1.RefundCreditResult> = ledgerResultNames.refundCredit;

/** Each ReverseRefundResultName result name of the domain as the proto's ReverseRefundResult value. */
export const reverseRefundResults: Record<ReverseRefundResultName, ledgerV1.ReverseRefundResult> = ledgerResultNames.reverseRefund;

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
