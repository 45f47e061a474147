import { ledgerV1 } from '@gateway/contracts';
import type { Database } from '@gateway/db';
import { GatewayError } from '@gateway/errors';
import { unaryHandler, type Metadata } from '@gateway/grpc';
import { requestIdFrom, type Logger } from '@gateway/logger';
import { credit, type CreditResultName } from '../domain/credit.ts';
import { getBalance } from '../domain/get-balance.ts';
import { InvalidQueryError } from '../domain/invalid-query-error.ts';
import type { BillingMode, UsageSource } from '../domain/ledger-types.ts';
import { listUsage, type UsageRecordView } from '../domain/list-usage.ts';
import { openAccount, type OpenAccountResultName } from '../domain/open-account.ts';
import { release, type ReleaseResultName } from '../domain/release.ts';
import { reserve, type ReserveResultName } from '../domain/reserve.ts';
import { settle, type SettleResultName } from '../domain/settle.ts';

const openAccountResults: Record<OpenAccountResultName, ledgerV1.OpenAccountResult> = {
  ok: ledgerV1.OpenAccountResult.OPEN_ACCOUNT_RESULT_OK,
  invalid_argument: ledgerV1.OpenAccountResult.OPEN_ACCOUNT_RESULT_INVALID_ARGUMENT,
};

const reserveResults: Record<ReserveResultName, ledgerV1.ReserveResult> = {
  ok: ledgerV1.ReserveResult.RESERVE_RESULT_OK,
  idempotency_conflict: ledgerV1.ReserveResult.RESERVE_RESULT_IDEMPOTENCY_CONFLICT,
  invalid_argument: ledgerV1.ReserveResult.RESERVE_RESULT_INVALID_ARGUMENT,
  organisation_unknown: ledgerV1.ReserveResult.RESERVE_RESULT_ORGANISATION_UNKNOWN,
  insufficient_balance: ledgerV1.ReserveResult.RESERVE_RESULT_INSUFFICIENT_BALANCE,
};

const settleResults: Record<SettleResultName, ledgerV1.SettleResult> = {
  ok: ledgerV1.SettleResult.SETTLE_RESULT_OK,
  idempotency_conflict: ledgerV1.SettleResult.SETTLE_RESULT_IDEMPOTENCY_CONFLICT,
  invalid_argument: ledgerV1.SettleResult.SETTLE_RESULT_INVALID_ARGUMENT,
  reservation_unknown: ledgerV1.SettleResult.SETTLE_RESULT_RESERVATION_UNKNOWN,
  already_resolved: ledgerV1.SettleResult.SETTLE_RESULT_ALREADY_RESOLVED,
};

const releaseResults: Record<ReleaseResultName, ledgerV1.ReleaseResult> = {
  ok: ledgerV1.ReleaseResult.RELEASE_RESULT_OK,
  invalid_argument: ledgerV1.ReleaseResult.RELEASE_RESULT_INVALID_ARGUMENT,
  reservation_unknown: ledgerV1.ReleaseResult.RELEASE_RESULT_RESERVATION_UNKNOWN,
  already_resolved: ledgerV1.ReleaseResult.RELEASE_RESULT_ALREADY_RESOLVED,
};

