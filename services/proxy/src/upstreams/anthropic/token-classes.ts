import type { TokenClassCounts } from '../../domain/normalized-completion.ts';

/** A count the wire gives, or 0 when it is absent, not a non-negative integer, or not a number at all. */
function countOf(value: unknown): number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 ? value : 0;
}

/**
 * The token price classes of an Anthropic `usage` object (non-streaming, message_start or
 * message_delta): `cache_read_input_tokens` are cached input; `cache_creation_input_tokens` are
 * cache writes, split by `cache_creation.ephemeral_5m_input_tokens` / `ephemeral_1h_input_tokens`
 * when given, else all 5-minute (Anthropic's default lifetime, and the cheaper of the two: a
 * guess that never bills more than the lifetime asked for). Thinking is counted in
 * `output_tokens` with no count of its own, so no reasoning tokens come from here. Absent
 * classes are left out (absent = 0). Shared by the adapter and its stream decoder, and by the
 * caching and reasoning work (issue 25).
 */
export function anthropicTokenClasses(usage: Record<string, unknown>): TokenClassCounts {
  const classes: TokenClassCounts = {};
  const read = countOf(usage.cache_read_input_tokens);
  if (read > 0) classes.cachedInputTokens = read;
  const written = countOf(usage.cache_creation_input_tokens);
  const creation = typeof usage.cache_creation === 'object' && usage.cache_creation !== null ? usage.cache_creation as Record<string, unknown> : undefined;
  const oneHour = Math.min(countOf(creation?.ephemeral_1h_input_tokens), written);
  const fiveMinutes = creation === undefined ? written - oneHour : Math.min(countOf(creation.ephemeral_5m_input_tokens), written - oneHour);
  // A breakdown that accounts for less than the total: the rest is written at the default lifetime.
  const rest = written - oneHour - fiveMinutes;
  if (fiveMinutes + rest > 0) classes.cacheWrite5mTokens = fiveMinutes + rest;
  if (oneHour > 0) classes.cacheWrite1hTokens = oneHour;
  return classes;
}
