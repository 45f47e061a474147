import type { TokenClassCounts } from '../../domain/normalized-completion.ts';

function count(value: unknown): number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 ? value : 0;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * The cache classes of an OpenAI-compatible `usage` object, tokens: `prompt_tokens_details.cached_tokens`
 * (the upstream's automatic prefix cache) as cachedInputTokens, never more than `prompt_tokens`
 * (a part of it). OpenAI reports no cache writes: they are billed as plain input. Absent or
 * malformed counts are 0, so an upstream that reports no details bills everything as plain input.
 */
export function openAiTokenClasses(usage: unknown): TokenClassCounts {
  if (!isObject(usage)) return {};
  const details = isObject(usage.prompt_tokens_details) ? usage.prompt_tokens_details : {};
  const cached = Math.min(count(details.cached_tokens), count(usage.prompt_tokens));
  return cached > 0 ? { cachedInputTokens: cached } : {};
}
