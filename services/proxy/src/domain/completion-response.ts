import type { NormalizedChoice, NormalizedCompletion, StreamChoice, TokenClassCounts } from './normalized-completion.ts';
import { toHttpError, type GatewayError } from '@gateway/errors';
import { usageCostFields, type ClassUsage, type TokenUsage, type UsageCostFields } from './pricing.ts';
import { reasoningTextOf } from './reasoning-blocks.ts';
import type { StreamClose, StreamRenderer } from './stream-renderer.ts';
import { countTextTokens, truncateToTokens } from './token-estimate.ts';
import type { TokenizerName } from './config-snapshot.ts';

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
      /** The model's reasoning text, when the upstream returned some (vLLM's and DeepSeek's field). */
      reasoning_content?: string;
    };
    finish_reason: string;
    logprobs: NormalizedCompletion['choices'][number]['logprobs'];
  }>;
  /** The billed usage, with its cost: what the Settle debits (commercial) or records (internal). */
  usage: ChatUsage;
}

/**
 * A chat completion's `usage`: OpenAI's token counts (`prompt_tokens_details.cached_tokens` when
 * the upstream's prompt cache served part of the prompt) plus the request's cost.
 */
type ChatUsage = {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  prompt_tokens_details?: { cached_tokens: number };
  completion_tokens_details: { reasoning_tokens: number };
} & UsageCostFields;

/**
 * Reasoning tokens of a billed usage (part of its completion tokens): the upstream's count when
 * the usage is the upstream's, else 0, never more than the completion tokens billed.
 */
export function reasoningTokensOf(usage: TokenUsage): number {
  // A billed usage is the upstream's NormalizedUsage when the upstream reported it (its classes
  // ride along); the gateway's own count carries none.
  const reported = (usage as TokenUsage & TokenClassCounts).reasoningTokens ?? 0;
  return Math.min(reported, usage.completionTokens);
}

/**
 * The `usage` object of a chat completion (and of a stream's usage chunk) for a billed usage and
 * its cost. Cache reads are OpenAI's `prompt_tokens_details.cached_tokens`, a part of
 * prompt_tokens, shown when there were any (Anthropic cache writes have no chat field: they stay
 * in prompt_tokens).
 */
function chatUsage(usage: TokenUsage, costMicros: bigint, byClass?: readonly ClassUsage[]): ChatUsage {
  const cached = usage.cachedInputTokens ?? 0;
  return {
    prompt_tokens: usage.promptTokens,
    completion_tokens: usage.completionTokens,
    total_tokens: usage.promptTokens + usage.completionTokens,
    ...(cached > 0 ? { prompt_tokens_details: { cached_tokens: cached } } : {}),
    completion_tokens_details: { reasoning_tokens: reasoningTokensOf(usage) },
    ...usageCostFields(costMicros, byClass),
  };
}

/**
 * A chunk's choices as chat clients get them: the gateway's own reasoning fields (a signature, a
 * redacted block: Anthropic's, which the chat form has no place for) left out, and a choice left
 * with nothing to say dropped; the choices themselves when they carry none (the common case).
 */
function chatChoices(choices: StreamChoice[]): StreamChoice[] {
  if (!choices.some((choice) => choice.delta.reasoning_signature !== undefined || choice.delta.redacted_reasoning !== undefined)) return choices;
  const shown: StreamChoice[] = [];
  for (const choice of choices) {
    const { reasoning_signature: _signature, redacted_reasoning: _redacted, ...delta } = choice.delta;
    if (Object.keys(delta).length === 0 && choice.finish_reason === null) continue;
    shown.push({ ...choice, delta });
  }
  return shown;
}

/**
 * The start of every SSE chunk frame of a streamed completion, up to `"choices":` (the rest is
 * the chunk's own). Like the non-streaming body below, the id, `created` and `model` are the
 * gateway's own (the Gateway Model slug), never the upstream's: this file is where the
 * upstream's identity is replaced for clients, in both paths. Serialised once per stream.
 */
function chunkFrameHead(input: { id: string; createdS: number; modelSlug: string }): string {
  return `data: {"id":${JSON.stringify(input.id)},"object":"chat.completion.chunk","created":${input.createdS},"model":${JSON.stringify(input.modelSlug)},"choices":`;
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
  /** Cost of billedUsage at the model's prices, µ₹ (the Settle's figure). */
  costMicros: bigint;
  /** The same by token class, when it has classes (pricing.ts priceUsage). */
  costByClass?: readonly ClassUsage[] | undefined;
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
        ...(choice.reasoning === undefined ? {} : { reasoning_content: reasoningTextOf(choice.reasoning) }),
      },
      finish_reason: choice.finishReason,
      logprobs: choice.logprobs,
    })),
    usage: chatUsage(input.billedUsage, input.costMicros, input.costByClass),
  };
}

/**
 * The chat completions surface's stream: each chunk a `chat.completion.chunk` frame under the
 * gateway's id, `created` and slug (chunkFrameHead), a cost stop as a `finish_reason: "length"`
 * chunk, the usage chunk (with its cost) when the client asked for it, then `[DONE]`; an error
 * after the stream opened is OpenAI's in-stream error form.
 */
