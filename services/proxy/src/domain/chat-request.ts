import { GatewayError } from '@gateway/errors';
import { z } from 'zod';
import type { GatewayModelEntry } from './config-snapshot.ts';
import type { ReasoningBlock, ReasoningRequest } from './reasoning.ts';

/** Most messages one request may carry. */
const maxMessages = 2048;

/** Default for the most characters of text (content parts, name, tool call arguments) one message may carry. */
const defaultMaxMessageChars = 524_288;

/**
 * OpenAI request fields the gateway knows but cannot honour: sending one is a 400 naming it,
 * rather than a silent drop that would change what the caller gets.
 */
const unsupportedFields: Readonly<Record<string, string>> = {
  audio: 'Audio output is not supported by this gateway.',
  prediction: 'Predicted outputs are not supported by this gateway.',
  functions: 'The deprecated "functions" parameter is not supported; use "tools".',
  function_call: 'The deprecated "function_call" parameter is not supported; use "tool_choice".',
  web_search_options: 'Web search is not supported by this gateway.',
};

/**
 * A prompt-cache breakpoint, in Anthropic's form: the prefix up to the end of the block that
 * carries it is cached for `ttl` (5 minutes when absent). Forwarded to Anthropic upstreams; an
 * OpenAI-compatible upstream caches by itself and is not sent it (docs/proxy.md, "What the request may contain").
 */
export const cacheControlSchema = z.object({
  type: z.literal('ephemeral', { error: 'cache_control.type must be "ephemeral"' }),
  ttl: z.enum(['5m', '1h'], { error: 'cache_control.ttl must be "5m" or "1h"' }).optional(),
}, { error: 'cache_control must be {type: "ephemeral", ttl?: "5m" | "1h"}' });

/** A prompt-cache breakpoint as validated (and as forwarded to Anthropic upstreams). */
export type CacheControl = z.infer<typeof cacheControlSchema>;

const textPartSchema = z.object({
  type: z.literal('text'),
  text: z.string({ error: 'a text part needs a string "text"' }),
  cache_control: cacheControlSchema.optional(),
});

/** An image by URL or `data:` URL; what a model may take, and what it counts, is decided per model (docs/proxy.md). */
const imagePartSchema = z.object({
  type: z.literal('image_url'),
  image_url: z.object({
    url: z.string({ error: 'an image_url part needs a string "url"' }).min(1, 'the image url must not be empty'),
    detail: z.enum(['auto', 'low', 'high'], { error: 'detail must be auto, low or high' }).optional(),
  }, { error: 'an image_url part needs an "image_url" object' }),
  cache_control: cacheControlSchema.optional(),
});

/** Base64 audio in one of OpenAI's input formats. */
const audioPartSchema = z.object({
  type: z.literal('input_audio'),
  input_audio: z.object({
    data: z.string({ error: 'an input_audio part needs base64 "data"' }).min(1, 'the audio data must not be empty'),
    format: z.enum(['wav', 'mp3'], { error: 'format must be wav or mp3' }),
  }, { error: 'an input_audio part needs an "input_audio" object' }),
  cache_control: cacheControlSchema.optional(),
});

const contentPartSchema = z.discriminatedUnion('type', [textPartSchema, imagePartSchema, audioPartSchema], {
  error: 'a content part is {type: "text"}, {type: "image_url"} or {type: "input_audio"}',
});

const contentSchema = z.union([z.string(), z.array(contentPartSchema).min(1, 'content parts must not be empty')], {
  error: 'content must be a string or a non-empty array of content parts',
});

const toolCallSchema = z.object({
  id: z.string().min(1),
  type: z.literal('function'),
  function: z.object({ name: z.string().min(1), arguments: z.string() }),
  cache_control: cacheControlSchema.optional(),
});

const messageSchema = z.object({
  role: z.enum(['system', 'user', 'assistant', 'tool', 'developer'], {
    error: 'role must be one of system, user, assistant, tool, developer',
  }),
  content: contentSchema.nullish(),
  name: z.string().min(1).max(256).optional(),
  tool_calls: z.array(toolCallSchema).min(1).max(128).optional(),
  tool_call_id: z.string().min(1).max(256).optional(),
  /** A breakpoint at the end of the message's content (a tool message's result, or a string content). */
  cache_control: cacheControlSchema.optional(),
}).superRefine((message, context) => {
  const contentMissing = message.content === undefined || message.content === null;
  if (contentMissing && !(message.role === 'assistant' && message.tool_calls !== undefined)) {
    context.addIssue({ code: 'custom', path: ['content'], message: 'content is required (it may be null only on an assistant message with tool_calls)' });
  }
  if (message.tool_calls !== undefined && message.role !== 'assistant') {
    context.addIssue({ code: 'custom', path: ['tool_calls'], message: 'tool_calls are allowed only on assistant messages' });
  }
  if (message.role === 'tool' && message.tool_call_id === undefined) {
    context.addIssue({ code: 'custom', path: ['tool_call_id'], message: 'a tool message needs tool_call_id' });
  }
});

