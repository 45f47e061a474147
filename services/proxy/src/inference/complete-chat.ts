import { GatewayError } from '@gateway/errors';
import { buildChatCompletionBody, estimateCompletionTokens, type ChatCompletionBody } from '../domain/completion-response.ts';
import type { NormalizedCompletion } from '../domain/normalized-completion.ts';
import type { TokenUsage } from '../domain/pricing.ts';
import type { UpstreamRequest } from '../upstreams/upstream-adapter.ts';
import type { UpstreamEndpoint, UpstreamOutcome, UpstreamStreamOutcome } from '../upstreams/upstream-transport.ts';
import {
  elapsedMs, holdReserve, noUsage, planChat, releaseReserve, settleUsage, type ChatBillingDeps, type ChatInput, type ChatPlan,
} from './chat-billing.ts';

export type { BillingLogFields, ChatInput as CompleteChatInput, LedgerPort } from './chat-billing.ts';

/** The upstream transport inference needs; the endpoint carries the model's SSRF permission. */
export interface UpstreamPort {
  send(endpoint: UpstreamEndpoint, request: UpstreamRequest): Promise<UpstreamOutcome>;
  openStream(endpoint: UpstreamEndpoint, request: UpstreamRequest, signal: AbortSignal): Promise<UpstreamStreamOutcome>;
}

/** What completeChat needs besides the request. */
export interface CompleteChatDeps extends ChatBillingDeps {
  upstream: UpstreamPort;
}

/**
 * Resolves the money of an upstream call that produced no usable answer, and returns the
 * client's error: `unreachable` (nothing was sent) releases the Reserve; anything else may
 * have reached the provider and settles zero usage. Shared by the streaming relay, for failures
 * before its first byte.
 */
export async function failedCallError(
  deps: ChatBillingDeps, input: ChatInput, plan: ChatPlan, outcome: Exclude<UpstreamOutcome, { kind: 'response' }>,
): Promise<GatewayError> {
  switch (outcome.kind) {
    case 'unreachable':
      await releaseReserve(deps, input, plan, 'upstream_unreachable');
      return new GatewayError('upstream_error', { internalMessage: `upstream unreachable: ${outcome.reason}` });
    case 'timeout':
      await settleUsage(deps, input, plan, noUsage, 'gateway_estimate');
      return new GatewayError('upstream_timeout', { internalMessage: `upstream timeout: ${outcome.reason}` });
    case 'http_error':
      input.log.upstreamStatus = outcome.statusCode;
      await settleUsage(deps, input, plan, noUsage, 'gateway_estimate');
      return new GatewayError('upstream_error', { internalMessage: `upstream answered HTTP ${outcome.statusCode}` });
    case 'failed':
      await settleUsage(deps, input, plan, noUsage, 'gateway_estimate');
      return new GatewayError('upstream_error', { internalMessage: `upstream call failed: ${outcome.reason}` });
  }
}

/**
 * Runs one non-streaming chat completion with its money: estimate, Reserve, upstream call,
 * then exactly one of Settle (the request may have reached the upstream) or Release (it
 * certainly did not). A completion is handed to `respond` first and settled right after, so the
 * client does not wait for the ledger's second commit (docs/proxy.md, "Settle after the
 * response"); the promise resolves once the settle has run. Upstream failures become the
 * gateway's own 502/504 (settled or released before they are thrown); the upstream's status,
 * headers and text go nowhere but the log's status code.
 */
export async function completeChat(deps: CompleteChatDeps, input: ChatInput, respond: (body: ChatCompletionBody) => void): Promise<void> {
  const { model, log } = input;
  const plan = planChat(input);
  await holdReserve(deps, input, plan);

  let outcome: UpstreamOutcome;
  const upstreamStartedAtMs = performance.now();
  try {
    outcome = await deps.upstream.send(model.upstream, plan.upstreamRequest);
  } catch (error) {
    outcome = { kind: 'unreachable', reason: error instanceof Error ? error.name : 'unknown' };
  }
  log.upstreamMs = elapsedMs(upstreamStartedAtMs);
  log.upstreamOutcome = outcome.kind;
  if (outcome.kind !== 'response') throw await failedCallError(deps, input, plan, outcome);

  log.upstreamStatus = outcome.statusCode;
  let completion: NormalizedCompletion;
  try {
    completion = input.adapter.parseResponse(outcome.json);
  } catch {
    await settleUsage(deps, input, plan, noUsage, 'gateway_estimate');
    throw new GatewayError('upstream_error', { internalMessage: 'upstream answer is not a usable completion' });
  }

  const billedUsage: TokenUsage = completion.usage
    ?? { promptTokens: plan.promptTokens, completionTokens: estimateCompletionTokens(completion, model.tokenizer) };
  const body = buildChatCompletionBody({
    id: `chatcmpl-${input.requestUuid}`,
    createdS: Math.floor(Date.now() / 1000),
    modelSlug: model.slug,
    completion,
    billedUsage,
  });
  // The settle starts before the response is written, so it is registered in settlesInFlight
  // before the client can possibly send its next request.
  const settled = settleUsage(deps, input, plan, billedUsage, completion.usage === undefined ? 'gateway_estimate' : 'upstream');
  respond(body);
  await settled;
}