export function createChatStreamRenderer(input: { id: string; createdS: number; modelSlug: string; includeUsage: boolean }): StreamRenderer {
  // Everything but `choices` is the gateway's own and the same in every chunk: serialised once.
  const head = chunkFrameHead(input);
  const tail = input.includeUsage ? ',"usage":null}\n\n' : '}\n\n';
  return {
    start: () => '',
    chunk(choices: StreamChoice[]): string {
      const shown = chatChoices(choices);
      return shown.length === 0 ? '' : head + JSON.stringify(shown) + tail;
    },
    text: (_text: string, json: string) => head + json + tail,
    close(close: StreamClose): string {
      let frames = '';
      if (close.ending === 'cost_stop') frames += `${head}[{"index":0,"delta":{},"logprobs":null,"finish_reason":"length"}]${tail}`;
      if (input.includeUsage) frames += `${head}[],"usage":${JSON.stringify(chatUsage(close.usage, close.costMicros, close.costByClass))}}\n\n`;
      return `${frames}data: [DONE]\n\n`;
    },
    // OpenAI's in-stream error form: one data event with an `error` object, then the end.
    fail: (error: GatewayError) => `data: ${JSON.stringify(toHttpError(error).body)}\n\n`,
  };
}

/** The gateway's own count of completion tokens, for when the upstream reported no usage. */
export function estimateCompletionTokens(completion: NormalizedCompletion, tokenizer: TokenizerName): number {
  let tokens = 0;
  for (const choice of completion.choices) {
    tokens += countTextTokens(choice.content ?? '', tokenizer) + countTextTokens(choice.refusal ?? '', tokenizer)
      + countTextTokens(reasoningTextOf(choice.reasoning), tokenizer);
    for (const call of choice.toolCalls) {
      tokens += countTextTokens(call.function.name, tokenizer) + countTextTokens(call.function.arguments, tokenizer);
    }
  }
  return tokens;
}

/**
 * A completion cut to at most maxTokens completion tokens (counted as estimateCompletionTokens
 * counts them), for a reply that outgrew its Reserve (BOUNDED_OVERRUN). Text is kept in reply order: each
 * choice's content, then its refusal, then its tool calls; the text that meets the limit is cut
 * at a token boundary and everything after it is dropped. A tool call is kept only whole: a call
 * with cut arguments would be half an instruction (unparseable JSON, or worse, parseable with a
 * different meaning), so a call that does not fit, and every call after it, is dropped. The
 * choice where the cut falls ends with `finish_reason: "length"` and no logprobs (they would
 * show the tokens not delivered); choices after it are dropped. `cut` is false, and the
 * completion returned unchanged, when it already fits.
 */
export function cutCompletion(completion: NormalizedCompletion, maxTokens: number, tokenizer: TokenizerName): { completion: NormalizedCompletion; cut: boolean } {
  let remaining = maxTokens;
  /** Takes a text whole when it fits what is left, else its start (and nothing is left). */
  const take = (text: string): { kept: string; whole: boolean } => {
    const tokens = countTextTokens(text, tokenizer);
    if (tokens <= remaining) { remaining -= tokens; return { kept: text, whole: true }; }
    const kept = truncateToTokens(text, remaining, tokenizer);
    remaining = 0;
    return { kept, whole: false };
  };
  const choices: NormalizedChoice[] = [];
  for (const choice of completion.choices) {
    // Reasoning comes first and is kept only whole: a cut thinking block's signature no longer
    // matches it, so the client could not send it back.
    const reasoningText = reasoningTextOf(choice.reasoning);
    if (reasoningText !== '') {
      const tokens = countTextTokens(reasoningText, tokenizer);
      if (tokens > remaining) {
        remaining = 0;
        const { reasoning: _dropped, ...rest } = choice;
        choices.push({ ...rest, content: '', refusal: null, toolCalls: [], finishReason: 'length', logprobs: null });
        return { completion: { ...completion, choices }, cut: true };
      }
      remaining -= tokens;
    }
    const content = choice.content === null ? undefined : take(choice.content);
    if (content !== undefined && !content.whole) {
      choices.push({ ...choice, content: content.kept, refusal: null, toolCalls: [], finishReason: 'length', logprobs: null });
      return { completion: { ...completion, choices }, cut: true };
    }
    const refusal = choice.refusal === null ? undefined : take(choice.refusal);
    if (refusal !== undefined && !refusal.whole) {
      choices.push({ ...choice, refusal: refusal.kept, toolCalls: [], finishReason: 'length', logprobs: null });
      return { completion: { ...completion, choices }, cut: true };
    }
    const toolCalls: NormalizedChoice['toolCalls'] = [];
    for (const call of choice.toolCalls) {
      const tokens = countTextTokens(call.function.name, tokenizer) + countTextTokens(call.function.arguments, tokenizer);
      if (tokens > remaining) {
        remaining = 0;
        choices.push({ ...choice, toolCalls, finishReason: 'length', logprobs: null });
        return { completion: { ...completion, choices }, cut: true };
      }
      remaining -= tokens;
      toolCalls.push(call);
    }
    choices.push(choice);
  }
  return { completion, cut: false };
}