const positiveTokensSchema = z.number({ error: 'must be a positive integer' }).int('must be a positive integer').positive('must be a positive integer');
const penaltySchema = z.number().min(-2).max(2);

/**
 * The chat completion body the gateway accepts. Fields outside this schema are dropped, never
 * forwarded; fields inside it are forwarded only in their validated form. `null` counts as absent,
 * as OpenAI's API treats it.
 */
const chatRequestSchema = z.object({
  model: z.string({ error: 'model is required and must be a string' }).min(1, 'model must not be empty').max(256),
  messages: z.array(messageSchema, { error: 'messages is required and must be an array' })
    .min(1, 'messages must not be empty')
    .max(maxMessages, `at most ${maxMessages} messages are allowed`),
  max_tokens: positiveTokensSchema.nullish(),
  max_completion_tokens: positiveTokensSchema.nullish(),
  stream: z.boolean({ error: 'stream must be a boolean' }).nullish(),
  stream_options: z.object({ include_usage: z.boolean({ error: 'include_usage must be a boolean' }).nullish() }, {
    error: 'stream_options must be an object',
  }).nullish(),
  logprobs: z.boolean().nullish(),
  top_logprobs: z.number().int().min(0).max(20).nullish(),
  parallel_tool_calls: z.boolean().nullish(),
  modalities: z.array(z.string()).nullish()
    .refine((modalities) => modalities === undefined || modalities === null || modalities.every((m) => m === 'text'), 'only the "text" modality is supported'),
  temperature: z.number().min(0).max(2).nullish(),
  top_p: z.number().min(0).max(1).nullish(),
  stop: z.union([z.string(), z.array(z.string()).max(4)], { error: 'stop must be a string or an array of at most 4 strings' }).nullish(),
  seed: z.number().int().nullish(),
  presence_penalty: penaltySchema.nullish(),
  frequency_penalty: penaltySchema.nullish(),
  user: z.string().max(256).nullish(),
  n: z.number().int().nullish().refine((n) => n === undefined || n === null || n === 1, 'only n = 1 is supported'),
  response_format: z.looseObject({ type: z.enum(['text', 'json_object', 'json_schema']) }).nullish(),
  tools: z.array(z.object({
    type: z.literal('function'),
    function: z.looseObject({ name: z.string().min(1).max(64) }),
    cache_control: cacheControlSchema.optional(),
  })).max(128).nullish(),
  prompt_cache_key: z.string({ error: 'prompt_cache_key must be a string' }).min(1, 'prompt_cache_key must not be empty').max(1024).nullish(),
  tool_choice: z.union([
    z.enum(['none', 'auto', 'required']),
    z.object({ type: z.literal('function'), function: z.object({ name: z.string().min(1) }) }),
  ], { error: 'tool_choice must be none, auto, required or {type: "function", function: {name}}' }).nullish(),
  logit_bias: z.record(z.string().regex(/^\d+$/, 'logit_bias keys are token ids'), z.number().min(-100).max(100)).nullish(),
  // Judged against the model's accepted efforts (domain/reasoning.ts), so any string passes here.
  reasoning_effort: z.string({ error: 'reasoning_effort must be a string' }).min(1, 'reasoning_effort must not be empty').max(32).nullish(),
});

/**
 * A message as validated (and as forwarded). `reasoning` is the model's reasoning of an earlier
 * assistant turn that a surface carries back (Messages thinking blocks, Responses reasoning
 * items), signatures opened; only an adapter whose upstream takes it back sends it.
 */
export type ChatMessage = z.infer<typeof messageSchema> & { reasoning?: ReasoningBlock[] };

/** One part of a message's content array: text, an image (`image_url`) or audio (`input_audio`). */
export type ChatContentPart = z.infer<typeof contentPartSchema>;

/** The optional OpenAI parameters the gateway forwards when present (see docs/proxy.md). */
const forwardedParams = [
  'temperature', 'top_p', 'stop', 'seed', 'presence_penalty', 'frequency_penalty', 'user', 'n',
  'response_format', 'tools', 'tool_choice', 'logit_bias', 'logprobs', 'top_logprobs', 'parallel_tool_calls',
] as const;

