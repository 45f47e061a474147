import { GatewayError } from '@gateway/errors';
import { z } from 'zod';
import { paramOf, parseChatRequest, type ChatRequest, type ChatRequestLimits } from '../chat-request.ts';
import { isItemReference } from './stateful-input.ts';
import { surfaceErrorTranslator, type MessageSource, type SurfaceSpelling } from '../surface-error-translator.ts';
import { customToolCallOfItem, namespacedName, translateResponsesTools, type EchoedTool, type ResponsesToolNames } from './responses-tools.ts';
import type { EncryptedReasoningInput, ReasoningOutputOptions } from './responses-reasoning.ts';

/**
 * OpenAI's Responses API (`POST /v1/responses`): a request is translated into the gateway's
 * internal chat form (domain/chat-request.ts) and validated there too, so every provider kind
 * serves it through the existing adapters. Stored state (`store`, `previous_response_id`,
 * item_reference) is read before this, by the route (stateful-input.ts); what the gateway cannot
 * honour is a 400 naming the Responses parameter (docs/surfaces/responses.md).
 */

/** Most items one `input` may carry (the chat form's own message limit). */
const maxInputItems = 2048;

/** Why a conversation-state request is refused: conversations are not kept (stored responses are, see stateful-input.ts). */
const nothingStored = 'Conversations are not stored by this gateway';
/**
 * An item_reference that reaches the translation was not resolved: the organisation has storing
 * turned off. Says what to do instead, since the Vercel AI SDK's default provider sends references
 * on its own (earlier assistant text in a multi-turn conversation or a tool loop).
 */
const itemReferenceRefusal = 'Storing responses is turned off for this organisation, so an item_reference has nothing to refer to: send the item in full instead. '
  + 'With the Vercel AI SDK, set providerOptions: { openai: { store: false } } (it then sends earlier assistant text in full), or use the chat model (openai.chat(model)).';

/**
 * Top-level fields that need server-side state or a feature the gateway does not have: any
 * non-null value is a 400 naming the field. `background` is handled apart (its false value is
 * served); `store` and `previous_response_id` are read by the route (stateful-input.ts).
 */
const refusedFields: Readonly<Record<string, string>> = {
  conversation: `${nothingStored}; continue a response with previous_response_id, or send the whole conversation in input.`,
  prompt: 'Stored prompt templates are not supported by this gateway; send instructions and input.',
  context_management: 'Server-side context compaction is not supported by this gateway.',
  moderation: 'Moderation settings are not supported by this gateway.',
};

/** Input item types of built-in tools, server-side features and stored items: each is a 400 naming `input[i].type`. */
const builtInItemTypes = new Set([
  'file_search_call', 'computer_call', 'computer_call_output', 'web_search_call', 'image_generation_call', 'code_interpreter_call',
  'local_shell_call', 'local_shell_call_output', 'shell_call', 'shell_call_output', 'apply_patch_call', 'apply_patch_call_output',
  'mcp_list_tools', 'mcp_approval_request', 'mcp_approval_response', 'mcp_call',
  'tool_search_call', 'tool_search_output', 'additional_tools', 'configuration_update', 'compaction', 'compaction_trigger',
  'program', 'program_output',
]);

/** How much of the reasoning to show: every value shows what the upstream returns (docs/surfaces/responses.md). */
const reasoningSummarySchema = z.enum(['auto', 'concise', 'detailed'], { error: 'summary must be auto, concise or detailed' });

/** A reasoning item of `input`: the encrypted content the gateway returned (summary and content are not read: the sealed blocks hold them). */
const reasoningItemSchema = z.object({
  type: z.literal('reasoning'),
  encrypted_content: z.string({ error: 'encrypted_content must be a string' }).nullish(),
});

const positiveTokensSchema = z.number({ error: 'must be a positive integer' }).int('must be a positive integer').positive('must be a positive integer');

