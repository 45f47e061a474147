import { GatewayError, toGatewayError, type ErrorCode } from '@gateway/errors';
import type { Logger } from '@gateway/logger';
import type { Carve } from '../billing/grant-book.ts';
import type { AuthenticatedCaller } from '../domain/authenticate.ts';
import { markerTokensOf, scopeForRequest, type CacheScope, type CacheScoping } from '../domain/cache-scope.ts';
import { checkMediaParts, type ChatRequest } from '../domain/chat-request.ts';
import type { GatewayModelEntry } from '../domain/config-snapshot.ts';
import type { BillingOwner, Ledger, ReserveAnswer, ReserveOrder, ReserveOutcome, UsageSource } from '../domain/ledger-port.ts';
import { MediaTokenCounter } from '../domain/media-tokens.ts';
import { costByClass, effectiveMaxTokens, reserveMicros, usageCostMicros, type TokenUsage } from '../domain/pricing.ts';
import type { CheckpointDue } from '../domain/stream-meter.ts';
import { checkReasoning, noReasoningControls } from '../domain/reasoning.ts';
import { openReasoning } from '../domain/reasoning-blocks.ts';
import { countTextTokens, estimatePromptTokens } from '../domain/token-estimate.ts';
import { revealToolCallIds, type ToolCallIdCodec } from '../domain/tool-call-ids.ts';
import { failedCall, type UpstreamFailure } from '../domain/upstream-failure.ts';
import type { ReserveMetricOutcome, RequestObserver } from '../telemetry/request-observer.ts';
import type { UpstreamAdapter, UpstreamRequest } from '../upstreams/upstream-adapter.ts';

