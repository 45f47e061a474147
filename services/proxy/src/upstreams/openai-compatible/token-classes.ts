import type { TokenClassCounts } from '../../domain/normalized-completion.ts';
import { countOf, objectOf } from '../wire-values.ts';

/**
 * The token price classes of an OpenAI-compatible `usage` object (a completion or a stream's
 * last chunk): `prompt_tokens_details.cached_tokens` are cached input and `.audio_tokens` audio
 * input (parts of `prompt_tokens`); `completion_tokens_details.reasoning_tokens` are reasoning
 * (part of `completion_tokens`). OpenAI writes to its cache for free, so it reports no writes.
 * Absent or malformed counts are left out (absent = 0). Shared by the adapter and its stream
 * decoder, and by the caching and reasoning work.
 */
export function openAiTokenClasses(usage: unknown): TokenClassCounts {
  const fields = objectOf(usage);
  if (fields === undefined) return {};
  const classes: TokenClassCounts = {};
  const prompt = objectOf(fields.prompt_tokens_details);
  const completion = objectOf(fields.completion_tokens_details);
  // Never more than prompt_tokens, of which the cached tokens are a part.
  const cached = Math.min(countOf(prompt?.cached_tokens), countOf(fields.prompt_tokens));
  if (cached > 0) classes.cachedInputTokens = cached;
  const audio = countOf(prompt?.audio_tokens);
  if (audio > 0) classes.audioInputTokens = audio;
  const reasoning = countOf(completion?.reasoning_tokens);
  if (reasoning > 0) classes.reasoningTokens = reasoning;
  return classes;
}
