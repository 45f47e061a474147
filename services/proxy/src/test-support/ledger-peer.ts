import { status as GrpcStatus, type Server, type sendUnaryData, type ServerDuplexStream, type ServerUnaryCall, type ServerWritableStream } from '@grpc/grpc-js';
import { ledgerV1 } from '@gateway/contracts';
import { createGrpcServer, startGrpcServer, stopGrpcServer, type GrpcTransportSecurity } from '@gateway/grpc';
import { sharedTestPki, testTransportSecurity } from '@gateway/testkit';

/** One organisation's wallet in the ledger peer, µ₹. credited = available + held + debited. */
export interface PeerAccount {
  creditedMicros: bigint;
  availableMicros: bigint;
  heldMicros: bigint;
  debitedMicros: bigint;
}

interface PeerReservation {
  request: ledgerV1.ReserveRequest;
  /** What was taken from available (0 in internal billing mode). */
  heldMicros: bigint;
  state: 'held' | 'settled' | 'released';
  settle?: { request: ledgerV1.SettleRequest; response: ledgerV1.SettleResponse };
  /** The last checkpoint recorded (highest sequence). */
  checkpoint?: ledgerV1.CheckpointRequest;
  /** Deadline, ms since the epoch (the peer's clock). */
  expiresAtMs: bigint;
}

/** Ledger methods whose next calls a test can make fail. */
export type PeerMethod = 'reserve' | 'settle' | 'release' | 'checkpoint';

/**
 * A small in-memory ledger for proxy tests: a real grpc-js server implementing LedgerService
 * with wallets, reservations, settle, release and checkpoint (idempotent on the reservation id,
 * balances conserved), Release tombstones (a Reserve after its Release holds nothing, as the
 * ledger does) and a per-project cap, recording every call and answer. A test can make the next
 * calls of a method fail with UNAVAILABLE, or stop the whole peer and restart it on the same
 * port with its state, as a ledger that is down would be.
 */
export interface LedgerPeer {
  /** host:port for LEDGER_GRPC_URL. */
  address: string;
  /** Credentials a test's LedgerClient dials the peer with: the proxy's test certificate (the peer serves the ledger's, mTLS). */
  proxySecurity: GrpcTransportSecurity;
  calls: {
    reserve: ledgerV1.ReserveRequest[]; settle: ledgerV1.SettleRequest[]; release: ledgerV1.ReleaseRequest[];
    checkpoint: ledgerV1.CheckpointRequest[];
  };
  /** Opens (or tops up) an organisation's account. */
  credit(organisationId: string, amountMicros: bigint): void;
  account(organisationId: string): PeerAccount | undefined;
  /** The state of a reservation, by id. */
  reservationState(reservationId: string): PeerReservation['state'] | undefined;
  /** The last checkpoint recorded for a reservation and its deadline (ms since the epoch). */
  reservationCheckpoint(reservationId: string): { checkpoint: ledgerV1.CheckpointRequest | undefined; expiresAtMs: bigint } | undefined;
  /** Sets a project's cap, µ₹, on settled + held cost (0 clears it); a Reserve past it is PROJECT_BUDGET_EXCEEDED. */
  setProjectCap(projectId: string, capMicros: bigint): void;
  /** Makes the next `count` calls of a method fail with UNAVAILABLE (they are still recorded). */
  failNext(method: PeerMethod, count: number): void;
  /** Makes the next call of a method wait `delayMs` before it is applied and answered (a slow commit). */
  delayNext(method: PeerMethod, delayMs: number): void;
  /** Makes Checkpoint answer UNIMPLEMENTED, as a ledger without it does (the calls are still recorded). */
  setCheckpointImplemented(implemented: boolean): void;
  /** True when a Release of an unknown reservation id left a tombstone (a later Reserve of it holds nothing). */
  tombstoned(reservationId: string): boolean;
  /** Every answer given, per method, in order (calls failed by failNext have none). */
  answers: {
    reserve: ledgerV1.ReserveResponse[]; settle: ledgerV1.SettleResponse[]; release: ledgerV1.ReleaseResponse[];
    checkpoint: ledgerV1.CheckpointResponse[];
  };
  /**
   * Stops serving, as a killed ledger does (connections cut, calls in flight fail), keeping every
   * account and reservation, as a ledger's database would.
   */
  stop(): Promise<void>;
  /** Serves again on the same address, with the state it had when stopped. */
  restart(): Promise<void>;
  close(): Promise<void>;
}

const ok = ledgerV1.ReserveResult.RESERVE_RESULT_OK;

function samePayload<T>(encode: { encode(message: T): { finish(): Uint8Array } }, a: T, b: T): boolean {
  return Buffer.from(encode.encode(a).finish()).equals(Buffer.from(encode.encode(b).finish()));
}

