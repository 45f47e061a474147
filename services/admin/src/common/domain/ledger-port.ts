import type { Balance, LedgerBudgetAlert, ProjectSpend, UsageRecord, UsageSummaryRow } from './admin-records.ts';
import type { RequestLogPort } from './request-log-port.ts';

/**
 * What the admin needs from the ledger. Implementations turn every non-OK result into a
 * GatewayError from the catalogue (e.g. an unknown organisation becomes `not_found`).
 */
export interface LedgerPort extends RequestLogPort {
  /** Opens an organisation's wallet account; idempotent on the id. */
  openAccount(organisationId: string): Promise<void>;
  /**
   * Credits a balance; idempotent on creditId (same payload: same result; else idempotency_conflict).
   * `purchased`: money the payer bought (a top-up), the only credit a refund may return.
   */
  credit(request: { creditId: string; organisationId: string; amountMicros: bigint; reason: string; purchased?: boolean }): Promise<{ availableMicros: bigint }>;
  /**
   * Refunds part of a credit from the organisation's available balance (µ₹; never held money);
   * idempotent on refundId. The ledger's refusals are `conflict` errors: the purchased, unspent
   * part of available or what is left of the credit is below the amount (unspent balance
   * exceeded), or the ledger has no such credit of the organisation; they changed nothing. With
   * `upToAvailable` (money the payer already got back) it takes what available allows instead of
   * refusing; `refundedMicros` is what it took (possibly 0).
   */
  refundCredit(request: {
    refundId: string; organisationId: string; creditId: string; amountMicros: bigint; reason: string; upToAvailable?: boolean;
  }): Promise<{ availableMicros: bigint; refundedMicros: bigint }>;
  /**
   * Gives everything a refund took back to the available balance, once (idempotent on
   * reversalId; a refund reversed under another id is a `conflict`). Returns what went back, µ₹.
   */
  reverseRefund(request: { reversalId: string; organisationId: string; refundId: string; reason: string }): Promise<{ reversedMicros: bigint; availableMicros: bigint }>;
  /** Reads an organisation's balance. */
  getBalance(organisationId: string): Promise<Balance>;
  /** Lists usage records newest first, one page at a time. */
  listUsage(request: {
    organisationId: string;
    projectId?: string | undefined;
    modelSlug?: string | undefined;
    /** Window, ms since the epoch: from inclusive, to exclusive; undefined = unbounded. */
    fromMs?: number | undefined;
    toMs?: number | undefined;
    /** 1..500 records. */
    pageSize: number;
    /** Opaque token from the previous page. */
    pageToken?: string | undefined;
  }): Promise<{ records: UsageRecord[]; nextPageToken: string | null }>;
  /**
   * Sets a project's monthly budget (cap in µ₹ and soft-alert percent 1..100), or clears it with
   * a cap of 0; idempotent on requestId.
   */
  setProjectBudget(request: {
    requestId: string; organisationId: string; projectId: string; monthlyCapMicros: bigint; softAlertPercent: number;
  }): Promise<void>;
  /** A project's spend this month against its budget. */
  getProjectSpend(projectId: string): Promise<ProjectSpend>;
  /**
   * This month's spend against its budget of every project of an organisation that has a budget,
   * spend or hold this month, in one call (a project not listed: none of these); month e.g. `2026-11`.
   */
  listProjectSpends(organisationId: string): Promise<{ month: string; projects: ProjectSpend[] }>;
  /**
   * Usage summed by day (Asia/Kolkata) and model, and by project with groupByProject; window
   * bounds in ms since the epoch, undefined = unbounded. organisationId undefined: every
   * organisation, rows by organisation too (platform analytics).
   */
  summarizeUsage(request: {
    organisationId: string | undefined; projectId?: string | undefined; fromMs?: number | undefined; toMs?: number | undefined;
    groupByProject?: boolean | undefined;
  }): Promise<UsageSummaryRow[]>;
  /**
   * Platform analytics per model and upstream deployment over a window (ms since the epoch,
   * undefined = unbounded): records answered, commercial customer cost, provider cost, failed attempts.
   */
  summarizeDeployments(request: { fromMs?: number | undefined; toMs?: number | undefined }): Promise<DeploymentSummaryRow[]>;
  /** Soft budget alerts raised after `afterId` ('' for the first), oldest first, at most `limit` (1..500). */
  listBudgetAlerts(request: { afterId: string; limit: number }): Promise<LedgerBudgetAlert[]>;
}

/** One model and upstream deployment's figures over a window, as the ledger sums them; money µ₹. */
export interface DeploymentSummaryRow {
  modelSlug: string;
  /** '' for usage settled without a deployment (before deployments existed, or an expiry charge). */
  deployment: string;
  requests: bigint;
  /** Customer cost of its commercial records, µ₹. */
  costMicros: bigint;
  /** Provider cost of its records, µ₹. */
  providerCostMicros: bigint;
  /** Failed attempts its provider may have billed, and their provider cost, µ₹. */
  failedAttempts: bigint;
  failedAttemptProviderCostMicros: bigint;
}
