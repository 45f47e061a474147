import { GatewayError, type ErrorCode } from '@gateway/errors';
import type { Logger } from '@gateway/logger';
import type { AuthenticatedCaller } from '../domain/authenticate.ts';
import type { GatewayModelEntry, UpstreamDeploymentEntry } from '../domain/config-snapshot.ts';
import type { BillingOwner, FailedAttempt, Ledger, ReserveAnswer, ReserveOrder, SettleAnswer, UsageSource } from '../domain/ledger-port.ts';
import { priceUsage, usageCostMicros, type PricedUsage, type SettleOverrun, type TokenUsage } from '../domain/pricing.ts';
import type { ClassUsage } from '../domain/token-classes.ts';
import type { CheckpointDue } from '../domain/stream-meter.ts';
import { failedCall, type UpstreamFailure } from '../domain/upstream-failure.ts';
import { elapsedMs } from '../telemetry/elapsed-ms.ts';
import type { RequestObserver } from '../telemetry/request-observer.ts';
import type { Carve } from './grant.ts';
import type { GrantBook } from './grant-book.ts';
import { liftableRefusal, reserveCallError, reserveMetricOutcome, reserveRefusal } from './reserve-answer.ts';

/** What a request's hold needs: the ledger port, the replica's grant book, and where background work goes. */
export interface HoldDeps {
  /** The ledger port (ledger/grpc-ledger.ts in production): Reserve, Checkpoint, and Settles and Releases that wait until answered. */
  ledger: Ledger;
  /**
   * The replica's credit grants, carving Reserves in memory (grant-book.ts); undefined with
   * PROXY_CREDIT_GRANTS=off, when every Reserve takes the exact per-request path.
   */
  grants?: GrantBook | undefined;
  logger: Logger;
  /** An exact-path Reserve expires this long after the ledger's clock at reserve time, ms (EXPIRY). */
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

/**
 * Longest a new request waits for the settle outbox to have room before its Reserve, ms: long
 * enough for a lagging ledger to answer a few batches, short of clients' usual timeouts. When it
 * runs out the request goes on (refused only if the outbox is at its bound).
 */
const settleRoomWaitMs = 10_000;

/** First wait before a Reserve refused while grants are recalled is tried again, ms; doubled per try up to PROXY_RECALL_WAIT_MS in all. */
const recallFirstWaitMs = 5;

/** Fields of the request's log line that the inference code fills in as it goes. */
export interface BillingLogFields {
  /** The Reserve held, µ₹. */
  reservedMicros?: bigint;
  /** The customer-price cost the Settle carried (the usage record's cost), µ₹; for the request log. */
  settledCostMicros?: bigint;
  /** The token classes the Settle carried (undefined: plain input and output); for the request log. */
  settledClasses?: readonly ClassUsage[] | undefined;
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
  /** Output tokens the upstream produced beyond what the client got (a non-streaming reply cut at its Reserve). */
  overrunOutputTokens?: number;
  /** How long the upstream took to answer (non-streaming) or to open its stream, ms (its last attempt's). */
  upstreamMs?: number;
  /** The deployment of the last upstream attempt (the one that answered, when one did); operators' log only, never the client's. */
  deployment?: string;
  /** Upstream attempts made (more than 1: it failed over). */
  attempts?: number;
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

/** Zero tokens: what a call that produced nothing usable is settled at. */
const noUsage: TokenUsage = { promptTokens: 0, completionTokens: 0 };

/** The outbox owner of a request's Settle or Release. */
function ownerOf(input: BillingInput): BillingOwner {
  return { organisationId: input.caller.organisation.id, requestId: input.requestId };
}

/**
 * The money of one request, from its Reserve to its one outcome: the only thing routes and
 * inference code move money through. `Hold.open` holds the Reserve (carved from a credit grant
 * in memory, or exact at the ledger); a stream then sends `checkpoint`s (which promote a carve
 * to its own reservation when it runs long); the request ends in exactly one of `settle`,
 * `release` or `fail` (ONE_OUTCOME: a second is refused and logged, never sent). The grant
 * book's call order (carve, promotion, settle sent/answered, release) stays inside this class.
 */
export class Hold {
  /** The reservation's id (`res_<request uuid>`): the Reserve's idempotency key (IDEMPOTENCY). */
  readonly reservationId: string;
  /** The Reserve held, µ₹. */
  readonly amountMicros: bigint;
  readonly #deps: HoldDeps;
  readonly #input: BillingInput;
  /** Set when the Reserve was carved from a credit grant in memory (the ledger has not seen it unless promoted). */
  readonly #carve: Carve | undefined;
  #resolved = false;
  /** The deployment of the current (last) attempt: its name goes on the Settle, its provider costs price it. */
  #deployment = '';
  /** The model as that deployment serves it (pricing.ts prices usage with it); the model itself until an attempt starts. */
  #served: GatewayModelEntry;
  /** Attempts that failed over but that their provider may have billed; undefined: none (the usual case, nothing allocated). */
  #failedAttempts: FailedAttempt[] | undefined;

