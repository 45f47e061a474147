import { status as GrpcStatus, type ServerUnaryCall, type sendUnaryData } from '@grpc/grpc-js';
import { ledgerV1 } from '@gateway/contracts';
import { createGrpcServer, startGrpcServer, stopGrpcServer } from '@gateway/grpc';
import { sharedTestPki, testTransportSecurity } from '@gateway/testkit';
import { fakeRequestLogHandlers } from './fake-request-log.ts';

/**
 * A small in-memory LedgerService peer served over real grpc-js on port 0, for the admin's
 * tests until the real ledger runs beside it (the end-to-end test covers that). It keeps the
 * contract's rules that the admin relies on: idempotent OpenAccount, Credit and RefundCredit (same id, same
 * payload: same result; different payload: IDEMPOTENCY_CONFLICT), unknown organisations, and
 * usage listed newest first with page tokens.
 */
export interface FakeLedger {
  /** host:port to give the admin as LEDGER_GRPC_URL. */
  target: string;
  /** Wallets by organisation id, µ₹. */
  accounts: Map<string, { creditedMicros: bigint; availableMicros: bigint; heldMicros: bigint; debitedMicros: bigint }>;
  /** Credits by credit_id. */
  credits: Map<string, { organisationId: string; amountMicros: bigint; reason: string; purchased?: boolean }>;
  /**
   * Refunds by refund_id (RefundCredit takes available and credited down; never held; only the
   * purchased part of available unless upToAvailable, which takes what there is: amountMicros is what was taken).
   */
  refunds: Map<string, { organisationId: string; creditId: string; amountMicros: bigint; reason: string; upToAvailable?: boolean; requestedMicros?: bigint }>;
  /** Reversals by reversal_id (ReverseRefund gives a refund's money back, once per refund). */
  reversals: Map<string, { organisationId: string; refundId: string; amountMicros: bigint; reason: string }>;
  /** Usage records the tests seed; ListUsage serves them. */
  usage: ledgerV1.UsageRecord[];
  /** Request-log records the tests seed; ListRequests and GetRequest serve them (fake-request-log.ts). */
  requests: ledgerV1.RequestRecord[];
  /** Project budgets by project id (cap µ₹, soft-alert percent); SetProjectBudget with cap 0 deletes. */
  budgets: Map<string, { organisationId: string; monthlyCapMicros: bigint; softAlertPercent: number }>;
  /** Project spend this month by project id, µ₹, as the tests seed it; GetProjectSpend serves it. */
  spend: Map<string, { settledMicros: bigint; heldMicros: bigint; softAlertRaised: boolean }>;
  /** Soft budget alerts the tests raise (ids increasing decimals); ListBudgetAlerts serves them. */
  budgetAlerts: ledgerV1.BudgetAlert[];
  /** SetProjectBudget requests by request id (idempotency). */
  budgetRequests: Map<string, ledgerV1.SetProjectBudgetRequest>;
  /** Names of the methods called, in order. */
  calls: string[];
  /** Makes the next call of a method fail with UNAVAILABLE, as a ledger that is down would. */
  failNext(method: 'openAccount' | 'credit' | 'refundCredit' | 'reverseRefund' | 'getBalance' | 'listUsage' | 'setProjectBudget' | 'getProjectSpend' | 'listProjectSpends' | 'summarizeUsage' | 'listBudgetAlerts'): void;
  close(): Promise<void>;
}

/** The calendar day of an instant in Asia/Kolkata (UTC+05:30, no daylight saving), e.g. `2026-11-21`. */
function kolkataDay(epochMs: number): string {
  return new Date(epochMs + 330 * 60_000).toISOString().slice(0, 10);
}

