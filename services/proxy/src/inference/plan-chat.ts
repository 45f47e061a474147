import type { BillingInput } from '../billing/hold.ts';
import { markerTokensOf, scopeForRequest, type CacheScope, type CacheScoping } from '../domain/cache-scope.ts';
import { checkMediaParts, type ChatRequest } from '../domain/chat-request.ts';
import { MediaTokenCounter } from '../domain/media-tokens.ts';
import { effectiveMaxTokens, reserveMicros } from '../domain/pricing.ts';
import { checkReasoning, noReasoningControls } from '../domain/reasoning.ts';
import { openReasoning } from '../domain/reasoning-blocks.ts';
import { countTextTokens, estimatePromptTokens } from '../domain/token-estimate.ts';
import { revealToolCallIds, type ToolCallIdCodec } from '../domain/tool-call-ids.ts';
import type { UpstreamAdapter, UpstreamChatRequest } from '../upstreams/upstream-adapter.ts';
import { adapterOfDeployment, planRoute, type RoutePlan, type Routing } from './attempts.ts';

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

/** What the gateway decided for a chat completion before any money moves. */
export interface ChatPlan {
  /** The Reserve to open the request's hold with, µ₹. */
  amountMicros: bigint;
  promptTokens: number;
  /** Completion budget sent upstream. */
  maxTokens: number;
  /** The deployments to try and the upstream request of each (built from one chat request: the plan is the same for all). */
  route: RoutePlan;
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
export function planChat(input: ChatInput, routing: Routing | undefined): ChatPlan {
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
  const chat: UpstreamChatRequest = {
    request: openReasoning(revealToolCallIds(request, input.toolCallIds), input.toolCallIds), maxTokens, reasoning,
    ...(cacheScope === undefined ? {} : { cacheScope }),
  };
  // Each deployment's request is built by its own adapter for its own target; the first before
  // the Reserve, so a param its provider cannot honour is a 400 that moves no money.
  const route = planRoute(routing, model, (deployment) => {
    const adapter = adapterOfDeployment(input.adapter, deployment);
    if (adapter === undefined) throw new Error(`no adapter for ${deployment.upstream.providerKind}`);
    return adapter.buildRequest(deployment.upstream, chat);
  });
  return { promptTokens, maxTokens, amountMicros: reserveMicros(promptTokens, maxTokens, model), route };
}