  private constructor(deps: HoldDeps, input: BillingInput, amountMicros: bigint, carve: Carve | undefined) {
    this.#deps = deps;
    this.#input = input;
    this.reservationId = reservationIdOf(input);
    this.amountMicros = amountMicros;
    this.#carve = carve;
    this.#served = input.model;
  }

  /**
   * The request's next attempt goes to `deployment`: from now on its usage is priced at that
   * deployment's provider costs (the customer prices are the model's, whichever answers) and its
   * Settle, Checkpoints and Release name it.
   */
  attemptOn(deployment: UpstreamDeploymentEntry): void {
    this.#deployment = deployment.name;
    this.#served = deployment.served;
    const { log } = this.#input;
    log.deployment = deployment.name;
    log.attempts = (log.attempts ?? 0) + 1;
  }

  /**
   * Records an attempt that failed over but that its provider may have billed, priced at its
   * deployment's provider costs (`served`): it goes with the request's one Settle or Release,
   * never charged to the customer.
   */
  failedAttempt(attempt: number, deployment: UpstreamDeploymentEntry, outcome: FailedAttempt['outcome'], usage: TokenUsage): void {
    const { providerCostMicros } = usageCostMicros(usage, deployment.served);
    (this.#failedAttempts ??= []).push({
      attempt, deployment: deployment.name, outcome, inputTokens: usage.promptTokens, outputTokens: usage.completionTokens, providerCostMicros,
    });
  }

  /**
   * Holds a Reserve of `amountMicros` (µ₹) for the request; throws the client's error (402,
   * 503, …) when it is not held, and 503 before any Reserve while the settle outbox is full.
   *
   * With credit grants on, the Reserve is carved in memory from this replica's grant for the
   * (organisation, project) (no ledger call, no await on that path); when it does not fit, one
   * AcquireGrant shared by the requests waiting on it, then the carve; when no grant is given,
   * the exact path: a Reserve at the ledger (holdAtLedger).
   */
  static async open(deps: HoldDeps, input: BillingInput, amountMicros: bigint): Promise<Hold> {
    const { caller } = input;
    // Nothing is dropped when the ledger falls behind: the proxy stops taking work instead, before
    // any money moves (the outbox is not ready, so a load balancer steers traffic elsewhere). A
    // full outbox refuses at once; a deep one sets the pace: a new request waits (a tenth of the
    // bound), so requests start as fast as Settles are answered, and is refused if it fills meanwhile.
    refuseWhenBacklogged(deps.ledger);
    await deps.ledger.waitForSettleRoom(settleRoomWaitMs);
    refuseWhenBacklogged(deps.ledger);
    const startedAtMs = performance.now();
    input.observer.reserveStarted();
    const { grants } = deps;
    if (grants !== undefined) {
      const { organisation, project } = caller;
      const carve = grants.tryCarve(organisation.id, project.id, organisation.billingMode, amountMicros)
        ?? await grants.acquireAndCarve(organisation.id, project.id, organisation.billingMode, amountMicros);
      if (carve !== undefined) {
        input.log.grantId = carve.grantId;
        input.log.reservedMicros = amountMicros;
        input.log.reserveMs = elapsedMs(startedAtMs);
        input.observer.reserveEnded('carved', 'held');
        return new Hold(deps, input, amountMicros, carve);
      }
    }
    await holdAtLedger(deps, input, amountMicros, startedAtMs);
    input.log.reservedMicros = amountMicros;
    return new Hold(deps, input, amountMicros, undefined);
  }

