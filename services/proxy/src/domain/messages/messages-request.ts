import { GatewayError } from '@gateway/errors';
import { z } from 'zod';
import { cacheControlSchema, maxCacheBreakpoints, type CacheControl, type ChatMessage, type ChatRequest } from '../chat-request.ts';
import type { ReasoningBlock, ReasoningRequest } from '../reasoning.ts';
import { surfaceErrorTranslator, type MessageSource, type SurfaceSpelling } from '../surface-error-translator.ts';

/** Most messages one request may carry (the chat surface's bound). */
const maxMessages = 2048;

/** Most tools one request may define, and most tool calls one assistant turn may carry (the chat surface's bounds). */
const maxTools = 128;

/** OpenAI allows at most 4 stop sequences; the internal request is chat's, so every upstream gets at most that many. */
const maxStopSequences = 4;

/**
 * Top-level fields of Anthropic's Messages API the gateway knows but cannot honour: sending one
 * (not null) is a 400 naming it, rather than a silent drop that would change what the caller gets.
 */
const refusedFields: Readonly<Record<string, string>> = {
  top_k: 'top_k is not supported by this gateway: OpenAI-compatible upstreams have no equivalent. Use temperature or top_p.',
  mcp_servers: 'MCP connectors (mcp_servers) are not supported by this gateway; run MCP servers on the client and pass their tools as custom tools.',
  container: 'Containers (code execution) are not supported by this gateway.',
};

/** Where a content block may appear, for the 400 naming a block that may not. */
const blocksByRole = {
  user: 'text, image and tool_result',
  assistant: 'text, tool_use, thinking and redacted_thinking',
} as const;

/** The refusal of an empty user text: Anthropic refuses empty text blocks, so an Anthropic-backed model would fail after the Reserve. */
const emptyTextRefusal = 'text content must not be empty (as Anthropic\'s API requires).';

/** Anthropic's missing-field wording when the input is absent, the rule otherwise. */
function required(rule: string): (issue: { input: unknown }) => string {
  return (issue) => (issue.input === undefined ? 'Field required' : rule);
}

const textBlockSchema = z.object({
  type: z.literal('text'),
  text: z.string({ error: required('text must be a string') }),
  // Citations are accepted and ignored; cache_control is carried to the upstream (cacheControlOf).
  cache_control: cacheControlSchema.nullish(),
});

const imageSourceSchema = z.discriminatedUnion('type', [
  z.object({
    type: z.literal('base64'),
    media_type: z.enum(['image/jpeg', 'image/png', 'image/gif', 'image/webp'], { error: "media_type must be one of 'image/jpeg', 'image/png', 'image/gif', 'image/webp'" }),
    data: z.string({ error: required('data must be a base64 string') }).min(1, 'data must not be empty'),
  }),
  z.object({ type: z.literal('url'), url: z.string({ error: required('url must be a string') }).min(1, 'url must not be empty') }),
], { error: 'source must be {type: "base64", media_type, data} or {type: "url", url}' });

const imageBlockSchema = z.object({ type: z.literal('image'), source: imageSourceSchema, cache_control: cacheControlSchema.nullish() });

const toolUseBlockSchema = z.object({
  type: z.literal('tool_use'),
  id: z.string({ error: required('id must be a string') }).min(1, 'id must not be empty').max(256),
  name: z.string({ error: required('name must be a string') }).min(1, 'name must not be empty').max(64),
  // A string is what the gateway itself emits for a model's arguments that are not a JSON object
  // (messages-response.ts): it goes back as those arguments unchanged, so such a turn can be echoed.
  input: z.union([z.record(z.string(), z.unknown()), z.string()], { error: required('input must be an object') }),
  cache_control: cacheControlSchema.nullish(),
});

/** A block as the first pass sees it: its type decides which schema checks it (parseBlock). */
const anyBlockSchema = z.looseObject({ type: z.string({ error: required('type must be a string') }) }, { error: 'a content block must be an object' });

const toolResultBlockSchema = z.object({
  type: z.literal('tool_result'),
  tool_use_id: z.string({ error: required('tool_use_id must be a string') }).min(1, 'tool_use_id must not be empty').max(256),
  content: z.union([z.string(), z.array(anyBlockSchema)], { error: 'content must be a string or an array of text and image blocks' }).nullish(),
  is_error: z.boolean({ error: 'is_error must be a boolean' }).nullish(),
  cache_control: cacheControlSchema.nullish(),
});

/** A thinking or redacted_thinking block of an assistant turn, as the gateway returned it (signature or data sealed). */
const reasoningBlockSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('thinking'), thinking: z.string({ error: required('thinking must be a string') }), signature: z.string({ error: required('signature must be a string') }) }),
  z.object({ type: z.literal('redacted_thinking'), data: z.string({ error: required('data must be a string') }) }),
]);

