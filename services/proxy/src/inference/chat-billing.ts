import { ledgerV1 } from '@gateway/contracts';
import { GatewayError, toGatewayError, type ErrorCode } from '@gateway/errors';
import type { Logger } from '@gateway/logger';
import type { AuthenticatedCaller } from '../domain/authenticate.ts';
import type { ChatRequest } from '../domain/chat-request.ts';
import type { GatewayModelEntry } from '../domain/config-snapshot.ts';
import { effectiveMaxTokens, reserveMicros, usageCostMicros, type TokenUsage } from '../domain/pricing.ts';
import { estimatePromptTokens } from '../domain/token-estimate.ts';
import type { UpstreamAdapter, UpstreamRequest } from '../upstreams/upstream-adapter.ts';

/** The ledger calls a completion needs (LedgerClient in production, anything alike in tests). */
export interface LedgerPort {
  reserve(request: ledgerV1.ReserveRequest): Promise<ledgerV1.ReserveResponse>;
  settle(request: ledgerV1.SettleRequest): Promise<ledgerV1.SettleResponse | undefined>;
  release(request: ledgerV1.ReleaseRequest): Promise<ledgerV1.ReleaseResponse | undefined>;
  /** One attempt; throws when the call fails (including UNIMPLEMENTED from a ledger without it). */
  checkpoint(request: ledgerV1.CheckpointRequest): Promise<ledgerV1.CheckpointResponse>;
}

/** What billing a completion needs besides the request. */
export interface ChatBillingDeps {
  ledger: LedgerPort;
  logger: Logger;
  reserveTtlMs: number;
  /** Runs work that must finish before shutdown but not before the response (a release after a failed reserve). */
  background(work: Promise<unknown>): void;
  /** Settles this process has sent and not yet seen answered, by organisation (see holdReserve). */
  settlesInFlight: SettlesInFlight;
}

/**
 * The Settles a proxy has in flight, by organisation id. Settles run after the response, so a
 * client that sends its next request at once can meet its previous request's hold still in
 * place; a Reserve that this would refuse waits for them and is tried once more.
 */
export class SettlesInFlight {
  readonly #byOrganisation = new Map<string, Set<Promise<void>>>();

