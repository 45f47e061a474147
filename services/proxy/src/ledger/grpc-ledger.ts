import { isTransientResult, ledgerResultNames, ledgerResultTransient, ledgerV1, resultNamesByValue } from '@gateway/contracts';
import type { ProxyMetrics } from '@gateway/telemetry';
import type {
  AcquireGrantAnswer, AcquireGrantOrder, AcquireGrantOutcome, AdjustGrantAnswer, AdjustGrantOrder, AdjustGrantOutcome, BillingOwner, FailedAttempt, CheckpointAnswer, CheckpointOrder, CheckpointOutcome, Ledger, ReleaseAnswer, ReleaseOrder, ReleaseOutcome, ReserveAnswer,
  ReserveOrder, ReserveOutcome, SettleAnswer, SettleOrder, SettleOutcome,
} from '../domain/ledger-port.ts';
import type { SettleOutbox } from './settle-outbox.ts';

/** The single-attempt calls the port needs beside the outbox (LedgerClient in production). */
export interface LedgerCalls {
  reserve(request: ledgerV1.ReserveRequest): Promise<ledgerV1.ReserveResponse>;
  checkpoint(request: ledgerV1.CheckpointRequest): Promise<ledgerV1.CheckpointResponse>;
  acquireGrant(request: ledgerV1.AcquireGrantRequest): Promise<ledgerV1.AcquireGrantResponse>;
  adjustGrant(request: ledgerV1.AdjustGrantRequest): Promise<ledgerV1.AdjustGrantResponse>;
  onRecall(listener: (grantIds: readonly string[]) => void): void;
}

/** The outbox operations the port needs (SettleOutbox in production). */
export type LedgerOutbox = Pick<SettleOutbox, 'settle' | 'release' | 'outboxFull' | 'waitForRoom' | 'waitForOrganisation'>;

/** Proto result -> domain outcome, read from the contract's name tables; a value missing (UNSPECIFIED, UNRECOGNIZED) is `unrecognized`. */
const reserveOutcomes: ReadonlyMap<number, ReserveOutcome> = resultNamesByValue(ledgerResultNames.reserve);
const acquireGrantOutcomes: ReadonlyMap<number, AcquireGrantOutcome> = resultNamesByValue(ledgerResultNames.acquireGrant);
const adjustGrantOutcomes: ReadonlyMap<number, AdjustGrantOutcome> = resultNamesByValue(ledgerResultNames.adjustGrant);
const settleOutcomes: ReadonlyMap<number, SettleOutcome> = resultNamesByValue(ledgerResultNames.settle);
const releaseOutcomes: ReadonlyMap<number, ReleaseOutcome> = resultNamesByValue(ledgerResultNames.release);
const checkpointOutcomes: ReadonlyMap<number, CheckpointOutcome> = resultNamesByValue(ledgerResultNames.checkpoint);

const protoBillingMode = {
  commercial: ledgerV1.BillingMode.BILLING_MODE_COMMERCIAL,
  internal: ledgerV1.BillingMode.BILLING_MODE_INTERNAL,
} as const;

/** Ledger calls timed here; Reserve and Settle are timed per request by its observer (they carry the path). */
type TimedOperation = 'release' | 'checkpoint' | 'acquire_grant' | 'adjust_grant';

/** The ledger's detail, prefixed with the raw result code when the build does not know it (for the log). */
function detailOf(known: boolean, result: number, detail: string): string {
  return known ? detail : `result ${result}${detail ? `: ${detail}` : ''}`;
}

/**
 * The proxy's Ledger port over gRPC: Reserve and Checkpoint as single calls of the LedgerClient
 * (Operate stream), Settle and Release through the settle outbox, which repeats them until the
 * ledger's answer is final. The only place where proto requests, results and enums meet the
 * proxy's billing; whether a result is transient is read from the contract's table.
 */
export class GrpcLedger implements Ledger {
  readonly #calls: LedgerCalls;
  readonly #outbox: LedgerOutbox;
  readonly recallWaitMs: number;
  readonly #callDuration: ProxyMetrics['proxyLedgerCallDuration'] | undefined;

