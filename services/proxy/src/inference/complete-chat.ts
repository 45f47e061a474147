import { cutCompletion, estimateCompletionTokens } from '../domain/completion-response.ts';
import type { NormalizedCompletion } from '../domain/normalized-completion.ts';
import { outputTokensWithin, usageCostMicros, type ClassUsage, type SettleOverrun, type TokenUsage } from '../domain/pricing.ts';
import { sealCompletionReasoning } from '../domain/reasoning-blocks.ts';
import { concealCompletionToolCallIds } from '../domain/tool-call-ids.ts';
import type { UpstreamMetricOutcome } from '../telemetry/request-labels.ts';
import type { UpstreamRequest } from '../upstreams/upstream-adapter.ts';
import type { AttemptLimits, UpstreamEndpoint } from '../upstreams/upstream-transport.ts';
import type { UpstreamOutcome, UpstreamStreamOutcome } from '../upstreams/upstream-outcome.ts';
import { Hold, type BillingInput, type HoldDeps } from '../billing/hold.ts';
import { elapsedMs } from '../telemetry/elapsed-ms.ts';
import type { UpstreamDeploymentEntry } from '../domain/config-snapshot.ts';
import { adapterOfDeployment, failedCallResult, runAttempts, type AttemptResult, type RoutePlan, type Routing } from './attempts.ts';
import { planChat, type ChatInput, type ChatPlan } from './plan-chat.ts';

/**
 * The upstream transport inference needs; the endpoint carries the deployment's SSRF permission.
 * `limits`: a routing attempt's own (its wait for the headers, its share of the total time); undefined: the transport's alone.
 */
export interface UpstreamPort {
  send(endpoint: UpstreamEndpoint, request: UpstreamRequest, limits?: AttemptLimits): Promise<UpstreamOutcome>;
  openStream(endpoint: UpstreamEndpoint, request: UpstreamRequest, signal: AbortSignal, limits?: AttemptLimits): Promise<UpstreamStreamOutcome>;
}

/** The metrics outcome of an upstream call that produced no usable answer (the transport's kinds). */
export function upstreamFailureOutcome(kind: 'http_error' | 'unreachable' | 'timeout' | 'failed'): UpstreamMetricOutcome {
  switch (kind) {
    case 'http_error': return 'http_error';
    case 'unreachable': return 'connect_error';
    case 'timeout': return 'timeout';
    case 'failed': return 'bad_response';
  }
}

/**
 * Makes the upstream call of a request whose Reserve is held and reads its JSON answer with
 * `parse`, timing it for the log and the metrics: one attempt per deployment of `route`, as
 * runAttempts decides (connect errors, attempt timeouts, 429 and 5xx go on to the next
 * deployment; nothing has reached the client before the answer is parsed). When no usable answer
 * comes (a transport failure, an error status, or `parse` throws) the call's money is resolved as
 * Hold.fail decides and the client's 502/504 is thrown, whichever deployment failed last: the
 * one home of that rule for every non-streaming call (completions and embeddings). `parse`
 * gets the deployment that answered (its adapter reads the answer). An attempt that timed out
 * after sending is recorded as one its provider may have billed (`promptTokens` at its costs).
 */
export async function callUpstream<Answer>(
  deps: CompleteChatDeps, input: BillingInput, hold: Hold, route: RoutePlan, promptTokens: number,
  parse: (json: unknown, deployment: UpstreamDeploymentEntry) => Answer,
): Promise<Answer> {
  const { log, observer } = input;
  return runAttempts(deps.routing, input.model, hold, route, async (deployment, request, limits): Promise<AttemptResult<Answer>> => {
    let outcome: UpstreamOutcome;
    const upstreamStartedAtMs = performance.now();
    observer.upstreamStarted(deployment.upstream.providerKind);
    try {
      outcome = await deps.upstream.send(deployment.upstream, request, limits);
    } catch (error) {
      outcome = { kind: 'unreachable', reason: error instanceof Error ? error.name : 'unknown' };
    }
    log.upstreamMs = elapsedMs(upstreamStartedAtMs);
    log.upstreamOutcome = outcome.kind;
    if (outcome.kind !== 'response') {
      observer.upstreamEnded(upstreamFailureOutcome(outcome.kind));
      const failed = outcome;
      return failedCallResult(failed, promptTokens, false, () => Promise.reject(hold.fail(failed)));
    }
    log.upstreamStatus = outcome.statusCode;
    let answer: Answer;
    try {
      answer = parse(outcome.json, deployment);
    } catch {
      observer.upstreamEnded('bad_response');
      return { kind: 'failed', outcome: 'bad_response', retryable: false, giveUp: () => Promise.reject(hold.fail({ kind: 'unusable_answer' })) };
    }
    observer.upstreamEnded('ok');
    return { kind: 'answered', value: answer };
  });
}

