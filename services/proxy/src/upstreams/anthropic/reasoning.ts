import type { ChatMessage } from '../../domain/chat-request.ts';
import type { ReasoningBlock, ForwardedReasoning } from '../../domain/reasoning.ts';
import { isObject } from '../wire-values.ts';

// Reasoning on Anthropic upstreams: `thinking` and `output_config.effort` go up, earlier turns'
// thinking blocks go back first in their assistant turn (Anthropic requires it, signatures
// unchanged), and thinking / redacted_thinking blocks come back, streamed as thinking_delta and
// signature_delta.

/**
 * Whether the conversation continues a tool call whose turn carries no thinking: Anthropic refuses
 * thinking then (the last assistant turn of a tool loop must start with its thinking), which a
 * chat client, whose form has no place to send thinking back, cannot give.
 */
function continuesUnthoughtToolCall(messages: readonly ChatMessage[]): boolean {
  const last = messages.findLast((message) => message.role === 'assistant');
  return last?.tool_calls !== undefined && (last.reasoning === undefined || last.reasoning.length === 0);
}

/**
 * The request fields of a forwarded reasoning: `thinking` and `output_config`. Thinking the
 * gateway implied from an effort is left out where Anthropic would refuse it (a tool loop whose
 * earlier turn came back without its thinking); the client's own thinking never is.
 */
export function reasoningFields(reasoning: ForwardedReasoning | undefined, messages: readonly ChatMessage[]): Record<string, unknown> {
  const fields: Record<string, unknown> = {};
  const thinking = reasoning?.thinkingImplied === true && continuesUnthoughtToolCall(messages) ? undefined : reasoning?.thinking;
  if (thinking !== undefined) {
    const display = thinking.type !== 'disabled' && thinking.display !== undefined ? { display: thinking.display } : {};
    fields.thinking = thinking.type === 'enabled' ? { type: 'enabled', budget_tokens: thinking.budgetTokens, ...display } : { type: thinking.type, ...display };
  }
  if (reasoning?.effort !== undefined) fields.output_config = { effort: reasoning.effort };
  return fields;
}

/**
 * An earlier turn's reasoning as Anthropic blocks: thinking with its signature, redacted thinking
 * with its data. Unsigned thinking (another kind of upstream's, which Anthropic cannot verify and
 * would refuse) is left out, as that upstream itself would not have taken it back.
 */
export function historyReasoningBlocks(reasoning: readonly ReasoningBlock[] | undefined): Array<Record<string, unknown>> {
  const blocks: Array<Record<string, unknown>> = [];
  for (const block of reasoning ?? []) {
    if (block.type === 'redacted_thinking') blocks.push({ type: 'redacted_thinking', data: block.data });
    else if (block.signature !== '') blocks.push({ type: 'thinking', thinking: block.thinking, signature: block.signature });
  }
  return blocks;
}

/** The reasoning blocks of an answer's content, in order; undefined for none. */
export function answerReasoning(content: readonly unknown[]): ReasoningBlock[] | undefined {
  const blocks: ReasoningBlock[] = [];
  for (const block of content) {
    if (!isObject(block)) continue;
    if (block.type === 'thinking' && typeof block.thinking === 'string') {
      blocks.push({ type: 'thinking', thinking: block.thinking, signature: typeof block.signature === 'string' ? block.signature : '' });
    } else if (block.type === 'redacted_thinking' && typeof block.data === 'string') {
      blocks.push({ type: 'redacted_thinking', data: block.data });
    }
  }
  return blocks.length > 0 ? blocks : undefined;
}
