import type { GatewayError } from '@gateway/errors';
import type { z } from 'zod';
import type { ChatMessage } from '../chat-request.ts';
import type { ReasoningBlock } from '../reasoning.ts';
import type { MessageSource } from '../surface-error-translator.ts';
import {
  anyBlockSchema, blocksByRole, cacheControlOf, emptyTextRefusal, imageBlockSchema, invalid, maxTools, parseAt, reasoningBlockSchema,
  textBlockSchema, toolResultBlockSchema, toolUseBlockSchema,
  type ChatContentPart, type ChatToolCall, type SourceMessage,
} from './messages-request-schema.ts';

// Each Messages turn (user, assistant, a system message inside `messages`) as internal chat
// messages, with where each came from so a later refusal names the client's field.

/**
 * An internal chat message and where it came from, in dotted paths: the message (`messages.i`),
 * the tool_result block of a `tool` message (its id: the block's `tool_use_id`), or `system`; its
 * content is `messages.i.content`, the single text block sent as a string, or a tool_result's `content`.
 */
export interface TranslatedMessage {
  message: ChatMessage;
  source: MessageSource;
}

/** The chat `image_url` part of an Anthropic image block: a data URL for base64 data, the URL itself otherwise. */
function imagePartOf(block: unknown, path: string): ChatContentPart {
  const source = (block as { source?: unknown }).source;
  if (typeof source === 'object' && source !== null && (source as { type?: unknown }).type === 'file') {
    throw invalid(`${path}.source`, 'file sources are not supported: the gateway stores no files. Send the image as base64 or a url.');
  }
  const image = parseAt(imageBlockSchema, block, path);
  const url = image.source.type === 'base64' ? `data:${image.source.media_type};base64,${image.source.data}` : image.source.url;
  return { type: 'image_url', image_url: { url }, ...cacheControlOf(image.cache_control) };
}

/** The texts of a text block list, joined: how a system prompt or a tool result reads as one chat string. */
export function joinedText(blocks: ReadonlyArray<{ text: string }>, separator: string): string {
  return blocks.map((block) => block.text).join(separator);
}

/**
 * A system prompt's internal content: its blocks joined by a blank line, or, when one carries a
 * breakpoint, the blocks as text parts (empty ones left out), so the breakpoint stays on its block.
 */
export function systemContentOf(blocks: ReadonlyArray<z.infer<typeof textBlockSchema>>, joined: string): ChatMessage['content'] {
  if (!blocks.some((block) => block.cache_control !== undefined && block.cache_control !== null)) return joined;
  return blocks.filter((block) => block.text !== '').map((block) => ({ type: 'text' as const, text: block.text, ...cacheControlOf(block.cache_control) }));
}

/**
 * A tool_result block as a chat `tool` message, and the images it carried (chat `tool` messages
 * take text only, so the images go to the user message after the turn's tool messages). An
 * `is_error` result is marked `Error: ` in its text: chat has no error flag for a tool message.
 */
function toolResultOf(block: unknown, path: string): { message: ChatMessage; images: Array<{ part: ChatContentPart; path: string }> } {
  const result = parseAt(toolResultBlockSchema, block, path);
  const texts: string[] = [];
  const images: Array<{ part: ChatContentPart; path: string }> = [];
  // A breakpoint on the result or on a text inside it marks the end of the result: it is one text internally.
  let control = result.cache_control ?? undefined;
  if (typeof result.content === 'string') texts.push(result.content);
  else {
    (result.content ?? []).forEach((inner, index) => {
      const innerPath = `${path}.content.${index}`;
      if (inner.type === 'text') {
        const text = parseAt(textBlockSchema, inner, innerPath);
        texts.push(text.text);
        control ??= text.cache_control ?? undefined;
      }
      else if (inner.type === 'image') images.push({ part: imagePartOf(inner, innerPath), path: innerPath });
      else throw invalid(`${innerPath}.type`, `'${inner.type.slice(0, 64)}' blocks are not supported in a tool_result by this gateway (supported: text and image).`);
    });
  }
  const text = texts.join('\n');
  return {
    message: { role: 'tool', tool_call_id: result.tool_use_id, content: result.is_error === true ? `Error: ${text}` : text, ...cacheControlOf(control) },
    images,
  };
}