/** Starts the fake ledger on 127.0.0.1 and a free port. */
export async function startFakeLedger(): Promise<FakeLedger> {
  const accounts: FakeLedger['accounts'] = new Map();
  const credits: FakeLedger['credits'] = new Map();
  const refunds: FakeLedger['refunds'] = new Map();
  const reversals: FakeLedger['reversals'] = new Map();
  const usage: ledgerV1.UsageRecord[] = [];
  const requests: ledgerV1.RequestRecord[] = [];
  const budgets: FakeLedger['budgets'] = new Map();
  const spend: FakeLedger['spend'] = new Map();
  const budgetRequests: FakeLedger['budgetRequests'] = new Map();
  const budgetAlerts: ledgerV1.BudgetAlert[] = [];
  const calls: string[] = [];
  const failing = new Set<string>();

  function unary<Req, Res>(method: string, handle: (request: Req) => Res) {
    return (call: ServerUnaryCall<Req, Res>, callback: sendUnaryData<Res>) => {
      calls.push(method);
      if (failing.delete(method)) {
        callback({ code: GrpcStatus.UNAVAILABLE, details: 'fake ledger is down' });
        return;
      }
      callback(null, handle(call.request));
    };
  }
  const unimplemented = (_call: unknown, callback: sendUnaryData<never>) => callback({ code: GrpcStatus.UNIMPLEMENTED, details: 'not in the fake' });

  const service: ledgerV1.LedgerServiceServer = {
    acquireGrant: unimplemented,
    adjustGrant: unimplemented,
    openAccount: unary('openAccount', (request: ledgerV1.OpenAccountRequest) => {
      if (request.organisationId === '') {
        return ledgerV1.OpenAccountResponse.fromPartial({ result: ledgerV1.OpenAccountResult.OPEN_ACCOUNT_RESULT_INVALID_ARGUMENT, detail: 'organisation_id is empty' });
      }
      if (!accounts.has(request.organisationId)) {
        accounts.set(request.organisationId, { creditedMicros: 0n, availableMicros: 0n, heldMicros: 0n, debitedMicros: 0n });
      }
      return ledgerV1.OpenAccountResponse.fromPartial({ result: ledgerV1.OpenAccountResult.OPEN_ACCOUNT_RESULT_OK });
    }),
    credit: unary('credit', (request: ledgerV1.CreditRequest) => {
      const previous = credits.get(request.creditId);
      if (previous) {
        const same = previous.organisationId === request.organisationId && previous.amountMicros === request.amountMicros && previous.reason === request.reason
          && (previous.purchased === true) === request.purchased;
        return ledgerV1.CreditResponse.fromPartial(same
          ? { result: ledgerV1.CreditResult.CREDIT_RESULT_OK, availableMicros: accounts.get(request.organisationId)!.availableMicros }
          : { result: ledgerV1.CreditResult.CREDIT_RESULT_IDEMPOTENCY_CONFLICT });
      }
      if (request.creditId === '' || request.amountMicros <= 0n) {
        return ledgerV1.CreditResponse.fromPartial({ result: ledgerV1.CreditResult.CREDIT_RESULT_INVALID_ARGUMENT });
      }
      const account = accounts.get(request.organisationId);
      if (!account) return ledgerV1.CreditResponse.fromPartial({ result: ledgerV1.CreditResult.CREDIT_RESULT_ORGANISATION_UNKNOWN });
      credits.set(request.creditId, { organisationId: request.organisationId, amountMicros: request.amountMicros, reason: request.reason, ...(request.purchased ? { purchased: true } : {}) });
      account.creditedMicros += request.amountMicros;
      account.availableMicros += request.amountMicros;
      return ledgerV1.CreditResponse.fromPartial({ result: ledgerV1.CreditResult.CREDIT_RESULT_OK, availableMicros: account.availableMicros });
    }),
    refundCredit: unary('refundCredit', (request: ledgerV1.RefundCreditRequest) => {
      const { RefundCreditResult: Result } = ledgerV1;
      const previous = refunds.get(request.refundId);
      if (previous) {
        const same = previous.organisationId === request.organisationId && previous.creditId === request.creditId
          && (previous.requestedMicros ?? previous.amountMicros) === request.amountMicros && previous.reason === request.reason
          && (previous.upToAvailable === true) === request.upToAvailable;
        return ledgerV1.RefundCreditResponse.fromPartial(same
          ? { result: Result.REFUND_CREDIT_RESULT_OK, availableMicros: accounts.get(request.organisationId)!.availableMicros, refundedMicros: previous.amountMicros }
          : { result: Result.REFUND_CREDIT_RESULT_IDEMPOTENCY_CONFLICT });
      }
      if (request.refundId === '' || request.amountMicros <= 0n) {
        return ledgerV1.RefundCreditResponse.fromPartial({ result: Result.REFUND_CREDIT_RESULT_INVALID_ARGUMENT });
      }
      const account = accounts.get(request.organisationId);
      if (!account) return ledgerV1.RefundCreditResponse.fromPartial({ result: Result.REFUND_CREDIT_RESULT_ORGANISATION_UNKNOWN });
      const refunded = credits.get(request.creditId);
      if (refunded?.organisationId !== request.organisationId) {
        return ledgerV1.RefundCreditResponse.fromPartial({ result: Result.REFUND_CREDIT_RESULT_CREDIT_UNKNOWN, availableMicros: account.availableMicros });
      }
      const reversedIds = new Set([...reversals.values()].map((reversal) => reversal.refundId));
      const already = [...refunds.entries()].filter(([id, refund]) => refund.creditId === request.creditId && !reversedIds.has(id))
        .reduce((sum, [, refund]) => sum + refund.amountMicros, 0n);
      let take = request.amountMicros;
      if (request.upToAvailable) {
        const left = refunded.amountMicros - already;
        const available = account.availableMicros > 0n ? account.availableMicros : 0n;
        take = [take, available, left].reduce((least, value) => (value < least ? value : least));
        if (take <= 0n) return ledgerV1.RefundCreditResponse.fromPartial({ result: Result.REFUND_CREDIT_RESULT_OK, availableMicros: account.availableMicros, detail: 'nothing available to take' });
      } else {
        if (already + request.amountMicros > refunded.amountMicros) {
          return ledgerV1.RefundCreditResponse.fromPartial({ result: Result.REFUND_CREDIT_RESULT_EXCEEDS_CREDIT, availableMicros: account.availableMicros });
        }
        const notPurchased = [...credits.values()].filter((credit) => credit.organisationId === request.organisationId && credit.purchased !== true)
          .reduce((sum, credit) => sum + credit.amountMicros, 0n);
        if (account.availableMicros - notPurchased < request.amountMicros) {
          return ledgerV1.RefundCreditResponse.fromPartial({ result: Result.REFUND_CREDIT_RESULT_INSUFFICIENT_BALANCE, availableMicros: account.availableMicros });
        }
      }
      refunds.set(request.refundId, {
        organisationId: request.organisationId, creditId: request.creditId, amountMicros: take, reason: request.reason,
        ...(request.upToAvailable ? { upToAvailable: true, requestedMicros: request.amountMicros } : {}),
      });
      account.creditedMicros -= take;
      account.availableMicros -= take;
      return ledgerV1.RefundCreditResponse.fromPartial({ result: Result.REFUND_CREDIT_RESULT_OK, availableMicros: account.availableMicros, refundedMicros: take });
    }),
    reverseRefund: unary('reverseRefund', (request: ledgerV1.ReverseRefundRequest) => {
      const { ReverseRefundResult: Result } = ledgerV1;
      const previous = reversals.get(request.reversalId);
      if (previous) {
        const same = previous.organisationId === request.organisationId && previous.refundId === request.refundId && previous.reason === request.reason;
        return ledgerV1.ReverseRefundResponse.fromPartial(same
          ? { result: Result.REVERSE_REFUND_RESULT_OK, reversedMicros: previous.amountMicros, availableMicros: accounts.get(request.organisationId)!.availableMicros }
          : { result: Result.REVERSE_REFUND_RESULT_IDEMPOTENCY_CONFLICT });
      }
      const refund = refunds.get(request.refundId);
      const account = accounts.get(request.organisationId);
      if (refund?.organisationId !== request.organisationId || !account) return ledgerV1.ReverseRefundResponse.fromPartial({ result: Result.REVERSE_REFUND_RESULT_REFUND_UNKNOWN });
      if ([...reversals.values()].some((reversal) => reversal.refundId === request.refundId)) {
        return ledgerV1.ReverseRefundResponse.fromPartial({ result: Result.REVERSE_REFUND_RESULT_ALREADY_REVERSED, availableMicros: account.availableMicros });
      }
      reversals.set(request.reversalId, { organisationId: request.organisationId, refundId: request.refundId, amountMicros: refund.amountMicros, reason: request.reason });
      account.creditedMicros += refund.amountMicros;
      account.availableMicros += refund.amountMicros;
      return ledgerV1.ReverseRefundResponse.fromPartial({ result: Result.REVERSE_REFUND_RESULT_OK, reversedMicros: refund.amountMicros, availableMicros: account.availableMicros });
    }),
    getBalance: unary('getBalance', (request: ledgerV1.GetBalanceRequest) => {
      const account = accounts.get(request.organisationId);
      if (!account) return ledgerV1.GetBalanceResponse.fromPartial({ result: ledgerV1.GetBalanceResult.GET_BALANCE_RESULT_ORGANISATION_UNKNOWN });
      return ledgerV1.GetBalanceResponse.fromPartial({ result: ledgerV1.GetBalanceResult.GET_BALANCE_RESULT_OK, ...account });
    }),
    listUsage: unary('listUsage', (request: ledgerV1.ListUsageRequest) => {
      const matching = usage
        .filter((record) => record.organisationId === request.organisationId
          && (request.projectId === '' || record.projectId === request.projectId)
          && (request.modelSlug === '' || record.modelSlug === request.modelSlug)
          && (request.fromMs === 0n || record.createdAtMs >= request.fromMs)
          && (request.toMs === 0n || record.createdAtMs < request.toMs))
        .sort((a, b) => Number(b.createdAtMs - a.createdAtMs) || b.id.localeCompare(a.id));
      const offset = request.pageToken === '' ? 0 : Number(request.pageToken);
      const pageSize = request.pageSize === 0 ? 50 : request.pageSize;
      const records = matching.slice(offset, offset + pageSize);
      const nextPageToken = offset + pageSize < matching.length ? String(offset + pageSize) : '';
      return ledgerV1.ListUsageResponse.fromPartial({ records, nextPageToken });
    }),
    setProjectBudget: unary('setProjectBudget', (request: ledgerV1.SetProjectBudgetRequest) => {
      const result = ledgerV1.SetProjectBudgetResult;
      const previous = budgetRequests.get(request.requestId);
      if (previous) {
        const same = previous.organisationId === request.organisationId && previous.projectId === request.projectId
          && previous.monthlyCapMicros === request.monthlyCapMicros && previous.softAlertPercent === request.softAlertPercent;
        return ledgerV1.SetProjectBudgetResponse.fromPartial({ result: same ? result.SET_PROJECT_BUDGET_RESULT_OK : result.SET_PROJECT_BUDGET_RESULT_IDEMPOTENCY_CONFLICT });
      }
      const clearing = request.monthlyCapMicros === 0n;
      if (request.requestId === '' || request.projectId === '' || request.monthlyCapMicros < 0n
        || (!clearing && (request.softAlertPercent < 1 || request.softAlertPercent > 100))) {
        return ledgerV1.SetProjectBudgetResponse.fromPartial({ result: result.SET_PROJECT_BUDGET_RESULT_INVALID_ARGUMENT, detail: 'bad budget' });
      }
      if (!accounts.has(request.organisationId)) return ledgerV1.SetProjectBudgetResponse.fromPartial({ result: result.SET_PROJECT_BUDGET_RESULT_ORGANISATION_UNKNOWN });
      budgetRequests.set(request.requestId, request);
      if (clearing) budgets.delete(request.projectId);
      else budgets.set(request.projectId, { organisationId: request.organisationId, monthlyCapMicros: request.monthlyCapMicros, softAlertPercent: request.softAlertPercent });
      return ledgerV1.SetProjectBudgetResponse.fromPartial({ result: result.SET_PROJECT_BUDGET_RESULT_OK });
    }),
    getProjectSpend: unary('getProjectSpend', (request: ledgerV1.GetProjectSpendRequest) => {
      const budget = budgets.get(request.projectId);
      const spent = spend.get(request.projectId);
      return ledgerV1.GetProjectSpendResponse.fromPartial({
        month: kolkataDay(Date.now()).slice(0, 7),
        settledMicros: spent?.settledMicros ?? 0n,
        heldMicros: spent?.heldMicros ?? 0n,
        monthlyCapMicros: budget?.monthlyCapMicros ?? 0n,
        softAlertPercent: budget?.softAlertPercent ?? 0,
        softAlertRaised: spent?.softAlertRaised ?? false,
      });
    }),
    summarizeUsage: unary('summarizeUsage', (request: ledgerV1.SummarizeUsageRequest) => {
      const rows = new Map<string, ledgerV1.UsageSummaryRow>();
      for (const record of usage) {
        if (!request.allOrganisations && record.organisationId !== request.organisationId) continue;
        if (request.projectId !== '' && record.projectId !== request.projectId) continue;
        if (request.fromMs !== 0n && record.createdAtMs < request.fromMs) continue;
        if (request.toMs !== 0n && record.createdAtMs >= request.toMs) continue;
        const day = kolkataDay(Number(record.createdAtMs));
        const organisationId = request.allOrganisations ? record.organisationId : '';
        const projectId = request.groupByProject ? record.projectId : '';
        const billingMode = request.allOrganisations ? record.billingMode : ledgerV1.BillingMode.BILLING_MODE_UNSPECIFIED;
        const key = `${day} ${record.modelSlug} ${organisationId} ${projectId} ${billingMode}`;
        const row = rows.get(key) ?? ledgerV1.UsageSummaryRow.fromPartial({ day, modelSlug: record.modelSlug, organisationId, projectId, billingMode });
        row.requests += 1n;
        row.inputTokens += record.inputTokens;
        row.outputTokens += record.outputTokens;
        row.costMicros += record.costMicros;
        row.providerCostMicros += record.providerCostMicros;
        row.debitedMicros += record.debitedMicros;
        // As the ledger contract says: classes summed over the records that carry them, by class name.
        if (record.tokenClasses.length === 0) row.unclassifiedRequests += 1n;
        for (const entry of record.tokenClasses) {
          const sum = row.tokenClasses.find((candidate) => candidate.tokenClass === entry.tokenClass);
          if (sum === undefined) row.tokenClasses.push({ ...entry });
          else {
            sum.tokens += entry.tokens;
            sum.costMicros += entry.costMicros;
            sum.providerCostMicros += entry.providerCostMicros;
          }
        }
        row.tokenClasses.sort((a, b) => (a.tokenClass < b.tokenClass ? -1 : a.tokenClass > b.tokenClass ? 1 : 0));
        rows.set(key, row);
      }
      return ledgerV1.SummarizeUsageResponse.fromPartial({ rows: [...rows.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([, row]) => row) });
    }),
    reserve: unimplemented,
    settle: unimplemented,
    release: unimplemented,
    checkpoint: unimplemented,
    listBudgetAlerts: unary('listBudgetAlerts', (request: ledgerV1.ListBudgetAlertsRequest) => {
      const after = request.afterId === '' ? -1n : BigInt(request.afterId);
      const limit = request.limit === 0 ? 100 : request.limit;
      const alerts = budgetAlerts
        .filter((alert) => BigInt(alert.id) > after && (request.organisationId === '' || alert.organisationId === request.organisationId))
        .slice(0, limit);
      return ledgerV1.ListBudgetAlertsResponse.fromPartial({ alerts });
    }),
    verify: unimplemented,
    listProjectSpends: unary('listProjectSpends', (request: ledgerV1.ListProjectSpendsRequest) => {
      const month = kolkataDay(Date.now()).slice(0, 7);
      const ids = new Set([...budgets].filter(([, budget]) => budget.organisationId === request.organisationId).map(([id]) => id));
      for (const record of usage) if (record.organisationId === request.organisationId && spend.has(record.projectId)) ids.add(record.projectId);
      return ledgerV1.ListProjectSpendsResponse.fromPartial({
        month,
        projects: [...ids].sort().map((projectId) => ({
          projectId,
          spend: {
            month,
            settledMicros: spend.get(projectId)?.settledMicros ?? 0n,
            heldMicros: spend.get(projectId)?.heldMicros ?? 0n,
            monthlyCapMicros: budgets.get(projectId)?.monthlyCapMicros ?? 0n,
            softAlertPercent: budgets.get(projectId)?.softAlertPercent ?? 0,
            softAlertRaised: spend.get(projectId)?.softAlertRaised ?? false,
          },
        })),
      });
    }),
    recordRequests: unimplemented,
    summarizeDeployments: unary('summarizeDeployments', (request: ledgerV1.SummarizeDeploymentsRequest) => {
      // As the ledger sums them (the fake records no failed attempts): commercial cost, every record's provider cost.
      const rows = new Map<string, ledgerV1.DeploymentSummaryRow>();
      for (const record of usage) {
        if (request.fromMs !== 0n && record.createdAtMs < request.fromMs) continue;
        if (request.toMs !== 0n && record.createdAtMs >= request.toMs) continue;
        const key = `${record.modelSlug} ${record.deployment}`;
        const row = rows.get(key) ?? ledgerV1.DeploymentSummaryRow.fromPartial({ modelSlug: record.modelSlug, deployment: record.deployment });
        row.requests += 1n;
        if (record.billingMode === ledgerV1.BillingMode.BILLING_MODE_COMMERCIAL) row.costMicros += record.costMicros;
        row.providerCostMicros += record.providerCostMicros;
        rows.set(key, row);
      }
      const ordered = [...rows.values()].sort((a, b) => (a.modelSlug === b.modelSlug ? (a.deployment < b.deployment ? -1 : 1) : a.modelSlug < b.modelSlug ? -1 : 1));
      return ledgerV1.SummarizeDeploymentsResponse.fromPartial({ rows: ordered });
    }),
    ...fakeRequestLogHandlers(requests, unary),
    watchBudgetAlerts: (call) => {
      call.emit('error', { code: GrpcStatus.UNIMPLEMENTED, details: 'not in the fake' });
    },
    operate: (call) => {
      call.emit('error', { code: GrpcStatus.UNIMPLEMENTED, details: 'not in the fake' });
    },
  };

  const server = createGrpcServer();
  server.addService(ledgerV1.LedgerServiceService, service);
  // Served with the ledger's test certificate: the admin under test dials it with mTLS.
  const port = await startGrpcServer(server, '127.0.0.1', 0, testTransportSecurity(await sharedTestPki(), 'ledger'));
  return {
    target: `127.0.0.1:${port}`,
    accounts, credits, refunds, reversals, usage, requests, budgets, spend, budgetRequests, budgetAlerts, calls,
    failNext: (method) => { failing.add(method); },
    close: () => stopGrpcServer(server, 1_000),
  };
}
