// Reading a conversation as the fake does: its text, word counts (the fake's tokens), the reply it
// gives, and the checks a real vendor makes on tool calls and system messages.
import { withoutDirectives, type Directives } from './directives.ts';

/** The parts of an OpenAI chat message the fake reads. */
export interface ChatMessageLike {
  role?: unknown;
  content?: unknown;
}

const echoedChars = 200;

/** Text of a message content: a string, or the text parts of an array. */
function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content
      .map((part: unknown) => (typeof part === 'object' && part !== null && 'text' in part && typeof part.text === 'string' ? part.text : ''))
      .join(' ');
  }
  return '';
}

/** Number of whitespace-separated words of a text. */
export function countWords(text: string): number {
  return text.split(/\s+/).filter((word) => word.length > 0).length;
}

/** Tokens the fake bills per image: GPT-4o's low-detail figure, whatever the image. */
const fakeImageTokens = 85;

/** Image parts of a message content: OpenAI `image_url` parts and Anthropic `image` blocks. */
function imageCount(content: unknown): number {
  if (!Array.isArray(content)) return 0;
  return content.filter((part: unknown) => isObjectLike(part) && (part.type === 'image_url' || part.type === 'image')).length;
}

/** The fake's prompt token count: words across all message contents plus 3 per message, plus 85 per image. */
export function fakePromptTokens(messages: readonly ChatMessageLike[]): number {
  return messages.reduce((sum, message) => sum + countWords(textOf(message.content)) + 3 + fakeImageTokens * imageCount(message.content), 0);
}

/** The reply the fake gives to a conversation, before any max_tokens cut. */
export function fakeReplyText(messages: readonly ChatMessageLike[], directives: Directives): string {
  if (directives.replyWords !== undefined) {
    return Array.from({ length: directives.replyWords }, (_, i) => `w${i + 1}`).join(' ');
  }
  const lastUser = lastUserText(messages);
  return `Hello from the demo upstream! You said: ${withoutDirectives(lastUser).slice(0, echoedChars)}`;
}

/** Text of the last user message of a conversation ('' when there is none). */
export function lastUserText(messages: readonly ChatMessageLike[]): string {
  for (let i = messages.length - 1; i >= 0; i -= 1) {
    const message = messages[i];
    if (message?.role === 'user') return textOf(message.content);
  }
  return '';
}

/** The reply's words after the max_tokens cut (unless the directives say to ignore it). */
export function replyWords(messages: readonly ChatMessageLike[], directives: Directives, maxTokens: number | undefined): { words: string[]; cut: boolean } {
  const words = fakeReplyText(messages, directives).split(' ').filter((w) => w.length > 0);
  if (maxTokens !== undefined && words.length > maxTokens && !directives.ignoreMaxTokens) return { words: words.slice(0, maxTokens), cut: true };
  return { words, cut: false };
}

/** Whether a value is a positive safe integer. */
export function isPositiveInteger(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value > 0;
}

/** The arguments of the tool call `[[fake:tool_call=NAME]]` asks for, as JSON text: the message echoed. */
export function toolCallArguments(messages: readonly ChatMessageLike[], directives: Directives): string {
  if (directives.toolArg !== undefined) return JSON.stringify({ [directives.toolArg.key]: directives.toolArg.value });
  return JSON.stringify({ query: withoutDirectives(lastUserText(messages)).slice(0, 40) });
}

/** The words `[[fake:tool_text=N]]` asks a tool-calling reply to write before its call (none without it). */
export function toolTextWords(directives: Directives): string[] {
  return Array.from({ length: directives.toolText ?? 0 }, (_, i) => `w${i + 1}`);
}

/** A JSON text cut into pieces of 8 characters: how a vendor streams a tool call's arguments. */
export function argumentPieces(json: string): string[] {
  const pieces: string[] = [];
  for (let i = 0; i < json.length; i += 8) pieces.push(json.slice(i, i + 8));
  return pieces;
}

/** Whether a value is a plain object (not null, not an array). */
export function isObjectLike(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Whether the last message hands a tool's result back (an OpenAI `tool` message, or an Anthropic `tool_result` block). */
export function endsWithToolResult(messages: readonly unknown[]): boolean {
  // An agent may add a system message after its tool results (Claude Code does); the turn still answers them.
  const last = messages.findLast((message) => !isObjectLike(message) || message.role !== 'system');
  if (!isObjectLike(last)) return false;
  if (last.role === 'tool') return true;
  return Array.isArray(last.content) && last.content.some((block) => isObjectLike(block) && block.type === 'tool_result');
}

/**
 * Why Anthropic's API would refuse a `role: "system"` message inside `messages`, or undefined when
 * every one is placed as it allows: not first, right after a user message, last or followed by an
 * assistant message, and text only (a string or text blocks).
 */
export function misplacedSystemMessage(messages: readonly ChatMessageLike[]): string | undefined {
  for (let index = 0; index < messages.length; index += 1) {
    const message = messages[index]!;
    if (message.role !== 'system') continue;
    if (index === 0) return `messages.${index}: a system message cannot be the first message`;
    if (messages[index - 1]!.role !== 'user') return `messages.${index}: a system message must follow a user message`;
    const next = messages[index + 1];
    if (next !== undefined && next.role !== 'assistant') return `messages.${index}: a system message must be last or followed by an assistant message`;
    const content: unknown = message.content;
    if (Array.isArray(content) && !content.every((block) => isObjectLike(block) && block.type === 'text')) {
      return `messages.${index}.content: system messages take text blocks only`;
    }
  }
  return undefined;
}

/**
 * The first tool-call id a conversation answers that no earlier assistant turn called, as a
 * vendor refuses it: OpenAI's tool messages (`tool_call_id`) against assistant `tool_calls`,
 * Anthropic's `tool_result` blocks against assistant `tool_use` blocks. Undefined when all match.
 */
export function unmatchedToolCallId(messages: readonly unknown[]): string | undefined {
  const called = new Set<string>();
  for (const message of messages) {
    if (!isObjectLike(message)) continue;
    if (message.role === 'assistant' && Array.isArray(message.tool_calls)) {
      for (const call of message.tool_calls) if (isObjectLike(call) && typeof call.id === 'string') called.add(call.id);
    }
    if (message.role === 'tool' && typeof message.tool_call_id === 'string' && !called.has(message.tool_call_id)) return message.tool_call_id;
    if (!Array.isArray(message.content)) continue;
    for (const block of message.content) {
      if (!isObjectLike(block)) continue;
      if (block.type === 'tool_use' && typeof block.id === 'string') called.add(block.id);
      if (block.type === 'tool_result' && typeof block.tool_use_id === 'string' && !called.has(block.tool_use_id)) return block.tool_use_id;
    }
  }
  return undefined;
}
