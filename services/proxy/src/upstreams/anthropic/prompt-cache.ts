import type { CacheScope } from '../../domain/cache-scope.ts';
import type { CacheControl, ChatMessage } from '../../domain/chat-request.ts';

/** A block of Anthropic's `system`, with the client's breakpoint when it had one. */
export interface SystemBlock {
  type: 'text';
  text: string;
  cache_control?: CacheControl;
}

/** A chat tool as the internal request carries it (its breakpoint beside `function`). */
export interface ChatTool {
  function: { name: string; description?: unknown; parameters?: unknown };
  cache_control?: CacheControl;
}

/** A tool as Anthropic takes it. */
interface AnthropicTool {
  name: string;
  description?: string;
  input_schema: unknown;
  cache_control?: CacheControl;
}

/**
 * The `anthropic-beta` value that turned on 1-hour cache lifetimes: sent when a breakpoint asks
 * for one, so an account or API version that still needs it honours the `ttl` rather than refusing it.
 */
export const extendedCacheTtlBeta = 'extended-cache-ttl-2025-04-11';

/** Whether any breakpoint of the request (tools, parts, tool calls, messages) asks for a 1-hour lifetime. */
export function hasHourBreakpoint(request: { messages: readonly ChatMessage[]; params: { tools?: unknown } }): boolean {
  const long = (control: CacheControl | undefined) => control?.ttl === '1h';
  if (Array.isArray(request.params.tools) && (request.params.tools as ChatTool[]).some((tool) => long(tool.cache_control))) return true;
  return request.messages.some((message) => long(message.cache_control)
    || (Array.isArray(message.content) && message.content.some((part) => long(part.cache_control)))
    || (message.tool_calls ?? []).some((call) => long(call.cache_control)));
}

function textOf(content: ChatMessage['content']): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((part) => (part.type === 'text' ? part.text : '')).join('');
  return '';
}

/**
 * A system (or developer) message as system blocks: one block of its text, or, when one of its
 * parts carries a breakpoint, one block per text part (empty ones left out, as Anthropic refuses
 * them), each with its own. A message-level breakpoint goes on the last block.
 */
export function systemBlocksOf(message: ChatMessage): SystemBlock[] {
  let blocks: SystemBlock[];
  if (Array.isArray(message.content) && message.content.some((part) => part.cache_control !== undefined)) {
    blocks = message.content.flatMap((part): SystemBlock[] => (part.type === 'text' && part.text !== ''
      ? [{ type: 'text', text: part.text, ...(part.cache_control === undefined ? {} : { cache_control: part.cache_control }) }]
      : []));
  } else {
    blocks = [{ type: 'text', text: textOf(message.content) }];
  }
  if (message.cache_control !== undefined && blocks.length > 0) blocks[blocks.length - 1] = { ...blocks.at(-1)!, cache_control: message.cache_control };
  return blocks;
}

/**
 * Anthropic's `system` value: a string of the blocks' texts joined by a blank line when none
 * carries a breakpoint (the form every Anthropic model takes), the blocks otherwise; undefined
 * when there are none.
 */
export function systemValueOf(blocks: readonly SystemBlock[]): string | SystemBlock[] | undefined {
  if (blocks.length === 0) return undefined;
  if (blocks.every((block) => block.cache_control === undefined)) return blocks.map((block) => block.text).join('\n\n');
  return [...blocks];
}

/** The chat tools as Anthropic tools, each with its breakpoint. */
export function anthropicTools(tools: readonly ChatTool[]): AnthropicTool[] {
  return tools.map((tool) => ({
    name: tool.function.name,
    ...(typeof tool.function.description === 'string' ? { description: tool.function.description } : {}),
    input_schema: tool.function.parameters ?? { type: 'object', properties: {} },
    ...(tool.cache_control === undefined ? {} : { cache_control: tool.cache_control }),
  }));
}

/**
 * The tools and system prompt with the organisation's marker first in Anthropic's prefix order
 * (tools → system → messages): at the start of the first tool's description when there are
 * tools (every cached prefix holds the first tool whole), else as the system prompt's first
 * text. A breakpoint anywhere then caches a prefix that begins with the organisation's marker.
 */
export function scopeAnthropicPrompt(
  tools: AnthropicTool[] | undefined, system: SystemBlock[], scope: CacheScope | undefined,
): { tools: AnthropicTool[] | undefined; system: SystemBlock[] } {
  if (scope === undefined) return { tools, system };
  const [first, ...rest] = tools ?? [];
  if (first !== undefined) {
    const description = first.description === undefined ? scope.marker : `${scope.marker}\n\n${first.description}`;
    return { tools: [{ ...first, description }, ...rest], system };
  }
  const [head, ...tail] = system;
  // Joined into the first block when it has no breakpoint of its own (the same text the model reads either way).
  if (head !== undefined && head.cache_control === undefined) return { tools, system: [{ ...head, text: `${scope.marker}\n\n${head.text}` }, ...tail] };
  return { tools, system: [{ type: 'text', text: scope.marker }, ...system] };
}