  /**
   * Sends one checkpoint of a stream's running usage, renewing its reservation's lease: the
   * deadline becomes the ledger's now() plus `leaseMs` (PROXY_STREAM_LEASE_MS; EXPIRY), so a
   * stream whose proxy died stops holding money one lease after its last checkpoint, charged that
   * checkpoint. Failures and refusals are logged and never reach the stream: the next checkpoint
   * supersedes this one. A carved stream sends none until it has run one checkpoint interval (the
   * meter's first, at its first chunk, is skipped: a short stream costs no ledger call); then its
   * carve is promoted to its own reservation before its first checkpoint. Nothing is sent once
   * the hold has its outcome.
   */
  async checkpoint(due: CheckpointDue, leaseMs: number): Promise<void> {
    const carve = this.#carve;
    const { grants, ledger, logger } = this.#deps;
    const input = this.#input;
    if (this.#resolved) return;
    if (carve !== undefined && grants !== undefined && carve.state !== 'promoted') {
      if (!grants.promotionDue(carve) || !await this.#promote(carve, grants, leaseMs)) return;
    }
    const { costMicros, providerCostMicros } = usageCostMicros(due.usage, this.#served);
    try {
      const answer = await ledger.checkpoint({
        reservationId: this.reservationId,
        sequence: due.sequence,
        usage: due.usage,
        costMicros,
        providerCostMicros,
        extendTtlMs: leaseMs,
        requestId: input.requestId,
        deployment: this.#deployment,
      });
      if (answer.outcome !== 'ok' && answer.outcome !== 'already_resolved') {
        logger.warn({ requestId: input.requestId, reservationId: this.reservationId, result: answer.outcome, detail: answer.detail }, 'checkpoint refused');
      }
    } catch (error) {
      logger.warn({ requestId: input.requestId, reservationId: this.reservationId, err: { message: (error as Error).message } }, 'checkpoint failed');
    }
  }

  /**
   * Prices a usage as the deployment that answered serves the model (the model's customer prices,
   * that deployment's provider costs), µ₹: the one pricing of a request's answer, shown by its
   * response and carried by its Settle.
   */
  price(usage: TokenUsage, overrun?: SettleOverrun): PricedUsage {
    return priceUsage(usage, this.#served, overrun);
  }

  /**
   * Settles a usage priced by `price` (the figures the response shows) through the outbox, which repeats it until the ledger
   * answers. Never throws (it may run after the response has gone out). Resolves once the Settle
   * is queued: the outbox entry counts as a Settle in flight of the organisation from then on,
   * and its answer is awaited as background work (deps.background: shutdown still waits for it).
   */
  settle(priced: PricedUsage, source: UsageSource): Promise<void> {
    if (!this.#resolve('settle')) return Promise.resolve();
    try {
      this.#settleOnce(priced, source);
    } catch (error) {
      this.#deps.logger.error({
        requestId: this.#input.requestId, reservationId: this.reservationId, err: { message: (error as Error).message },
      }, 'settle failed');
    }
    return Promise.resolve();
  }

  /**
   * Releases the Reserve of a request that certainly reached no upstream: a carve goes back to
   * its grant in memory (the ledger never saw it), a Reserve at the ledger through the outbox.
   */
  async release(reason: string): Promise<void> {
    const carve = this.#carve;
    // A carve the ledger never saw has no Release to carry failed attempts: it settles at zero
    // usage instead (the same money: nothing debited, the carve's amount stays in its grant).
    if (carve !== undefined && this.#failedAttempts !== undefined) {
      await this.settle(this.price(noUsage), 'gateway_estimate');
      return;
    }
    if (!this.#resolve('release')) return;
    if (carve !== undefined) {
      this.#deps.grants?.release(carve);
      return;
    }
    const released = await this.#deps.ledger.release({
      reservationId: this.reservationId, reason,
      ...(this.#failedAttempts === undefined ? {} : { failedAttempts: this.#failedAttempts, modelSlug: this.#input.model.slug }),
    }, ownerOf(this.#input));
    if (released !== undefined && released.outcome !== 'ok') {
      this.#deps.logger.error({ requestId: this.#input.requestId, reservationId: this.reservationId, result: released.outcome, detail: released.detail }, 'release refused by the ledger');
    }
  }

  /**
   * Resolves the money of an upstream call that produced no usable answer and returns the
   * client's error, both as `failedCall` (domain/upstream-failure.ts) decides: a call that
   * certainly sent nothing releases the Reserve; anything else may have reached the provider and
   * settles zero usage (NOTHING_FREE). The Release or Settle waits in the outbox as background
   * work (shutdown still waits for it), so a client is not kept waiting for its 502/504 while the
   * ledger is away.
   */
  fail(failure: UpstreamFailure): GatewayError {
    if (failure.kind === 'http_error') this.#input.log.upstreamStatus = failure.statusCode;
    const { error, money } = failedCall(failure);
    this.#deps.background(money.kind === 'release' ? this.release(money.reason) : this.settle(this.price(noUsage), 'gateway_estimate'));
    return error;
  }

  /** Marks the hold resolved; false (and logged) when it already was: its money has one outcome (ONE_OUTCOME). */
  #resolve(outcome: 'settle' | 'release'): boolean {
    if (!this.#resolved) {
      this.#resolved = true;
      return true;
    }
    this.#deps.logger.error({ requestId: this.#input.requestId, reservationId: this.reservationId, outcome }, 'hold already resolved; second outcome not sent');
    return false;
  }

  #settleOnce(priced: PricedUsage, source: UsageSource): void {
    const { ledger, grants, logger } = this.#deps;
    const input = this.#input;
    const { log, model } = input;
    // The provider is paid for everything it produced, delivered or not (priced.providerCostMicros).
    const { usage, costMicros, providerCostMicros, costByClass: tokenClasses, overrun } = priced;
    log.usageSource = source;
    log.settledCostMicros = costMicros;
    log.settledClasses = tokenClasses;
    log.promptTokens = usage.promptTokens;
    log.completionTokens = usage.completionTokens;
    if (overrun !== undefined) log.overrunOutputTokens = overrun.overrunOutputTokens;
    // Counted as sent, from the very numbers the Settle carries (the ledger's answer is the record).
    input.observer.settleStarted(usage.promptTokens, usage.completionTokens, costMicros);
    const carve = this.#carve;
    // A carve's Settle names its grant (always: the ledger ignores it when the carve was promoted to
    // its own reservation), and U gets r - c back as it leaves: the ledger keeps r - c in the grant.
    // Only an unused part of a reservation at the ledger returns to available (a carve's stays in
    // its grant): a Reserve refused meanwhile waits for this Settle only if it can free something.
    const atLedger = carve === undefined || carve.state === 'promoted' || carve.state === 'promoting';
    const owner: BillingOwner = { ...ownerOf(input), freesAvailable: atLedger && costMicros < this.amountMicros };
    if (carve !== undefined) grants?.settleSent(carve, costMicros);
    // The request is done with its Settle once it is in the outbox (ledger.settle queues it before
    // it returns): its answer is awaited by background work that holds only what it needs, so a
    // ledger that falls behind keeps outbox entries in memory, not whole requests (their bodies,
    // their responses), and the request's log line is written at its response.
    const answered = ledger.settle({
        reservationId: this.reservationId,
        usage,
        costMicros,
        providerCostMicros,
        modelSlug: model.slug,
        usageSource: source,
        requestId: input.requestId,
        overrunOutputTokens: overrun?.overrunOutputTokens ?? 0,
        tokenClasses,
        carve: carve === undefined ? undefined : { grantId: carve.grantId, reservedMicros: carve.amountMicros },
        deployment: this.#deployment,
        failedAttempts: this.#failedAttempts,
      }, owner);
    this.#deps.background(awaitSettleAnswer(answered, {
      logger, grants, carve, observer: input.observer, requestId: input.requestId, reservationId: this.reservationId, costMicros,
    }));
  }