/** The Responses body fields the gateway reads; items, tools, tool_choice and text.format are read apart, each with its own path. */
const responsesRequestSchema = z.object({
  model: z.string({ error: 'model is required and must be a string' }).min(1, 'model must not be empty').max(256),
  input: z.union([z.string(), z.array(z.unknown())], { error: 'input is required and must be a string or an array of items' })
    // Checked apart from the union, whose one error would hide which limit was passed.
    .refine((input) => typeof input === 'string' || input.length > 0, 'input must not be empty')
    .refine((input) => typeof input === 'string' || input.length <= maxInputItems, `at most ${maxInputItems} input items are allowed`),
  instructions: z.string({ error: 'instructions must be a string' }).nullish(),
  max_output_tokens: positiveTokensSchema.nullish(),
  stream: z.boolean({ error: 'stream must be a boolean' }).nullish(),
  temperature: z.number().min(0).max(2).nullish(),
  top_p: z.number().min(0).max(1).nullish(),
  user: z.string().max(256).nullish(),
  parallel_tool_calls: z.boolean({ error: 'parallel_tool_calls must be a boolean' }).nullish(),
  // Codex CLI's session ids and workspace paths: read by no upstream, so never forwarded (docs/surfaces/responses.md, "Codex CLI").
  client_metadata: z.record(z.string(), z.unknown(), { error: 'client_metadata must be an object' }).nullish(),
  metadata: z.record(z.string().max(64, 'metadata keys are at most 64 characters'), z.string({ error: 'metadata values must be strings' }).max(512, 'metadata values are at most 512 characters'), {
    error: 'metadata must be an object of strings',
  }).refine((metadata) => Object.keys(metadata).length <= 16, 'metadata has at most 16 keys').nullish(),
  tools: z.array(z.unknown(), { error: 'tools must be an array' }).max(128, 'at most 128 tools are allowed').nullish(),
  text: z.object({
    format: z.unknown().optional(),
    // medium is the default: saying so changes nothing; any other verbosity would be silently ignored upstream.
    verbosity: z.literal('medium', { error: 'only the default verbosity (medium) is supported by this gateway' }).nullish(),
  }, { error: 'text must be an object' }).nullish(),
  truncation: z.enum(['auto', 'disabled'], { error: 'truncation must be auto or disabled' }).nullish(),
  store: z.boolean({ error: 'store must be a boolean' }).nullish(),
  background: z.boolean({ error: 'background must be a boolean' }).nullish(),
  include: z.array(z.string(), { error: 'include must be an array of strings' }).nullish(),
  top_logprobs: z.number().int().min(0).max(0, 'log probabilities are not supported by this gateway').nullish(),
  max_tool_calls: positiveTokensSchema.nullish(),
  reasoning: z.object({
    // Judged against the model's accepted efforts (domain/reasoning.ts).
    effort: z.string({ error: 'effort must be a string' }).min(1).max(32).nullish(),
    summary: reasoningSummarySchema.nullish(),
    // Deprecated spelling of summary.
    generate_summary: reasoningSummarySchema.nullish(),
  }, { error: 'reasoning must be an object' }).nullish(),
});

/** A message item: EasyInputMessage, or an input/output message item (its id, status and phase are not read). */
const messageItemSchema = z.object({
  type: z.literal('message').optional(),
  role: z.enum(['user', 'assistant', 'system', 'developer'], { error: 'role must be one of user, assistant, system, developer' }),
  content: z.union([z.string(), z.array(z.unknown())], { error: 'content must be a string or an array of content parts' }),
});

const functionCallItemSchema = z.object({
  type: z.literal('function_call'),
  call_id: z.string({ error: 'a function_call needs a string call_id' }).min(1, 'call_id must not be empty').max(256),
  name: z.string({ error: 'a function_call needs a string name' }).min(1, 'name must not be empty').max(64),
  namespace: z.string({ error: 'namespace must be a string' }).min(1).max(62).nullish(),
  arguments: z.string({ error: 'a function_call needs arguments as a JSON string' }),
});

