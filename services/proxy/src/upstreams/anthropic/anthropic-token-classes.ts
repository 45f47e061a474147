import type { TokenClassCounts } from '../../domain/normalized-completion.ts';

function count(value: unknown): number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 ? value : 0;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * The cache classes of an Anthropic `usage` object, tokens: `cache_read_input_tokens` as
 * cachedInputTokens, and the writes by lifetime from `cache_creation.{ephemeral_5m_input_tokens,
 * ephemeral_1h_input_tokens}`. A usage with only the older `cache_creation_input_tokens` counts
 * it all as 5-minute writes (the only lifetime before 1-hour caching existed); a breakdown that
 * adds up to less than that total puts the rest in the 5-minute class, so every written token is
 * in a class. Absent or malformed counts are 0.
 */
export function anthropicTokenClasses(usage: unknown): TokenClassCounts {
  if (!isObject(usage)) return {};
  const classes: TokenClassCounts = {};
  const read = count(usage.cache_read_input_tokens);
  if (read > 0) classes.cachedInputTokens = read;
  const creation = isObject(usage.cache_creation) ? usage.cache_creation : {};
  const write1h = count(creation.ephemeral_1h_input_tokens);
  const write5m = Math.max(count(creation.ephemeral_5m_input_tokens), count(usage.cache_creation_input_tokens) - write1h);
  if (write5m > 0) classes.cacheWrite5mTokens = write5m;
  if (write1h > 0) classes.cacheWrite1hTokens = write1h;
  return classes;
}

/** Prompt tokens of an Anthropic usage: fresh input plus cache writes and reads (all are input). */
export function anthropicPromptTokens(usage: Record<string, unknown>): number {
  const classes = anthropicTokenClasses(usage);
  return count(usage.input_tokens) + (classes.cachedInputTokens ?? 0) + (classes.cacheWrite5mTokens ?? 0) + (classes.cacheWrite1hTokens ?? 0);
}