  /** Registers a settle until it completes (whatever its outcome). */
  add(organisationId: string, settle: Promise<void>): void {
    let pending = this.#byOrganisation.get(organisationId);
    if (pending === undefined) {
      pending = new Set();
      this.#byOrganisation.set(organisationId, pending);
    }
    pending.add(settle);
    const done = () => {
      pending.delete(settle);
      if (pending.size === 0 && this.#byOrganisation.get(organisationId) === pending) this.#byOrganisation.delete(organisationId);
    };
    settle.then(done, done);
  }

  /** Resolves once every settle of the organisation registered so far has completed; false when there was none. */
  async waitFor(organisationId: string): Promise<boolean> {
    const pending = this.#byOrganisation.get(organisationId);
    if (pending === undefined || pending.size === 0) return false;
    await Promise.allSettled([...pending]);
    return true;
  }
}

/** Fields of the request's log line that the inference code fills in as it goes. */
export interface BillingLogFields {
  reservedMicros?: bigint;
  debitedMicros?: bigint;
  usageSource?: 'upstream' | 'gateway_estimate';
  promptTokens?: number;
  completionTokens?: number;
  upstreamStatus?: number;
  upstreamOutcome?: string;
  /** How a stream ended: completed, cost_stop, client_closed, upstream_failed, upstream_timeout, shutdown. */
  streamOutcome?: string;
  /** Checkpoints sent for a stream. */
  checkpoints?: number;
  errorCode?: ErrorCode;
  /** Why the error happened, for operators; never shown to the client. */
  errorDetail?: string;
  /** How long the Reserve call took, ms (where latency goes: docs/benchmarks.md). */
  reserveMs?: number;
  /** How long the Settle call took, ms. */
  settleMs?: number;
  /** How long the upstream took to answer (non-streaming) or to open its stream, ms. */
  upstreamMs?: number;
}

/** Milliseconds since `startedAtMs` (a performance.now() reading), to 0.01 ms: for log lines. */
export function elapsedMs(startedAtMs: number): number {
  return Math.round((performance.now() - startedAtMs) * 100) / 100;
}

/** One chat completion to run. */
export interface ChatInput {
  /** The request id (echoed to the client and kept on the usage record). */
  requestId: string;
  /** A UUID unique to this request: the reservation is `res_<uuid>`, the completion `chatcmpl-<uuid>`. */
  requestUuid: string;
  caller: AuthenticatedCaller;
  model: GatewayModelEntry;
  adapter: UpstreamAdapter;
  request: ChatRequest;
  log: BillingLogFields;
}

/** What the gateway decided for a request before any money moves. */
export interface ChatPlan {
  promptTokens: number;
  /** Completion budget sent upstream. */
  maxTokens: number;
  /** The Reserve, µ₹. */
  amountMicros: bigint;
  upstreamRequest: UpstreamRequest;
  reservationId: string;
}

const ledgerBillingMode = {
  commercial: ledgerV1.BillingMode.BILLING_MODE_COMMERCIAL,
  internal: ledgerV1.BillingMode.BILLING_MODE_INTERNAL,
} as const;

/**
 * Estimates the request and builds its upstream request, moving no money: a prompt that fills
 * the context or a param the provider cannot honour is refused here, before the Reserve.
 */
export function planChat(input: ChatInput): ChatPlan {
  const { model, request } = input;
  const promptTokens = estimatePromptTokens(request, model.tokenizer);
  const maxTokens = effectiveMaxTokens(request.maxTokens, model, promptTokens);
  const upstreamRequest = input.adapter.buildRequest(model.upstream, { request, maxTokens });
  return { promptTokens, maxTokens, amountMicros: reserveMicros(promptTokens, maxTokens, model), upstreamRequest, reservationId: `res_${input.requestUuid}` };
}

/** Maps a non-OK Reserve result to the error the client sees. */
function reserveRefusal(response: ledgerV1.ReserveResponse): GatewayError {
  const internalMessage = `ledger Reserve: result ${response.result}${response.detail ? ` (${response.detail})` : ''}`;
  switch (response.result) {
    case ledgerV1.ReserveResult.RESERVE_RESULT_INSUFFICIENT_BALANCE:
      return new GatewayError('insufficient_balance', { internalMessage });
    case ledgerV1.ReserveResult.RESERVE_RESULT_PROJECT_BUDGET_EXCEEDED:
      return new GatewayError('budget_exceeded', { internalMessage });
    case ledgerV1.ReserveResult.RESERVE_RESULT_ORGANISATION_UNKNOWN:
      // The admin has not opened the organisation's account yet; retrying later can succeed.
      return new GatewayError('service_unavailable', { internalMessage });
    default:
      return new GatewayError('internal_error', { internalMessage });
  }
}

/** Keeps only errors a failed Reserve call may show the client; anything else is ours to hide. */
function reserveCallError(error: unknown): GatewayError {
  const gatewayError = toGatewayError(error);
  const shown = ['service_unavailable', 'insufficient_balance', 'budget_exceeded'];
  return shown.includes(gatewayError.code)
    ? gatewayError
    : new GatewayError('internal_error', { internalMessage: gatewayError.message, cause: error });
}

/** Refusals that a Settle still in flight (which returns unused hold) can turn into a fit. */
const refusalsASettleCanLift: ReadonlySet<ledgerV1.ReserveResult> = new Set([
  ledgerV1.ReserveResult.RESERVE_RESULT_INSUFFICIENT_BALANCE,
  ledgerV1.ReserveResult.RESERVE_RESULT_PROJECT_BUDGET_EXCEEDED,
]);

/**
 * Holds the plan's Reserve; throws the client's error (402, 503, …) when it is not held. A
 * Reserve refused for balance or budget while this proxy still has Settles of the organisation
 * in flight waits for them and is tried once more: those Settles return their unused holds, and
 * a client that sent its next request right after a response must not see a 402 because of a
 * hold the gateway was about to release. (The retry repeats the same reservation id and
 * payload; a refused Reserve wrote nothing, so it is not a replay.)
 */
export async function holdReserve(deps: ChatBillingDeps, input: ChatInput, plan: ChatPlan): Promise<void> {
  const { caller, model } = input;
  let reserved: ledgerV1.ReserveResponse;
  const startedAtMs = performance.now();
  const request: ledgerV1.ReserveRequest = {
    reservationId: plan.reservationId,
    organisationId: caller.organisation.id,
    projectId: caller.project.id,
    billingMode: ledgerBillingMode[caller.organisation.billingMode],
    amountMicros: plan.amountMicros,
    ttlMs: BigInt(deps.reserveTtlMs),
    modelSlug: model.slug,
  };
  try {
    reserved = await deps.ledger.reserve(request);
    if (refusalsASettleCanLift.has(reserved.result) && await deps.settlesInFlight.waitFor(caller.organisation.id)) {
      reserved = await deps.ledger.reserve(request);
    }
  } catch (error) {
    // The call failed, but the ledger may have held the Reserve anyway; free it rather than
    // leave it held until it expires. Release is idempotent and harmless on an unknown id.
    deps.background(deps.ledger.release({ reservationId: plan.reservationId, reason: 'reserve_outcome_unknown' }));
    throw reserveCallError(error);
  } finally {
    input.log.reserveMs = elapsedMs(startedAtMs);
  }
  if (reserved.result !== ledgerV1.ReserveResult.RESERVE_RESULT_OK) throw reserveRefusal(reserved);
  input.log.reservedMicros = plan.amountMicros;
}

/**
 * Settles a usage at the model's prices; a settle that fails for good is logged for the expiry
 * sweeper. Never throws (it may run after the response has gone out); registered in
 * `settlesInFlight` while it runs.
 */
export function settleUsage(
  deps: ChatBillingDeps, input: ChatInput, plan: ChatPlan, usage: TokenUsage, source: 'upstream' | 'gateway_estimate',
): Promise<void> {
  const settling = settleUsageOnce(deps, input, plan, usage, source).catch((error: unknown) => {
    deps.logger.error({
      requestId: input.requestId, reservationId: plan.reservationId, err: { message: (error as Error).message },
    }, 'settle failed; the ledger expiry sweeper will resolve the reservation');
  });
  deps.settlesInFlight.add(input.caller.organisation.id, settling);
  return settling;
}

async function settleUsageOnce(
  deps: ChatBillingDeps, input: ChatInput, plan: ChatPlan, usage: TokenUsage, source: 'upstream' | 'gateway_estimate',
): Promise<void> {
  const { log, model } = input;
  const { costMicros, providerCostMicros } = usageCostMicros(usage, model);
  log.usageSource = source;
  log.promptTokens = usage.promptTokens;
  log.completionTokens = usage.completionTokens;
  const startedAtMs = performance.now();
  const settled = await deps.ledger.settle({
    reservationId: plan.reservationId,
    inputTokens: BigInt(usage.promptTokens),
    outputTokens: BigInt(usage.completionTokens),
    costMicros,
    providerCostMicros,
    modelSlug: model.slug,
    usageSource: source === 'upstream' ? ledgerV1.UsageSource.USAGE_SOURCE_UPSTREAM : ledgerV1.UsageSource.USAGE_SOURCE_GATEWAY_ESTIMATE,
    requestId: input.requestId,
    overrunOutputTokens: 0n,
  });
  log.settleMs = elapsedMs(startedAtMs);
  if (settled?.result === ledgerV1.SettleResult.SETTLE_RESULT_OK) {
    log.debitedMicros = settled.debitedMicros;
  } else {
    deps.logger.error({
      requestId: input.requestId, reservationId: plan.reservationId, costMicros: costMicros.toString(),
      result: settled?.result, detail: settled?.detail,
    }, 'settle failed; the ledger expiry sweeper will resolve the reservation');
  }
}

/** Releases a Reserve whose request certainly reached no upstream. */
export async function releaseReserve(deps: ChatBillingDeps, input: ChatInput, plan: ChatPlan, reason: string): Promise<void> {
  const released = await deps.ledger.release({ reservationId: plan.reservationId, reason });
  if (released?.result !== ledgerV1.ReleaseResult.RELEASE_RESULT_OK) {
    deps.logger.error({ requestId: input.requestId, reservationId: plan.reservationId, result: released?.result }, 'release failed; the ledger expiry sweeper will resolve the reservation');
  }
}

/** Zero tokens: what a call that produced nothing usable is settled at. */
export const noUsage: TokenUsage = { promptTokens: 0, completionTokens: 0 };