const functionCallOutputItemSchema = z.object({
  type: z.enum(['function_call_output', 'custom_tool_call_output']),
  call_id: z.string({ error: 'a function_call_output needs the string call_id of its function_call' }).min(1, 'call_id must not be empty').max(256),
  output: z.union([z.string(), z.array(z.unknown()).min(1, 'output parts must not be empty')], { error: 'output must be a string or an array of input_text parts' }),
});

const textPartSchemas = {
  input_text: z.object({ type: z.literal('input_text'), text: z.string({ error: 'an input_text part needs a string "text"' }) }),
  output_text: z.object({ type: z.literal('output_text'), text: z.string({ error: 'an output_text part needs a string "text"' }) }),
  refusal: z.object({ type: z.literal('refusal'), refusal: z.string({ error: 'a refusal part needs a string "refusal"' }) }),
};

const inputImagePartSchema = z.object({
  type: z.literal('input_image'),
  image_url: z.string({ error: 'image_url must be a string' }).nullish(),
  file_id: z.string({ error: 'file_id must be a string' }).nullish(),
  detail: z.enum(['auto', 'low', 'high'], { error: 'detail must be auto, low or high' }).nullish(),
});

const toolChoiceSchema = z.union([
  z.enum(['none', 'auto', 'required']),
  z.object({ type: z.enum(['function', 'custom']), name: z.string().min(1) }),
], { error: 'tool_choice must be none, auto, required, {type: "function", name} or {type: "custom", name}' });

const textFormatSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('text') }),
  z.object({ type: z.literal('json_object') }),
  z.object({
    type: z.literal('json_schema'),
    name: z.string({ error: 'a json_schema format needs a string name' }).regex(/^[A-Za-z0-9_-]{1,64}$/, 'name is 1 to 64 of a-z, A-Z, 0-9, _ and -'),
    schema: z.record(z.string(), z.unknown(), { error: 'schema must be a JSON Schema object' }),
    description: z.string({ error: 'description must be a string' }).nullish(),
    strict: z.boolean({ error: 'strict must be a boolean' }).nullish(),
  }),
], { error: 'format must be {type: "text"}, {type: "json_object"} or {type: "json_schema", name, schema}' });

/** The request's fields a Response object repeats, in OpenAI's names, exactly as they appear in it. */
export interface ResponsesEchoedFields {
  instructions: string | null;
  max_output_tokens: number | null;
  /** The caller's metadata: echoed, never sent upstream. */
  metadata: Record<string, string>;
  parallel_tool_calls: boolean;
  temperature: number | null;
  top_p: number | null;
  text: { format: Record<string, unknown> };
  tool_choice: unknown;
  tools: EchoedTool[];
  truncation: 'auto' | 'disabled';
  /** Nothing is stored, whatever the request said (docs/surfaces/responses.md, "store"). */
  /** Whether this response is stored (docs/surfaces/responses.md, "store"). */
  store: boolean;
  background: false;
  /** The response this one continues, as the request named it. */
  previous_response_id: string | null;
  reasoning: { effort: string | null; summary: string | null };
  max_tool_calls: number | null;
  user?: string;
}

/** What the route read of stored state before the translation (stateful-input.ts). */
export interface StoredState {
  /** Whether the response will be stored. */
  store: boolean;
  previousResponseId: string | null;
  /** The continued response's context items, translated ahead of `input`. */
  priorItems: readonly unknown[];
}

/** A request that stores nothing and continues nothing. */
const unstored: StoredState = { store: false, previousResponseId: null, priorItems: [] };

/** A Responses request translated: the chat form the billed pipeline runs, and what its response repeats. */
export interface ResponsesRequest {
  /** The request in the gateway's internal form (chat completions' shape), validated as a chat request is. */
  chat: ChatRequest;
  echoed: ResponsesEchoedFields;
  /** The chat function names that stand for custom or namespaced tools: the response maps their calls back (responses-tools.ts). */
  toolNames: ResponsesToolNames;
  /**
   * The error the client sees for one the pipeline threw: a 400 (or 413) raised on the chat form
   * (by its validation, the media check, the estimate or an adapter) names the Responses parameter instead (`messages[3]`
   * becomes `input[2]`, `response_format` becomes `text.format`); anything else is unchanged.
   */
  translateError(error: unknown): unknown;
  /** What the request asked to be shown of the model's reasoning. */
  reasoningOutput: ReasoningOutputOptions;
  /** Reasoning items' encrypted content, for attachEncryptedReasoning once the seal is known. */
  encryptedReasoning: EncryptedReasoningInput[];
}

