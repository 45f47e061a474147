import { GatewayError } from '@gateway/errors';
import { maxCacheBreakpoints, type CacheControl, type ChatMessage, type ChatRequest } from '../chat-request.ts';
import type { ReasoningRequest } from '../reasoning.ts';
import { surfaceErrorTranslator, type MessageSource, type SurfaceSpelling } from '../surface-error-translator.ts';
import {
  cacheControlOf, customToolSchema, emptyTextRefusal, invalid, messagesRequestSchema, parseAt, refusedFields, type MessagesBody, type SourceMessage,
} from './messages-request-schema.ts';
import { assistantTurn, joinedText, sourceMessageChars, systemContentOf, systemTurn, userTurn, type TranslatedMessage } from './messages-turns.ts';

/** What a Messages body is parsed for: a message (`max_tokens` required) or a token count (`max_tokens` and `stream` not used). */
export type MessagesRequestPurpose = 'create' | 'count_tokens';

/** Limits of parseMessagesRequest. */
interface MessagesRequestLimits {
  /** Most characters of text one message (or the system prompt) may carry. */
  maxMessageChars: number;
}

/** A Messages request translated: the internal request the billed pipeline runs, and the renaming of its errors. */
interface MessagesRequest {
  /** The request in the gateway's internal form (chat completions' shape). */
  chat: ChatRequest;
  /**
   * The error the client sees for one the pipeline threw: a GatewayError naming an internal
   * param (the media check, a tool-call id that does not open, an adapter's refusal) names the
   * field of the Messages request instead, in Anthropic's dotted form
   * (`messages[3].tool_call_id` becomes `messages.2.content.0.tool_use_id`); anything else is unchanged.
   */
  translateError(error: unknown): unknown;
}

/** A JSON object (not null, not an array). */
function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Counts the request's cache_control breakpoints in Anthropic's prefix order (tools, system,
 * messages with the blocks inside tool results, then the top-level one, which stands for the last
 * block) and refuses, naming the field, a fifth one and a 1-hour one after a 5-minute one, as
 * Anthropic does. Runs on the validated body, so every breakpoint counted has a valid shape.
 */
function countCacheBreakpoints(body: Record<string, unknown>): number {
  let count = 0;
  let shortSeen = false;
  const visit = (holder: unknown, path: string) => {
    if (!isRecord(holder) || !isRecord(holder.cache_control)) return;
    const param = path === '' ? 'cache_control' : `${path}.cache_control`;
    count += 1;
    if (count > maxCacheBreakpoints) throw invalid(param, `A maximum of ${maxCacheBreakpoints} blocks with cache_control may be provided.`);
    const long = holder.cache_control.ttl === '1h';
    if (long && shortSeen) throw invalid(param, 'a cache_control with ttl "1h" must come before any with ttl "5m" (tools, then system, then messages).');
    if (!long) shortSeen = true;
  };
  const blocksOf = (value: unknown): unknown[] => (Array.isArray(value) ? value : []);
  blocksOf(body.tools).forEach((tool, index) => visit(tool, `tools.${index}`));
  blocksOf(body.system).forEach((block, index) => visit(block, `system.${index}`));
  blocksOf(body.messages).forEach((message, index) => {
    if (!isRecord(message)) return;
    blocksOf(message.content).forEach((block, blockIndex) => {
      const path = `messages.${index}.content.${blockIndex}`;
      if (isRecord(block)) blocksOf(block.content).forEach((inner, innerIndex) => visit(inner, `${path}.content.${innerIndex}`));
      visit(block, path);
    });
  });
  visit(body, '');
  return count;
}

/**
 * How the Messages surface names what the internal chat form names, for errors raised after the
 * translation; `toolIndexes[n]` is the client's index of internal tool n (deferred tools are not sent).
 */
const messagesSpellingOf = (toolIndexes: readonly number[]): SurfaceSpelling => ({
  conversation: 'messages',
  // An image_url part is an image block: its URL and detail are the block's `source`.
  partSuffixOf: (suffix) => (suffix === '.text' ? '.text' : suffix.startsWith('.image_url') ? '.source' : ''),
  callSuffixes: { '.id': '.id', '.function.name': '.name', '.function.arguments': '.input' },
  unrecorded: { toolCallId: (source) => source.path, call: (source) => source.contentPath },
  renamedParams: {
    max_completion_tokens: 'max_tokens',
    stop: 'stop_sequences',
    user: 'metadata.user_id',
    parallel_tool_calls: 'tool_choice.disable_parallel_tool_use',
    'tool_choice.function.name': 'tool_choice.name',
  },
  patternedParamOf(chatParam) {
    const tool = /^tools\[(\d+)\](?:\.function(.*))?$/.exec(chatParam);
    if (tool === null) return undefined;
    return `tools.${toolIndexes[Number(tool[1])] ?? tool[1]}${tool[2] === '.parameters' ? '.input_schema' : tool[2] === '.name' || tool[2] === '.description' ? tool[2] : ''}`;
  },
  // Anthropic's error shape has no param, so the message must name the field.
  paramlessErrors: true,
});

