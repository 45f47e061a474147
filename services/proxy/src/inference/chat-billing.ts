import { ledgerV1 } from '@gateway/contracts';
import { GatewayError, toGatewayError, type ErrorCode } from '@gateway/errors';
import type { Logger } from '@gateway/logger';
import type { AuthenticatedCaller } from '../domain/authenticate.ts';
import type { ChatRequest } from '../domain/chat-request.ts';
import type { GatewayModelEntry } from '../domain/config-snapshot.ts';
import { effectiveMaxTokens, reserveMicros, usageCostMicros, type TokenUsage } from '../domain/pricing.ts';
import { estimatePromptTokens } from '../domain/token-estimate.ts';
import type { UpstreamAdapter, UpstreamRequest } from '../upstreams/upstream-adapter.ts';

/** The ledger calls a completion makes directly, once each (LedgerClient in production). */
export interface LedgerPort {
  reserve(request: ledgerV1.ReserveRequest): Promise<ledgerV1.ReserveResponse>;
  /** One attempt; throws when the call fails (including UNIMPLEMENTED from a ledger without it). */
  checkpoint(request: ledgerV1.CheckpointRequest): Promise<ledgerV1.CheckpointResponse>;
}

/** Who a Settle or Release is for. */
export interface BillingOwner {
  organisationId: string;
  requestId: string;
}

/**
 * Where Settles and Releases go: the settle outbox (ledger/settle-outbox.ts), which repeats each
 * until the ledger answers for good; undefined only for an entry abandoned at shutdown.
 */
export interface BillingOutbox {
  settle(request: ledgerV1.SettleRequest, owner: BillingOwner): Promise<ledgerV1.SettleResponse | undefined>;
  release(request: ledgerV1.ReleaseRequest, owner: BillingOwner): Promise<ledgerV1.ReleaseResponse | undefined>;
  /** True while the outbox is at its bound: no new request may start. */
  outboxFull(): boolean;
  /** Waits (up to timeoutMs) for the organisation's entries queued so far; false when it had none. */
  waitForOrganisation(organisationId: string, timeoutMs: number): Promise<boolean>;
}

/** What billing a completion needs besides the request. */
export interface ChatBillingDeps {
  ledger: LedgerPort;
  /** Every Settle and Release goes through it; its entries count as Settles in flight (see holdReserve). */
  outbox: BillingOutbox;
  logger: Logger;
  reserveTtlMs: number;
  /** Runs work that must finish before shutdown but not before the response (a release after a failed reserve). */
  background(work: Promise<unknown>): void;
}

/**
 * Longest wait of a Reserve refused for balance for the Settles of its organisation still in the
 * outbox, ms. They normally land within milliseconds; one the ledger keeps refusing to answer
 * must not hold the next request for the whole outage.
 */
const settlesInFlightWaitMs = 5_000;

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
  /** How long the Settle took until the ledger's final answer (outbox retries included), ms. */
  settleMs?: number;
  /** Output tokens the upstream produced beyond what the client got (a non-streaming reply cut at its Reserve). */
  overrunOutputTokens?: number;
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
    case ledgerV1.ReserveResult.RESERVE_RESULT_RELEASED:
      // Our own Release of this id reached the ledger first: only a Reserve the proxy had given
      // up on (a failed call) and then sent again can meet it. Nothing is held; the client may
      // retry with a new request, as after any ledger hiccup.
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
 * Holds the plan's Reserve; throws the client's error (402, 503, …) when it is not held, and
 * 503 before any Reserve while the settle outbox is full. A Reserve refused for balance or
 * budget while this proxy still has Settles of the organisation in its outbox waits for them
 * (bounded) and is tried once more: those Settles return their unused holds, and
 * a client that sent its next request right after a response must not see a 402 because of a
 * hold the gateway was about to release. (The retry repeats the same reservation id and
 * payload; a refused Reserve wrote nothing, so it is not a replay.)
 */
export async function holdReserve(deps: ChatBillingDeps, input: ChatInput, plan: ChatPlan): Promise<void> {
  const { caller, model } = input;
  // Nothing is dropped when the ledger falls behind: the proxy stops taking work instead, before
  // any money moves (the outbox is not ready, so a load balancer steers traffic elsewhere).
  if (deps.outbox.outboxFull()) {
    throw new GatewayError('service_unavailable', { internalMessage: 'settle outbox full: the ledger is not answering Settles' });
  }
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
    if (refusalsASettleCanLift.has(reserved.result) && await deps.outbox.waitForOrganisation(caller.organisation.id, settlesInFlightWaitMs)) {
      reserved = await deps.ledger.reserve(request);
    }
  } catch (error) {
    // The call failed, but the ledger may have held the Reserve anyway (or may still, if it is
    // queued there): free it rather than leave it held until it expires. The outbox repeats the
    // Release until the ledger answers; on an unknown id it leaves a tombstone that makes the
    // late Reserve hold nothing.
    deps.background(deps.outbox.release({ reservationId: plan.reservationId, reason: 'reserve_outcome_unknown' }, ownerOf(input)));
    throw reserveCallError(error);
  } finally {
    input.log.reserveMs = elapsedMs(startedAtMs);
  }
  if (reserved.result !== ledgerV1.ReserveResult.RESERVE_RESULT_OK) throw reserveRefusal(reserved);
  input.log.reservedMicros = plan.amountMicros;
}