type ChatPart = { type: 'text'; text: string } | { type: 'image_url'; image_url: { url: string; detail?: string } };

interface ChatMessageBody {
  role: 'system' | 'developer' | 'user' | 'assistant' | 'tool';
  content: string | ChatPart[] | null;
  tool_calls?: Array<{ id: string; type: 'function'; function: { name: string; arguments: string } }>;
  tool_call_id?: string;
}

function invalid(param: string, publicMessage: string): GatewayError {
  return new GatewayError('invalid_request', { param, publicMessage });
}

/** Parses a value with a schema; the first issue is a 400 naming its path under `at`. */
function parseAt<T>(schema: z.ZodType<T>, value: unknown, at: ReadonlyArray<string | number>): T {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const issue = result.error.issues[0]!;
  const param = paramOf([...at, ...issue.path]);
  if (param === undefined) throw new GatewayError('invalid_request', { publicMessage: issue.message });
  throw invalid(param, `Invalid ${param}: ${issue.message}`);
}

/** The fields that need stored state or a feature the gateway lacks, refused before anything else is read. */
function refuseStatefulFields(body: Record<string, unknown>): void {
  for (const field in refusedFields) {
    const value = body[field];
    if (value !== undefined && value !== null) throw invalid(field, refusedFields[field]!);
  }
  if (body.background === true) {
    throw invalid('background', 'Background mode needs stored responses, which this gateway does not keep; omit background or set it to false.');
  }
  if (Array.isArray(body.include)) {
    const index = body.include.indexOf('message.output_text.logprobs');
    if (index >= 0) throw invalid(`include[${index}]`, 'Log probabilities are not supported by this gateway.');
  }
}

/** A message item's content parts as chat parts, each remembered by its path. */
function translateParts(parts: readonly unknown[], role: string, at: ReadonlyArray<string | number>, source: MessageSource): ChatPart[] {
  return parts.map((part, index): ChatPart => {
    const partAt = [...at, index];
    const param = paramOf(partAt)!;
    source.partPaths.push(param);
    const type = typeof part === 'object' && part !== null ? (part as { type?: unknown }).type : undefined;
    switch (type) {
      case 'input_text':
        return { type: 'text', text: parseAt(textPartSchemas.input_text, part, partAt).text };
      case 'output_text':
      case 'refusal': {
        // Earlier answers of the model come back as output_text (and refusal) parts of assistant items.
        if (role !== 'assistant') throw invalid(`${param}.type`, `A ${type} part belongs to an assistant message; use input_text.`);
        const parsed = type === 'output_text' ? parseAt(textPartSchemas.output_text, part, partAt).text : parseAt(textPartSchemas.refusal, part, partAt).refusal;
        return { type: 'text', text: parsed };
      }
      case 'input_image': {
        if (role === 'assistant') throw invalid(`${param}.type`, 'An input_image part belongs to a user, system or developer message.');
        const image = parseAt(inputImagePartSchema, part, partAt);
        if (image.file_id !== undefined && image.file_id !== null) {
          throw invalid(`${param}.file_id`, 'Files are not stored by this gateway, so an image cannot be given by file_id; send image_url (a URL or a data URL).');
        }
        if (image.image_url === undefined || image.image_url === null) throw invalid(`${param}.image_url`, 'An input_image part needs image_url (a URL or a data URL).');
        return { type: 'image_url', image_url: { url: image.image_url, ...(image.detail === undefined || image.detail === null ? {} : { detail: image.detail }) } };
      }
      case 'input_file':
        throw invalid(param, 'File inputs (input_file) are not supported by this gateway; send text parts, or images as input_image.');
      default:
        throw invalid(`${param}.type`, 'A content part is input_text, input_image, or (in an assistant message) output_text or refusal.');
    }
  });
}