  /**
   * Makes a carved stream's carve its own reservation, held out of its grant with no new money
   * checks (promotion), so its checkpoints exist for EXPIRY to charge. Its deadline is a lease
   * (the first checkpoint follows at once and renews it). True when the stream now has a
   * reservation at the ledger to checkpoint.
   */
  async #promote(carve: Carve, grants: GrantBook, leaseMs: number): Promise<boolean> {
    const { ledger, logger } = this.#deps;
    const input = this.#input;
    grants.promotionSent(carve);
    const { caller } = input;
    try {
      const answer = await ledger.reserve({
        reservationId: this.reservationId, organisationId: caller.organisation.id, projectId: caller.project.id,
        billingMode: caller.organisation.billingMode, amountMicros: carve.amountMicros, ttlMs: leaseMs,
        modelSlug: input.model.slug, grantId: carve.grantId,
      });
      if (answer.outcome === 'ok') {
        grants.promotionAnswered(carve, 'held');
        input.log.promoted = true;
        return true;
      }
      // GRANT_NOT_HELD: the grant is gone (closed, expired); the stream stays a carve, its Settle debited from available.
      grants.promotionAnswered(carve, answer.outcome === 'grant_not_held' ? 'refused' : 'unknown');
      logger.warn({ requestId: input.requestId, reservationId: this.reservationId, result: answer.outcome, detail: answer.detail }, 'carve promotion refused');
    } catch (error) {
      // Unknown outcome: tried again at the next checkpoint (same id and payload); nothing returns to the grant meanwhile.
      grants.promotionAnswered(carve, 'unknown');
      logger.warn({ requestId: input.requestId, reservationId: this.reservationId, err: { message: (error as Error).message } }, 'carve promotion failed');
    }
    return false;
  }
}