/** What a completion's settle bills beyond its usage when the upstream produced more than the client got. */
export interface SettleOverrun {
  /** Everything the upstream produced: the provider cost is priced on it. */
  producedUsage: TokenUsage;
  /** Output tokens produced beyond what was delivered (BOUNDED_OVERRUN): provider cost, never the wallet's. */
  overrunOutputTokens: number;
}

/** The outbox owner of a request's Settle or Release. */
function ownerOf(input: ChatInput): BillingOwner {
  return { organisationId: input.caller.organisation.id, requestId: input.requestId };
}

/**
 * Settles a usage at the model's prices through the outbox, which repeats it until the ledger
 * answers. Never throws (it may run after the response has gone out); the outbox entry counts
 * as a Settle in flight of the organisation while it waits.
 */
export function settleUsage(
  deps: ChatBillingDeps, input: ChatInput, plan: ChatPlan, usage: TokenUsage, source: 'upstream' | 'gateway_estimate', overrun?: SettleOverrun,
): Promise<void> {
  return settleUsageOnce(deps, input, plan, usage, source, overrun).catch((error: unknown) => {
    deps.logger.error({
      requestId: input.requestId, reservationId: plan.reservationId, err: { message: (error as Error).message },
    }, 'settle failed');
  });
}

async function settleUsageOnce(
  deps: ChatBillingDeps, input: ChatInput, plan: ChatPlan, usage: TokenUsage, source: 'upstream' | 'gateway_estimate', overrun: SettleOverrun | undefined,
): Promise<void> {
  const { log, model } = input;
  const { costMicros } = usageCostMicros(usage, model);
  // The provider is paid for everything it produced, delivered or not.
  const { providerCostMicros } = usageCostMicros(overrun?.producedUsage ?? usage, model);
  log.usageSource = source;
  log.promptTokens = usage.promptTokens;
  log.completionTokens = usage.completionTokens;
  if (overrun !== undefined) log.overrunOutputTokens = overrun.overrunOutputTokens;
  const startedAtMs = performance.now();
  const settled = await deps.outbox.settle({
    reservationId: plan.reservationId,
    inputTokens: BigInt(usage.promptTokens),
    outputTokens: BigInt(usage.completionTokens),
    costMicros,
    providerCostMicros,
    modelSlug: model.slug,
    usageSource: source === 'upstream' ? ledgerV1.UsageSource.USAGE_SOURCE_UPSTREAM : ledgerV1.UsageSource.USAGE_SOURCE_GATEWAY_ESTIMATE,
    requestId: input.requestId,
    overrunOutputTokens: BigInt(overrun?.overrunOutputTokens ?? 0),
  }, ownerOf(input));
  log.settleMs = elapsedMs(startedAtMs);
  if (settled === undefined) return; // abandoned at shutdown: the outbox logged it for replay
  if (settled.result === ledgerV1.SettleResult.SETTLE_RESULT_OK) {
    log.debitedMicros = settled.debitedMicros;
  } else {
    deps.logger.error({
      requestId: input.requestId, reservationId: plan.reservationId, costMicros: costMicros.toString(),
      result: settled.result, detail: settled.detail,
    }, 'settle refused by the ledger');
  }
}

/** Releases a Reserve whose request certainly reached no upstream, through the outbox. */
export async function releaseReserve(deps: ChatBillingDeps, input: ChatInput, plan: ChatPlan, reason: string): Promise<void> {
  const released = await deps.outbox.release({ reservationId: plan.reservationId, reason }, ownerOf(input));
  if (released !== undefined && released.result !== ledgerV1.ReleaseResult.RELEASE_RESULT_OK) {
    deps.logger.error({ requestId: input.requestId, reservationId: plan.reservationId, result: released.result }, 'release refused by the ledger');
  }
}

/** Zero tokens: what a call that produced nothing usable is settled at. */
export const noUsage: TokenUsage = { promptTokens: 0, completionTokens: 0 };
