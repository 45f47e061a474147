import { ledgerV1 } from '@gateway/contracts';
import type { ProjectSpend, UsageRecord } from '../common/domain/admin-records.ts';
import type { LedgerPort } from '../common/domain/ledger-port.ts';
import { getBalanceNames, organisationUnknown, unexpectedResult, type LedgerCall } from './ledger-results.ts';

/** A billing mode from the wire; undefined when unset (rows of a single organisation). */
function billingModeOf(mode: ledgerV1.BillingMode): 'commercial' | 'internal' | undefined {
  if (mode === ledgerV1.BillingMode.BILLING_MODE_COMMERCIAL) return 'commercial';
  if (mode === ledgerV1.BillingMode.BILLING_MODE_INTERNAL) return 'internal';
  return undefined;
}

function toUsageRecord(record: ledgerV1.UsageRecord): UsageRecord {
  return {
    id: record.id,
    projectId: record.projectId,
    modelSlug: record.modelSlug,
    inputTokens: record.inputTokens,
    outputTokens: record.outputTokens,
    costMicros: record.costMicros,
    providerCostMicros: record.providerCostMicros,
    debitedMicros: record.debitedMicros,
    // Only the ledger's explicit "upstream" claims upstream-reported tokens.
    usageSource: record.usageSource === ledgerV1.UsageSource.USAGE_SOURCE_UPSTREAM ? 'upstream' : 'gateway_estimate',
    requestId: record.requestId,
    createdAt: new Date(Number(record.createdAtMs)),
    overrunOutputTokens: record.overrunOutputTokens,
    tokenClasses: record.tokenClasses.map((entry) => ({ ...entry })),
  };
}

/** A project's month spend from the wire (a cap of 0: no budget). */
function toProjectSpend(projectId: string, response: ledgerV1.GetProjectSpendResponse): ProjectSpend {
  return {
    projectId,
    month: response.month,
    settledMicros: response.settledMicros,
    heldMicros: response.heldMicros,
    budget: response.monthlyCapMicros > 0n ? { monthlyCapMicros: response.monthlyCapMicros, softAlertPercent: response.softAlertPercent } : null,
    softAlertRaised: response.softAlertRaised,
  };
}

/** The ledger calls that read balances, usage, spend and alerts, mapped to the admin's records. */
export function ledgerReads(
  client: ledgerV1.LedgerServiceClient, call: LedgerCall,
): Pick<LedgerPort, 'getBalance' | 'listUsage' | 'getProjectSpend' | 'listProjectSpends' | 'summarizeUsage' | 'summarizeDeployments' | 'listBudgetAlerts'> {
  return {
    async getBalance(organisationId) {
      const response = await call(client.getBalance, ledgerV1.GetBalanceRequest.fromPartial({ organisationId }));
      switch (getBalanceNames.get(response.result)) {
        case 'ok':
          return {
            organisationId,
            creditedMicros: response.creditedMicros,
            availableMicros: response.availableMicros,
            heldMicros: response.heldMicros,
            debitedMicros: response.debitedMicros,
          };
        case 'organisation_unknown': throw organisationUnknown(organisationId);
        default: throw unexpectedResult('getBalance', 'GetBalance', response.result);
      }
    },

    async listUsage(request) {
      const response = await call(client.listUsage, ledgerV1.ListUsageRequest.fromPartial({
        organisationId: request.organisationId,
        projectId: request.projectId ?? '',
        modelSlug: request.modelSlug ?? '',
        fromMs: BigInt(request.fromMs ?? 0),
        toMs: BigInt(request.toMs ?? 0),
        pageSize: request.pageSize,
        pageToken: request.pageToken ?? '',
      }));
      return { records: response.records.map(toUsageRecord), nextPageToken: response.nextPageToken === '' ? null : response.nextPageToken };
    },

    async getProjectSpend(projectId) {
      const response = await call(client.getProjectSpend, ledgerV1.GetProjectSpendRequest.fromPartial({ projectId }));
      return toProjectSpend(projectId, response);
    },

    async listProjectSpends(organisationId) {
      const response = await call(client.listProjectSpends, ledgerV1.ListProjectSpendsRequest.fromPartial({ organisationId }));
      return {
        month: response.month,
        projects: response.projects.map((entry) => toProjectSpend(entry.projectId, entry.spend ?? ledgerV1.GetProjectSpendResponse.fromPartial({ month: response.month }))),
      };
    },

    async summarizeUsage(request) {
      const response = await call(client.summarizeUsage, ledgerV1.SummarizeUsageRequest.fromPartial({
        organisationId: request.organisationId ?? '',
        allOrganisations: request.organisationId === undefined,
        groupByProject: request.groupByProject ?? false,
        projectId: request.projectId ?? '',
        fromMs: BigInt(request.fromMs ?? 0),
        toMs: BigInt(request.toMs ?? 0),
      }));
      return response.rows.map((row) => ({
        day: row.day, modelSlug: row.modelSlug, requests: row.requests, inputTokens: row.inputTokens, outputTokens: row.outputTokens,
        costMicros: row.costMicros, providerCostMicros: row.providerCostMicros, debitedMicros: row.debitedMicros,
        organisationId: row.organisationId, projectId: row.projectId, billingMode: billingModeOf(row.billingMode),
        tokenClasses: row.tokenClasses.map((entry) => ({ ...entry })), unclassifiedRequests: row.unclassifiedRequests,
      }));
    },

    async summarizeDeployments(request) {
      const response = await call(client.summarizeDeployments, ledgerV1.SummarizeDeploymentsRequest.fromPartial({
        fromMs: BigInt(request.fromMs ?? 0), toMs: BigInt(request.toMs ?? 0),
      }));
      return response.rows.map((row) => ({ ...row }));
    },

    async listBudgetAlerts(request) {
      const response = await call(client.listBudgetAlerts, ledgerV1.ListBudgetAlertsRequest.fromPartial({ afterId: request.afterId, limit: request.limit }));
      return response.alerts.map((alert) => ({
        id: alert.id, organisationId: alert.organisationId, projectId: alert.projectId, month: alert.month,
        spentMicros: alert.spentMicros, monthlyCapMicros: alert.monthlyCapMicros, softAlertPercent: alert.softAlertPercent,
        raisedAt: new Date(Number(alert.raisedAtMs)),
      }));
    },
  };
}
