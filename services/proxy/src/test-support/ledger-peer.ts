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
  /** What was taken from available, µ₹ (0 in internal billing mode). */
  heldMicros: bigint;
  state: 'held' | 'settled' | 'released';
  settle?: { request: ledgerV1.SettleRequest; response: ledgerV1.SettleResponse };
  /** The last checkpoint recorded (highest sequence). */
  checkpoint?: ledgerV1.CheckpointRequest;
  /** The request id the first checkpoint carrying one recorded ('' until then), as the ledger keeps it. */
  checkpointRequestId: string;
  /** Deadline, ms since the epoch (the peer's clock); a replayed Reserve answers it again. */
  expiresAtMs: bigint;
}

/** Ledger methods whose next calls a test can make fail. */
export type PeerMethod = 'reserve' | 'settle' | 'release' | 'checkpoint' | 'acquireGrant' | 'adjustGrant';

/** A credit grant in the peer: a hold one proxy replica carves Reserves from (docs/ledger.md "Credit grants"). */
export interface PeerGrant {
  request: ledgerV1.AcquireGrantRequest;
  /** The first answer (a replay answers it again). */
  response: ledgerV1.AcquireGrantResponse;
  /** What it still holds, µ₹ (budget headroom only, in internal billing mode). */
  heldMicros: bigint;
  state: 'held' | 'closed' | 'expired';
  /** The peer wants it back (its organisation ran low). */
  recalled: boolean;
  /** Its owner answered the recall (an adjustment other than a bare extension). */
  recallAnswered: boolean;
  expiresAtMs: bigint;
}

