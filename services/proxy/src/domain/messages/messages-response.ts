import type { NormalizedCompletion } from '../normalized-completion.ts';
import { usageCostFields, type ClassUsage, type TokenUsage, type UsageCostFields } from '../pricing.ts';

/** Anthropic's stop reasons the gateway answers with. */
type MessagesStopReason = 'end_turn' | 'max_tokens' | 'tool_use' | 'refusal';

/** A content block of a Messages answer: text, or a call of a client tool (the id is the gateway's). */
type MessagesContentBlock =
  | { type: 'thinking'; thinking: string; signature: string }
  | { type: 'redacted_thinking'; data: string }
  | { type: 'text'; text: string }
  | { type: 'tool_use'; id: string; name: string; input: unknown };

/**
 * A Messages answer's `usage`: Anthropic's token counts plus the request's cost. As Anthropic's,
 * `input_tokens` is the input neither read from nor written to the prompt cache; the three add
 * up to the billed prompt. `cache_creation` splits the writes by lifetime when there were any.
 */
type MessagesUsage = {
  input_tokens: number;
  output_tokens: number;
  cache_creation_input_tokens: number;
  cache_read_input_tokens: number;
  cache_creation?: { ephemeral_5m_input_tokens: number; ephemeral_1h_input_tokens: number };
} & UsageCostFields;

/** The body of a non-streaming `POST /v1/messages` answer, exactly as clients receive it. */
interface MessagesBody {
  /** `msg_<hex>`, the gateway's own. */
  id: string;
  type: 'message';
  role: 'assistant';
  /** The Gateway Model slug. */
  model: string;
  content: MessagesContentBlock[];
  stop_reason: MessagesStopReason;
  /** Always null: no upstream tells which stop sequence matched (OpenAI's finish reason is `stop` either way). */
  stop_sequence: null;
  /** The billed usage with its cost: what the Settle debits (commercial) or records (internal). */
  usage: MessagesUsage;
}

/** The message id of a request: `msg_` and the request's UUID as 32 hex digits (Anthropic's ids have no dashes). */
export function messageIdOf(requestUuid: string): string {
  return `msg_${requestUuid.replaceAll('-', '')}`;
}

/**
 * Anthropic's stop reason for the gateway's finish reason: stop → end_turn, length (the
 * upstream's max_tokens or the gateway's cut at the Reserve, BOUNDED_OVERRUN) → max_tokens,
 * tool_calls → tool_use, content_filter → refusal.
 */
export function stopReasonOf(finishReason: string | null): MessagesStopReason {
  switch (finishReason) {
    case 'length': return 'max_tokens';
    case 'tool_calls':
    case 'function_call': return 'tool_use';
    case 'content_filter': return 'refusal';
    default: return 'end_turn';
  }
}

/** The `usage` of a Messages answer (and of a stream's message_delta) for a billed usage and its cost, µ₹. */
export function messagesUsage(usage: TokenUsage, costMicros: bigint, byClass?: readonly ClassUsage[]): MessagesUsage {
  const read = usage.cachedInputTokens ?? 0;
  const write5m = usage.cacheWrite5mTokens ?? 0;
  const write1h = usage.cacheWrite1hTokens ?? 0;
  return {
    // Never below 0, whatever an upstream reports: the classes are parts of promptTokens.
    input_tokens: Math.max(0, usage.promptTokens - read - write5m - write1h),
    output_tokens: usage.completionTokens,
    cache_creation_input_tokens: write5m + write1h,
    cache_read_input_tokens: read,
    ...(write5m + write1h > 0 ? { cache_creation: { ephemeral_5m_input_tokens: write5m, ephemeral_1h_input_tokens: write1h } } : {}),
    ...usageCostFields(costMicros, byClass),
  };
}

/**
 * A tool_use block's `input` from a tool call's arguments text: the parsed object when the
 * arguments are a JSON object, `{}` when they are empty, and otherwise (a model's malformed
 * call) the arguments text itself as a string, so nothing the model produced is lost and the
 * client's check of the tool input reports it as it would any wrong input. The request side
 * takes such a string `input` back as the arguments unchanged (messages-turns.ts), so a turn
 * holding it can be echoed; `{}` or a wrapper object would change what the model wrote.
 */
function toolInputOf(argumentsText: string): unknown {
  if (argumentsText.trim() === '') return {};
  try {
    const parsed: unknown = JSON.parse(argumentsText);
    if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)) return parsed;
  } catch {
    // Not JSON: delivered as text below.
  }
  return argumentsText;
}

/**
 * Builds a Messages answer from the allowlisted parts of a completion (its first choice): the
 * text (content, then any refusal) as one text block, then one tool_use block per tool call.
 * The id and `model` are the gateway's own and `usage` is what the request is billed for, so
 * nothing in the body identifies the upstream. A reply with neither text nor tool calls gets
 * one empty text block, so `content` is never empty.
 */
export function buildMessagesBody(input: {
  id: string;
  modelSlug: string;
  completion: NormalizedCompletion;
  billedUsage: TokenUsage;
  /** Cost of billedUsage at the model's prices, µ₹ (the Settle's figure). */
  costMicros: bigint;
  /** The same by token class, when it has classes (pricing.ts priceUsage). */
  costByClass?: readonly ClassUsage[] | undefined;
  /** The request's `thinking.display` was "omitted": thinking blocks keep their signature, not their text. */
  thinkingOmitted?: boolean;
}): MessagesBody {
  const choice = input.completion.choices[0];
  const text = (choice?.content ?? '') + (choice?.refusal ?? '');
  const toolCalls = choice?.toolCalls ?? [];
  // Thinking first, as Anthropic answers (signatures and data already sealed by the gateway).
  const content: MessagesContentBlock[] = (choice?.reasoning ?? [])
    .map((block) => (input.thinkingOmitted === true && block.type === 'thinking' ? { ...block, thinking: '' } : block));
  if (text !== '' || toolCalls.length === 0) content.push({ type: 'text', text });
  for (const call of toolCalls) content.push({ type: 'tool_use', id: call.id, name: call.function.name, input: toolInputOf(call.function.arguments) });
  return {
    id: input.id,
    type: 'message',
    role: 'assistant',
    model: input.modelSlug,
    content,
    stop_reason: stopReasonOf(choice?.finishReason ?? null),
    stop_sequence: null,
    usage: messagesUsage(input.billedUsage, input.costMicros, input.costByClass),
  };
}