/** A non-streaming completion as it is delivered and billed, for a surface to render (chat, Responses, Messages). */
export interface CompletedChat {
  /** The completion held to its Reserve, its tool-call ids the gateway's own. */
  completion: NormalizedCompletion;
  /** The usage the Settle carries. */
  usage: TokenUsage;
  /** Its cost at the model's prices, µ₹: the Settle's own figure (Hold.price). */
  costMicros: bigint;
  /** The same by token class, when the usage has classes (Hold.price). */
  costByClass?: readonly ClassUsage[] | undefined;
  /** When the answer was made, Unix seconds (a response's `created`). */
  createdS: number;
}

/** What completeChat needs besides the request. */
export interface CompleteChatDeps extends HoldDeps {
  upstream: UpstreamPort;
  /** The proxy's routing across deployments; absent (unit tests): the model's first deployment, one attempt. */
  routing?: Routing | undefined;
}

/**
 * Runs one non-streaming chat completion with its money, for any surface (the caller renders
 * what `respond` is given): estimate, Reserve, upstream call,
 * then exactly one of Settle (the request may have reached the upstream) or Release (it
 * certainly did not). A reply longer than its Reserve covers is cut to it (withinReserve). A
 * completion is handed to `respond` first and settled right after, so the
 * client does not wait for the ledger's second commit (docs/proxy.md, "Settle after the
 * response"); the promise resolves once the settle has run. Upstream failures become the
 * gateway's own 502/504 (Hold.fail: their Settle or Release queued in the outbox before
 * they are thrown); the upstream's status, headers and text go nowhere but the log's status code.
 */
export async function completeChat(deps: CompleteChatDeps, input: ChatInput, respond: (completed: CompletedChat) => void): Promise<void> {
  const { model } = input;
  const plan = planChat(input, deps.routing);
  const hold = await Hold.open(deps, input, plan.amountMicros);
  const completion = await callUpstream(deps, input, hold, plan.route, plan.promptTokens, (json, deployment) => {
    const adapter = adapterOfDeployment(input.adapter, deployment);
    if (adapter === undefined) throw new Error(`no adapter for ${deployment.upstream.providerKind}`);
    return adapter.parseResponse(json);
  });

  const produced: TokenUsage = completion.usage
    ?? { promptTokens: plan.promptTokens, completionTokens: estimateCompletionTokens(completion, model.tokenizer) };
  const delivered = withinReserve(completion, produced, plan, input);
  // Priced once: the response shows the figures its Settle carries.
  const priced = hold.price(delivered.usage, delivered.overrun);
  const completed: CompletedChat = {
    completion: sealCompletionReasoning(concealCompletionToolCallIds(delivered.completion, input.toolCallIds), input.toolCallIds),
    usage: delivered.usage,
    costMicros: priced.costMicros,
    costByClass: priced.costByClass,
    createdS: Math.floor(Date.now() / 1000),
  };
  // The settle starts before the response is written, so it is in the outbox (a Settle in flight
  // of the organisation) before the client can possibly send its next request.
  const settled = hold.settle(priced, delivered.source);
  respond(completed);
  await settled;
}

/** What a non-streaming reply delivers and bills once held to its Reserve. */
interface DeliveredCompletion {
  completion: NormalizedCompletion;
  usage: TokenUsage;
  source: 'upstream' | 'gateway_estimate';
  overrun: SettleOverrun | undefined;
}

/**
 * Holds a non-streaming reply to its Reserve, as the stream's running-cost stop does (BOUNDED_OVERRUN):
 * a reply whose output passes the reserved max_tokens, or whose cost passes the Reserve, is cut
 * to the output tokens the Reserve covers after the prompt estimate (the gateway's tokenizer
 * counts them) and ends with `finish_reason: "length"`. It is then billed like a stream's cost
 * stop, by the prompt estimate and the tokens delivered (GATEWAY_ESTIMATE), which is within the
 * Reserve by construction; the Settle carries the output tokens produced beyond them
 * (`overrun_output_tokens`, in the upstream's count when it reported usage) and a provider cost
 * for everything produced. A reply that fits is billed as before: the upstream's usage, else the
 * gateway's count.
 */
function withinReserve(completion: NormalizedCompletion, produced: TokenUsage, plan: ChatPlan, input: ChatInput): DeliveredCompletion {
  const { model } = input;
  const source = completion.usage === undefined ? 'gateway_estimate' : 'upstream';
  const fits = produced.completionTokens <= plan.maxTokens && usageCostMicros(produced, model).costMicros <= plan.amountMicros;
  if (fits) return { completion, usage: produced, source, overrun: undefined };
  const allowedTokens = outputTokensWithin(plan.amountMicros, plan.promptTokens, plan.maxTokens, model);
  const { completion: cut } = cutCompletion(completion, allowedTokens, model.tokenizer);
  const usage: TokenUsage = { promptTokens: plan.promptTokens, completionTokens: estimateCompletionTokens(cut, model.tokenizer) };
  const overrunOutputTokens = Math.max(0, produced.completionTokens - usage.completionTokens);
  return { completion: cut, usage, source: 'gateway_estimate', overrun: { producedUsage: produced, overrunOutputTokens } };
}
