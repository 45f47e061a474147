import type { TokenClassCounts } from '../../domain/normalized-completion.ts';
import { countOf, objectOf } from '../wire-values.ts';

/**
 * The token price classes of an Anthropic `usage` object (non-streaming, message_start or
 * message_delta): `cache_read_input_tokens` are cached input; cache writes are split by
 * `cache_creation.ephemeral_5m_input_tokens` / `ephemeral_1h_input_tokens`. The written total is
 * `cache_creation_input_tokens` (the breakdown's sum when only the breakdown is given), and
 * whatever the 1-hour count does not take is a 5-minute write (Anthropic's default lifetime, and the cheaper: a guess that
 * never bills more than the lifetime asked for), so every written token is in a class. Thinking
 * is counted in `output_tokens` with no count of its own, so no reasoning tokens come from here.
 * Absent classes are left out (absent = 0). Shared by the adapter and its stream decoder.
 */
export function anthropicTokenClasses(usage: unknown): TokenClassCounts {
  const fields = objectOf(usage);
  if (fields === undefined) return {};
  const classes: TokenClassCounts = {};
  const read = countOf(fields.cache_read_input_tokens);
  if (read > 0) classes.cachedInputTokens = read;
  const creation = objectOf(fields.cache_creation);
  // The total when given (a breakdown that says more is held to it), else the breakdown's sum.
  const written = fields.cache_creation_input_tokens === undefined || fields.cache_creation_input_tokens === null
    ? countOf(creation?.ephemeral_5m_input_tokens) + countOf(creation?.ephemeral_1h_input_tokens)
    : countOf(fields.cache_creation_input_tokens);
  const oneHour = Math.min(countOf(creation?.ephemeral_1h_input_tokens), written);
  if (written - oneHour > 0) classes.cacheWrite5mTokens = written - oneHour;
  if (oneHour > 0) classes.cacheWrite1hTokens = oneHour;
  return classes;
}

/** Prompt tokens of an Anthropic usage: fresh input plus cache writes and reads (all are input). */
export function anthropicPromptTokens(usage: unknown): number {
  const classes = anthropicTokenClasses(usage);
  return countOf(objectOf(usage)?.input_tokens) + (classes.cachedInputTokens ?? 0) + (classes.cacheWrite5mTokens ?? 0) + (classes.cacheWrite1hTokens ?? 0);
}