/** A tool result's output as chat content: its text, or its input_text parts. */
function translateToolOutput(output: string | readonly unknown[], at: ReadonlyArray<string | number>, source: MessageSource): string | ChatPart[] {
  if (typeof output === 'string') return output;
  return output.map((part, index): ChatPart => {
    const partAt = [...at, index];
    source.partPaths.push(paramOf(partAt)!);
    const type = typeof part === 'object' && part !== null ? (part as { type?: unknown }).type : undefined;
    if (type !== 'input_text') throw invalid(paramOf(partAt)!, 'A function_call_output carries text: a string or input_text parts.');
    return { type: 'text', text: parseAt(textPartSchemas.input_text, part, partAt).text };
  });
}

/**
 * The chat messages of items under `root` (`input`, or `previous_response_id` for a continued
 * response's), appended to `messages` with their sources; encrypted reasoning items go to
 * `encrypted`, attached to the assistant message after them.
 */
function translateItems(items: readonly unknown[], messages: ChatMessageBody[], sources: MessageSource[], encrypted: EncryptedReasoningInput[], root = 'input'): void {
  /** Encrypted reasoning waiting for the assistant message it precedes. */
  let pending: Array<{ encryptedContent: string; param: string }> = [];
  /** Attaches pending reasoning to the message just pushed when it is the assistant's. */
  const attachPending = () => {
    const last = messages.at(-1);
    if (pending.length === 0 || last?.role !== 'assistant') return;
    for (const entry of pending) encrypted.push({ messageIndex: messages.length - 1, ...entry });
    pending = [];
  };
  items.forEach((item, index) => {
    const at = [root, index];
    const path = paramOf(at)!;
    if (typeof item !== 'object' || item === null || Array.isArray(item)) throw invalid(path, 'An input item must be an object.');
    const { type, role } = item as { type?: unknown; role?: unknown };
    if (isItemReference(item)) throw invalid(path, itemReferenceRefusal);
    if (type === 'message' || ((type === undefined || type === null) && role !== undefined)) {
      const message = parseAt(messageItemSchema, item, at);
      const source: MessageSource = { path, contentPath: `${path}.content`, partPaths: [], callPaths: [] };
      const content = typeof message.content === 'string' ? message.content : translateParts(message.content, message.role, [...at, 'content'], source);
      messages.push({ role: message.role, content });
      sources.push(source);
      attachPending();
      return;
    }
    if (type === 'function_call' || type === 'custom_tool_call') {
      const toolCall = type === 'custom_tool_call' ? customToolCallOfItem(item, at) : functionToolCallOfItem(item, at);
      // One assistant turn: the model's text and the calls it made right after it, or consecutive calls, are one chat message.
      const last = messages.at(-1);
      if (last !== undefined && last.role === 'assistant') {
        (last.tool_calls ??= []).push(toolCall);
        sources.at(-1)!.callPaths.push(path);
      } else {
        messages.push({ role: 'assistant', content: null, tool_calls: [toolCall] });
        sources.push({ path, contentPath: path, partPaths: [], callPaths: [path] });
      }
      attachPending();
      return;
    }
    if (type === 'function_call_output' || type === 'custom_tool_call_output') {
      const result = parseAt(functionCallOutputItemSchema, item, at);
      const source: MessageSource = { path, contentPath: `${path}.output`, partPaths: [], callPaths: [] };
      messages.push({ role: 'tool', tool_call_id: result.call_id, content: translateToolOutput(result.output, [...at, 'output'], source) });
      sources.push(source);
      return;
    }
    // The model's reasoning of an earlier turn: its encrypted content (the gateway's seal) goes
    // back to the upstream with the assistant message it precedes; without it there is nothing the
    // upstream could verify, and OpenAI itself keeps no reasoning without it (store: false).
    if (type === 'reasoning') {
      const reasoning = parseAt(reasoningItemSchema, item, at);
      if (reasoning.encrypted_content != null) pending.push({ encryptedContent: reasoning.encrypted_content, param: `${path}.encrypted_content` });
      return;
    }
    if (typeof type === 'string' && builtInItemTypes.has(type)) {
      throw invalid(`${path}.type`, `Input items of type ${type} belong to built-in tools or stored state, which this gateway does not support.`);
    }
    throw invalid(`${path}.type`, 'An input item is a message, a function_call, a custom_tool_call, their outputs, or a reasoning item.');
  });
}