/** Anthropic's default effort: asking for it asks for what any model does anyway. */
const defaultMessagesEffort = 'high';

/** The request's `thinking` and `output_config.effort` in the gateway's form (judged against the model in planChat). */
function messagesReasoning(body: MessagesBody): ReasoningRequest | undefined {
  const reasoning: ReasoningRequest = {};
  const effort = body.output_config?.effort ?? undefined;
  if (effort !== undefined) reasoning.effort = { value: effort, param: 'output_config.effort', isSurfaceDefault: effort === defaultMessagesEffort };
  const thinking = body.thinking ?? undefined;
  if (thinking !== undefined) {
    const display = thinking.type !== 'disabled' && thinking.display !== undefined && thinking.display !== null ? { display: thinking.display } : {};
    reasoning.thinking = thinking.type === 'enabled'
      ? { type: 'enabled', budgetTokens: thinking.budget_tokens, param: 'thinking', ...display }
      : thinking.type === 'adaptive' ? { type: 'adaptive', param: 'thinking', ...display } : { type: 'disabled', param: 'thinking' };
  }
  return reasoning.effort === undefined && reasoning.thinking === undefined ? undefined : reasoning;
}

/** A custom tool the upstream is sent, and its index in the client's `tools`. */
interface SentTool {
  index: number;
  tool: { type: 'function'; function: Record<string, unknown>; cache_control?: CacheControl };
}

/**
 * The custom tools as chat tools, and the names of the deferred ones; a server tool (a versioned
 * `type`) is a 400 naming it. A tool with `defer_loading: true` is not sent: Anthropic keeps such a
 * tool out of the prompt (unbilled, uncallable) until a tool search loads it, and the gateway has
 * no tool search (its server tools are refused), so leaving it out is what Anthropic would do.
 */
function chatToolsOf(tools: NonNullable<MessagesBody['tools']>): { sent: SentTool[]; deferred: Set<string> } {
  const sent: SentTool[] = [];
  const deferred = new Set<string>();
  tools.forEach((tool, index) => {
    if (tool.type !== undefined && tool.type !== null && tool.type !== 'custom') {
      throw invalid(`tools.${index}.type`, `server tools ('${tool.type.slice(0, 64)}') are not supported by this gateway; define custom tools with name, description and input_schema.`);
    }
    const custom = parseAt(customToolSchema, tool, `tools.${index}`);
    if (custom.defer_loading === true) {
      deferred.add(custom.name);
      return;
    }
    sent.push({ index, tool: {
      type: 'function',
      function: {
        name: custom.name,
        ...(typeof custom.description === 'string' ? { description: custom.description } : {}),
        parameters: custom.input_schema,
      },
      ...cacheControlOf(custom.cache_control),
    } });
  });
  return { sent, deferred };
}

/**
 * The chat tool params of Anthropic's tools and tool_choice (auto → auto, any → required, tool →
 * that function, none → none), and the client's index of each internal tool.
 */
function toolParams(body: MessagesBody): { params: ChatRequest['params']; toolIndexes: number[] } {
  const { sent, deferred } = chatToolsOf(body.tools ?? []);
  const choice = body.tool_choice ?? undefined;
  if (choice?.type === 'tool' && deferred.has(choice.name)) {
    throw invalid('tool_choice.name', `the tool '${choice.name.slice(0, 64)}' is deferred (defer_loading) and this gateway has no tool search to load it.`);
  }
  const toolIndexes = sent.map((tool) => tool.index);
  if (sent.length === 0) {
    // An empty tools list is Anthropic's "no tools"; OpenAI refuses an empty one, and a choice of a tool needs tools.
    if (choice !== undefined && (choice.type === 'any' || choice.type === 'tool')) throw invalid('tool_choice', `tool_choice "${choice.type}" needs tools.`);
    return { params: {}, toolIndexes };
  }
  const params: ChatRequest['params'] = { tools: sent.map((tool) => tool.tool) };
  if (choice === undefined) return { params, toolIndexes };
  if (choice.type === 'tool' && !sent.some((tool) => tool.tool.function.name === choice.name)) {
    throw invalid('tool_choice.name', `no tool named '${choice.name.slice(0, 64)}' is defined in tools.`);
  }
  params.tool_choice = choice.type === 'auto' ? 'auto'
    : choice.type === 'any' ? 'required'
      : choice.type === 'none' ? 'none'
        : { type: 'function', function: { name: choice.name } };
  if (choice.type !== 'none' && choice.disable_parallel_tool_use === true) params.parallel_tool_calls = false;
  return { params, toolIndexes };
}