const customToolSchema = z.object({
  name: z.string({ error: required('name must be a string') })
    .regex(/^[a-zA-Z0-9_-]{1,64}$/, 'name must be 1 to 64 letters, digits, underscores or hyphens'),
  description: z.string({ error: 'description must be a string' }).nullish(),
  input_schema: z.looseObject({ type: z.literal('object', { error: 'input_schema.type must be "object"' }) }, { error: required('input_schema must be a JSON schema object') }),
  defer_loading: z.boolean({ error: 'defer_loading must be a boolean' }).nullish(),
  cache_control: cacheControlSchema.nullish(),
});

const disableParallelSchema = z.boolean({ error: 'disable_parallel_tool_use must be a boolean' }).nullish();

const toolChoiceSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('auto'), disable_parallel_tool_use: disableParallelSchema }),
  z.object({ type: z.literal('any'), disable_parallel_tool_use: disableParallelSchema }),
  z.object({ type: z.literal('tool'), name: z.string({ error: required('name must be a string') }).min(1), disable_parallel_tool_use: disableParallelSchema }),
  z.object({ type: z.literal('none') }),
], { error: 'tool_choice must be {type: "auto" | "any" | "tool" | "none"}' });

const messageSchema = z.object({
  role: z.enum(['user', 'assistant', 'system'], { error: required('role must be "user", "assistant" or "system"') }),
  content: z.union([z.string(), z.array(anyBlockSchema).min(1, 'content must not be an empty array')], {
    error: required('content must be a string or an array of content blocks'),
  }),
});

/**
 * Whether thinking is shown: "summarized" (the default) returns the thinking blocks, "omitted"
 * returns them with empty text (the signature still round-trips), as Anthropic does.
 */
const thinkingDisplay = z.enum(['summarized', 'omitted'], { error: 'display must be "summarized" or "omitted"' }).nullish();

const positiveTokens = z.number({ error: required('max_tokens must be a positive integer') })
  .int('max_tokens must be a positive integer').positive('max_tokens must be a positive integer');

/**
 * Context editing (the `context-management-2025-06-27` beta) as Claude Code 2.1 sends it whenever
 * thinking is on: `{"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]}`, which keeps
 * every thinking block, so it changes neither the prompt nor the price and is served (not
 * forwarded). Any other edit (clearing old tool uses, or thinking beyond `keep: "all"`) would
 * change what the model reads and what is billed, and the gateway does not perform it: a 400
 * naming the edit's field rather than an edit silently not done (docs/surfaces/messages.md).
 */
const claudeCodeContextManagementSchema = z.strictObject({
  edits: z.array(z.looseObject({
    type: z.literal('clear_thinking_20251015', { error: 'only clear_thinking_20251015 edits (with keep "all") are supported by this gateway: it does not edit the context, so the prompt is sent and billed as the client sent it' }),
    keep: z.literal('all', { error: 'only keep "all" is supported by this gateway: it does not clear thinking from the context' }),
  }, { error: 'an edit must be an object' }), { error: 'edits must be an array' }).nullish(),
}, { error: 'context_management must be an object with edits' });

/**
 * The Messages body the gateway accepts. Unknown fields are dropped, never forwarded (`service_tier`,
 * `cache_control`, `inference_geo`, ...); `thinking` and `output_config.effort` are
 * accepted and ignored, `context_management` when it changes nothing (docs/surfaces/messages.md says why). `null` counts as absent.
 */
const messagesRequestSchema = z.object({
  model: z.string({ error: required('model must be a string') }).min(1, 'model must not be empty').max(256),
  max_tokens: positiveTokens.nullish(),
  messages: z.array(messageSchema, { error: required('messages must be an array') })
    .min(1, 'messages must not be empty').max(maxMessages, `at most ${maxMessages} messages are allowed`),
  system: z.union([z.string(), z.array(textBlockSchema)], { error: 'system must be a string or an array of text blocks' }).nullish(),
  stop_sequences: z.array(z.string().min(1, 'a stop sequence must not be empty'), { error: 'stop_sequences must be an array of strings' })
    .max(maxStopSequences, `at most ${maxStopSequences} stop sequences are supported by this gateway`).nullish(),
  temperature: z.number({ error: 'temperature must be a number' }).min(0, 'temperature must be between 0 and 1').max(1, 'temperature must be between 0 and 1').nullish(),
  top_p: z.number({ error: 'top_p must be a number' }).min(0, 'top_p must be between 0 and 1').max(1, 'top_p must be between 0 and 1').nullish(),
  metadata: z.object({ user_id: z.string({ error: 'user_id must be a string' }).max(256).nullish() }, { error: 'metadata must be an object' }).nullish(),
  tools: z.array(z.looseObject({ type: z.string({ error: 'type must be a string' }).nullish() }, { error: 'a tool must be an object' }), { error: 'tools must be an array' })
    .max(maxTools, `at most ${maxTools} tools are allowed`).nullish(),
  tool_choice: toolChoiceSchema.nullish(),
  stream: z.boolean({ error: 'stream must be a boolean' }).nullish(),
  thinking: z.discriminatedUnion('type', [
    z.object({ type: z.literal('enabled'), budget_tokens: z.number({ error: required('budget_tokens must be an integer') }).int('budget_tokens must be an integer'), display: thinkingDisplay }),
    z.object({ type: z.literal('adaptive'), display: thinkingDisplay }),
    z.object({ type: z.literal('disabled') }),
  ], { error: 'thinking must be {type: "enabled", budget_tokens}, {type: "adaptive"} or {type: "disabled"}' }).nullish(),
  context_management: claudeCodeContextManagementSchema.nullish(),
  output_config: z.looseObject({
    format: z.null({ error: 'Structured outputs (output_config.format) are not supported on /v1/messages by this gateway.' }).optional(),
    // Judged against the model's accepted efforts (domain/reasoning.ts).
    effort: z.string({ error: 'effort must be a string' }).min(1).max(32).nullish(),
  }, { error: 'output_config must be an object' }).nullish(),
  // Anthropic's automatic caching: one breakpoint on the last block of the conversation.
  cache_control: cacheControlSchema.nullish(),
});

