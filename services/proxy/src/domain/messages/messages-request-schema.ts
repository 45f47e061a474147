import { GatewayError } from '@gateway/errors';
import { z } from 'zod';
import { cacheControlSchema, type CacheControl, type ChatMessage } from '../chat-request.ts';

// The Anthropic Messages body the gateway accepts, block by block, and its 400s in Anthropic's
// manner (the dotted path of the field at fault first); messages-request.ts translates what passes.

/** Most messages one request may carry (the chat surface's bound). */
const maxMessages = 2048;

/** Most tools one request may define, and most tool calls one assistant turn may carry (the chat surface's bounds). */
export const maxTools = 128;

/** OpenAI allows at most 4 stop sequences; the internal request is chat's, so every upstream gets at most that many. */
const maxStopSequences = 4;

/**
 * Top-level fields of Anthropic's Messages API the gateway knows but cannot honour: sending one
 * (not null) is a 400 naming it, rather than a silent drop that would change what the caller gets.
 */
export const refusedFields: Readonly<Record<string, string>> = {
  top_k: 'top_k is not supported by this gateway: OpenAI-compatible upstreams have no equivalent. Use temperature or top_p.',
  mcp_servers: 'MCP connectors (mcp_servers) are not supported by this gateway; run MCP servers on the client and pass their tools as custom tools.',
  container: 'Containers (code execution) are not supported by this gateway.',
};

/** Where a content block may appear, for the 400 naming a block that may not. */
export const blocksByRole = {
  user: 'text, image and tool_result',
  assistant: 'text, tool_use, thinking and redacted_thinking',
} as const;

/** The refusal of an empty user text: Anthropic refuses empty text blocks, so an Anthropic-backed model would fail after the Reserve. */
export const emptyTextRefusal = 'text content must not be empty (as Anthropic\'s API requires).';

/** Anthropic's missing-field wording when the input is absent, the rule otherwise. */
function required(rule: string): (issue: { input: unknown }) => string {
  return (issue) => (issue.input === undefined ? 'Field required' : rule);
}

/** A text block (of a turn, of `system`, of a tool_result). */
export const textBlockSchema = z.object({
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

/** An image block: base64 data or a URL. */
export const imageBlockSchema = z.object({ type: z.literal('image'), source: imageSourceSchema, cache_control: cacheControlSchema.nullish() });

/** A tool_use block of an assistant turn. */
export const toolUseBlockSchema = z.object({
  type: z.literal('tool_use'),
  id: z.string({ error: required('id must be a string') }).min(1, 'id must not be empty').max(256),
  name: z.string({ error: required('name must be a string') }).min(1, 'name must not be empty').max(64),
  // A string is what the gateway itself emits for a model's arguments that are not a JSON object
  // (messages-response.ts): it goes back as those arguments unchanged, so such a turn can be echoed.
  input: z.union([z.record(z.string(), z.unknown()), z.string()], { error: required('input must be an object') }),
  cache_control: cacheControlSchema.nullish(),
});

/** A block as the first pass sees it: its type decides which schema checks it (parseBlock). */
export const anyBlockSchema = z.looseObject({ type: z.string({ error: required('type must be a string') }) }, { error: 'a content block must be an object' });

/** A tool_result block of a user turn; its content is text and image blocks. */
export const toolResultBlockSchema = z.object({
  type: z.literal('tool_result'),
  tool_use_id: z.string({ error: required('tool_use_id must be a string') }).min(1, 'tool_use_id must not be empty').max(256),
  content: z.union([z.string(), z.array(anyBlockSchema)], { error: 'content must be a string or an array of text and image blocks' }).nullish(),
  is_error: z.boolean({ error: 'is_error must be a boolean' }).nullish(),
  cache_control: cacheControlSchema.nullish(),
});

/** A thinking or redacted_thinking block of an assistant turn, as the gateway returned it (signature or data sealed). */
export const reasoningBlockSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('thinking'), thinking: z.string({ error: required('thinking must be a string') }), signature: z.string({ error: required('signature must be a string') }) }),
  z.object({ type: z.literal('redacted_thinking'), data: z.string({ error: required('data must be a string') }) }),
]);

/** A custom tool of `tools` (a server tool is refused before this schema is tried). */
export const customToolSchema = z.object({
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
export const messagesRequestSchema = z.object({
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

/** A Messages body as the schema accepts it. */
export type MessagesBody = z.infer<typeof messagesRequestSchema>;
/** One entry of a Messages body's `messages`. */
export type SourceMessage = MessagesBody['messages'][number];
/** One part of an internal chat message's content (text or image_url). */
export type ChatContentPart = Exclude<ChatMessage['content'], string | null | undefined>[number];
/** One tool call of an internal chat assistant message. */
export type ChatToolCall = NonNullable<ChatMessage['tool_calls']>[number];

/** A 400 in Anthropic's manner: the message starts with the dotted path of the field at fault (e.g. `messages.0.content.1.source`). */
export function invalid(path: string, message: string): GatewayError {
  if (path === '') return new GatewayError('invalid_request', { publicMessage: message });
  return new GatewayError('invalid_request', { param: path, publicMessage: `${path}: ${message}` });
}

/** A zod issue path as Anthropic names fields: dot-separated, indexes included. */
function dottedPath(prefix: string, path: readonly PropertyKey[]): string {
  return [prefix, ...path.map(String)].filter((segment) => segment !== '').join('.');
}

/** Parses a value with a schema; the first issue is a 400 naming its field under `prefix`. */
export function parseAt<T>(schema: z.ZodType<T>, value: unknown, prefix: string): T {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const issue = result.error.issues[0]!;
  return throwInvalid(dottedPath(prefix, issue.path), issue.message);
}

/** invalid() as an expression that throws (parseAt returns its value). */
function throwInvalid(path: string, message: string): never {
  throw invalid(path, message);
}

/** A block's breakpoint in the internal form (null counts as absent), as a spreadable field. */
export function cacheControlOf(control: CacheControl | null | undefined): { cache_control?: CacheControl } {
  return control === undefined || control === null ? {} : { cache_control: control };
}