  /**
   * Wraps the client and the outbox; opens nothing. `recallWaitMs`: PROXY_RECALL_WAIT_MS;
   * `callDuration`: the histogram Release, Checkpoint and the grant calls are timed into.
   */
  constructor(calls: LedgerCalls, outbox: LedgerOutbox, options: { recallWaitMs?: number; callDuration?: ProxyMetrics['proxyLedgerCallDuration'] } = {}) {
    this.#calls = calls;
    this.#outbox = outbox;
    this.recallWaitMs = options.recallWaitMs ?? 0;
    this.#callDuration = options.callDuration;
  }

  /** Records how long a call took, seconds since `startedAtMs` (a performance.now() reading), answered or failed. */
  #timed(operation: TimedOperation, startedAtMs: number): void {
    this.#callDuration?.observe({ operation, path: '' }, (performance.now() - startedAtMs) / 1000);
  }

  /** One Reserve call; a failed call throws (LedgerClient makes it `service_unavailable`). */
  async reserve(order: ReserveOrder): Promise<ReserveAnswer> {
    const response = await this.#calls.reserve({
      reservationId: order.reservationId,
      organisationId: order.organisationId,
      projectId: order.projectId,
      billingMode: protoBillingMode[order.billingMode],
      amountMicros: order.amountMicros,
      ttlMs: BigInt(order.ttlMs),
      modelSlug: order.modelSlug,
      grantId: order.grantId,
    });
    const outcome = reserveOutcomes.get(response.result);
    return {
      outcome: outcome ?? 'unrecognized',
      transient: isTransientResult(ledgerResultTransient.reserve, response.result),
      detail: detailOf(outcome !== undefined, response.result, response.detail),
      grantsRecalled: response.grantsRecalled ?? 0,
      liftable: response.liftable ?? true,
    };
  }

  /** One AcquireGrant call; a failed call throws its gRPC error. */
  async acquireGrant(order: AcquireGrantOrder): Promise<AcquireGrantAnswer> {
    const startedAtMs = performance.now();
    const response = await this.#calls.acquireGrant({
      grantId: order.grantId,
      organisationId: order.organisationId,
      projectId: order.projectId,
      billingMode: protoBillingMode[order.billingMode],
      minMicros: order.minMicros,
      wantMicros: order.wantMicros,
      ttlMs: BigInt(order.ttlMs),
      ownerId: order.ownerId,
    }).finally(() => { this.#timed('acquire_grant', startedAtMs); });
    const outcome = acquireGrantOutcomes.get(response.result);
    return {
      outcome: outcome ?? 'unrecognized',
      grantedMicros: outcome === 'ok' ? response.grantedMicros : 0n,
      detail: detailOf(outcome !== undefined, response.result, response.detail),
    };
  }

  /** One AdjustGrant call; a failed call throws its gRPC error. */
  async adjustGrant(order: AdjustGrantOrder): Promise<AdjustGrantAnswer> {
    const startedAtMs = performance.now();
    const response = await this.#calls.adjustGrant({
      adjustmentId: order.adjustmentId,
      grantId: order.grantId,
      returnMicros: order.returnMicros,
      close: order.close,
      extendTtlMs: BigInt(order.extendTtlMs),
      reason: order.reason,
    }).finally(() => { this.#timed('adjust_grant', startedAtMs); });
    const outcome = adjustGrantOutcomes.get(response.result);
    return {
      outcome: outcome ?? 'unrecognized',
      remainingMicros: response.remainingMicros,
      recalled: response.recalled,
      detail: detailOf(outcome !== undefined, response.result, response.detail),
    };
  }

  /** Hands the grant ids of every recall the ledger pushes to `listener`. */
  onRecall(listener: (grantIds: readonly string[]) => void): void {
    this.#calls.onRecall(listener);
  }

  /** One Checkpoint call; a failed call throws its gRPC error. */
  async checkpoint(order: CheckpointOrder): Promise<CheckpointAnswer> {
    const startedAtMs = performance.now();
    const response = await this.#calls.checkpoint({
      reservationId: order.reservationId,
      sequence: order.sequence,
      inputTokens: BigInt(order.usage.promptTokens),
      outputTokens: BigInt(order.usage.completionTokens),
      costMicros: order.costMicros,
      providerCostMicros: order.providerCostMicros,
      extendTtlMs: BigInt(order.extendTtlMs),
      requestId: order.requestId,
      deployment: order.deployment,
    }).finally(() => { this.#timed('checkpoint', startedAtMs); });
    const outcome = checkpointOutcomes.get(response.result);
    return { outcome: outcome ?? 'unrecognized', detail: detailOf(outcome !== undefined, response.result, response.detail) };
  }

  /** Queues the Settle in the outbox; resolves with the ledger's final answer (undefined: abandoned at shutdown). */
  async settle(order: SettleOrder, owner: BillingOwner): Promise<SettleAnswer | undefined> {
    const response = await this.#outbox.settle({
      reservationId: order.reservationId,
      inputTokens: BigInt(order.usage.promptTokens),
      outputTokens: BigInt(order.usage.completionTokens),
      costMicros: order.costMicros,
      providerCostMicros: order.providerCostMicros,
      modelSlug: order.modelSlug,
      usageSource: order.usageSource === 'upstream' ? ledgerV1.UsageSource.USAGE_SOURCE_UPSTREAM : ledgerV1.UsageSource.USAGE_SOURCE_GATEWAY_ESTIMATE,
      requestId: order.requestId,
      overrunOutputTokens: BigInt(order.overrunOutputTokens),
      tokenClasses: (order.tokenClasses ?? []).map((entry) => ({
        tokenClass: entry.tokenClass, tokens: BigInt(entry.tokens), costMicros: entry.costMicros, providerCostMicros: entry.providerCostMicros,
      })),
      grantId: order.carve?.grantId,
      reservedMicros: order.carve?.reservedMicros,
      deployment: order.deployment,
      failedAttempts: providerAttemptsOf(order.failedAttempts),
    }, owner);
    if (response === undefined) return undefined;
    const outcome = settleOutcomes.get(response.result);
    return { outcome: outcome ?? 'unrecognized', debitedMicros: response.debitedMicros, detail: detailOf(outcome !== undefined, response.result, response.detail) };
  }

  /** Queues the Release in the outbox; resolves with the ledger's final answer (undefined: abandoned at shutdown). */
  async release(order: ReleaseOrder, owner: BillingOwner): Promise<ReleaseAnswer | undefined> {
    const startedAtMs = performance.now();
    const response = await this.#outbox.release({
      reservationId: order.reservationId, reason: order.reason, failedAttempts: providerAttemptsOf(order.failedAttempts), modelSlug: order.modelSlug ?? '',
    }, owner);
    this.#timed('release', startedAtMs);
    if (response === undefined) return undefined;
    const outcome = releaseOutcomes.get(response.result);
    return { outcome: outcome ?? 'unrecognized', detail: detailOf(outcome !== undefined, response.result, response.detail) };
  }

  /** The outbox is at its bound. */
  settlesBacklogged(): boolean {
    return this.#outbox.outboxFull();
  }

  waitForSettleRoom(timeoutMs: number): Promise<boolean> {
    return this.#outbox.waitForRoom(timeoutMs);
  }

  /** Waits for the organisation's outbox entries queued so far. */
  waitForSettlesOf(organisationId: string, timeoutMs: number): Promise<boolean> {
    return this.#outbox.waitForOrganisation(organisationId, timeoutMs);
  }
}

/** Failed attempts as the wire carries them (ProviderAttempt); none: the empty list. */
function providerAttemptsOf(attempts: readonly FailedAttempt[] | undefined): ledgerV1.ProviderAttempt[] {
  if (attempts === undefined || attempts.length === 0) return [];
  return attempts.map((attempt) => ({
    attempt: attempt.attempt, deployment: attempt.deployment, outcome: attempt.outcome,
    inputTokens: BigInt(attempt.inputTokens), outputTokens: BigInt(attempt.outputTokens), providerCostMicros: attempt.providerCostMicros,
  }));
}