/** What a Messages body is parsed for: a message (`max_tokens` required) or a token count (`max_tokens` and `stream` not used). */
export type MessagesRequestPurpose = 'create' | 'count_tokens';

/** Limits of parseMessagesRequest. */
interface MessagesRequestLimits {
  /** Most characters of text one message (or the system prompt) may carry. */
  maxMessageChars: number;
}

type MessagesBody = z.infer<typeof messagesRequestSchema>;
type SourceMessage = MessagesBody['messages'][number];
type ChatContentPart = Exclude<ChatMessage['content'], string | null | undefined>[number];
type ChatToolCall = NonNullable<ChatMessage['tool_calls']>[number];

/**
 * An internal chat message and where it came from, in dotted paths: the message (`messages.i`),
 * the tool_result block of a `tool` message (its id: the block's `tool_use_id`), or `system`; its
 * content is `messages.i.content`, the single text block sent as a string, or a tool_result's `content`.
 */
interface TranslatedMessage {
  message: ChatMessage;
  source: MessageSource;
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

/** A 400 in Anthropic's manner: the message starts with the dotted path of the field at fault (e.g. `messages.0.content.1.source`). */
function invalid(path: string, message: string): GatewayError {
  if (path === '') return new GatewayError('invalid_request', { publicMessage: message });
  return new GatewayError('invalid_request', { param: path, publicMessage: `${path}: ${message}` });
}

/** A zod issue path as Anthropic names fields: dot-separated, indexes included. */
function dottedPath(prefix: string, path: readonly PropertyKey[]): string {
  return [prefix, ...path.map(String)].filter((segment) => segment !== '').join('.');
}

/** Parses a value with a schema; the first issue is a 400 naming its field under `prefix`. */
function parseAt<T>(schema: z.ZodType<T>, value: unknown, prefix: string): T {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const issue = result.error.issues[0]!;
  return throwInvalid(dottedPath(prefix, issue.path), issue.message);
}

function throwInvalid(path: string, message: string): never {
  throw invalid(path, message);
}

/** A block's breakpoint in the internal form (null counts as absent), as a spreadable field. */
function cacheControlOf(control: CacheControl | null | undefined): { cache_control?: CacheControl } {
  return control === undefined || control === null ? {} : { cache_control: control };
}

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
function joinedText(blocks: ReadonlyArray<{ text: string }>, separator: string): string {
  return blocks.map((block) => block.text).join(separator);
}

/**
 * A system prompt's internal content: its blocks joined by a blank line, or, when one carries a
 * breakpoint, the blocks as text parts (empty ones left out), so the breakpoint stays on its block.
 */
function systemContentOf(blocks: ReadonlyArray<z.infer<typeof textBlockSchema>>, joined: string): ChatMessage['content'] {
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
function userTurn(content: readonly z.infer<typeof anyBlockSchema>[], path: string): TranslatedMessage[] {
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
function assistantTurn(content: readonly z.infer<typeof anyBlockSchema>[], path: string): TranslatedMessage[] {
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
function systemTurn(messages: readonly SourceMessage[], index: number): TranslatedMessage[] {
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
function sourceMessageChars(translated: readonly TranslatedMessage[]): number {
  let chars = 0;
  for (const { message } of translated) {
    if (typeof message.content === 'string') chars += message.content.length;
    else if (Array.isArray(message.content)) for (const part of message.content) if (part.type === 'text') chars += part.text.length;
    for (const call of message.tool_calls ?? []) chars += call.function.name.length + call.function.arguments.length;
  }
  return chars;
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
