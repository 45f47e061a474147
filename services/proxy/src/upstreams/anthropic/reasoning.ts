import type { ReasoningBlock, ForwardedReasoning } from '../../domain/reasoning.ts';

// Reasoning on Anthropic upstreams: `thinking` and `output_config.effort` go up, earlier turns'
// thinking blocks go back first in their assistant turn (Anthropic requires it, signatures
// unchanged), and thinking / redacted_thinking blocks come back, streamed as thinking_delta and
// signature_delta.

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The request fields of a forwarded reasoning: `thinking` and `output_config`. */
export function reasoningFields(reasoning: ForwardedReasoning | undefined): Record<string, unknown> {
  const fields: Record<string, unknown> = {};
  const thinking = reasoning?.thinking;
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