/** A `function_call` input item as the chat form's tool call; a namespace's function goes by its name upstream (responses-tools.ts). */
function functionToolCallOfItem(item: unknown, at: ReadonlyArray<string | number>): { id: string; type: 'function'; function: { name: string; arguments: string } } {
  const call = parseAt(functionCallItemSchema, item, at);
  const name = call.namespace == null ? call.name : namespacedName(call.namespace, call.name);
  return { id: call.call_id, type: 'function', function: { name, arguments: call.arguments } };
}

/** `text.format` as chat's response_format (json_schema's fields move under `json_schema`). */
function translateTextFormat(format: z.infer<typeof textFormatSchema>): Record<string, unknown> {
  if (format.type !== 'json_schema') return { type: format.type };
  const jsonSchema: Record<string, unknown> = { name: format.name, schema: format.schema };
  if (format.description != null) jsonSchema.description = format.description;
  if (format.strict != null) jsonSchema.strict = format.strict;
  return { type: 'json_schema', json_schema: jsonSchema };
}

/**
 * How the Responses surface names what the internal chat form names: a message's source is its
 * item (or `instructions`, or `input` when it is a string), a tool message's id its item's `call_id`.
 */
const responsesSpelling: SurfaceSpelling = {
  conversation: 'input',
  partSuffixOf(suffix) {
    if (suffix === '.text') return '.text';
    if (suffix === '.image_url.url' || suffix === '.image_url') return '.image_url';
    if (suffix === '.image_url.detail') return '.detail';
    return '';
  },
  callSuffixes: { '.function.arguments': '.arguments', '.function.name': '.name', '.id': '.call_id' },
  unrecorded: { toolCallId: (source) => `${source.path}.call_id`, call: (source) => source.path },
  renamedParams: { max_tokens: 'max_output_tokens', max_completion_tokens: 'max_output_tokens', 'tool_choice.function.name': 'tool_choice.name' },
  patternedParamOf(chatParam) {
    if (chatParam.startsWith('response_format')) return `text.format${chatParam.slice('response_format'.length).replace(/^\.json_schema/, '')}`;
    const tool = /^tools\[(\d+)\]\.function(.*)$/.exec(chatParam);
    return tool === null ? undefined : `tools[${tool[1]}]${tool[2]}`;
  },
  paramlessErrors: false,
};

/**
 * Validates a parsed JSON body as a Responses request and translates it into the chat form:
 * `instructions` → a leading system message; message items → messages (input_text → text parts,
 * input_image → image_url parts, an assistant's output_text and refusal → text); function_call
 * items → an assistant message's tool_calls (consecutive ones, and the assistant text right
 * before them, are one message); function_call_output items → tool messages; function tools →
 * chat tools; text.format → response_format; max_output_tokens → max_tokens. Throws
 * `invalid_request` naming the Responses param at fault (e.g. `input[2].content[0].text`),
 * including conversations, background mode and an item_reference left unresolved (storing off).
 * `state` is what the route read of stored state (stateful-input.ts): the continued response's
 * items go ahead of `input`, and `store` / `previous_response_id` are echoed. Nothing here moves
 * money: it runs before the Reserve.
 */
