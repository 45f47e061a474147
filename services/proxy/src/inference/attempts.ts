import { GatewayError } from '@gateway/errors';
import type { Hold } from '../billing/hold.ts';
import type { GatewayModelEntry, UpstreamDeploymentEntry } from '../domain/config-snapshot.ts';
import type { FailedAttempt } from '../domain/ledger-port.ts';
import type { TokenUsage } from '../domain/pricing.ts';
import { deploymentsOf, type AttemptOutcome, type DeploymentRouter } from '../routing/deployment-router.ts';
import { adapterFor } from '../upstreams/upstream-adapters.ts';
import type { UpstreamAdapter, UpstreamRequest } from '../upstreams/upstream-adapter.ts';
import type { UpstreamOutcome } from '../upstreams/upstream-outcome.ts';
import type { AttemptLimits } from '../upstreams/upstream-transport.ts';

// The attempt loop every upstream call of a billed request runs (non-streaming, streaming,
// embeddings): one Reserve covers every attempt; each attempt goes to the next deployment the
// router ordered, until one answers, the failure is not one to retry, or attempts or time run
// out (docs/proxy.md "Routing").

/** The attempts' bounds (PROXY_ROUTING_*). */
interface RoutingPolicy {
  /** Most attempts of one request. */
  maxAttempts: number;
  /** Time for the attempts before the first byte reaches the client, ms. */
  deadlineMs: number;
  /** One deployment's time to answer (response headers) before the next is tried, ms. */
  attemptTimeoutMs: number;
  /**
   * The transport's whole-call time (UPSTREAM_TOTAL_TIMEOUT_MS), ms: a request's attempts share it,
   * so the longest request stays what proxyRequestBoundMs says whatever failed over.
   */
  upstreamTotalMs: number;
}

/** The proxy's routing: the router every request shares, and the attempts' bounds. */
export interface Routing {
  router: DeploymentRouter;
  policy: RoutingPolicy;
}

/**
 * The deployments one request may try, in order, and how its upstream request is built for each:
 * built for the first before the Reserve (a refusal by the adapter moves no money, as before),
 * for the others only when they are tried.
 */
export interface RoutePlan {
  /** In the order to try them; the first is the one `first` was built for. */
  deployments: readonly UpstreamDeploymentEntry[];
  /** The upstream request for deployments[0]. */
  first: UpstreamRequest;
  /** The upstream request for another deployment; undefined when its provider cannot serve this request (it is skipped). */
  build(deployment: UpstreamDeploymentEntry): UpstreamRequest | undefined;
}

/** The adapter of a deployment: the request's own (the model's provider kind) when the kinds match, else that of its kind. */
export function adapterOfDeployment(adapter: UpstreamAdapter, deployment: UpstreamDeploymentEntry): UpstreamAdapter | undefined {
  return deployment.upstream.providerKind === adapter.providerKind ? adapter : adapterFor(deployment.upstream.providerKind);
}

/** The `build` of a route with one deployment: there is no other to build for. */
function noOtherDeployment(): undefined {
  return undefined;
}

/**
 * Orders the deployments of a request and builds its upstream request for the first that can
 * serve it (`build` throws the adapter's 400 for what its provider cannot honour). When none can,
 * the first one's refusal is thrown: the request itself is at fault, before any money moves.
 */
export function planRoute(routing: Routing | undefined, model: GatewayModelEntry, build: (deployment: UpstreamDeploymentEntry) => UpstreamRequest): RoutePlan {
  const ordered = routing === undefined ? deploymentsOf(model) : routing.router.order(model);
  // The one-deployment fast path: no other request to build, no closure for it.
  if (ordered.length === 1) return { deployments: ordered, first: build(ordered[0]!), build: noOtherDeployment };
  let refusal: unknown;
  for (let index = 0; index < ordered.length; index += 1) {
    const deployment = ordered[index]!;
    let first: UpstreamRequest;
    try {
      first = build(deployment);
    } catch (error) {
      refusal ??= error;
      continue;
    }
    return {
      deployments: index === 0 ? ordered : ordered.slice(index),
      first,
      build(other) {
        try {
          return build(other);
        } catch {
          return undefined;
        }
      },
    };
  }
  throw refusal;
}

/** How one attempt ended when it produced no answer. */
interface FailedAttemptResult<Answer> {
  kind: 'failed';
  outcome: Exclude<AttemptOutcome, 'ok'>;
  /** Whether the next deployment may be tried: never once anything reached the client, never for the client's own 4xx. */
  retryable: boolean;
  /** An upstream's Retry-After, ms. */
  retryAfterMs?: number | undefined;
  /** Set when the provider may have billed the attempt: recorded with the request's Settle or Release if it fails over. */
  billable?: { outcome: FailedAttempt['outcome']; usage: TokenUsage } | undefined;
  /** Answers this failure as the request's last (a thrown 502/504 with its money, or a stream's failed ending). */
  giveUp(): Promise<Answer>;
}

/** What one attempt came to: the answer (the request is done), or its failure. */
export type AttemptResult<Answer> = { kind: 'answered'; value: Answer } | FailedAttemptResult<Answer>;

/** One attempt at a deployment: its request, and its own limits on the call (undefined: the transport's alone). */
type AttemptRunner<Answer> = (
  deployment: UpstreamDeploymentEntry, request: UpstreamRequest, limits: AttemptLimits | undefined,
) => Promise<AttemptResult<Answer>>;