/** Name of a forwarded optional parameter. */
export type ForwardedParam = (typeof forwardedParams)[number];

/** A validated chat completion request. */
export interface ChatRequest {
  /** The Gateway Model slug asked for. */
  model: string;
  messages: ChatMessage[];
  /** max_tokens (or its newer alias max_completion_tokens) when the caller gave one. */
  maxTokens: number | undefined;
  /** Whether the caller asked for an SSE stream. */
  stream: boolean;
  /** Whether a streaming caller asked for the final usage chunk (`stream_options.include_usage`). */
  includeUsage: boolean;
  /** Forwarded optional parameters, only those present. */
  params: Partial<Record<ForwardedParam, unknown>>;
  /** How many cache_control breakpoints the request carries (at most 4); absent means none. */
  cacheBreakpoints?: number;
  /**
   * The client's `prompt_cache_key` (chat, Responses): never forwarded as it is, only inside the
   * organisation's own key (domain/cache-scope.ts).
   */
  promptCacheKey?: string;
  /** What the request asks of the model's reasoning, judged against the model in planChat (domain/reasoning.ts). */
  reasoning?: ReasoningRequest;
}

/** Formats a zod issue path the way OpenAI names parameters, e.g. `messages[0].content`. */
export function paramOf(path: readonly PropertyKey[]): string | undefined {
  let param = '';
  for (const segment of path) {
    if (typeof segment === 'number') param += `[${segment}]`;
    else param += param === '' ? String(segment) : `.${String(segment)}`;
  }
  return param === '' ? undefined : param;
}

/** Characters of text a message carries (content parts, name, tool call names and arguments). */
function messageChars(message: ChatMessage): number {
  let chars = message.name?.length ?? 0;
  if (typeof message.content === 'string') chars += message.content.length;
  else if (Array.isArray(message.content)) for (const part of message.content) if (part.type === 'text') chars += part.text.length;
  for (const call of message.tool_calls ?? []) chars += call.function.name.length + call.function.arguments.length;
  return chars;
}

/** Limits of parseChatRequest. */
export interface ChatRequestLimits {
  /** Most characters of text one message may carry. */
  maxMessageChars: number;
}

function invalid(param: string, publicMessage: string): GatewayError {
  return new GatewayError('invalid_request', { param, publicMessage });
}

/**
 * Validates a parsed JSON body as a chat completion request. Throws `invalid_request` with
 * OpenAI's `param` naming the first field at fault, including fields the gateway cannot honour.
 */
export function parseChatRequest(body: unknown, limits: ChatRequestLimits = { maxMessageChars: defaultMaxMessageChars }): ChatRequest {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new GatewayError('invalid_request', { publicMessage: 'The request body must be a JSON object.' });
  }
  for (const field in unsupportedFields) {
    const value = (body as Record<string, unknown>)[field];
    if (value !== undefined && value !== null) throw invalid(field, unsupportedFields[field]!);
  }
  const result = chatRequestSchema.safeParse(body);
  if (!result.success) {
    const issue = result.error.issues[0]!;
    const param = paramOf(issue.path);
    throw new GatewayError('invalid_request', {
      publicMessage: param === undefined ? issue.message : `Invalid ${param}: ${issue.message}`,
      ...(param === undefined ? {} : { param }),
    });
  }
  const request = result.data;
  const stream = request.stream === true;
  if (!stream && request.stream_options !== undefined && request.stream_options !== null) {
    throw invalid('stream_options', 'stream_options is only allowed when stream is true.');
  }
  if (request.top_logprobs !== undefined && request.top_logprobs !== null && request.logprobs !== true) {
    throw invalid('top_logprobs', 'top_logprobs needs logprobs set to true.');
  }
  for (let index = 0; index < request.messages.length; index += 1) {
    if (messageChars(request.messages[index]!) > limits.maxMessageChars) {
      throw invalid(`messages[${index}]`, `A message may carry at most ${limits.maxMessageChars} characters of text.`);
    }
  }
  const maxTokens = request.max_tokens ?? request.max_completion_tokens ?? undefined;
  if (request.max_tokens != null && request.max_completion_tokens != null && request.max_tokens !== request.max_completion_tokens) {
    throw new GatewayError('invalid_request', {
      param: 'max_completion_tokens',
      publicMessage: 'max_tokens and max_completion_tokens disagree; send one of them.',
    });
  }
  const params: ChatRequest['params'] = {};
  for (const name of forwardedParams) {
    const value = request[name];
    if (value !== undefined && value !== null) params[name] = value;
  }
  const cacheBreakpoints = checkCacheBreakpoints(request);
  const effort = request.reasoning_effort ?? undefined;
  return {
    model: request.model, messages: request.messages, maxTokens, stream,
    includeUsage: stream && request.stream_options?.include_usage === true, params,
    ...(cacheBreakpoints > 0 ? { cacheBreakpoints } : {}),
    ...(request.prompt_cache_key == null ? {} : { promptCacheKey: request.prompt_cache_key }),
    ...(effort === undefined ? {} : { reasoning: { effort: { value: effort, param: 'reasoning_effort', isSurfaceDefault: false, impliesThinking: true } } }),
  };
}

