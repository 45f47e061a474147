import type { CacheScope } from '../../domain/cache-scope.ts';
import type { ChatMessage, ChatRequest } from '../../domain/chat-request.ts';

/**
 * Whether a provider is sent a `prompt_cache_key`: `always` (OpenAI and Azure take it as a
 * routing hint, so one organisation's requests meet its own cache), `when_sent` (a server of
 * unknown kind gets one only when the client sent one, believing it takes it), `never` (servers
 * known to refuse or ignore it; the client's key is then not forwarded).
 */
export type PromptCacheKeyPolicy = 'always' | 'when_sent' | 'never';

/** A message without its cache_control breakpoints (on the message, its parts and tool calls). */
function withoutBreakpoints(message: ChatMessage): ChatMessage {
  const { cache_control: _control, ...rest } = message;
  if (Array.isArray(rest.content)) rest.content = rest.content.map(({ cache_control: _part, ...part }) => part);
  if (rest.tool_calls !== undefined) rest.tool_calls = rest.tool_calls.map(({ cache_control: _call, ...call }) => call);
  return rest;
}

/**
 * The messages an OpenAI-compatible upstream is sent: without cache_control (these upstreams
 * cache every long prefix by themselves; OpenAI refuses the unknown field), and with the
 * organisation's marker at the very start of the prompt, where an automatic prefix cache starts:
 * in front of the first system (or developer) message's text, or as a system message of its own
 * when the conversation has none first. Copies only what changes.
 */
export function openAiCacheMessages(request: ChatRequest, scope: CacheScope | undefined): ChatMessage[] {
  let messages = (request.cacheBreakpoints ?? 0) > 0 ? request.messages.map(withoutBreakpoints) : request.messages;
  if (scope === undefined) return messages;
  const [first, ...rest] = messages;
  if (first !== undefined && (first.role === 'system' || first.role === 'developer')) {
    const content = typeof first.content === 'string'
      ? `${scope.marker}\n\n${first.content}`
      : [{ type: 'text' as const, text: `${scope.marker}\n\n` }, ...(Array.isArray(first.content) ? first.content : [])];
    messages = [{ ...first, content }, ...rest];
  } else {
    messages = [{ role: 'system', content: scope.marker }, ...messages];
  }
  return messages;
}

/** The tools param without cache_control on any tool (the same value when none had one). */
export function openAiCacheTools(tools: unknown): unknown {
  if (!Array.isArray(tools) || !tools.some((tool: { cache_control?: unknown }) => tool.cache_control !== undefined)) return tools;
  return tools.map(({ cache_control: _control, ...tool }: { cache_control?: unknown }) => tool);
}

/** The `prompt_cache_key` to send under a provider's policy, or undefined. */
export function openAiPromptCacheKey(request: ChatRequest, scope: CacheScope | undefined, policy: PromptCacheKeyPolicy): string | undefined {
  if (scope === undefined || policy === 'never') return undefined;
  if (policy === 'when_sent' && request.promptCacheKey === undefined) return undefined;
  return scope.promptCacheKey;
}