/** Starts a ledger peer on 127.0.0.1, port 0. */
/** Options of the peer. */
export interface LedgerPeerOptions {
  /** Whether it serves the Operate stream (default true); false is a ledger of before it, answering UNIMPLEMENTED. */
  operate?: boolean;
}

export async function startLedgerPeer(options: LedgerPeerOptions = {}): Promise<LedgerPeer> {
  const accounts = new Map<string, PeerAccount>();
  const reservations = new Map<string, PeerReservation>();
  const calls: LedgerPeer['calls'] = { reserve: [], settle: [], release: [], checkpoint: [] };
  const answers: LedgerPeer['answers'] = { reserve: [], settle: [], release: [], checkpoint: [] };
  // Releases that arrived before their Reserve (the ledger's tombstones): the late Reserve holds nothing.
  const tombstones = new Set<string>();
  const failures: Record<PeerMethod, number> = { reserve: 0, settle: 0, release: 0, checkpoint: 0 };
  const delays: Record<PeerMethod, number[]> = { reserve: [], settle: [], release: [], checkpoint: [] };
  const projectCaps = new Map<string, bigint>();
  let checkpointImplemented = true;

  /** Customer cost settled plus held by a project's reservations, µ₹ (both billing modes). */
  const projectSpendMicros = (projectId: string): bigint => {
    let total = 0n;
    for (const reservation of reservations.values()) {
      if (reservation.request.projectId !== projectId) continue;
      if (reservation.state === 'held') total += reservation.request.amountMicros;
      else if (reservation.state === 'settled') total += reservation.settle!.request.costMicros;
    }
    return total;
  };

  /** One call of a method, as a unary call or an Operate message: recorded, then failed, delayed or run. */
  function answer<Req, Res>(method: PeerMethod, run: (request: Req) => Res, request: Req, callback: sendUnaryData<Res>): void {
    (calls[method] as Req[]).push(request);
    if (failures[method] > 0) {
      failures[method] -= 1;
      callback({ code: GrpcStatus.UNAVAILABLE, details: 'injected failure' });
      return;
    }
    const delayMs = delays[method].shift();
    const respond = () => {
      const response = run(request);
      (answers[method] as Res[]).push(response);
      callback(null, response);
    };
    if (delayMs === undefined) respond();
    else setTimeout(respond, delayMs);
  }

  function handler<Req, Res>(method: PeerMethod, run: (request: Req) => Res) {
    return (call: ServerUnaryCall<Req, Res>, callback: sendUnaryData<Res>) => answer(method, run, call.request, callback);
  }

  const reserve = (request: ledgerV1.ReserveRequest): ledgerV1.ReserveResponse => {
    const base = ledgerV1.ReserveResponse.fromPartial({});
    const existing = reservations.get(request.reservationId);
    const account = accounts.get(request.organisationId);
    if (existing !== undefined) {
      if (!samePayload(ledgerV1.ReserveRequest, existing.request, request)) return { ...base, result: ledgerV1.ReserveResult.RESERVE_RESULT_IDEMPOTENCY_CONFLICT };
      return { ...base, result: ok, availableMicros: account?.availableMicros ?? 0n };
    }
    if (request.reservationId === '' || request.amountMicros <= 0n || request.ttlMs <= 0n) {
      return { ...base, result: ledgerV1.ReserveResult.RESERVE_RESULT_INVALID_ARGUMENT };
    }
    if (tombstones.has(request.reservationId)) return { ...base, result: ledgerV1.ReserveResult.RESERVE_RESULT_RELEASED };
    if (account === undefined) return { ...base, result: ledgerV1.ReserveResult.RESERVE_RESULT_ORGANISATION_UNKNOWN };
    const internal = request.billingMode === ledgerV1.BillingMode.BILLING_MODE_INTERNAL;
    if (!internal && account.availableMicros < request.amountMicros) {
      return { ...base, result: ledgerV1.ReserveResult.RESERVE_RESULT_INSUFFICIENT_BALANCE, availableMicros: account.availableMicros };
    }
    const capMicros = projectCaps.get(request.projectId) ?? 0n;
    if (capMicros > 0n && projectSpendMicros(request.projectId) + request.amountMicros > capMicros) {
      return { ...base, result: ledgerV1.ReserveResult.RESERVE_RESULT_PROJECT_BUDGET_EXCEEDED, availableMicros: account.availableMicros };
    }
    const heldMicros = internal ? 0n : request.amountMicros;
    account.availableMicros -= heldMicros;
    account.heldMicros += heldMicros;
    const expiresAtMs = BigInt(Date.now()) + request.ttlMs;
    reservations.set(request.reservationId, { request, heldMicros, state: 'held', expiresAtMs });
    return { ...base, result: ok, availableMicros: account.availableMicros, expiresAtMs };
  };

  const settle = (request: ledgerV1.SettleRequest): ledgerV1.SettleResponse => {
    const base = ledgerV1.SettleResponse.fromPartial({});
    const reservation = reservations.get(request.reservationId);
    if (reservation === undefined) return { ...base, result: ledgerV1.SettleResult.SETTLE_RESULT_RESERVATION_UNKNOWN };
    if (reservation.state === 'settled') {
      return samePayload(ledgerV1.SettleRequest, reservation.settle!.request, request)
        ? reservation.settle!.response
        : { ...base, result: ledgerV1.SettleResult.SETTLE_RESULT_IDEMPOTENCY_CONFLICT };
    }
    if (reservation.state === 'released') return { ...base, result: ledgerV1.SettleResult.SETTLE_RESULT_ALREADY_RESOLVED };
    if (request.costMicros < 0n || request.inputTokens < 0n || request.outputTokens < 0n) {
      return { ...base, result: ledgerV1.SettleResult.SETTLE_RESULT_INVALID_ARGUMENT };
    }
    const account = accounts.get(reservation.request.organisationId)!;
    const internal = reservation.request.billingMode === ledgerV1.BillingMode.BILLING_MODE_INTERNAL;
    const debitedMicros = internal ? 0n : request.costMicros;
    const overrunMicros = debitedMicros > reservation.heldMicros ? debitedMicros - reservation.heldMicros : 0n;
    const releasedMicros = reservation.heldMicros - (debitedMicros - overrunMicros);
    account.heldMicros -= reservation.heldMicros;
    account.availableMicros += releasedMicros - overrunMicros;
    account.debitedMicros += debitedMicros;
    const response: ledgerV1.SettleResponse = {
      ...base, result: ledgerV1.SettleResult.SETTLE_RESULT_OK, debitedMicros, releasedMicros, overrunMicros, availableMicros: account.availableMicros,
    };
    reservation.state = 'settled';
    reservation.settle = { request, response };
    return response;
  };

  const release = (request: ledgerV1.ReleaseRequest): ledgerV1.ReleaseResponse => {
    const base = ledgerV1.ReleaseResponse.fromPartial({});
    const reservation = reservations.get(request.reservationId);
    if (reservation === undefined) {
      tombstones.add(request.reservationId);
      return { ...base, result: ledgerV1.ReleaseResult.RELEASE_RESULT_RESERVATION_UNKNOWN };
    }
    if (reservation.state === 'settled') return { ...base, result: ledgerV1.ReleaseResult.RELEASE_RESULT_ALREADY_RESOLVED };
    const account = accounts.get(reservation.request.organisationId)!;
    if (reservation.state === 'held') {
      account.heldMicros -= reservation.heldMicros;
      account.availableMicros += reservation.heldMicros;
      reservation.state = 'released';
    }
    return { ...base, result: ledgerV1.ReleaseResult.RELEASE_RESULT_OK, releasedMicros: reservation.heldMicros, availableMicros: account.availableMicros };
  };

  const checkpoint = (request: ledgerV1.CheckpointRequest): ledgerV1.CheckpointResponse => {
    const base = ledgerV1.CheckpointResponse.fromPartial({});
    const reservation = reservations.get(request.reservationId);
    if (reservation === undefined) return { ...base, result: ledgerV1.CheckpointResult.CHECKPOINT_RESULT_RESERVATION_UNKNOWN };
    if (request.sequence <= 0n || request.costMicros < 0n || request.inputTokens < 0n || request.outputTokens < 0n || request.extendTtlMs < 0n) {
      return { ...base, result: ledgerV1.CheckpointResult.CHECKPOINT_RESULT_INVALID_ARGUMENT };
    }
    if (reservation.state !== 'held') return { ...base, result: ledgerV1.CheckpointResult.CHECKPOINT_RESULT_ALREADY_RESOLVED, expiresAtMs: reservation.expiresAtMs };
    if (reservation.checkpoint !== undefined && request.sequence <= reservation.checkpoint.sequence) {
      return { ...base, result: ledgerV1.CheckpointResult.CHECKPOINT_RESULT_OK, expiresAtMs: reservation.expiresAtMs, detail: 'replay or out of order' };
    }
    reservation.checkpoint = request;
    if (request.extendTtlMs > 0n) reservation.expiresAtMs = BigInt(Date.now()) + request.extendTtlMs;
    return { ...base, result: ledgerV1.CheckpointResult.CHECKPOINT_RESULT_OK, expiresAtMs: reservation.expiresAtMs };
  };

  const unimplemented = (_call: unknown, callback: sendUnaryData<never>) => callback({ code: GrpcStatus.UNIMPLEMENTED, details: 'not in the peer' });
  const checkpointHandler = handler('checkpoint', checkpoint);
  const implementation: ledgerV1.LedgerServiceServer = {
    reserve: handler('reserve', reserve),
    settle: handler('settle', settle),
    release: handler('release', release),
    checkpoint: (call, callback) => {
      if (checkpointImplemented) { checkpointHandler(call, callback); return; }
      calls.checkpoint.push(call.request);
      unimplemented(call, callback);
    },
    openAccount: unimplemented,
    credit: unimplemented,
    getBalance: unimplemented,
    listUsage: unimplemented,
    setProjectBudget: unimplemented,
    getProjectSpend: unimplemented,
    summarizeUsage: unimplemented,
    listBudgetAlerts: unimplemented,
    watchBudgetAlerts: (call: ServerWritableStream<ledgerV1.WatchBudgetAlertsRequest, ledgerV1.BudgetAlert>) => {
      call.emit('error', { code: GrpcStatus.UNIMPLEMENTED, details: 'not in the peer' });
    },
    verify: unimplemented,
    operate: (call: ServerDuplexStream<ledgerV1.OperationRequest, ledgerV1.OperationResponse>) => {
      if (options.operate === false) {
        call.emit('error', { code: GrpcStatus.UNIMPLEMENTED, details: 'not in the peer' });
        return;
      }
      operateStreams.add(call);
      call.on('close', () => operateStreams.delete(call));
      call.on('end', () => call.end());
      call.on('data', (message: ledgerV1.OperationRequest) => {
        const { callId } = message;
        const reply = (key: 'reserve' | 'settle' | 'release' | 'checkpoint') => (error: { code?: number; details?: string } | null, response?: unknown) => {
          if (call.destroyed) return;
          call.write(error
            ? { callId, error: { code: error.code ?? GrpcStatus.INTERNAL, message: error.details ?? '', errorCode: 'service_unavailable' } }
            : { callId, [key]: response });
        };
        if (message.reserve) answer('reserve', reserve, message.reserve, reply('reserve'));
        else if (message.settle) answer('settle', settle, message.settle, reply('settle'));
        else if (message.release) answer('release', release, message.release, reply('release'));
        else if (message.checkpoint) {
          if (checkpointImplemented) answer('checkpoint', checkpoint, message.checkpoint, reply('checkpoint'));
          else {
            calls.checkpoint.push(message.checkpoint);
            reply('checkpoint')({ code: GrpcStatus.UNIMPLEMENTED, details: 'not in the peer' });
          }
        }
      });
    },
  };
  const operateStreams = new Set<ServerDuplexStream<ledgerV1.OperationRequest, ledgerV1.OperationResponse>>();
  const serve = async (onPort: number): Promise<{ server: Server; port: number }> => {
    const started = createGrpcServer();
    started.addService(ledgerV1.LedgerServiceService, implementation);
    return { server: started, port: await startGrpcServer(started, '127.0.0.1', onPort, testTransportSecurity(pki, 'ledger')) };
  };
  const pki = await sharedTestPki();
  let { server, port } = await serve(0);
  let serving = true;

  return {
    address: `127.0.0.1:${port}`,
    proxySecurity: testTransportSecurity(pki, 'proxy'),
    calls,
    credit(organisationId, amountMicros) {
      const account = accounts.get(organisationId) ?? { creditedMicros: 0n, availableMicros: 0n, heldMicros: 0n, debitedMicros: 0n };
      account.creditedMicros += amountMicros;
      account.availableMicros += amountMicros;
      accounts.set(organisationId, account);
    },
    account: (organisationId) => {
      const account = accounts.get(organisationId);
      return account === undefined ? undefined : { ...account };
    },
    reservationState: (reservationId) => reservations.get(reservationId)?.state,
    reservationCheckpoint: (reservationId) => {
      const reservation = reservations.get(reservationId);
      return reservation === undefined ? undefined : { checkpoint: reservation.checkpoint, expiresAtMs: reservation.expiresAtMs };
    },
    setProjectCap(projectId, capMicros) {
      if (capMicros === 0n) projectCaps.delete(projectId);
      else projectCaps.set(projectId, capMicros);
    },
    failNext(method, count) { failures[method] = count; },
    delayNext(method, delayMs) { delays[method].push(delayMs); },
    setCheckpointImplemented(implemented) { checkpointImplemented = implemented; },
    tombstoned: (reservationId) => tombstones.has(reservationId),
    answers,
    async stop() {
      if (!serving) return;
      serving = false;
      server.forceShutdown();
      operateStreams.clear();
    },
    async restart() {
      if (serving) return;
      ({ server, port } = await serve(port));
      serving = true;
    },
    async close() {
      if (!serving) return;
      serving = false;
      // Ends the Operate streams as a stopping ledger does, so the drain does not wait on them.
      for (const call of operateStreams) call.end();
      await stopGrpcServer(server, 100);
    },
  };
}