/** The attempt outcome of a transport outcome that produced no answer, and whether another deployment may be tried. */
function attemptFailureOf(outcome: Exclude<UpstreamOutcome, { kind: 'response' }>): { outcome: Exclude<AttemptOutcome, 'ok'>; retryable: boolean } {
  switch (outcome.kind) {
    case 'unreachable': return { outcome: 'connect_error', retryable: true };
    case 'timeout': return { outcome: 'timeout', retryable: true };
    case 'failed': return { outcome: 'bad_response', retryable: false };
    case 'http_error':
      if (outcome.statusCode === 429) return { outcome: 'http_429', retryable: true };
      if (outcome.statusCode >= 500) return { outcome: 'http_5xx', retryable: true };
      // The request itself is wrong: another deployment would refuse it the same way.
      return { outcome: 'http_error', retryable: false };
  }
}

/**
 * The attempt result of a call that produced no answer (a transport outcome), for every surface:
 * its outcome and whether the next deployment may be tried (never once the request was stopped:
 * client gone or shutdown), an upstream's Retry-After, and, for a timeout after the request was
 * sent, the prompt (`promptTokens`) its provider may have billed. `giveUp` answers it as the
 * request's last failure.
 */
export function failedCallResult<Answer>(
  failed: Exclude<UpstreamOutcome, { kind: 'response' }>, promptTokens: number, stopped: boolean, giveUp: () => Promise<Answer>,
): AttemptResult<Answer> {
  const { outcome, retryable } = attemptFailureOf(failed);
  return {
    kind: 'failed', outcome, retryable: retryable && !stopped,
    retryAfterMs: failed.kind === 'http_error' ? failed.retryAfterMs : undefined,
    billable: failed.kind === 'timeout' ? { outcome: 'timeout', usage: { promptTokens, completionTokens: 0 } } : undefined,
    giveUp,
  };
}

/**
 * Runs the attempts of one request whose Reserve `hold` holds: the deployments of `route` in
 * order, each through `attempt`, until one answers. A failure is retried on the next deployment
 * when it is retryable, attempts are left (PROXY_ROUTING_MAX_ATTEMPTS) and the deadline has not
 * passed (PROXY_ROUTING_DEADLINE_MS); otherwise it is answered as the request's failure, exactly as a
 * single upstream's would be. An attempt that fails over but may have been billed by its provider is
 * recorded on the hold. With one deployment there is one attempt and no timer of its own: the
 * request runs as it did before routing existed.
 */
export async function runAttempts<Answer>(
  routing: Routing | undefined, model: GatewayModelEntry, hold: Hold, route: RoutePlan, attempt: AttemptRunner<Answer>,
): Promise<Answer> {
  const { deployments } = route;
  if (routing === undefined || deployments.length === 1) {
    const only = deployments[0]!;
    hold.attemptOn(only);
    const startedAtMs = performance.now();
    const result = await attempt(only, route.first, undefined);
    report(routing, model, only, result, startedAtMs);
    return result.kind === 'answered' ? result.value : result.giveUp();
  }
  const { policy, router } = routing;
  const firstAttemptAtMs = performance.now();
  const deadlineAtMs = firstAttemptAtMs + policy.deadlineMs;
  let attempts = 0;
  let last: FailedAttemptResult<Answer> | undefined;
  let lastDeployment: UpstreamDeploymentEntry | undefined;
  for (let index = 0; index < deployments.length && attempts < policy.maxAttempts; index += 1) {
    const deployment = deployments[index]!;
    const request = index === 0 ? route.first : route.build(deployment);
    if (request === undefined) continue;
    const remainingMs = deadlineAtMs - performance.now();
    if (last !== undefined && remainingMs <= 0) break;
    if (last !== undefined && lastDeployment !== undefined) {
      // The previous failure fails over: recorded if its provider may have billed it.
      if (last.billable !== undefined) hold.failedAttempt(attempts, lastDeployment, last.billable.outcome, last.billable.usage);
      router.failedOver(model.slug);
    }
    attempts += 1;
    // The last deployment that can be tried has no next to hand over to: only the deadline bounds it.
    const isLast = attempts === policy.maxAttempts || index === deployments.length - 1;
    const headersTimeoutMs = Math.max(1, Math.floor(isLast ? remainingMs : Math.min(policy.attemptTimeoutMs, remainingMs)));
    // After the first attempt, what is left of the whole-call time: the attempts share it.
    const totalTimeoutMs = last === undefined ? undefined : Math.max(1, Math.floor(policy.upstreamTotalMs - (performance.now() - firstAttemptAtMs)));
    hold.attemptOn(deployment);
    const startedAtMs = performance.now();
    const result = await attempt(deployment, request, { headersTimeoutMs, totalTimeoutMs });
    report(routing, model, deployment, result, startedAtMs);
    if (result.kind === 'answered') return result.value;
    if (!result.retryable) return result.giveUp();
    last = result;
    lastDeployment = deployment;
  }
  if (last === undefined) {
    // No deployment could be built for (cannot happen: the first always is); answered as an unreachable upstream.
    throw new GatewayError('upstream_error', { internalMessage: 'no deployment could take the request' });
  }
  return last.giveUp();
}

/** Tells the router (health, metrics) how an attempt ended. */
function report<Answer>(
  routing: Routing | undefined, model: GatewayModelEntry, deployment: UpstreamDeploymentEntry, result: AttemptResult<Answer>, startedAtMs: number,
): void {
  if (routing === undefined) return;
  const durationS = (performance.now() - startedAtMs) / 1000;
  if (result.kind === 'answered') routing.router.succeeded(model.slug, deployment.name, durationS);
  else routing.router.failed(model.slug, deployment.name, result.outcome, durationS, result.retryAfterMs);
}