/** Most cache_control breakpoints one request may carry: Anthropic's limit, which refuses a fifth. */
export const maxCacheBreakpoints = 4;

/**
 * Counts the cache_control breakpoints of a request in Anthropic's prefix order (tools, then
 * the messages' parts, tool calls and ends) and refuses, naming the field, a fifth breakpoint and
 * a 1-hour breakpoint after a 5-minute one (Anthropic requires longer lifetimes first): an
 * Anthropic upstream would refuse either after the Reserve.
 */
function checkCacheBreakpoints(request: {
  tools?: ReadonlyArray<{ cache_control?: CacheControl | undefined }> | null | undefined;
  messages: readonly ChatMessage[];
}): number {
  let count = 0;
  let shortSeen = false;
  const visit = (control: CacheControl | undefined, param: string) => {
    if (control === undefined) return;
    count += 1;
    if (count > maxCacheBreakpoints) throw invalid(param, `A request may carry at most ${maxCacheBreakpoints} cache_control breakpoints.`);
    if (control.ttl === '1h' && shortSeen) throw invalid(param, 'A cache_control with ttl "1h" must come before any with ttl "5m" (tools, then system, then messages).');
    if (control.ttl !== '1h') shortSeen = true;
  };
  (request.tools ?? []).forEach((tool, index) => visit(tool.cache_control, `tools[${index}].cache_control`));
  request.messages.forEach((message, index) => {
    if (Array.isArray(message.content)) {
      message.content.forEach((part, partIndex) => visit(part.cache_control, `messages[${index}].content[${partIndex}].cache_control`));
    }
    (message.tool_calls ?? []).forEach((call, callIndex) => visit(call.cache_control, `messages[${index}].tool_calls[${callIndex}].cache_control`));
    visit(message.cache_control, `messages[${index}].cache_control`);
  });
  return count;
}

// One set of media limits for every model, whatever its provider kind: a limit only one provider
// has would tell a client which vendor is behind a slug (101 image URLs, refused for nothing, were
// enough), so each limit is the strictest any supported provider sets.

/**
 * Most image and audio parts one request may carry, together: Anthropic's 100 images per request
 * (for its 200k-context models), the strictest; OpenAI takes 500.
 */
const maxMediaPartsPerRequest = 100;

/**
 * Most base64 characters of one image data URL's payload, 5 MiB: Anthropic's 5 MB per image,
 * which it enforces on the base64 text rather than the decoded bytes (about 3.75 MiB of image);
 * OpenAI takes 20 MiB (decoded).
 */
const maxImageBase64Chars = 5 * 1024 * 1024;

/**
 * Most decoded bytes of one audio part, 20 MiB: OpenAI's per-file limit (Anthropic takes no
 * audio). PROXY_MAX_BODY_BYTES bounds the whole body first.
 */
const maxAudioPartBytes = 20 * 1024 * 1024;

/** The media types of an image data URL, as OpenAI and Anthropic both accept them. */
type ImageMediaType = 'image/png' | 'image/jpeg' | 'image/gif' | 'image/webp';

const imageDataUrlPattern = /^data:(image\/(?:png|jpeg|gif|webp));base64,/;

/** An image data URL's media type and where its base64 payload starts in the URL. */
export interface ImageDataUrl {
  mediaType: ImageMediaType;
  /** Index of the first base64 character in the URL (its payload is `url.slice(base64Start)`). */
  base64Start: number;
}

/**
 * The media type and payload offset of a `data:image/(png|jpeg|gif|webp);base64,` URL, or
 * undefined for any other URL. Only the prefix is read: the payload may be megabytes.
 */
export function imageDataUrlOf(url: string): ImageDataUrl | undefined {
  if (!url.startsWith('data:')) return undefined;
  const match = imageDataUrlPattern.exec(url.slice(0, 32));
  return match === null ? undefined : { mediaType: match[1] as ImageMediaType, base64Start: match[0].length };
}