/** What billing a completion needs besides the request. */
export interface ChatBillingDeps {
  /** The ledger port (ledger/grpc-ledger.ts in production): Reserve, Checkpoint, and Settles and Releases that wait until answered. */
  ledger: Ledger;
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
  /** How long the Reserve took (a carve: microseconds; an acquire or the exact path: a ledger round trip), ms (docs/benchmarks.md). */
  reserveMs?: number;
  /** The credit grant the Reserve was carved from; absent on the exact path. */
  grantId?: string;
  /** A carved stream made its carve its own reservation (EXPIRY). */
  promoted?: boolean;
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

/** One billed request to run (a chat completion on any surface, or embeddings): who, which model, and where its figures go. */
export interface BillingInput {
  /** The request id (echoed to the client and kept on the usage record). */
  requestId: string;
  /** A UUID unique to this request: the reservation is `res_<uuid>`, the completion `chatcmpl-<uuid>`. */
  requestUuid: string;
  caller: AuthenticatedCaller;
  model: GatewayModelEntry;
  log: BillingLogFields;
  /** The request's metrics (and spans): told of the Reserve, the upstream call and the Settle. */
  observer: RequestObserver;
}

/** One chat completion to run, whichever API surface it came in on (chat completions, Responses, Messages). */
export interface ChatInput extends BillingInput {
  adapter: UpstreamAdapter;
  /** The request in the gateway's internal form (chat completions' shape), tool-call ids as the client sent them. */
  request: ChatRequest;
  /** Maps tool-call ids between the upstream's and the gateway's (domain/tool-call-ids.ts). */
  toolCallIds: ToolCallIdCodec;
  /** How prompt caches are kept to the organisation (domain/cache-scope.ts); absent: requests go unscoped (unit tests only). */
  cacheScoping?: CacheScoping;
}

/** The money of a request before any moves: its Reserve and where it is held. */
export interface BillingPlan {
  /** The Reserve, µ₹. */
  amountMicros: bigint;
  reservationId: string;
  /** Set by holdReserve when the Reserve was carved from a credit grant in memory (the ledger has not seen it). */
  carve: Carve | undefined;
}

/** What the gateway decided for a chat completion before any money moves. */
export interface ChatPlan extends BillingPlan {
  promptTokens: number;
  /** Completion budget sent upstream. */
  maxTokens: number;
  upstreamRequest: UpstreamRequest;
}

/**
 * The organisation's cache scope for a request that can be cached: one with a cache_control
 * breakpoint or a prompt_cache_key, or long enough for an upstream's automatic prefix cache
 * (CacheScoping.minPromptTokens). Shorter ones can be neither cached nor served from a cache, and
 * go without the marker's tokens.
 */
function cacheScopeFor(input: ChatInput, promptTokens: number): CacheScope | undefined {
  const scoping = input.cacheScoping;
  if (scoping === undefined) return undefined;
  const { request } = input;
  const cacheable = (request.cacheBreakpoints ?? 0) > 0 || request.promptCacheKey !== undefined || promptTokens >= scoping.minPromptTokens;
  return cacheable ? scopeForRequest(scoping, input.caller.organisation.id, request.promptCacheKey) : undefined;
}

/**
 * Estimates the request and builds its upstream request, moving no money: a prompt that fills
 * the context or a param the provider cannot honour is refused here, before the Reserve.
 */
export function planChat(input: ChatInput): ChatPlan {
  const { model, request } = input;
  // Image and audio parts are refused here (role, the model's modalities, form, size) for every
  // surface, before anything is estimated or reserved; a text-only request allocates nothing more.
  const media = checkMediaParts(request, model) === 0 ? undefined : new MediaTokenCounter(model.upstream.model);
  // The Reserve holds the most the media can bill (NO_OVERSPEND); the context check counts the
  // least, so a prompt that fits is not refused because a size or a family was unknown.
  const requestTokens = estimatePromptTokens(request, model.tokenizer, media);
  const cacheScope = cacheScopeFor(input, requestTokens);
  // The marker is prompt the upstream bills: the Reserve and the context check count it.
  const promptTokens = requestTokens + (cacheScope === undefined || input.cacheScoping === undefined
    ? 0
    : markerTokensOf(input.cacheScoping, cacheScope.marker, model.tokenizer, () => countTextTokens(cacheScope.marker, model.tokenizer) + 2));
  const maxTokens = effectiveMaxTokens(request.maxTokens, model, promptTokens - (media?.slackTokens ?? 0));
  // Reasoning controls the model's upstream does not take are a 400 here, before the Reserve;
  // a thinking budget lives inside maxTokens, so the Reserve below covers it (BOUNDED_OVERRUN).
  const reasoning = checkReasoning(request.reasoning, model.reasoning ?? noReasoningControls, maxTokens);
  // The upstream sees its own tool-call ids and reasoning signatures, never the gateway's sealed ones.
  const upstreamRequest = input.adapter.buildRequest(model.upstream, {
    request: openReasoning(revealToolCallIds(request, input.toolCallIds), input.toolCallIds), maxTokens, reasoning,
    ...(cacheScope === undefined ? {} : { cacheScope }),
  });
  return { promptTokens, maxTokens, amountMicros: reserveMicros(promptTokens, maxTokens, model), upstreamRequest, reservationId: `res_${input.requestUuid}`, carve: undefined };
}

/**
 * The error the client sees for a Reserve that was not held, read from the ledger's answer:
 * a refusal for money is a 402 (the client must top up or raise a budget, though the result is
 * transient); our own Release having reached the ledger first is a 503 (nothing is held, and a
 * new request gets a new reservation id); otherwise a transient result (the contract's table:
 * e.g. ORGANISATION_UNKNOWN, an account not opened yet) is a 503 and a final one a 500, as is a
 * result this build does not know.
 */
function reserveRefusal(answer: ReserveAnswer): GatewayError {
  const internalMessage = `ledger Reserve: ${answer.outcome}${answer.detail ? ` (${answer.detail})` : ''}`;
  switch (answer.outcome) {
    case 'insufficient_balance':
      return new GatewayError('insufficient_balance', { internalMessage }); // NO_OVERSPEND
    case 'project_budget_exceeded':
      return new GatewayError('budget_exceeded', { internalMessage }); // PROJECT_BUDGET
    case 'released':
      // Only a Reserve the proxy had given up on (a failed call) and then sent again can meet
      // its own Release's tombstone. Nothing is held; the client may retry with a new request.
      return new GatewayError('service_unavailable', { internalMessage });
    case 'unrecognized':
      return new GatewayError('internal_error', { internalMessage });
    default:
      return new GatewayError(answer.transient ? 'service_unavailable' : 'internal_error', { internalMessage });
  }
}

/** The proxyReserves outcome of a Reserve the ledger answered. */
function reserveMetricOutcome(outcome: ReserveOutcome): ReserveMetricOutcome {
  switch (outcome) {
    case 'ok': return 'held';
    case 'insufficient_balance': return 'insufficient_balance';
    case 'project_budget_exceeded': return 'budget_exceeded';
    default: return 'error';
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
const refusalsASettleCanLift: ReadonlySet<ReserveOutcome> = new Set(['insufficient_balance', 'project_budget_exceeded']);

/**
 * True for a refusal for balance or budget that money now held could still lift (a Settle in
 * flight, a recalled grant): worth waiting for. The ledger says when none could (amount beyond
 * available + held, or beyond the cap less this month's spend); such a 402 is final at once.
 */
function liftableRefusal(answer: ReserveAnswer): boolean {
  return refusalsASettleCanLift.has(answer.outcome) && answer.liftable;
}

/** First wait before a Reserve refused while grants are recalled is tried again, ms; doubled per try up to PROXY_RECALL_WAIT_MS in all. */
const recallFirstWaitMs = 5;

/**
 * Holds the plan's Reserve; throws the client's error (402, 503, …) when it is not held, and
 * 503 before any Reserve while the settle outbox is full.
 *
 * With credit grants on, the Reserve is carved in memory from this replica's grant for the
 * (organisation, project) (no ledger call, no await on that path); when it does not fit, one
 * AcquireGrant shared by the requests waiting on it, then the carve; when no grant is given,
 * the exact path: a Reserve at the ledger.
 *
 * On the exact path a Reserve refused for balance or budget while this proxy still has Settles
 * of the organisation in its outbox waits for them (bounded) and is tried once more: those
 * Settles return their unused holds, and a client that sent its next request right after a
 * response must not see a 402 because of a hold the gateway was about to release. When the
 * ledger says it is recalling grants because of the refusal (money idling in other replicas'
 * grants), the Reserve is tried again with growing waits for up to PROXY_RECALL_WAIT_MS. (Each
 * retry repeats the same reservation id and payload; a refused Reserve wrote nothing, so it is
 * not a replay.) A refusal the ledger calls not liftable (no hold's return could make it fit)
 * waits for none of this: it is the client's 402 at once.
 */
export async function holdReserve(deps: ChatBillingDeps, input: BillingInput, plan: BillingPlan): Promise<void> {
  const { caller, model } = input;
  // Nothing is dropped when the ledger falls behind: the proxy stops taking work instead, before
  // any money moves (the outbox is not ready, so a load balancer steers traffic elsewhere).
  if (deps.ledger.settlesBacklogged()) {
    throw new GatewayError('service_unavailable', { internalMessage: 'settle outbox full: the ledger is not answering Settles' });
  }
  const startedAtMs = performance.now();
  const { observer } = input;
  observer.reserveStarted();
  const grants = deps.ledger.grants;
  if (grants !== undefined) {
    const { organisation, project } = caller;
    const carve = grants.tryCarve(organisation.id, project.id, organisation.billingMode, plan.amountMicros)
      ?? await grants.acquireAndCarve(organisation.id, project.id, organisation.billingMode, plan.amountMicros);
    if (carve !== undefined) {
      plan.carve = carve;
      input.log.grantId = carve.grantId;
      input.log.reservedMicros = plan.amountMicros;
      input.log.reserveMs = elapsedMs(startedAtMs);
      observer.reserveEnded('carved', 'held');
      return;
    }
  }
  let reserved: ReserveAnswer;
  const order: ReserveOrder = {
    reservationId: plan.reservationId,
    organisationId: caller.organisation.id,
    projectId: caller.project.id,
    billingMode: caller.organisation.billingMode,
    amountMicros: plan.amountMicros,
    ttlMs: deps.reserveTtlMs,
    modelSlug: model.slug,
  };
  try {
    reserved = await deps.ledger.reserve(order);
    let recalling = reserved.grantsRecalled > 0;
    if (liftableRefusal(reserved) && await deps.ledger.waitForSettlesOf(caller.organisation.id, settlesInFlightWaitMs)) {
      reserved = await deps.ledger.reserve(order);
      recalling ||= reserved.grantsRecalled > 0;
    }
    // Grants being pulled back return their money within a round trip or two of their owners.
    let waitedMs = 0;
    let waitMs = recallFirstWaitMs;
    while (recalling && liftableRefusal(reserved) && waitedMs < deps.ledger.recallWaitMs) {
      const sleepMs = Math.min(waitMs, deps.ledger.recallWaitMs - waitedMs);
      await new Promise((resolve) => setTimeout(resolve, sleepMs));
      waitedMs += sleepMs;
      waitMs *= 2;
      reserved = await deps.ledger.reserve(order);
    }
  } catch (error) {
    // The call failed, but the ledger may have held the Reserve anyway (or may still, if it is
    // queued there): free it rather than leave it held until it expires. The outbox repeats the
    // Release until the ledger answers; on an unknown id it leaves a tombstone that makes the
    // late Reserve hold nothing.
    deps.background(deps.ledger.release({ reservationId: plan.reservationId, reason: 'reserve_outcome_unknown' }, ownerOf(input)));
    const clientError = reserveCallError(error);
    observer.reserveEnded('exact', clientError.code === 'service_unavailable' ? 'ledger_unavailable' : 'error');
    throw clientError;
  } finally {
    input.log.reserveMs = elapsedMs(startedAtMs);
  }
  observer.reserveEnded('exact', reserveMetricOutcome(reserved.outcome));
  if (reserved.outcome !== 'ok') throw reserveRefusal(reserved);
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
function ownerOf(input: BillingInput): BillingOwner {
  return { organisationId: input.caller.organisation.id, requestId: input.requestId };
}

/**
 * Settles a usage at the model's prices through the outbox, which repeats it until the ledger
 * answers. Never throws (it may run after the response has gone out); the outbox entry counts
 * as a Settle in flight of the organisation while it waits.
 */
export function settleUsage(
  deps: ChatBillingDeps, input: BillingInput, plan: BillingPlan, usage: TokenUsage, source: UsageSource, overrun?: SettleOverrun,
): Promise<void> {
  return settleUsageOnce(deps, input, plan, usage, source, overrun).catch((error: unknown) => {
    deps.logger.error({
      requestId: input.requestId, reservationId: plan.reservationId, err: { message: (error as Error).message },
    }, 'settle failed');
  });
}

async function settleUsageOnce(
  deps: ChatBillingDeps, input: BillingInput, plan: BillingPlan, usage: TokenUsage, source: UsageSource, overrun: SettleOverrun | undefined,
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
  // Counted as sent, from the very numbers the Settle carries (the ledger's answer is the record).
  input.observer.settleStarted(usage.promptTokens, usage.completionTokens, costMicros);
  const { carve } = plan;
  const grants = deps.ledger.grants;
  // A carve's Settle names its grant (always: the ledger ignores it when the carve was promoted to
  // its own reservation), and U gets r - c back as it leaves: the ledger keeps r - c in the grant.
  // Only an unused part of a reservation at the ledger returns to available (a carve's stays in
  // its grant): a Reserve refused meanwhile waits for this Settle only if it can free something.
  const atLedger = carve === undefined || carve.state === 'promoted' || carve.state === 'promoting';
  const owner: BillingOwner = { ...ownerOf(input), freesAvailable: atLedger && costMicros < plan.amountMicros };
  if (carve !== undefined) grants?.settleSent(carve, costMicros);
  let settled;
  try {
    settled = await deps.ledger.settle({
      reservationId: plan.reservationId,
      usage,
      costMicros,
      providerCostMicros,
      modelSlug: model.slug,
      usageSource: source,
      requestId: input.requestId,
      overrunOutputTokens: overrun?.overrunOutputTokens ?? 0,
      tokenClasses: costByClass(usage, model),
      carve: carve === undefined ? undefined : { grantId: carve.grantId, reservedMicros: carve.amountMicros },
    }, owner);
  } finally {
    if (carve !== undefined) grants?.settleAnswered(carve);
    input.observer.settleEnded();
  }
  log.settleMs = elapsedMs(startedAtMs);
  if (settled === undefined) return; // abandoned at shutdown: the outbox logged it for replay
  if (settled.outcome === 'ok') {
    log.debitedMicros = settled.debitedMicros;
  } else {
    deps.logger.error({
      requestId: input.requestId, reservationId: plan.reservationId, costMicros: costMicros.toString(),
      result: settled.outcome, detail: settled.detail,
    }, 'settle refused by the ledger');
  }
}

/**
 * Releases a Reserve whose request certainly reached no upstream: a carve goes back to its
 * grant in memory (the ledger never saw it), a Reserve at the ledger through the outbox.
 */
async function releaseReserve(deps: ChatBillingDeps, input: BillingInput, plan: BillingPlan, reason: string): Promise<void> {
  if (plan.carve !== undefined) {
    deps.ledger.grants?.release(plan.carve);
    return;
  }
  const released = await deps.ledger.release({ reservationId: plan.reservationId, reason }, ownerOf(input));
  if (released !== undefined && released.outcome !== 'ok') {
    deps.logger.error({ requestId: input.requestId, reservationId: plan.reservationId, result: released.outcome, detail: released.detail }, 'release refused by the ledger');
  }
}

/** Zero tokens: what a call that produced nothing usable is settled at. */
const noUsage: TokenUsage = { promptTokens: 0, completionTokens: 0 };

/**
 * Resolves the money of an upstream call that produced no usable answer and returns the
 * client's error, both as `failedCall` (domain/upstream-failure.ts) decides: a call that
 * certainly sent nothing releases the Reserve; anything else may have reached the provider and
 * settles zero usage. The Release or Settle waits in the outbox as background work (shutdown
 * still waits for it), so a client is not kept waiting for its 502/504 while the ledger is away.
 */
export function settleFailedCall(deps: ChatBillingDeps, input: BillingInput, plan: BillingPlan, failure: UpstreamFailure): GatewayError {
  if (failure.kind === 'http_error') input.log.upstreamStatus = failure.statusCode;
  const { error, money } = failedCall(failure);
  deps.background(money.kind === 'release'
    ? releaseReserve(deps, input, plan, money.reason)
    : settleUsage(deps, input, plan, noUsage, 'gateway_estimate'));
  return error;
}

/** What a stream's checkpoints need besides the billing deps. */
export interface StreamBillingDeps extends ChatBillingDeps {
  /** A stream's reservation is a lease of this long from the ledger's clock, renewed by each checkpoint, ms (PROXY_STREAM_LEASE_MS). */
  streamLeaseMs: number;
}

/**
 * Makes a carved stream's carve its own reservation, held out of its grant with no new money
 * checks (promotion), so its checkpoints exist for EXPIRY to charge. Its deadline is a lease
 * (the first checkpoint follows at once and renews it). True when the stream now has a
 * reservation at the ledger to checkpoint.
 */
async function promoteCarve(deps: StreamBillingDeps, input: BillingInput, plan: BillingPlan, carve: Carve): Promise<boolean> {
  const grants = deps.ledger.grants;
  if (grants === undefined) return false;
  grants.promotionSent(carve);
  const { caller } = input;
  try {
    const answer = await deps.ledger.reserve({
      reservationId: plan.reservationId, organisationId: caller.organisation.id, projectId: caller.project.id,
      billingMode: caller.organisation.billingMode, amountMicros: carve.amountMicros, ttlMs: deps.streamLeaseMs,
      modelSlug: input.model.slug, grantId: carve.grantId,
    });
    if (answer.outcome === 'ok') {
      grants.promotionAnswered(carve, 'held');
      input.log.promoted = true;
      return true;
    }
    // GRANT_NOT_HELD: the grant is gone (closed, expired); the stream stays a carve, its Settle debited from available.
    grants.promotionAnswered(carve, answer.outcome === 'grant_not_held' ? 'refused' : 'unknown');
    deps.logger.warn({ requestId: input.requestId, reservationId: plan.reservationId, result: answer.outcome, detail: answer.detail }, 'carve promotion refused');
  } catch (error) {
    // Unknown outcome: tried again at the next checkpoint (same id and payload); nothing returns to the grant meanwhile.
    grants.promotionAnswered(carve, 'unknown');
    deps.logger.warn({ requestId: input.requestId, reservationId: plan.reservationId, err: { message: (error as Error).message } }, 'carve promotion failed');
  }
  return false;
}

/**
 * Sends one checkpoint of a stream's running usage, renewing its reservation's lease: the
 * deadline becomes the ledger's now() plus PROXY_STREAM_LEASE_MS (EXPIRY), so a stream whose
 * proxy died stops holding money one lease after its last checkpoint, charged that checkpoint.
 * Failures and refusals are logged and never reach the stream: the next checkpoint supersedes
 * this one. A carved stream sends none until it has run one checkpoint interval (the meter's
 * first, at its first chunk, is skipped: a short stream costs no ledger call); then its carve is
 * promoted to its own reservation before its first checkpoint.
 */
export async function checkpointStream(deps: StreamBillingDeps, input: BillingInput, plan: BillingPlan, due: CheckpointDue): Promise<void> {
  const { carve } = plan;
  const grants = deps.ledger.grants;
  if (carve !== undefined && grants !== undefined && carve.state !== 'promoted') {
    if (!grants.promotionDue(carve) || !await promoteCarve(deps, input, plan, carve)) return;
  }
  const { costMicros, providerCostMicros } = usageCostMicros(due.usage, input.model);
  try {
    const answer = await deps.ledger.checkpoint({
      reservationId: plan.reservationId,
      sequence: due.sequence,
      usage: due.usage,
      costMicros,
      providerCostMicros,
      extendTtlMs: deps.streamLeaseMs,
      requestId: input.requestId,
    });
    if (answer.outcome !== 'ok' && answer.outcome !== 'already_resolved') {
      deps.logger.warn({ requestId: input.requestId, reservationId: plan.reservationId, result: answer.outcome, detail: answer.detail }, 'checkpoint refused');
    }
  } catch (error) {
    deps.logger.warn({ requestId: input.requestId, reservationId: plan.reservationId, err: { message: (error as Error).message } }, 'checkpoint failed');
  }
}