/** The content of a chat user message from its parts: a plain string for a single text part (what every upstream takes), the parts otherwise. */
function userMessageOf(parts: ChatContentPart[]): ChatMessage {
  if (parts.length === 1 && parts[0]!.type === 'text' && parts[0]!.cache_control === undefined) return { role: 'user', content: parts[0]!.text };
  return { role: 'user', content: parts };
}

/**
 * A user turn as chat messages: one `tool` message per tool_result (kept together, as chat
 * requires them right after the assistant's tool calls), then the images those results carried
 * and the turn's text and images, in order, as one user message. Refused before any Reserve, as
 * Anthropic refuses them (an upstream would, after the Reserve, as a 502 the client cannot act
 * on): a tool_result after a text or image block (Anthropic requires tool results first in their
 * turn; translated, the text would sit between the calls and their results), and empty text.
 */
export function userTurn(content: readonly z.infer<typeof anyBlockSchema>[], path: string): TranslatedMessage[] {
  const tools: TranslatedMessage[] = [];
  const parts: ChatContentPart[] = [];
  const partPaths: string[] = [];
  let textOrImageSeen = false;
  content.forEach((block, index) => {
    const blockPath = `${path}.${index}`;
    switch (block.type) {
      case 'text': {
        const { text, cache_control: control } = parseAt(textBlockSchema, block, blockPath);
        if (text === '') throw invalid(blockPath, emptyTextRefusal);
        parts.push({ type: 'text', text, ...cacheControlOf(control) });
        partPaths.push(blockPath);
        textOrImageSeen = true;
        break;
      }
      case 'image':
        parts.push(imagePartOf(block, blockPath));
        partPaths.push(blockPath);
        textOrImageSeen = true;
        break;
      case 'tool_result': {
        if (textOrImageSeen) {
          throw invalid(blockPath, 'tool_result blocks must come first in a user turn, before any text or image block (as Anthropic\'s API requires).');
        }
        const { message, images } = toolResultOf(block, blockPath);
        tools.push({ message, source: { path: blockPath, contentPath: `${blockPath}.content`, toolCallIdPath: `${blockPath}.tool_use_id`, partPaths: [], callPaths: [] } });
        for (const image of images) {
          parts.push(image.part);
          partPaths.push(image.path);
        }
        break;
      }
      default:
        throw refusedBlock(block.type, 'user', blockPath);
    }
  });
  if (parts.length === 0) return tools;
  // A single text part is sent as a plain string: its content is that block.
  const message = userMessageOf(parts);
  const source = { path: path.slice(0, -'.content'.length), contentPath: typeof message.content === 'string' ? partPaths[0]! : path, partPaths, callPaths: [] };
  return [...tools, { message, source }];
}

/**
 * An assistant turn as one chat assistant message: its text blocks joined, its tool_use blocks
 * as tool calls (arguments = the input as JSON, or a string input as it is), its thinking and
 * redacted_thinking blocks (first in the turn, as Anthropic requires) as the message's reasoning,
 * signatures as the gateway sealed them (opened in planChat). A turn with nothing left is dropped.
 */
