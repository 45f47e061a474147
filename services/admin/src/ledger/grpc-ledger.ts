import { assertOutsideTransaction } from '@gateway/db';
import { isTransientResult, ledgerResultNames, ledgerResultTransient, ledgerV1, resultNamesByValue, type LedgerResultOperation } from '@gateway/contracts';
import { GatewayError, fromGrpcError } from '@gateway/errors';
import { callUnary, channelCredentials, clientChannelOptions, type GrpcTransportSecurity } from '@gateway/grpc';
import type { UsageRecord } from '../common/domain/admin-records.ts';
import type { LedgerPort } from '../common/domain/ledger-port.ts';

/** The ledger reached over gRPC; `close()` releases its channel. */
export interface GrpcLedger extends LedgerPort {
  close(): void;
}

/**
 * The ledger answered with a result this build does not map (UNSPECIFIED, or one newer than it):
 * a contract mismatch, not the caller's fault, so a 500 whatever the contract's transient table
 * says; the log line says whether retrying could help.
 */
function unexpectedResult(operation: LedgerResultOperation, method: string, result: number): GatewayError {
  const transient = isTransientResult(ledgerResultTransient[operation] as Readonly<Record<number, boolean>>, result);
  return new GatewayError('internal_error', { internalMessage: `ledger ${method} returned unexpected result ${result} (${transient ? 'transient' : 'final'})` });
}

/** Proto result -> the contract's result name, per operation; UNSPECIFIED and unknown values have none (unexpectedResult). */
const openAccountNames = resultNamesByValue(ledgerResultNames.openAccount);
const creditNames = resultNamesByValue(ledgerResultNames.credit);
const refundCreditNames = resultNamesByValue(ledgerResultNames.refundCredit);
const reverseRefundNames = resultNamesByValue(ledgerResultNames.reverseRefund);
const getBalanceNames = resultNamesByValue(ledgerResultNames.getBalance);
const setProjectBudgetNames = resultNamesByValue(ledgerResultNames.setProjectBudget);

function invalidArgument(method: string, detail: string): GatewayError {
  return new GatewayError('invalid_request', {
    publicMessage: 'The ledger refused the request as invalid.',
    internalMessage: `ledger ${method}: INVALID_ARGUMENT: ${detail}`,
  });
}

function organisationUnknown(organisationId: string): GatewayError {
  return new GatewayError('not_found', { publicMessage: `The ledger has no account for organisation "${organisationId}".`, param: 'id' });
}

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

/**
 * Connects to the ledger at a gRPC target with the admin's certificate (or plaintext under
 * GRPC_INSECURE). Every call has a deadline of `callTimeoutMs`; a
 * failed call becomes a catalogue error through `fromGrpcError` (a peer that is down becomes
 * `service_unavailable`), and a non-OK result becomes the matching catalogue error.
 */