/** Throws 503 while the settle outbox is at its bound (no new request may start). */
function refuseWhenBacklogged(ledger: Ledger): void {
  if (ledger.settlesBacklogged()) {
    throw new GatewayError('service_unavailable', { internalMessage: 'settle outbox full: the ledger is not answering Settles' });
  }
}

/** What the answer of a queued Settle needs once its request is over: no request body, no response. */
interface SettleFollowUp {
  logger: Logger;
  grants: GrantBook | undefined;
  carve: Carve | undefined;
  observer: RequestObserver;
  requestId: string;
  reservationId: string;
  /** µ₹ */
  costMicros: bigint;
}

/**
 * Waits for the ledger's final answer to a queued Settle (outbox retries included; undefined:
 * abandoned or handed over at shutdown) and does what follows it: the grant book learns the
 * carve's Settle was answered, the observer ends its timing, a refusal or failure is logged.
 */
async function awaitSettleAnswer(answered: Promise<SettleAnswer | undefined>, followUp: SettleFollowUp): Promise<void> {
  const { logger, grants, carve, observer, requestId, reservationId, costMicros } = followUp;
  let settled: SettleAnswer | undefined;
  try {
    settled = await answered;
  } catch (error) {
    logger.error({ requestId, reservationId, err: { message: (error as Error).message } }, 'settle failed');
    return;
  } finally {
    if (carve !== undefined) grants?.settleAnswered(carve);
    observer.settleEnded();
  }
  if (settled !== undefined && settled.outcome !== 'ok') {
    logger.error({ requestId, reservationId, costMicros: costMicros.toString(), result: settled.outcome, detail: settled.detail }, 'settle refused by the ledger');
  }
}