// Sticky, so a data URL's payload is checked in place (a 16 MB one in about 15 ms).
const base64Pattern = /[A-Za-z0-9+/]*={0,2}$/y;

/** Whether `text` from `start` on is canonical base64: the standard alphabet, length a multiple of 4, at most two `=` of padding. */
function isBase64(text: string, start: number): boolean {
  const length = text.length - start;
  if (length === 0 || length % 4 !== 0) return false;
  base64Pattern.lastIndex = start;
  return base64Pattern.test(text);
}

/** Bytes that the canonical base64 in `text` from `start` on decodes to. */
export function base64DecodedBytes(text: string, start = 0): number {
  const length = text.length - start;
  const padding = text.endsWith('==') ? 2 : text.endsWith('=') ? 1 : 0;
  return (length / 4) * 3 - padding;
}

function tooLarge(param: string, publicMessage: string): GatewayError {
  return new GatewayError('request_too_large', { param, publicMessage });
}

/** Checks an image part's URL: an image data URL of canonical base64 within the size limit, or an http(s) URL. */
function checkImageUrl(url: string, param: string): void {
  const dataUrl = imageDataUrlOf(url);
  if (dataUrl !== undefined) {
    const chars = url.length - dataUrl.base64Start;
    if (chars > maxImageBase64Chars) {
      throw tooLarge(param, `The image in ${param} is ${chars} base64 characters; at most ${maxImageBase64Chars} are accepted per image.`);
    }
    if (!isBase64(url, dataUrl.base64Start)) throw invalid(param, `The image data URL in ${param} must carry canonical base64 data.`);
    return;
  }
  if (url.startsWith('data:')) {
    throw invalid(param, `An image data URL must be data:image/png, image/jpeg, image/gif or image/webp with ;base64, (in ${param}).`);
  }
  // The upstream fetches the URL itself: only the web's schemes, never file:, ftp: or the like.
  const scheme = URL.canParse(url) ? new URL(url).protocol : undefined;
  if (scheme !== 'https:' && scheme !== 'http:') throw invalid(param, `The image url in ${param} must be an http(s) URL or an image data URL.`);
}

/**
 * Checks the image and audio parts of a request for its model, before any estimate or Reserve
 * (no money moves for a refused request), on every surface (the Responses and Messages surfaces
 * translate into these parts): they ride only in user messages (OpenAI's rule); the model must
 * accept the modality (the gateway model's `input_modalities`); an image is an http(s) URL or an
 * image data URL of base64, audio is base64; an image carries at most 5 MiB of base64 and an audio
 * part decodes to at most 20 MiB (413), and a request carries at most 100 of them. The limits and
 * their wording are the same for every model, so no refusal tells which vendor serves a slug.
 * Each refusal names the part (`messages[i].content[j]`).
 * Returns how many media parts the request carries (0: text only, nothing else to count).
 */
export function checkMediaParts(request: Pick<ChatRequest, 'messages'>, model: Pick<GatewayModelEntry, 'slug' | 'mediaModalities'>): number {
  let mediaParts = 0;
  for (let messageIndex = 0; messageIndex < request.messages.length; messageIndex += 1) {
    const message = request.messages[messageIndex]!;
    if (!Array.isArray(message.content)) continue;
    for (let partIndex = 0; partIndex < message.content.length; partIndex += 1) {
      const part = message.content[partIndex]!;
      if (part.type === 'text') continue;
      const param = `messages[${messageIndex}].content[${partIndex}]`;
      const modality = part.type === 'image_url' ? 'image' : 'audio';
      if (message.role !== 'user') throw invalid(param, `${part.type} parts are allowed only in user messages (${param} is in a ${message.role} message).`);
      if (!model.mediaModalities.has(modality)) {
        throw invalid(param, `The model '${model.slug}' does not accept ${modality === 'image' ? 'images' : 'audio'} (${param}).`);
      }
      mediaParts += 1;
      if (mediaParts > maxMediaPartsPerRequest) throw invalid(param, `A request may carry at most ${maxMediaPartsPerRequest} image and audio parts.`);
      if (part.type === 'image_url') checkImageUrl(part.image_url.url, param);
      else {
        if (!isBase64(part.input_audio.data, 0)) throw invalid(param, `The audio data in ${param} must be canonical base64.`);
        const bytes = base64DecodedBytes(part.input_audio.data);
        if (bytes > maxAudioPartBytes) {
          throw tooLarge(param, `The audio in ${param} is ${bytes} bytes; at most ${maxAudioPartBytes} bytes (decoded) are accepted per part.`);
        }
      }
    }
  }
  return mediaParts;
}
