// Token usage in each vendor's own fields: what the modelled prompt cache reports (prefix-cache.ts)
// and the counts a `usage_classes` directive asks for instead.
import type { UsageClasses } from './directives.ts';
import { anthropicPromptBlocks, openAiPromptBlocks, type PrefixCache } from './prefix-cache.ts';

/** The input classes of a `usage_classes` directive held to a prompt of `promptTokens`, in the order cached, 5m, 1h, audio. */
function inputClassesWithin(classes: UsageClasses, promptTokens: number): { cached: number; write5m: number; write1h: number; audio: number } {
  let left = promptTokens;
  const take = (count: number) => {
    const taken = Math.min(count, left);
    left -= taken;
    return taken;
  };
  return { cached: take(classes.cached), write5m: take(classes.write5m), write1h: take(classes.write1h), audio: take(classes.audio) };
}

/**
 * An OpenAI usage with a `usage_classes` directive's counts in OpenAI's own fields: cached and
 * audio tokens in prompt_tokens_details (parts of prompt_tokens; OpenAI reports no cache writes),
 * reasoning tokens in completion_tokens_details and added to completion_tokens (spent, not shown).
 */
export function openAiUsageWithClasses(usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number; prompt_tokens_details?: object }, classes: UsageClasses | undefined): object {
  if (classes === undefined) return usage;
  const within = inputClassesWithin(classes, usage.prompt_tokens);
  const completionTokens = usage.completion_tokens + classes.reasoning;
  return {
    prompt_tokens: usage.prompt_tokens, completion_tokens: completionTokens, total_tokens: usage.prompt_tokens + completionTokens,
    prompt_tokens_details: { cached_tokens: within.cached, audio_tokens: within.audio },
    completion_tokens_details: { reasoning_tokens: classes.reasoning },
  };
}

/**
 * An Anthropic usage with a `usage_classes` directive's counts in Anthropic's own fields: the
 * prompt split into input_tokens (fresh), cache_read_input_tokens and cache_creation_input_tokens
 * (with its cache_creation 5m/1h breakdown), whose sum stays the prompt; reasoning (thinking) added
 * to output_tokens, which is how Anthropic counts it.
 */
function anthropicUsageWithClasses(usage: { input_tokens: number; output_tokens: number; cache_creation_input_tokens?: number; cache_read_input_tokens?: number }, classes: UsageClasses | undefined): object {
  if (classes === undefined) return usage;
  const within = inputClassesWithin(classes, usage.input_tokens);
  return {
    input_tokens: usage.input_tokens - within.cached - within.write5m - within.write1h,
    output_tokens: usage.output_tokens + classes.reasoning,
    cache_read_input_tokens: within.cached,
    cache_creation_input_tokens: within.write5m + within.write1h,
    cache_creation: { ephemeral_5m_input_tokens: within.write5m, ephemeral_1h_input_tokens: within.write1h },
  };
}

/**
 * An Anthropic usage of a prompt and a reply: what the modelled prompt cache reported for the
 * prompt, or, when a `usage_classes` directive is given, the whole prompt split by it instead.
 */
export function anthropicUsageOf(
  inputUsage: Record<string, unknown>, outputTokens: number, classes: UsageClasses | undefined,
): object {
  if (classes === undefined) return { ...inputUsage, output_tokens: outputTokens };
  const promptTokens = Number(inputUsage.input_tokens) + Number(inputUsage.cache_creation_input_tokens) + Number(inputUsage.cache_read_input_tokens);
  return anthropicUsageWithClasses({ input_tokens: promptTokens, output_tokens: outputTokens }, classes);
}

/** The Anthropic usage of a request's prompt: its cache reads and writes (prefix-cache.ts) and the fresh input left. */
export function anthropicInputUsage(promptCache: PrefixCache, request: Record<string, unknown>): Record<string, unknown> {
  const blocks = anthropicPromptBlocks(request);
  const total = blocks.reduce((sum, block) => sum + block.tokens, 0);
  const cache = promptCache.anthropicUsage(typeof request.model === 'string' ? request.model : '', blocks);
  const written = cache.write5mTokens + cache.write1hTokens;
  return {
    input_tokens: total - cache.readTokens - written,
    cache_creation_input_tokens: written,
    cache_read_input_tokens: cache.readTokens,
    cache_creation: { ephemeral_5m_input_tokens: cache.write5mTokens, ephemeral_1h_input_tokens: cache.write1hTokens },
  };
}

/** OpenAI's `prompt_tokens_details` of a chat request: the tokens its automatic prefix cache served (prefix-cache.ts). */
export function openAiPromptDetails(promptCache: PrefixCache, body: Record<string, unknown>): { cached_tokens: number } {
  const model = typeof body.model === 'string' ? body.model : '';
  const key = typeof body.prompt_cache_key === 'string' ? body.prompt_cache_key : undefined;
  return { cached_tokens: promptCache.openAiCachedTokens(model, key, openAiPromptBlocks(body)) };
}