/** The reservation id of a request: `res_<request uuid>`. */
function reservationIdOf(input: BillingInput): string {
  return `res_${input.requestUuid}`;
}

/**
 * The exact path: holds the Reserve at the ledger; throws the client's error when it is not held.
 *
 * A Reserve refused for balance or budget while this proxy still has Settles of the organisation
 * in its outbox waits for them (bounded) and is tried once more: those Settles return their
 * unused holds, and a client that sent its next request right after a response must not see a
 * 402 because of a hold the gateway was about to release. When the ledger says it is recalling
 * grants because of the refusal (money idling in other replicas' grants), the Reserve is tried
 * again with growing waits for up to PROXY_RECALL_WAIT_MS. (Each retry repeats the same
 * reservation id and payload; a refused Reserve wrote nothing, so it is not a replay.) A refusal
 * the ledger calls not liftable (no hold's return could make it fit) waits for none of this: it
 * is the client's 402 at once.
 */
async function holdAtLedger(deps: HoldDeps, input: BillingInput, amountMicros: bigint, startedAtMs: number): Promise<void> {
  const { caller, observer } = input;
  const { ledger } = deps;
  let reserved: ReserveAnswer;
  const order: ReserveOrder = {
    reservationId: reservationIdOf(input),
    organisationId: caller.organisation.id,
    projectId: caller.project.id,
    billingMode: caller.organisation.billingMode,
    amountMicros,
    ttlMs: deps.reserveTtlMs,
    modelSlug: input.model.slug,
  };
  try {
    reserved = await ledger.reserve(order);
    let recalling = reserved.grantsRecalled > 0;
    if (liftableRefusal(reserved) && await ledger.waitForSettlesOf(caller.organisation.id, settlesInFlightWaitMs)) {
      reserved = await ledger.reserve(order);
      recalling ||= reserved.grantsRecalled > 0;
    }
    // Grants being pulled back return their money within a round trip or two of their owners.
    let waitedMs = 0;
    let waitMs = recallFirstWaitMs;
    while (recalling && liftableRefusal(reserved) && waitedMs < ledger.recallWaitMs) {
      const sleepMs = Math.min(waitMs, ledger.recallWaitMs - waitedMs);
      await new Promise((resolve) => setTimeout(resolve, sleepMs));
      waitedMs += sleepMs;
      waitMs *= 2;
      reserved = await ledger.reserve(order);
    }
  } catch (error) {
    // The call failed, but the ledger may have held the Reserve anyway (or may still, if it is
    // queued there): free it rather than leave it held until it expires. The outbox repeats the
    // Release until the ledger answers; on an unknown id it leaves a tombstone that makes the
    // late Reserve hold nothing.
    deps.background(ledger.release({ reservationId: order.reservationId, reason: 'reserve_outcome_unknown' }, ownerOf(input)));
    const clientError = reserveCallError(error);
    observer.reserveEnded('exact', clientError.code === 'service_unavailable' ? 'ledger_unavailable' : 'error');
    throw clientError;
  } finally {
    input.log.reserveMs = elapsedMs(startedAtMs);
  }
  observer.reserveEnded('exact', reserveMetricOutcome(reserved.outcome));
  if (reserved.outcome !== 'ok') throw reserveRefusal(reserved);
}
