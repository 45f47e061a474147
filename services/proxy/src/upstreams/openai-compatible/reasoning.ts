import type { ChatMessage } from '../../domain/chat-request.ts';
import type { ReasoningBlock } from '../../domain/reasoning.ts';
import { isObject } from '../wire-values.ts';

// Reasoning on OpenAI-compatible upstreams: `reasoning_effort` goes up; reasoning text comes
// back as `reasoning_content` (vLLM, DeepSeek) or `reasoning` (newer vLLM, OpenRouter), in the
// message and in deltas, and its tokens as `completion_tokens_details.reasoning_tokens`.

/** The reasoning text of a message or delta: `reasoning_content`, else `reasoning` when it is text; undefined for none. */
export function reasoningTextIn(source: Record<string, unknown>): string | undefined {
  if (typeof source.reasoning_content === 'string') return source.reasoning_content;
  if (typeof source.reasoning === 'string') return source.reasoning;
  return undefined;
}

/** A completion message's reasoning as blocks (unsigned: these servers sign nothing); undefined for none. */
export function reasoningBlocksIn(message: unknown): ReasoningBlock[] | undefined {
  if (!isObject(message)) return undefined;
  const text = reasoningTextIn(message);
  return text === undefined || text === '' ? undefined : [{ type: 'thinking', thinking: text, signature: '' }];
}

/**
 * The messages as these upstreams take them: the reasoning of earlier turns left out (DeepSeek
 * refuses `reasoning_content` in input, and OpenAI's chat API has no field for it); the messages
 * themselves when none carries any (the common case).
 */
export function messagesWithoutReasoning(messages: ChatMessage[]): ChatMessage[] {
  if (!messages.some((message) => message.reasoning !== undefined)) return messages;
  const kept: ChatMessage[] = [];
  for (const message of messages) {
    if (message.reasoning === undefined) { kept.push(message); continue; }
    const { reasoning: _reasoning, ...rest } = message;
    // An assistant turn that was only reasoning (a Messages turn of thinking blocks) has nothing left to send.
    if ((rest.content === '' || rest.content == null) && rest.tool_calls === undefined) continue;
    kept.push(rest);
  }
  return kept;
}