export function parseResponsesRequest(body: unknown, limits: ChatRequestLimits, state: StoredState = unstored): ResponsesRequest {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new GatewayError('invalid_request', { publicMessage: 'The request body must be a JSON object.' });
  }
  refuseStatefulFields(body as Record<string, unknown>);
  const request = parseAt(responsesRequestSchema, body, []);
  const encryptedReasoning: EncryptedReasoningInput[] = [];

  const messages: ChatMessageBody[] = [];
  const sources: MessageSource[] = [];
  if (request.instructions != null && request.instructions !== '') {
    messages.push({ role: 'system', content: request.instructions });
    sources.push({ path: 'instructions', contentPath: 'instructions', partPaths: [], callPaths: [] });
  }
  // The continued response's conversation comes first, so the Reserve prices the whole prompt.
  translateItems(state.priorItems, messages, sources, encryptedReasoning, 'previous_response_id');
  if (typeof request.input === 'string') {
    messages.push({ role: 'user', content: request.input });
    sources.push({ path: 'input', contentPath: 'input', partPaths: [], callPaths: [] });
  } else {
    translateItems(request.input, messages, sources, encryptedReasoning);
  }

  const tools = translateResponsesTools(request.tools ?? []);
  const toolChoice = (body as { tool_choice?: unknown }).tool_choice ?? undefined;
  if (toolChoice !== undefined && toolChoice !== null) parseAt(toolChoiceSchema, toolChoice, ['tool_choice']);
  const format = request.text?.format === undefined || request.text.format === null
    ? undefined
    : parseAt(textFormatSchema, request.text.format, ['text', 'format']);

  const chatBody: Record<string, unknown> = { model: request.model, messages, stream: request.stream === true };
  if (request.max_output_tokens != null) chatBody.max_tokens = request.max_output_tokens;
  if (request.temperature != null) chatBody.temperature = request.temperature;
  if (request.top_p != null) chatBody.top_p = request.top_p;
  if (request.user != null) chatBody.user = request.user;
  if (request.parallel_tool_calls != null) chatBody.parallel_tool_calls = request.parallel_tool_calls;
  if (tools.chat.length > 0) chatBody.tools = tools.chat;
  if (toolChoice !== undefined && toolChoice !== null) {
    chatBody.tool_choice = typeof toolChoice === 'string' ? toolChoice : { type: 'function', function: { name: (toolChoice as { name: string }).name } };
  }
  if (format !== undefined) chatBody.response_format = translateTextFormat(format);
  // Kept apart per organisation before it leaves (domain/cache-scope.ts); parseChatRequest checks it.
  const promptCacheKey = (body as { prompt_cache_key?: unknown }).prompt_cache_key;
  if (promptCacheKey !== undefined && promptCacheKey !== null) chatBody.prompt_cache_key = promptCacheKey;

  const translateError = surfaceErrorTranslator(responsesSpelling, sources);

  let chat: ChatRequest;
  try {
    chat = parseChatRequest(chatBody, limits);
  } catch (error) {
    throw translateError(error);
  }
  const effort = request.reasoning?.effort ?? undefined;
  // OpenAI's default effort is medium: asking for it on a model without effort control asks for what it does anyway.
  if (effort !== undefined) chat = { ...chat, reasoning: { effort: { value: effort, param: 'reasoning.effort', isSurfaceDefault: effort === 'medium', impliesThinking: true } } };
  const summary = request.reasoning?.summary ?? request.reasoning?.generate_summary ?? null;

  return {
    chat,
    toolNames: tools.names,
    echoed: {
      instructions: request.instructions ?? null,
      max_output_tokens: request.max_output_tokens ?? null,
      metadata: request.metadata ?? {},
      parallel_tool_calls: request.parallel_tool_calls ?? true,
      temperature: request.temperature ?? null,
      top_p: request.top_p ?? null,
      text: { format: format ?? { type: 'text' } },
      tool_choice: toolChoice ?? 'auto',
      tools: tools.echoed,
      truncation: request.truncation ?? 'disabled',
      store: state.store,
      background: false,
      previous_response_id: state.previousResponseId,
      reasoning: { effort: effort ?? null, summary },
      max_tool_calls: request.max_tool_calls ?? null,
      ...(request.user == null ? {} : { user: request.user }),
    },
    translateError,
    reasoningOutput: { summary: summary !== null, encrypted: request.include?.includes('reasoning.encrypted_content') === true },
    encryptedReasoning,
  };
}