/**
 * Validates a parsed JSON body as an Anthropic Messages request and translates it into the
 * gateway's internal request (chat completions' shape), so the one billed pipeline serves it.
 * `system` becomes a leading system message; user turns become user messages (images as
 * `image_url` parts) and `tool` messages (tool_result blocks); assistant turns become assistant
 * messages with tool calls; a system message inside `messages` stays a system message at its place. Throws `invalid_request` whose message starts with the field at fault
 * in Anthropic's dotted form, including fields and blocks the gateway cannot honour. Nothing has
 * been reserved yet, so a refusal moves no money (NO_OVERSPEND, NOTHING_FREE). The answer also
 * records where each internal message came from, so a later refusal names the client's field.
 */
export function parseMessagesRequest(body: unknown, purpose: MessagesRequestPurpose, limits: MessagesRequestLimits): MessagesRequest {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new GatewayError('invalid_request', { publicMessage: 'The request body must be a JSON object.' });
  }
  for (const field in refusedFields) {
    const value = (body as Record<string, unknown>)[field];
    if (value !== undefined && value !== null) throw invalid(field, refusedFields[field]!);
  }
  const request = parseAt(messagesRequestSchema, body, '');
  if (purpose === 'create' && (request.max_tokens === undefined || request.max_tokens === null)) throw invalid('max_tokens', 'Field required');

  const messages: ChatMessage[] = [];
  const sources: MessageSource[] = [];
  const system = typeof request.system === 'string' ? request.system : joinedText(request.system ?? [], '\n\n');
  if (system.length > limits.maxMessageChars) throw invalid('system', `the system prompt may carry at most ${limits.maxMessageChars} characters of text.`);
  if (system !== '') {
    messages.push({ role: 'system', content: typeof request.system === 'string' ? system : systemContentOf(request.system ?? [], system) });
    sources.push({ path: 'system', contentPath: 'system', partPaths: [], callPaths: [] });
  }
  request.messages.forEach((message: SourceMessage, index) => {
    const path = `messages.${index}.content`;
    if (message.content === '' && message.role === 'user') throw invalid(path, emptyTextRefusal);
    const translated: TranslatedMessage[] = message.role === 'system' ? systemTurn(request.messages, index) : typeof message.content === 'string'
      ? (message.content === '' ? [] : [{
        message: { role: message.role, content: message.content },
        source: { path: `messages.${index}`, contentPath: path, partPaths: [], callPaths: [] },
      }])
      : message.role === 'user' ? userTurn(message.content, path) : assistantTurn(message.content, path);
    if (sourceMessageChars(translated) > limits.maxMessageChars) {
      throw invalid(`messages.${index}`, `a message may carry at most ${limits.maxMessageChars} characters of text.`);
    }
    for (const { message: chatMessage, source } of translated) {
      messages.push(chatMessage);
      sources.push(source);
    }
  });
  if (messages.every((message) => message.role === 'system')) {
    throw invalid('messages', 'no message has content the gateway can send.');
  }

  const cacheBreakpoints = countCacheBreakpoints(body as Record<string, unknown>);
  // The top-level breakpoint (automatic caching) marks the end of the conversation.
  if (request.cache_control !== undefined && request.cache_control !== null) messages[messages.length - 1] = { ...messages.at(-1)!, cache_control: request.cache_control };
  const { params, toolIndexes } = toolParams(request);
  if (request.temperature !== undefined && request.temperature !== null) params.temperature = request.temperature;
  if (request.top_p !== undefined && request.top_p !== null) params.top_p = request.top_p;
  if (request.stop_sequences !== undefined && request.stop_sequences !== null && request.stop_sequences.length > 0) params.stop = request.stop_sequences;
  const user = request.metadata?.user_id;
  if (user !== undefined && user !== null) params.user = user;
  const reasoning = messagesReasoning(request);
  const chat: ChatRequest = {
    model: request.model,
    messages,
    maxTokens: purpose === 'create' ? request.max_tokens ?? undefined : undefined,
    stream: purpose === 'create' && request.stream === true,
    includeUsage: false,
    params,
    ...(cacheBreakpoints > 0 ? { cacheBreakpoints } : {}),
    ...(reasoning === undefined ? {} : { reasoning }),
  };
  return { chat, translateError: surfaceErrorTranslator(messagesSpellingOf(toolIndexes), sources) };
}