export function assistantTurn(content: readonly z.infer<typeof anyBlockSchema>[], path: string): TranslatedMessage[] {
  const reasoning: ReasoningBlock[] = [];
  const reasoningPaths: string[] = [];
  let text = '';
  // The text blocks as parts, kept apart only when one carries a breakpoint (joined otherwise, as before).
  const textParts: ChatContentPart[] = [];
  const toolCalls: ChatToolCall[] = [];
  const callPaths: string[] = [];
  content.forEach((block, index) => {
    const blockPath = `${path}.${index}`;
    switch (block.type) {
      case 'text': {
        const { text: blockText, cache_control: control } = parseAt(textBlockSchema, block, blockPath);
        text += blockText;
        if (blockText !== '') textParts.push({ type: 'text', text: blockText, ...cacheControlOf(control) });
        break;
      }
      case 'tool_use': {
        const call = parseAt(toolUseBlockSchema, block, blockPath);
        if (toolCalls.length === maxTools) throw invalid(blockPath, `an assistant turn may carry at most ${maxTools} tool_use blocks.`);
        const argumentsText = typeof call.input === 'string' ? call.input : JSON.stringify(call.input);
        toolCalls.push({ id: call.id, type: 'function', function: { name: call.name, arguments: argumentsText }, ...cacheControlOf(call.cache_control) });
        callPaths.push(blockPath);
        break;
      }
      case 'thinking':
      case 'redacted_thinking':
        if (text !== '' || toolCalls.length > 0) throw invalid(blockPath, 'thinking blocks must come first in an assistant turn (as Anthropic\'s API requires).');
        reasoning.push(parseAt(reasoningBlockSchema, block, blockPath));
        reasoningPaths.push(blockPath);
        break;
      default:
        throw refusedBlock(block.type, 'assistant', blockPath);
    }
  });
  // A reasoning block that does not open is refused naming the turn's content (reasoning-blocks.ts says `messages[i].reasoning`).
  const source = { path: path.slice(0, -'.content'.length), contentPath: path, partPaths: [], callPaths };
  const assistantContent: ChatMessage['content'] = textParts.some((part) => part.cache_control !== undefined) ? textParts : text;
  const withReasoning = reasoning.length > 0 ? { reasoning } : {};
  if (toolCalls.length > 0) return [{ message: { role: 'assistant', content: text === '' ? null : assistantContent, tool_calls: toolCalls, ...withReasoning }, source }];
  if (text === '' && reasoning.length === 0) return [];
  return [{ message: { role: 'assistant', content: assistantContent, ...withReasoning }, source }];
}

/** The 400 of a block type a turn of `role` may not carry, naming the types it may. */
function refusedBlock(type: string, role: keyof typeof blocksByRole, path: string): GatewayError {
  return invalid(`${path}.type`, `'${type.slice(0, 64)}' blocks are not supported in ${role} turns by this gateway (supported: ${blocksByRole[role]}).`);
}

/**
 * A system message inside `messages` (Claude Code sends its environment block so) as one chat
 * system message at its place, its text blocks joined by a blank line like `system`'s. Anthropic's
 * placement rules are checked first, as its API refuses a breach with a 400: never the first
 * message, right after a user message (the assistant turn ending in a server tool use that
 * Anthropic also allows cannot occur here: server tools are refused), and the last message or
 * followed by an assistant message (so two never touch). Text only, and never empty.
 */
export function systemTurn(messages: readonly SourceMessage[], index: number): TranslatedMessage[] {
  const message = messages[index]!;
  const path = `messages.${index}`;
  if (index === 0) throw invalid(`${path}.role`, 'a system message cannot be the first message; put instructions for the whole conversation in system.');
  if (messages[index - 1]!.role !== 'user') throw invalid(`${path}.role`, 'a system message must immediately follow a user message (as Anthropic\'s API requires).');
  const next = messages[index + 1];
  if (next !== undefined && next.role !== 'assistant') {
    throw invalid(`${path}.role`, 'a system message must be the last message or be followed by an assistant message (as Anthropic\'s API requires).');
  }
  const blocks = typeof message.content === 'string' ? [{ type: 'text' as const, text: message.content }] : message.content.map((block, blockIndex) => {
    const blockPath = `${path}.content.${blockIndex}`;
    if (block.type !== 'text') throw invalid(`${blockPath}.type`, `'${block.type.slice(0, 64)}' blocks are not supported in system messages (supported: text).`);
    return parseAt(textBlockSchema, block, blockPath);
  });
  const text = joinedText(blocks, '\n\n');
  if (text === '') throw invalid(`${path}.content`, emptyTextRefusal);
  return [{ message: { role: 'system', content: systemContentOf(blocks, text) }, source: { path, contentPath: `${path}.content`, partPaths: [], callPaths: [] } }];
}

/** Characters of text a source message carries: text blocks, tool names and inputs, tool results' text. */
export function sourceMessageChars(translated: readonly TranslatedMessage[]): number {
  let chars = 0;
  for (const { message } of translated) {
    if (typeof message.content === 'string') chars += message.content.length;
    else if (Array.isArray(message.content)) for (const part of message.content) if (part.type === 'text') chars += part.text.length;
    for (const call of message.tool_calls ?? []) chars += call.function.name.length + call.function.arguments.length;
  }
  return chars;
}
