import { encode } from 'gpt-tokenizer/encoding/o200k_base';
import type { ChatMessage, ChatRequest } from './chat-request.ts';

/** Tokens OpenAI's chat format adds per message (role and separators). */
export const tokensPerMessage = 3;
/** Tokens OpenAI's chat format adds once per request (the assistant reply primer). */
export const tokensPerRequest = 3;

// Special-token text such as "<|endoftext|>" in user content is counted as ordinary text;
// the tokenizer's default would throw on it.
const plainText = { disallowedSpecial: new Set<string>() };

/** Tokens of a text in the o200k_base encoding (GPT-4o family). */
export function countTextTokens(text: string): number {
  return text.length === 0 ? 0 : encode(text, plainText).length;
}

/** The texts a message carries: its content (each part), name and tool calls. */
function messageTexts(message: ChatMessage): string[] {
  const parts: string[] = [];
  if (typeof message.content === 'string') parts.push(message.content);
  else if (Array.isArray(message.content)) for (const part of message.content) parts.push(part.text);
  if (message.name !== undefined) parts.push(message.name);
  for (const call of message.tool_calls ?? []) parts.push(call.function.name, call.function.arguments);
  return parts;
}

/**
 * The prompt tokens a request is estimated at before any upstream call:
 * Σ (tokens of each message's texts + 3) + 3, plus the tokens of the tool definitions when
 * there are any (the upstream bills them as prompt too).
 */
export function estimatePromptTokens(request: Pick<ChatRequest, 'messages' | 'params'>): number {
  let tokens = tokensPerRequest;
  for (const message of request.messages) {
    tokens += tokensPerMessage;
    for (const text of messageTexts(message)) tokens += countTextTokens(text);
  }
  if (request.params.tools !== undefined) tokens += countTextTokens(JSON.stringify(request.params.tools));
  return tokens;
}