/**
 * A small in-memory ledger for proxy tests: a real grpc-js server implementing LedgerService
 * (unary calls and the Operate stream) with wallets, reservations, settle, release and
 * checkpoint (idempotent on the reservation id, balances conserved), Release tombstones (a
 * Reserve after its Release holds nothing, as the ledger does) and a per-project cap, recording
 * every call and answer. It also holds credit grants as the ledger does (AcquireGrant sized by a
 * share of available and of budget headroom, AdjustGrant, carved Settles, promoted Reserves,
 * settle_batch messages, recalls on refusals pushed to the owners' Operate streams). It answers
 * the shared scenario table (`ledgerScenarios` from `@gateway/testkit`) as the real ledger does
 * (ledger-peer-scenarios.int.test.ts); it does not model expiry (no sweeper; a test can expire
 * a grant by hand) nor the admin's calls (UNIMPLEMENTED). A test can make the next
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
    checkpoint: ledgerV1.CheckpointRequest[]; acquireGrant: ledgerV1.AcquireGrantRequest[]; adjustGrant: ledgerV1.AdjustGrantRequest[];
    /** How many Settles each settle_batch message carried (each Settle is also in `settle`). */
    settleBatch: number[];
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
  /** True when a Release of an unknown reservation id left a tombstone (a later Reserve of it holds nothing). */
  tombstoned(reservationId: string): boolean;
  /** Every credit grant, by id (copies). */
  grants(): Map<string, PeerGrant>;
  /** The largest share of available (and of budget headroom) one grant may hold, percent (LEDGER_GRANT_MAX_SHARE_PERCENT; 10 by default). */
  setGrantSharePercent(percent: number): void;
  /** Expires a held grant as the ledger's sweeper does at its deadline: what it holds returns to the wallet. */
  expireGrant(grantId: string): void;
  /** Every answer given, per method, in order (calls failed by failNext have none). */
  answers: {
    reserve: ledgerV1.ReserveResponse[]; settle: ledgerV1.SettleResponse[]; release: ledgerV1.ReleaseResponse[];
    checkpoint: ledgerV1.CheckpointResponse[]; acquireGrant: ledgerV1.AcquireGrantResponse[]; adjustGrant: ledgerV1.AdjustGrantResponse[];
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

/*
 * The ledger's input rules (services/ledger/src/domain/validation.ts), repeated here because a
 * service never imports another: the scenario table keeps the two in step.
 */
/** Largest amount (µ₹) or token count one request may carry. */
const maxAmountMicros = 2n ** 62n;
/** A Reserve (or a checkpoint's extension) lives 1 s .. 24 h. */
const minReserveTtlMs = 1_000n;
const maxReserveTtlMs = 86_400_000n;

/** An id the ledger accepts: 1..128 printable ASCII characters without spaces. */
const validId = (value: string) => value.length > 0 && value.length <= 128 && /^[\x21-\x7e]+$/.test(value);
/** An optional id: empty, or valid. */
const validOptionalId = (value: string) => value === '' || validId(value);
/** An amount or count that may be zero: 0..2^62. */
const validNonNegative = (value: bigint) => value >= 0n && value <= maxAmountMicros;
/** Free text kept on a movement: at most 500 characters, no control characters. */
const validReason = (value: string) => value.length <= 500 && !/[\u0000-\u001f\u007f]/.test(value);
/** A Reserve lifetime, ms. */
const validTtl = (valueMs: bigint) => valueMs >= minReserveTtlMs && valueMs <= maxReserveTtlMs;

/** Whether a Reserve's fields other than its id pass the ledger's rules. */
function validReserve(request: ledgerV1.ReserveRequest): boolean {
  return validId(request.organisationId) && validId(request.projectId) && validId(request.modelSlug)
    && (request.billingMode === ledgerV1.BillingMode.BILLING_MODE_COMMERCIAL || request.billingMode === ledgerV1.BillingMode.BILLING_MODE_INTERNAL)
    && request.amountMicros > 0n && request.amountMicros <= maxAmountMicros && validTtl(request.ttlMs);
}

/** Whether a Settle's fields other than its id pass the ledger's rules. */
function validSettle(request: ledgerV1.SettleRequest): boolean {
  return validNonNegative(request.inputTokens) && validNonNegative(request.outputTokens) && validNonNegative(request.costMicros)
    && validNonNegative(request.providerCostMicros) && validId(request.modelSlug)
    && (request.usageSource === ledgerV1.UsageSource.USAGE_SOURCE_UPSTREAM || request.usageSource === ledgerV1.UsageSource.USAGE_SOURCE_GATEWAY_ESTIMATE)
    && validOptionalId(request.requestId) && validNonNegative(request.overrunOutputTokens);
}

/** Whether a Checkpoint passes the ledger's rules on its own (before its reservation is read). */
function validCheckpoint(request: ledgerV1.CheckpointRequest): boolean {
  return validId(request.reservationId) && request.sequence > 0n && request.sequence <= maxAmountMicros
    && validNonNegative(request.inputTokens) && validNonNegative(request.outputTokens) && validNonNegative(request.costMicros)
    && validNonNegative(request.providerCostMicros) && (request.extendTtlMs === 0n || validTtl(request.extendTtlMs))
    && validOptionalId(request.requestId);
}

/** Starts a ledger peer on 127.0.0.1, port 0. */
export async function startLedgerPeer(): Promise<LedgerPeer> {
  const accounts = new Map<string, PeerAccount>();
  const reservations = new Map<string, PeerReservation>();
  const calls: LedgerPeer['calls'] = { reserve: [], settle: [], release: [], checkpoint: [], acquireGrant: [], adjustGrant: [], settleBatch: [] };
  const answers: LedgerPeer['answers'] = { reserve: [], settle: [], release: [], checkpoint: [], acquireGrant: [], adjustGrant: [] };
  const grants = new Map<string, PeerGrant>();
  /** First answer of each AdjustGrant, by adjustment id (IDEMPOTENCY). */
  const adjustments = new Map<string, { request: ledgerV1.AdjustGrantRequest; response: ledgerV1.AdjustGrantResponse }>();
  /** The Operate streams each grant owner's AcquireGrant/AdjustGrant messages came on: where its recalls are pushed. */
  const ownerStreams = new Map<string, Set<ServerDuplexStream<ledgerV1.OperationRequest, ledgerV1.OperationResponse>>>();
  let grantSharePercent = 10n;
  // Releases that arrived before their Reserve (the ledger's tombstones): the late Reserve holds nothing.
  const tombstones = new Set<string>();
  const failures: Record<PeerMethod, number> = { reserve: 0, settle: 0, release: 0, checkpoint: 0, acquireGrant: 0, adjustGrant: 0 };
  const delays: Record<PeerMethod, number[]> = { reserve: [], settle: [], release: [], checkpoint: [], acquireGrant: [], adjustGrant: [] };
  const projectCaps = new Map<string, bigint>();

  /** Customer cost settled plus held by a project's reservations, µ₹ (both billing modes). */
  const projectSpendMicros = (projectId: string): bigint => {
    let total = 0n;
    for (const reservation of reservations.values()) {
      if (reservation.request.projectId !== projectId) continue;
      if (reservation.state === 'held') total += reservation.request.amountMicros;
      else if (reservation.state === 'settled') total += reservation.settle!.request.costMicros;
    }
    // A grant holds budget headroom (both billing modes) like a reservation.
    for (const grant of grants.values()) if (grant.request.projectId === projectId && grant.state === 'held') total += grant.heldMicros;
    return total;
  };

  /** Customer cost settled by a project's reservations, µ₹ (both billing modes): what no hold's return can lower. */
  const projectSettledMicros = (projectId: string): bigint => {
    let total = 0n;
    for (const reservation of reservations.values()) {
      if (reservation.request.projectId === projectId && reservation.state === 'settled') total += reservation.settle!.request.costMicros;
    }
    return total;
  };

  /** The wallet part of a grant's hold: all of it, commercial; nothing, internal (INTERNAL_MODE). */
  const walletPart = (grant: PeerGrant, micros: bigint) => (grant.request.billingMode === ledgerV1.BillingMode.BILLING_MODE_INTERNAL ? 0n : micros);

  /** Returns `micros` of a grant's hold to the wallet. */
  const returnFromGrant = (grant: PeerGrant, micros: bigint) => {
    grant.heldMicros -= micros;
    const account = accounts.get(grant.request.organisationId)!;
    account.heldMicros -= walletPart(grant, micros);
    account.availableMicros += walletPart(grant, micros);
  };

  /**
   * Marks the organisation's held grants (of one project when given) recalled and pushes their
   * ids to their owners' Operate streams; returns how many are being pulled back and not yet
   * answered by their owners (as the ledger does, migration 0011).
   */
  const recallGrants = (organisationId: string, projectId?: string, except?: string): number => {
    const byOwner = new Map<string, string[]>();
    let recalling = 0;
    for (const [grantId, grant] of grants) {
      if (grant.state !== 'held' || grant.request.organisationId !== organisationId || grantId === except) continue;
      if (projectId !== undefined && grant.request.projectId !== projectId) continue;
      // An owner that answered the recall (returned U or closed) has nothing more to give back.
      if (grant.recallAnswered) continue;
      recalling += 1;
      if (grant.recalled) continue;
      grant.recalled = true;
      byOwner.set(grant.request.ownerId, [...(byOwner.get(grant.request.ownerId) ?? []), grantId]);
    }
    for (const [ownerId, grantIds] of byOwner) {
      for (const stream of ownerStreams.get(ownerId) ?? []) {
        if (!stream.destroyed) stream.write({ callId: 0n, recall: { grantIds } });
      }
    }
    return recalling;
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

  // Each operation decides its results in the ledger's precedence order (the proto enums' order,
  // with the ledger's documented exceptions), so the proxy meets the answers it will meet in production.
  const reserve = (request: ledgerV1.ReserveRequest): ledgerV1.ReserveResponse => {
    const base = ledgerV1.ReserveResponse.fromPartial({});
    const { ReserveResult } = ledgerV1;
    if (!validId(request.reservationId)) return { ...base, result: ReserveResult.RESERVE_RESULT_INVALID_ARGUMENT };
    const existing = reservations.get(request.reservationId);
    const account = accounts.get(request.organisationId);
    if (existing !== undefined) {
      // IDEMPOTENCY: the first outcome and deadline, with the balance as it is now; a conflict precedes invalid input.
      if (!samePayload(ledgerV1.ReserveRequest, existing.request, request)) return { ...base, result: ReserveResult.RESERVE_RESULT_IDEMPOTENCY_CONFLICT };
      return { ...base, result: ok, availableMicros: accounts.get(existing.request.organisationId)?.availableMicros ?? 0n, expiresAtMs: existing.expiresAtMs };
    }
    if (!validReserve(request)) return { ...base, result: ReserveResult.RESERVE_RESULT_INVALID_ARGUMENT };
    // ONE_OUTCOME: a Release overtook this Reserve; decided before every refusal but invalid input.
    if (tombstones.has(request.reservationId)) return { ...base, result: ReserveResult.RESERVE_RESULT_RELEASED };
    if (account === undefined) return { ...base, result: ReserveResult.RESERVE_RESULT_ORGANISATION_UNKNOWN };
    const internal = request.billingMode === ledgerV1.BillingMode.BILLING_MODE_INTERNAL;
    if (request.grantId !== undefined) {
      // A carve made its own reservation: held out of the grant's remaining, no new money checks.
      const grant = grants.get(request.grantId);
      if (grant === undefined || grant.state !== 'held' || grant.heldMicros < request.amountMicros) {
        return { ...base, result: ReserveResult.RESERVE_RESULT_GRANT_NOT_HELD, availableMicros: account.availableMicros };
      }
      grant.heldMicros -= request.amountMicros;
      const heldMicros = walletPart(grant, request.amountMicros); // moved from the grant's hold to the reservation's
      const expiresAtMs = BigInt(Date.now()) + request.ttlMs;
      reservations.set(request.reservationId, { request, heldMicros, state: 'held', expiresAtMs, checkpointRequestId: '' });
      return { ...base, result: ok, availableMicros: account.availableMicros, expiresAtMs };
    }
    // NO_OVERSPEND (commercial only: INTERNAL_MODE holds nothing), decided before PROJECT_BUDGET.
    // A refusal no hold's return could lift (amount beyond available + held; beyond the cap less
    // the settled spend) says so and recalls nothing, as ledger_refusal_liftable decides.
    if (!internal && account.availableMicros < request.amountMicros) {
      const liftable = request.amountMicros <= account.availableMicros + account.heldMicros;
      const grantsRecalled = liftable ? recallGrants(request.organisationId) : 0;
      return { ...base, result: ReserveResult.RESERVE_RESULT_INSUFFICIENT_BALANCE, availableMicros: account.availableMicros, grantsRecalled, liftable };
    }
    const capMicros = projectCaps.get(request.projectId) ?? 0n;
    if (capMicros > 0n && projectSpendMicros(request.projectId) + request.amountMicros > capMicros) {
      const liftable = projectSettledMicros(request.projectId) + request.amountMicros <= capMicros;
      const grantsRecalled = liftable ? recallGrants(request.organisationId, request.projectId) : 0;
      return { ...base, result: ReserveResult.RESERVE_RESULT_PROJECT_BUDGET_EXCEEDED, availableMicros: account.availableMicros, grantsRecalled, liftable };
    }
    const heldMicros = internal ? 0n : request.amountMicros;
    account.availableMicros -= heldMicros;
    account.heldMicros += heldMicros;
    const expiresAtMs = BigInt(Date.now()) + request.ttlMs;
    reservations.set(request.reservationId, { request, heldMicros, state: 'held', expiresAtMs, checkpointRequestId: '' });
    return { ...base, result: ok, availableMicros: account.availableMicros, expiresAtMs };
  };

  const settle = (request: ledgerV1.SettleRequest): ledgerV1.SettleResponse => {
    const base = ledgerV1.SettleResponse.fromPartial({});
    const { SettleResult } = ledgerV1;
    if (!validId(request.reservationId)) return { ...base, result: SettleResult.SETTLE_RESULT_INVALID_ARGUMENT };
    const reservation = reservations.get(request.reservationId);
    if (reservation?.state === 'settled') {
      // IDEMPOTENCY: the first settlement's figures, with the balance as it is now; a conflict precedes invalid input.
      if (!samePayload(ledgerV1.SettleRequest, reservation.settle!.request, request)) return { ...base, result: SettleResult.SETTLE_RESULT_IDEMPOTENCY_CONFLICT };
      return { ...reservation.settle!.response, availableMicros: accounts.get(reservation.request.organisationId)!.availableMicros };
    }
    if (!validSettle(request)) return { ...base, result: SettleResult.SETTLE_RESULT_INVALID_ARGUMENT };
    if (reservation === undefined && request.grantId !== undefined) return settleCarve(request, base);
    if (reservation === undefined) return { ...base, result: SettleResult.SETTLE_RESULT_RESERVATION_UNKNOWN };
    if (reservation.state === 'released') return { ...base, result: SettleResult.SETTLE_RESULT_ALREADY_RESOLVED };
    const account = accounts.get(reservation.request.organisationId)!;
    const internal = reservation.request.billingMode === ledgerV1.BillingMode.BILLING_MODE_INTERNAL;
    // INTERNAL_MODE debits nothing; BOUNDED_OVERRUN: a cost past the Reserve is debited from available.
    const debitedMicros = internal ? 0n : request.costMicros;
    const overrunMicros = debitedMicros > reservation.heldMicros ? debitedMicros - reservation.heldMicros : 0n;
    const releasedMicros = reservation.heldMicros - (debitedMicros - overrunMicros);
    account.heldMicros -= reservation.heldMicros;
    account.availableMicros += releasedMicros - overrunMicros;
    account.debitedMicros += debitedMicros;
    const response: ledgerV1.SettleResponse = {
      ...base, result: SettleResult.SETTLE_RESULT_OK, debitedMicros, releasedMicros, overrunMicros, availableMicros: account.availableMicros,
    };
    reservation.state = 'settled';
    reservation.settle = { request, response };
    return response;
  };

  /**
   * The Settle of a Reserve carved from a grant, which the peer has never seen: the reservation is
   * written settled at once; the cost comes out of the grant's hold, any part beyond what the grant
   * still holds (or all of it, for a grant no longer held) out of available; the unused part of the
   * carve stays in the grant. BOUNDED_OVERRUN: overrun = max(0, cost − carve).
   */
  const settleCarve = (request: ledgerV1.SettleRequest, base: ledgerV1.SettleResponse): ledgerV1.SettleResponse => {
    const { SettleResult } = ledgerV1;
    const grant = grants.get(request.grantId!);
    const reservedMicros = request.reservedMicros ?? 0n;
    if (grant === undefined || reservedMicros <= 0n) return { ...base, result: SettleResult.SETTLE_RESULT_INVALID_ARGUMENT };
    const account = accounts.get(grant.request.organisationId)!;
    const internal = grant.request.billingMode === ledgerV1.BillingMode.BILLING_MODE_INTERNAL;
    const debitedMicros = internal ? 0n : request.costMicros;
    // The grant's hold (budget headroom too, internal) pays the cost first.
    const fromGrantMicros = grant.state === 'held' ? (request.costMicros < grant.heldMicros ? request.costMicros : grant.heldMicros) : 0n;
    grant.heldMicros -= fromGrantMicros;
    const fromGrantWallet = walletPart(grant, fromGrantMicros);
    account.heldMicros -= fromGrantWallet;
    account.availableMicros -= debitedMicros - fromGrantWallet;
    account.debitedMicros += debitedMicros;
    const overrunMicros = debitedMicros > reservedMicros ? debitedMicros - reservedMicros : 0n;
    const response: ledgerV1.SettleResponse = {
      ...base, result: SettleResult.SETTLE_RESULT_OK, debitedMicros, releasedMicros: 0n, overrunMicros, availableMicros: account.availableMicros,
    };
    reservations.set(request.reservationId, {
      request: {
        reservationId: request.reservationId, organisationId: grant.request.organisationId, projectId: grant.request.projectId,
        billingMode: grant.request.billingMode, amountMicros: reservedMicros, ttlMs: minReserveTtlMs, modelSlug: request.modelSlug,
      },
      heldMicros: 0n, state: 'settled', settle: { request, response }, expiresAtMs: 0n, checkpointRequestId: '',
    });
    return response;
  };

  const acquireGrant = (request: ledgerV1.AcquireGrantRequest): ledgerV1.AcquireGrantResponse => {
    const base = ledgerV1.AcquireGrantResponse.fromPartial({});
    const { AcquireGrantResult } = ledgerV1;
    const existing = grants.get(request.grantId);
    if (existing !== undefined) {
      if (!samePayload(ledgerV1.AcquireGrantRequest, existing.request, request)) return { ...base, result: AcquireGrantResult.ACQUIRE_GRANT_RESULT_IDEMPOTENCY_CONFLICT };
      return existing.response;
    }
    const internal = request.billingMode === ledgerV1.BillingMode.BILLING_MODE_INTERNAL;
    if (!validId(request.grantId) || !validId(request.organisationId) || !validId(request.projectId) || !validId(request.ownerId)
      || request.minMicros <= 0n || request.wantMicros < request.minMicros || request.wantMicros > maxAmountMicros || !validTtl(request.ttlMs)
      || (!internal && request.billingMode !== ledgerV1.BillingMode.BILLING_MODE_COMMERCIAL)) {
      return { ...base, result: AcquireGrantResult.ACQUIRE_GRANT_RESULT_INVALID_ARGUMENT };
    }
    const account = accounts.get(request.organisationId);
    if (account === undefined) return { ...base, result: AcquireGrantResult.ACQUIRE_GRANT_RESULT_ORGANISATION_UNKNOWN };
    // Sizing: at most what was asked, a share of available (commercial) and of the budget's headroom.
    let grantedMicros = request.wantMicros;
    if (!internal) {
      const share = account.availableMicros * grantSharePercent / 100n;
      if (share < grantedMicros) grantedMicros = share;
    }
    const capMicros = projectCaps.get(request.projectId) ?? 0n;
    if (capMicros > 0n) {
      const headroom = capMicros - projectSpendMicros(request.projectId);
      const share = headroom > 0n ? headroom * grantSharePercent / 100n : 0n;
      if (share < grantedMicros) grantedMicros = share;
    }
    if (grantedMicros < request.minMicros) {
      // The organisation runs low: nothing is written, and its other grants are pulled back.
      recallGrants(request.organisationId);
      return { ...base, result: AcquireGrantResult.ACQUIRE_GRANT_RESULT_NOT_GRANTED, availableMicros: account.availableMicros };
    }
    const walletMicros = internal ? 0n : grantedMicros;
    account.availableMicros -= walletMicros;
    account.heldMicros += walletMicros;
    const expiresAtMs = BigInt(Date.now()) + request.ttlMs;
    const response: ledgerV1.AcquireGrantResponse = {
      ...base, result: AcquireGrantResult.ACQUIRE_GRANT_RESULT_OK, grantedMicros, expiresAtMs, availableMicros: account.availableMicros,
    };
    grants.set(request.grantId, { request, response, heldMicros: grantedMicros, state: 'held', recalled: false, recallAnswered: false, expiresAtMs });
    return response;
  };

  const adjustGrant = (request: ledgerV1.AdjustGrantRequest): ledgerV1.AdjustGrantResponse => {
    const base = ledgerV1.AdjustGrantResponse.fromPartial({});
    const { AdjustGrantResult } = ledgerV1;
    const existing = adjustments.get(request.adjustmentId);
    if (existing !== undefined) {
      if (!samePayload(ledgerV1.AdjustGrantRequest, existing.request, request)) return { ...base, result: AdjustGrantResult.ADJUST_GRANT_RESULT_IDEMPOTENCY_CONFLICT };
      return existing.response;
    }
    if (!validId(request.adjustmentId) || !validId(request.grantId) || !validNonNegative(request.returnMicros) || !validReason(request.reason)
      || (request.extendTtlMs !== 0n && !validTtl(request.extendTtlMs))) {
      return { ...base, result: AdjustGrantResult.ADJUST_GRANT_RESULT_INVALID_ARGUMENT };
    }
    const grant = grants.get(request.grantId);
    if (grant === undefined) return { ...base, result: AdjustGrantResult.ADJUST_GRANT_RESULT_GRANT_UNKNOWN };
    if (grant.state !== 'held') return { ...base, result: AdjustGrantResult.ADJUST_GRANT_RESULT_ALREADY_RESOLVED, expiresAtMs: grant.expiresAtMs };
    const returnedMicros = request.close ? grant.heldMicros : (request.returnMicros < grant.heldMicros ? request.returnMicros : grant.heldMicros);
    returnFromGrant(grant, returnedMicros);
    if (request.close) grant.state = 'closed';
    if (request.extendTtlMs > 0n) grant.expiresAtMs = BigInt(Date.now()) + request.extendTtlMs;
    // Anything but a bare extension answers a recall (ledger_adjust_grant).
    if (grant.recalled && (request.close || request.returnMicros > 0n || request.extendTtlMs === 0n)) grant.recallAnswered = true;
    const response: ledgerV1.AdjustGrantResponse = {
      ...base, result: AdjustGrantResult.ADJUST_GRANT_RESULT_OK, returnedMicros, remainingMicros: grant.heldMicros,
      expiresAtMs: grant.expiresAtMs, recalled: grant.recalled,
    };
    adjustments.set(request.adjustmentId, { request, response });
    return response;
  };

  const release = (request: ledgerV1.ReleaseRequest): ledgerV1.ReleaseResponse => {
    const base = ledgerV1.ReleaseResponse.fromPartial({});
    const { ReleaseResult } = ledgerV1;
    if (!validId(request.reservationId)) return { ...base, result: ReleaseResult.RELEASE_RESULT_INVALID_ARGUMENT };
    const reasonValid = validReason(request.reason);
    const reservation = reservations.get(request.reservationId);
    if (reservation === undefined && reasonValid) {
      // ONE_OUTCOME: the Release overtook its Reserve; the tombstone makes that Reserve hold nothing.
      tombstones.add(request.reservationId);
      return { ...base, result: ReleaseResult.RELEASE_RESULT_RESERVATION_UNKNOWN };
    }
    if (reservation?.state === 'released') {
      // A replay (its reason is not compared).
      const account = accounts.get(reservation.request.organisationId)!;
      return { ...base, result: ReleaseResult.RELEASE_RESULT_OK, releasedMicros: reservation.heldMicros, availableMicros: account.availableMicros };
    }
    if (!reasonValid || reservation === undefined) return { ...base, result: ReleaseResult.RELEASE_RESULT_INVALID_ARGUMENT };
    const account = accounts.get(reservation.request.organisationId)!;
    if (reservation.state === 'settled') {
      return { ...base, result: ReleaseResult.RELEASE_RESULT_ALREADY_RESOLVED, availableMicros: account.availableMicros };
    }
    account.heldMicros -= reservation.heldMicros;
    account.availableMicros += reservation.heldMicros;
    reservation.state = 'released';
    return { ...base, result: ReleaseResult.RELEASE_RESULT_OK, releasedMicros: reservation.heldMicros, availableMicros: account.availableMicros };
  };

  const checkpoint = (request: ledgerV1.CheckpointRequest): ledgerV1.CheckpointResponse => {
    const base = ledgerV1.CheckpointResponse.fromPartial({});
    const { CheckpointResult } = ledgerV1;
    if (!validCheckpoint(request)) return { ...base, result: CheckpointResult.CHECKPOINT_RESULT_INVALID_ARGUMENT };
    const reservation = reservations.get(request.reservationId);
    if (reservation === undefined) return { ...base, result: CheckpointResult.CHECKPOINT_RESULT_RESERVATION_UNKNOWN };
    const last = reservation.checkpoint;
    const { expiresAtMs } = reservation;
    // A replay or one out of order changes nothing and is OK, also after the reservation resolved:
    // the sequence is what makes checkpoints safe to retry.
    if (last !== undefined && request.sequence <= last.sequence) {
      return { ...base, result: CheckpointResult.CHECKPOINT_RESULT_OK, expiresAtMs, detail: 'replay or out of order' };
    }
    if (reservation.state !== 'held') return { ...base, result: CheckpointResult.CHECKPOINT_RESULT_ALREADY_RESOLVED, expiresAtMs };
    // Running totals never go down, and one reservation is one request (its first request id stays).
    const goesDown = last !== undefined && (request.inputTokens < last.inputTokens || request.outputTokens < last.outputTokens
      || request.costMicros < last.costMicros || request.providerCostMicros < last.providerCostMicros);
    const otherRequest = request.requestId !== '' && reservation.checkpointRequestId !== '' && request.requestId !== reservation.checkpointRequestId;
    if (goesDown || otherRequest) return { ...base, result: CheckpointResult.CHECKPOINT_RESULT_INVALID_ARGUMENT, expiresAtMs };
    reservation.checkpoint = request;
    if (reservation.checkpointRequestId === '') reservation.checkpointRequestId = request.requestId;
    if (request.extendTtlMs > 0n) reservation.expiresAtMs = BigInt(Date.now()) + request.extendTtlMs;
    return { ...base, result: CheckpointResult.CHECKPOINT_RESULT_OK, expiresAtMs: reservation.expiresAtMs };
  };

  const unimplemented = (_call: unknown, callback: sendUnaryData<never>) => callback({ code: GrpcStatus.UNIMPLEMENTED, details: 'not in the peer' });
  const implementation: ledgerV1.LedgerServiceServer = {
    acquireGrant: handler('acquireGrant', acquireGrant),
    adjustGrant: handler('adjustGrant', adjustGrant),
    reserve: handler('reserve', reserve),
    settle: handler('settle', settle),
    release: handler('release', release),
    checkpoint: handler('checkpoint', checkpoint),
    openAccount: unimplemented,
    credit: unimplemented,
    refundCredit: unimplemented,
    reverseRefund: unimplemented,
    getBalance: unimplemented,
    listUsage: unimplemented,
    setProjectBudget: unimplemented,
    getProjectSpend: unimplemented,
    summarizeUsage: unimplemented,
    listBudgetAlerts: unimplemented,
    listProjectSpends: unimplemented,
    // The request log: taken and counted as written, kept nowhere (the peer is not a store of it).
    recordRequests: (call: ServerUnaryCall<ledgerV1.RecordRequestsRequest, ledgerV1.RecordRequestsResponse>, callback: sendUnaryData<ledgerV1.RecordRequestsResponse>) => {
      callback(null, { recorded: call.request.records.length });
    },
    listRequests: unimplemented,
    getRequest: unimplemented,
    summarizeDeployments: unimplemented,
    watchBudgetAlerts: (call: ServerWritableStream<ledgerV1.WatchBudgetAlertsRequest, ledgerV1.BudgetAlert>) => {
      call.emit('error', { code: GrpcStatus.UNIMPLEMENTED, details: 'not in the peer' });
    },
    verify: unimplemented,
    operate: (call: ServerDuplexStream<ledgerV1.OperationRequest, ledgerV1.OperationResponse>) => {
      operateStreams.add(call);
      call.on('close', () => {
        operateStreams.delete(call);
        for (const streams of ownerStreams.values()) streams.delete(call);
      });
      call.on('end', () => call.end());
      call.on('data', (message: ledgerV1.OperationRequest) => {
        const { callId } = message;
        const reply = (key: 'reserve' | 'settle' | 'release' | 'checkpoint' | 'acquireGrant' | 'adjustGrant' | 'settleBatch') => (error: { code?: number; details?: string } | null, response?: unknown) => {
          if (call.destroyed) return;
          call.write(error
            ? { callId, error: { code: error.code ?? GrpcStatus.INTERNAL, message: error.details ?? '', errorCode: 'service_unavailable' } }
            : { callId, [key]: response });
        };
        if (message.reserve) answer('reserve', reserve, message.reserve, reply('reserve'));
        else if (message.settle) answer('settle', settle, message.settle, reply('settle'));
        else if (message.release) answer('release', release, message.release, reply('release'));
        else if (message.checkpoint) answer('checkpoint', checkpoint, message.checkpoint, reply('checkpoint'));
        else if (message.acquireGrant || message.adjustGrant) {
          // The ledger learns which stream serves a grant's owner from the grant messages it carried.
          const ownerId = message.acquireGrant?.ownerId ?? grants.get(message.adjustGrant!.grantId)?.request.ownerId;
          if (ownerId !== undefined) ownerStreams.set(ownerId, (ownerStreams.get(ownerId) ?? new Set()).add(call));
          if (message.acquireGrant) answer('acquireGrant', acquireGrant, message.acquireGrant, reply('acquireGrant'));
          else answer('adjustGrant', adjustGrant, message.adjustGrant!, reply('adjustGrant'));
        } else if (message.settleBatch) {
          // Each Settle is exactly a Settle (recorded, failed or delayed as one); one answer per Settle, in order.
          const { settles } = message.settleBatch;
          calls.settleBatch.push(settles.length);
          const results: ledgerV1.SettleResponse[] = [];
          let failed: { code?: number; details?: string } | null = null;
          let left = settles.length;
          if (left === 0) reply('settleBatch')(null, { settles: [] });
          settles.forEach((settleRequest, index) => answer('settle', settle, settleRequest, (error, response) => {
            if (error) failed ??= error;
            else results[index] = response!;
            left -= 1;
            if (left === 0) reply('settleBatch')(failed, failed ? undefined : { settles: results });
          }));
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
    tombstoned: (reservationId) => tombstones.has(reservationId),
    grants: () => new Map([...grants].map(([grantId, grant]) => [grantId, { ...grant }])),
    setGrantSharePercent(percent) { grantSharePercent = BigInt(percent); },
    expireGrant(grantId) {
      const grant = grants.get(grantId);
      if (grant === undefined || grant.state !== 'held') return;
      returnFromGrant(grant, grant.heldMicros);
      grant.state = 'expired';
    },
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
