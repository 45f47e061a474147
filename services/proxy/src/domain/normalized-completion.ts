import type { ReasoningBlock } from './reasoning.ts';

/** A tool call of a completion choice, as clients see it. */
interface NormalizedToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

/** One token's log probability, as clients see it. */
export interface NormalizedTokenLogprob {
  token: string;
  logprob: number;
  bytes: number[] | null;
  top_logprobs: Array<{ token: string; logprob: number; bytes: number[] | null }>;
}

/** One choice of a completion, in the gateway's allowlisted form. */
export interface NormalizedChoice {
  index: number;
  content: string | null;
  refusal: string | null;
  toolCalls: NormalizedToolCall[];
  /** One of stop, length, tool_calls, content_filter, function_call. */
  finishReason: string;
  logprobs: { content: NormalizedTokenLogprob[] | null; refusal: NormalizedTokenLogprob[] | null } | null;
  /** The model's reasoning before its answer, when the upstream returned it; absent: none. */
  reasoning?: ReasoningBlock[];
}

/** A tool call fragment of a streamed choice, in OpenAI's chunk form. */
export interface StreamToolCallDelta {
  index: number;
  id?: string;
  type?: 'function';
  function?: { name?: string; arguments?: string };
}

/**
 * The delta of a streamed choice. `reasoning_content` is reasoning text (the vLLM/DeepSeek chat
 * convention, serialised as is); `reasoning_signature` (a thinking block's signature, ending it) and
 * `redacted_reasoning` (a redacted thinking block's data) are the gateway's own, never serialised
 * for chat clients (domain/completion-response.ts strips them).
 */
export interface StreamDelta {
  role?: 'assistant';
  content?: string;
  refusal?: string;
  tool_calls?: StreamToolCallDelta[];
  reasoning_content?: string;
  reasoning_signature?: string;
  redacted_reasoning?: string;
}

/** One choice of a chunk, in the gateway's allowlisted OpenAI chunk form (serialised as is). */
export interface StreamChoice {
  index: number;
  delta: StreamDelta;
  logprobs: { content: NormalizedTokenLogprob[] | null; refusal: NormalizedTokenLogprob[] | null } | null;
  /** One of stop, length, tool_calls, content_filter, function_call; null until the choice ends. */
  finish_reason: string | null;
}

/**
 * Tokens of one usage by price class, as the upstream reported them. The input
 * classes are parts of promptTokens and reasoningTokens is part of completionTokens, so plain
 * input = promptTokens − cachedInputTokens − cacheWrite5mTokens − cacheWrite1hTokens −
 * audioInputTokens − imageInputTokens. Absent means 0.
 */
export interface TokenClassCounts {
  /** Input tokens read from the upstream's prompt cache (OpenAI `cached_tokens`, Anthropic `cache_read_input_tokens`). */
  cachedInputTokens?: number;
  /** Input tokens written to the prompt cache with a 5-minute lifetime (Anthropic `ephemeral_5m_input_tokens`). */
  cacheWrite5mTokens?: number;
  /** Input tokens written to the prompt cache with a 1-hour lifetime (Anthropic `ephemeral_1h_input_tokens`). */
  cacheWrite1hTokens?: number;
  /** Output tokens the model spent reasoning (OpenAI `reasoning_tokens`; Anthropic counts thinking as output). */
  reasoningTokens?: number;
  /** Input tokens of audio (OpenAI `prompt_tokens_details.audio_tokens`). */
  audioInputTokens?: number;
  /** Input tokens of images, where the upstream reports them apart. */
  imageInputTokens?: number;
}

/** Token counts the upstream reported: the totals, and their price classes where known. */
export interface NormalizedUsage extends TokenClassCounts {
  /** Every input token, whatever its class. */
  promptTokens: number;
  /** Every output token, reasoning included. */
  completionTokens: number;
}

/** What the gateway takes from an upstream completion: choices, and usage when reported. */
export interface NormalizedCompletion {
  choices: NormalizedChoice[];
  usage: NormalizedUsage | undefined;
}

const standardFinishReasons = new Set(['stop', 'length', 'tool_calls', 'content_filter', 'function_call']);

/**
 * A finish reason clients understand: the upstream's when it is a standard one, otherwise the
 * nearest standard one (a vendor-specific reason says something about the vendor).
 */
export function standardFinishReason(reason: unknown, hasToolCalls: boolean): string {
  if (typeof reason === 'string' && standardFinishReasons.has(reason)) return reason;
  return hasToolCalls ? 'tool_calls' : 'stop';
}
