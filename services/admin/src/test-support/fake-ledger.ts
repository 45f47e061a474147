import { status as GrpcStatus, type ServerUnaryCall, type sendUnaryData } from '@grpc/grpc-js';
import { ledgerV1 } from '@gateway/contracts';
import { Server, startGrpcServer, stopGrpcServer } from '@gateway/grpc';

/**
 * A small in-memory LedgerService peer served over real grpc-js on port 0, for the admin's
 * tests until the real ledger runs beside it (the end-to-end test covers that). It keeps the
 * contract's rules that the admin relies on: idempotent OpenAccount and Credit (same id, same
 * payload: same result; different payload: IDEMPOTENCY_CONFLICT), unknown organisations, and
 * usage listed newest first with page tokens.
 */
export interface FakeLedger {
  /** host:port to give the admin as LEDGER_GRPC_URL. */
  target: string;
  /** Wallets by organisation id, µ₹. */
  accounts: Map<string, { creditedMicros: bigint; availableMicros: bigint; heldMicros: bigint; debitedMicros: bigint }>;
  /** Credits by credit_id. */
  credits: Map<string, { organisationId: string; amountMicros: bigint; reason: string }>;
  /** Usage records the tests seed; ListUsage serves them. */
  usage: ledgerV1.UsageRecord[];
  /** Names of the methods called, in order. */
  calls: string[];
  /** Makes the next call of a method fail with UNAVAILABLE, as a ledger that is down would. */
  failNext(method: 'openAccount' | 'credit' | 'getBalance' | 'listUsage'): void;
  close(): Promise<void>;
}

/** Starts the fake ledger on 127.0.0.1 and a free port. */
export async function startFakeLedger(): Promise<FakeLedger> {
  const accounts: FakeLedger['accounts'] = new Map();
  const credits: FakeLedger['credits'] = new Map();
  const usage: ledgerV1.UsageRecord[] = [];
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
        const same = previous.organisationId === request.organisationId && previous.amountMicros === request.amountMicros && previous.reason === request.reason;
        return ledgerV1.CreditResponse.fromPartial(same
          ? { result: ledgerV1.CreditResult.CREDIT_RESULT_OK, availableMicros: accounts.get(request.organisationId)!.availableMicros }
          : { result: ledgerV1.CreditResult.CREDIT_RESULT_IDEMPOTENCY_CONFLICT });
      }
      if (request.creditId === '' || request.amountMicros <= 0n) {
        return ledgerV1.CreditResponse.fromPartial({ result: ledgerV1.CreditResult.CREDIT_RESULT_INVALID_ARGUMENT });
      }
      const account = accounts.get(request.organisationId);
      if (!account) return ledgerV1.CreditResponse.fromPartial({ result: ledgerV1.CreditResult.CREDIT_RESULT_ORGANISATION_UNKNOWN });
      credits.set(request.creditId, { organisationId: request.organisationId, amountMicros: request.amountMicros, reason: request.reason });
      account.creditedMicros += request.amountMicros;
      account.availableMicros += request.amountMicros;
      return ledgerV1.CreditResponse.fromPartial({ result: ledgerV1.CreditResult.CREDIT_RESULT_OK, availableMicros: account.availableMicros });
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
          && (request.modelSlug === '' || record.modelSlug === request.modelSlug))
        .sort((a, b) => Number(b.createdAtMs - a.createdAtMs) || b.id.localeCompare(a.id));
      const offset = request.pageToken === '' ? 0 : Number(request.pageToken);
      const pageSize = request.pageSize === 0 ? 50 : request.pageSize;
      const records = matching.slice(offset, offset + pageSize);
      const nextPageToken = offset + pageSize < matching.length ? String(offset + pageSize) : '';
      return ledgerV1.ListUsageResponse.fromPartial({ records, nextPageToken });
    }),
    reserve: unimplemented,
    settle: unimplemented,
    release: unimplemented,
  };

  const server = new Server();
  server.addService(ledgerV1.LedgerServiceService, service);
  const port = await startGrpcServer(server, '127.0.0.1', 0);
  return {
    target: `127.0.0.1:${port}`,
    accounts, credits, usage, calls,
    failNext: (method) => { failing.add(method); },
    close: () => stopGrpcServer(server, 1_000),
  };
}