export function createGrpcLedger(options: {
  target: string;
  callTimeoutMs: number;
  /** Deadline of SetProjectBudget, ms (default callTimeoutMs): it answers once the project's credit grants are recalled, up to the grants' deadline. */
  budgetCallTimeoutMs?: number;
  security: GrpcTransportSecurity;
}): GrpcLedger {
  // The admin's certificate is its identity at the ledger; backoff and keepalive as every internal channel.
  const client = new ledgerV1.LedgerServiceClient(options.target, channelCredentials(options.security), clientChannelOptions);
  const call = async <Req, Res>(method: Parameters<typeof callUnary<Req, Res>>[0], request: Req, timeoutMs = options.callTimeoutMs): Promise<Res> => {
    assertOutsideTransaction(`ledger ${method.name}`);
    try {
      return await callUnary(method, client, request, timeoutMs);
    } catch (error) {
      const mapped = fromGrpcError(error);
      if (mapped.code !== 'service_unavailable') throw mapped;
      // Every mutating ledger call is idempotent, so telling the caller to retry is safe advice.
      throw new GatewayError('service_unavailable', {
        publicMessage: 'The ledger did not answer. Try again shortly; retrying is safe.',
        internalMessage: mapped.message,
        cause: error,
      });
    }
  };

  return {
    async openAccount(organisationId) {
      const response = await call(client.openAccount, ledgerV1.OpenAccountRequest.fromPartial({ organisationId }));
      switch (openAccountNames.get(response.result)) {
        case 'ok': return;
        case 'invalid_argument': throw invalidArgument('OpenAccount', response.detail);
        default: throw unexpectedResult('openAccount', 'OpenAccount', response.result);
      }
    },

    async credit(request) {
      const response = await call(client.credit, ledgerV1.CreditRequest.fromPartial(request));
      switch (creditNames.get(response.result)) {
        case 'ok': return { availableMicros: response.availableMicros };
        case 'idempotency_conflict':
          throw new GatewayError('idempotency_conflict', {
            publicMessage: 'The ledger already holds a credit under this Idempotency-Key with a different amount or reason.',
            param: 'Idempotency-Key',
          });
        case 'invalid_argument': throw invalidArgument('Credit', response.detail);
        case 'organisation_unknown': throw organisationUnknown(request.organisationId);
        default: throw unexpectedResult('credit', 'Credit', response.result);
      }
    },

    async refundCredit(request) {
      const response = await call(client.refundCredit, ledgerV1.RefundCreditRequest.fromPartial(request));
      switch (refundCreditNames.get(response.result)) {
        case 'ok': return { availableMicros: response.availableMicros, refundedMicros: response.refundedMicros };
        case 'idempotency_conflict':
          throw new GatewayError('idempotency_conflict', {
            publicMessage: 'The ledger already holds a refund under this id with a different amount.',
            internalMessage: `ledger RefundCredit: IDEMPOTENCY_CONFLICT: ${response.detail}`,
          });
        case 'invalid_argument': throw invalidArgument('RefundCredit', response.detail);
        case 'organisation_unknown': throw organisationUnknown(request.organisationId);
        case 'credit_unknown':
          throw new GatewayError('conflict', {
            publicMessage: 'The ledger holds no credit of this organisation to refund.',
            internalMessage: `ledger RefundCredit: CREDIT_UNKNOWN: ${request.creditId}`,
          });
        case 'exceeds_credit':
        case 'insufficient_balance':
          throw new GatewayError('conflict', {
            publicMessage: 'The refund exceeds the unspent balance.',
            internalMessage: `ledger RefundCredit: result ${response.result}: ${response.detail}`,
          });
        default: throw unexpectedResult('refundCredit', 'RefundCredit', response.result);
      }
    },

    async reverseRefund(request) {
      const response = await call(client.reverseRefund, ledgerV1.ReverseRefundRequest.fromPartial(request));
      switch (reverseRefundNames.get(response.result)) {
        case 'ok': return { reversedMicros: response.reversedMicros, availableMicros: response.availableMicros };
        case 'idempotency_conflict':
          throw new GatewayError('idempotency_conflict', {
            publicMessage: 'The ledger already holds a reversal under this id for another refund.',
            internalMessage: `ledger ReverseRefund: IDEMPOTENCY_CONFLICT: ${response.detail}`,
          });
        case 'invalid_argument': throw invalidArgument('ReverseRefund', response.detail);
        case 'refund_unknown':
        case 'already_reversed':
          throw new GatewayError('conflict', {
            publicMessage: 'The ledger cannot reverse this refund.',
            internalMessage: `ledger ReverseRefund: result ${response.result}: ${response.detail}`,
          });
        default: throw unexpectedResult('reverseRefund', 'ReverseRefund', response.result);
      }
    },

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

    async setProjectBudget(request) {
      const response = await call(client.setProjectBudget, ledgerV1.SetProjectBudgetRequest.fromPartial(request), options.budgetCallTimeoutMs ?? options.callTimeoutMs);
      switch (setProjectBudgetNames.get(response.result)) {
        case 'ok': return;
        case 'idempotency_conflict':
          throw new GatewayError('idempotency_conflict', { internalMessage: `ledger SetProjectBudget: request id ${request.requestId} reused` });
        case 'invalid_argument': throw invalidArgument('SetProjectBudget', response.detail);
        case 'organisation_unknown': throw organisationUnknown(request.organisationId);
        default: throw unexpectedResult('setProjectBudget', 'SetProjectBudget', response.result);
      }
    },

    async getProjectSpend(projectId) {
      const response = await call(client.getProjectSpend, ledgerV1.GetProjectSpendRequest.fromPartial({ projectId }));
      return {
        projectId,
        month: response.month,
        settledMicros: response.settledMicros,
        heldMicros: response.heldMicros,
        budget: response.monthlyCapMicros > 0n ? { monthlyCapMicros: response.monthlyCapMicros, softAlertPercent: response.softAlertPercent } : null,
        softAlertRaised: response.softAlertRaised,
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

    async listBudgetAlerts(request) {
      const response = await call(client.listBudgetAlerts, ledgerV1.ListBudgetAlertsRequest.fromPartial({ afterId: request.afterId, limit: request.limit }));
      return response.alerts.map((alert) => ({
        id: alert.id, organisationId: alert.organisationId, projectId: alert.projectId, month: alert.month,
        spentMicros: alert.spentMicros, monthlyCapMicros: alert.monthlyCapMicros, softAlertPercent: alert.softAlertPercent,
        raisedAt: new Date(Number(alert.raisedAtMs)),
      }));
    },

    close() {
      client.close();
    },
  };
}
