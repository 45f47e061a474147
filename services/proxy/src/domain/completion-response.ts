import type { NormalizedCompletion } from './normalized-completion.ts';
import type { TokenUsage } from './pricing.ts';
import { countTextTokens, type TokenizerName } from './token-estimate.ts';

/** The body of a successful non-streaming chat completion, exactly as clients receive it. */
export interface ChatCompletionBody {
  id: string;
  object: 'chat.completion';
  /** Unix seconds. */
  created: number;
  /** The Gateway Model slug. */
  model: string;
  choices: Array<{
    index: number;
    message: {
      role: 'assistant';
      content: string | null;
      refusal: string | null;
      tool_calls?: Array<{ id: string; type: 'function'; function: { name: string; arguments: string } }>;
    };
    finish_reason: string;
    logprobs: NormalizedCompletion['choices'][number]['logprobs'];
  }>;
  usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number };
}

/**
 * Builds the client's response from the allowlisted parts of an upstream completion. The id,
 * `created` and `model` are the gateway's own, and `usage` is what the request is billed for,
 * so nothing in the body identifies the upstream.
 */
export function buildChatCompletionBody(input: {
  id: string;
  createdS: number;
  modelSlug: string;
  completion: NormalizedCompletion;
  billedUsage: TokenUsage;
}): ChatCompletionBody {
  return {
    id: input.id,
    object: 'chat.completion',
    created: input.createdS,
    model: input.modelSlug,
    choices: input.completion.choices.map((choice) => ({
      index: choice.index,
      message: {
        role: 'assistant',
        content: choice.content,
        refusal: choice.refusal,
        ...(choice.toolCalls.length > 0 ? { tool_calls: choice.toolCalls } : {}),
      },
      finish_reason: choice.finishReason,
      logprobs: choice.logprobs,
    })),
    usage: {
      prompt_tokens: input.billedUsage.promptTokens,
      completion_tokens: input.billedUsage.completionTokens,
      total_tokens: input.billedUsage.promptTokens + input.billedUsage.completionTokens,
    },
  };
}

/** The gateway's own count of completion tokens, for when the upstream reported no usage. */
export function estimateCompletionTokens(completion: NormalizedCompletion, tokenizer: TokenizerName): number {
  let tokens = 0;
  for (const choice of completion.choices) {
    tokens += countTextTokens(choice.content ?? '', tokenizer) + countTextTokens(choice.refusal ?? '', tokenizer);
    for (const call of choice.toolCalls) {
      tokens += countTextTokens(call.function.name, tokenizer) + countTextTokens(call.function.arguments, tokenizer);
    }
  }
  return tokens;
}