const creditResults: Record<CreditResultName, ledgerV1.CreditResult> = {
  ok: ledgerV1.CreditResult.CREDIT_RESULT_OK,
  idempotency_conflict: ledgerV1.CreditResult.CREDIT_RESULT_IDEMPOTENCY_CONFLICT,
  invalid_argument: ledgerV1.CreditResult.CREDIT_RESULT_INVALID_ARGUMENT,
  organisation_unknown: ledgerV1.CreditResult.CREDIT_RESULT_ORGANISATION_UNKNOWN,
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

const billingModesToProto: Record<BillingMode, ledgerV1.BillingMode> = {
  commercial: ledgerV1.BillingMode.BILLING_MODE_COMMERCIAL,
  internal: ledgerV1.BillingMode.BILLING_MODE_INTERNAL,
};

const usageSourcesToProto: Record<UsageSource, ledgerV1.UsageSource> = {
  upstream: ledgerV1.UsageSource.USAGE_SOURCE_UPSTREAM,
  gateway_estimate: ledgerV1.UsageSource.USAGE_SOURCE_GATEWAY_ESTIMATE,
};

/** A usage record as the proto carries it. */
function usageRecordToProto(record: UsageRecordView): ledgerV1.UsageRecord {
  return { ...record, billingMode: billingModesToProto[record.billingMode], usageSource: usageSourcesToProto[record.usageSource] };
}

/** The caller's request id from gRPC metadata (`x-request-id`), or a fresh one. */
function requestIdOf(metadata: Metadata): string {
  const [value] = metadata.get('x-request-id');
  return requestIdFrom(typeof value === 'string' ? value : undefined);
}

/** What a method's work returns: the response, and the outcome and ids to log beside it. */
interface Handled<Res> {
  response: Res;
  outcome: string;
  subject: Record<string, string>;
}

/**
 * The LedgerService implementation over the domain functions: decodes proto values, calls the
 * domain, encodes the outcome as the contract's result enum, and logs one line per call with
 * the caller's request id. Business outcomes are results; only a malformed read or an
 * unexpected failure becomes a gRPC error (the latter as INTERNAL with no detail).
 */
export function createLedgerGrpcService(db: Database, logger: Logger): ledgerV1.LedgerServiceServer {
  const handle = <Req, Res>(method: string, work: (request: Req) => Promise<Handled<Res>>) =>
    unaryHandler<Req, Res>(logger, method, async (request, metadata) => {
      const requestId = requestIdOf(metadata);
      const startedAt = performance.now();
      try {
        const { response, outcome, subject } = await work(request);
        logger.info({ method, requestId, outcome, ...subject, durationMs: Math.round(performance.now() - startedAt) }, 'ledger call');
        return response;
      } catch (error) {
        if (error instanceof InvalidQueryError) {
          throw new GatewayError('invalid_request', { publicMessage: error.message, internalMessage: `${method}: ${error.message}` });
        }
        throw error;
      }
    });

  return {
    openAccount: handle<ledgerV1.OpenAccountRequest, ledgerV1.OpenAccountResponse>('OpenAccount', async (request) => {
      const outcome = await openAccount(db, request.organisationId);
      return {
        response: { result: openAccountResults[outcome.result], detail: outcome.detail },
        outcome: outcome.result, subject: { organisationId: request.organisationId },
      };
    }),

    reserve: handle<ledgerV1.ReserveRequest, ledgerV1.ReserveResponse>('Reserve', async (request) => {
      const outcome = await reserve(db, {
        reservationId: request.reservationId, organisationId: request.organisationId, projectId: request.projectId,
        billingMode: billingModeFromProto(request.billingMode), amountMicros: request.amountMicros,
        ttlMs: request.ttlMs, modelSlug: request.modelSlug,
      });
      return {
        response: { ...outcome, result: reserveResults[outcome.result] },
        outcome: outcome.result, subject: { reservationId: request.reservationId, organisationId: request.organisationId },
      };
    }),

    settle: handle<ledgerV1.SettleRequest, ledgerV1.SettleResponse>('Settle', async (request) => {
      const outcome = await settle(db, {
        reservationId: request.reservationId, inputTokens: request.inputTokens, outputTokens: request.outputTokens,
        costMicros: request.costMicros, providerCostMicros: request.providerCostMicros, modelSlug: request.modelSlug,
        usageSource: usageSourceFromProto(request.usageSource), requestId: request.requestId,
      });
      return {
        response: { ...outcome, result: settleResults[outcome.result] },
        outcome: outcome.result, subject: { reservationId: request.reservationId },
      };
    }),

    release: handle<ledgerV1.ReleaseRequest, ledgerV1.ReleaseResponse>('Release', async (request) => {
      const outcome = await release(db, { reservationId: request.reservationId, reason: request.reason });
      return {
        response: { ...outcome, result: releaseResults[outcome.result] },
        outcome: outcome.result, subject: { reservationId: request.reservationId },
      };
    }),

    credit: handle<ledgerV1.CreditRequest, ledgerV1.CreditResponse>('Credit', async (request) => {
      const outcome = await credit(db, {
        creditId: request.creditId, organisationId: request.organisationId, amountMicros: request.amountMicros, reason: request.reason,
      });
      return {
        response: { ...outcome, result: creditResults[outcome.result] },
        outcome: outcome.result, subject: { creditId: request.creditId, organisationId: request.organisationId },
      };
    }),

    getBalance: handle<ledgerV1.GetBalanceRequest, ledgerV1.GetBalanceResponse>('GetBalance', async (request) => {
      const balances = await getBalance(db, request.organisationId);
      const response: ledgerV1.GetBalanceResponse = balances
        ? { result: ledgerV1.GetBalanceResult.GET_BALANCE_RESULT_OK, ...balances }
        : {
          result: ledgerV1.GetBalanceResult.GET_BALANCE_RESULT_ORGANISATION_UNKNOWN,
          creditedMicros: 0n, availableMicros: 0n, heldMicros: 0n, debitedMicros: 0n,
        };
      return { response, outcome: balances ? 'ok' : 'organisation_unknown', subject: { organisationId: request.organisationId } };
    }),

    listUsage: handle<ledgerV1.ListUsageRequest, ledgerV1.ListUsageResponse>('ListUsage', async (request) => {
      const page = await listUsage(db, request);
      return {
        response: { records: page.records.map(usageRecordToProto), nextPageToken: page.nextPageToken },
        outcome: 'ok', subject: { organisationId: request.organisationId },
      };
    }),
  };
}
