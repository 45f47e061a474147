import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { parseDirectives, withoutDirectives, type Directives, type UsageClasses } from './directives.ts';
import { anthropicPromptBlocks, openAiPromptBlocks, PrefixCache, type PrefixCacheOptions } from './prefix-cache.ts';
import { anthropicThinking, invalidThinkingBlocks, openAiReasoningWords, thinkingBlocks, thinkingStreamEvents } from './reasoning.ts';

/** Each string the fake upstream deliberately leaks, by where it appears. */
const namedLeakMarkers = {
  /** Appended to the requested model: the vendor's internal model name. */
  vendorModelSuffix: '-vendor-internal-2024',
  /** `system_fingerprint` of every completion and chunk. */
  systemFingerprint: 'fp_vendor_secret',
  /** Value of the `openai-organization` response header. */
  organisationHeaderValue: 'vendor-org-secret',
  /** Name of a vendor-only response header. */
  organisationHeaderName: 'openai-organization',
  /** Name of the vendor's request-id response header. */
  requestIdHeaderName: 'x-vendor-request-id',
  /** Prefix of the vendor's request ids. */
  requestIdPrefix: 'vreq_secret_',
  /** Value of the `server` response header. */
  serverHeaderValue: 'vendor-upstream/1.0',
  /** In every error body the fake sends. */
  errorText: 'VENDOR-SECRET-ERROR-TEXT',
  /** Prefix of the vendor's completion ids. */
  completionIdPrefix: 'chatcmpl-vendorsecret-',
  /** Value of an extra, non-OpenAI body field. */
  vendorTrace: 'vendor-trace-secret',
  /** Prefix of the vendor's Anthropic-style message ids. */
  messageIdPrefix: 'msg_vendorsecret_',
  /** Prefix of the vendor's tool-call ids on the OpenAI routes. */
  toolCallIdPrefix: 'call_vendorsecret_',
  /** Prefix of the vendor's tool_use ids on the Anthropic route. */
  toolUseIdPrefix: 'toolu_vendorsecret_',
} as const;

/**
 * Strings the fake upstream deliberately leaks in its bodies and headers, the way real vendors
 * do: by name, and as `all` for a test that asserts none of them reaches a client, byte for byte.
 */
export const leakMarkers: typeof namedLeakMarkers & { readonly all: readonly string[] } = {
  ...namedLeakMarkers,
  all: Object.values(namedLeakMarkers),
};

/** Options of startFakeUpstream. */
export interface FakeUpstreamOptions {
  /** Interface to listen on; default 127.0.0.1. */
  host?: string;
  /** Port; default 0 (any free port). */
  port?: number;
  /**
   * When set, requests must carry the key or get a vendor 401: `Authorization: Bearer <key>` on
   * the OpenAI routes, `x-api-key: <key>` on the Anthropic route.
   */
  requiredApiKey?: string;
  /** Name of this upstream, used in the model list; default `fake`. */
  name?: string;
  /** The prompt caches' minimum prefix and clock (prefix-cache.ts); default 1024 tokens and Date.now. */
  promptCache?: PrefixCacheOptions;
}

/** One request the fake upstream received, as tests inspect it. */
export interface RecordedRequest {
  method: string;
  /** Path with query, e.g. `/v1/chat/completions`. */
  path: string;
  headers: IncomingHttpHeaders;
  /** The parsed JSON body; undefined when there was none or it was not JSON. */
  body: unknown;
  /** The `[[fake:tag=ID]]` of the last user message, when it had one: which request of a test this was. */
  tag?: string;
  /** When the request's body had arrived, ms since the epoch. */
  receivedAtMs: number;
}

/** A running fake upstream. */
export interface FakeUpstream {
  /** OpenAI-style base URL, e.g. `http://127.0.0.1:PORT/v1`. */
  baseUrl: string;
  port: number;
  /** Every request received, oldest first (tests may clear it with `requests.length = 0`). */
  requests: RecordedRequest[];
  /** Stops listening and cuts every open socket, including hung requests. */
  close(): Promise<void>;
}

/** The parts of an OpenAI chat message the fake reads. */
interface ChatMessageLike {
  role?: unknown;
  content?: unknown;
}

const maxBodyBytes = 16 * 1024 * 1024;
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

function lastUserText(messages: readonly ChatMessageLike[]): string {
  for (let i = messages.length - 1; i >= 0; i -= 1) {
    const message = messages[i];
    if (message?.role === 'user') return textOf(message.content);
  }
  return '';
}

function vendorHeaders(requestNumber: number): Record<string, string> {
  return {
    [leakMarkers.requestIdHeaderName]: `${leakMarkers.requestIdPrefix}${requestNumber}`,
    [leakMarkers.organisationHeaderName]: leakMarkers.organisationHeaderValue,
    'x-ratelimit-remaining-requests': '4999',
    server: leakMarkers.serverHeaderValue,
  };
}

function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string>): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { ...headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

function vendorError(status: number, message: string, code: string): unknown {
  return { error: { message: `${message} (${leakMarkers.errorText})`, type: status >= 500 ? 'server_error' : 'invalid_request_error', param: null, code } };
}

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBodyBytes) { reject(new Error('body too large')); req.destroy(); return; }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => { setTimeout(resolve, ms).unref(); });
}

/** An Anthropic-shaped vendor error body. */
function anthropicError(type: string, message: string): unknown {
  return { type: 'error', error: { type, message: `${message} (${leakMarkers.errorText})` } };
}

/** The reply's words after the max_tokens cut (unless the directives say to ignore it). */
function replyWords(messages: readonly ChatMessageLike[], directives: Directives, maxTokens: number | undefined): { words: string[]; cut: boolean } {
  const words = fakeReplyText(messages, directives).split(' ').filter((w) => w.length > 0);
  if (maxTokens !== undefined && words.length > maxTokens && !directives.ignoreMaxTokens) return { words: words.slice(0, maxTokens), cut: true };
  return { words, cut: false };
}

/** The frames of one streamed reply, in the upstream's own format. */
interface StreamFrames {
  head: string[];
  word(word: string, index: number): string;
  /** The in-stream error event `error_after` sends. */
  error: string;
  tail: string[];
}

/**
 * Streams a reply word by word, obeying the streaming directives: a delay before each word, a
 * silence after N words, a cut connection or an in-stream error after N words. Stops early when the client goes away.
 */
async function streamWords(res: ServerResponse, headers: Record<string, string>, directives: Directives, frames: StreamFrames, words: readonly string[]): Promise<void> {
  res.writeHead(200, { ...headers, 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
  for (const frame of frames.head) res.write(frame);
  // A cut comes after what was written has left, as when a vendor node dies mid-answer.
  const cut = async () => { await new Promise<void>((resolve) => { res.write('', () => resolve()); }); res.destroy(); };
  for (let i = 0; i < words.length; i += 1) {
    if (directives.failAfter === i) { await cut(); return; }
    if (directives.errorAfter === i) { res.end(frames.error); return; }
    if (directives.chunkDelayMs !== undefined) await delay(directives.chunkDelayMs);
    if (directives.pauseAfter === i) await delay(directives.pauseMs ?? 1000);
    if (res.destroyed) return;
    res.write(frames.word(words[i]!, i));
  }
  if (directives.failAfter === words.length) { await cut(); return; }
  if (directives.errorAfter === words.length) { res.end(frames.error); return; }
  for (const frame of frames.tail.slice(0, -1)) res.write(frame);
  res.end(frames.tail.at(-1));
}

/** Whether a value is a positive safe integer. */
function isPositiveInteger(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value > 0;
}

/** The arguments of the tool call `[[fake:tool_call=NAME]]` asks for, as JSON text: the message echoed. */
function toolCallArguments(messages: readonly ChatMessageLike[], directives: Directives): string {
  if (directives.toolArg !== undefined) return JSON.stringify({ [directives.toolArg.key]: directives.toolArg.value });
  return JSON.stringify({ query: withoutDirectives(lastUserText(messages)).slice(0, 40) });
}

/** The words `[[fake:tool_text=N]]` asks a tool-calling reply to write before its call (none without it). */
function toolTextWords(directives: Directives): string[] {
  return Array.from({ length: directives.toolText ?? 0 }, (_, i) => `w${i + 1}`);
}

/** A JSON text cut into pieces of 8 characters: how a vendor streams a tool call's arguments. */
function argumentPieces(json: string): string[] {
  const pieces: string[] = [];
  for (let i = 0; i < json.length; i += 8) pieces.push(json.slice(i, i + 8));
  return pieces;
}

function isObjectLike(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Whether the last message hands a tool's result back (an OpenAI `tool` message, or an Anthropic `tool_result` block). */
function endsWithToolResult(messages: readonly unknown[]): boolean {
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
function misplacedSystemMessage(messages: readonly ChatMessageLike[]): string | undefined {
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
function unmatchedToolCallId(messages: readonly unknown[]): string | undefined {
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

/** A deterministic unit-free vector for a text: what the fake's embeddings return (values in [-1, 1], 6 decimals). */
function fakeEmbedding(text: string, dimensions: number): number[] {
  let seed = 2166136261;
  for (let i = 0; i < text.length; i += 1) seed = Math.imul(seed ^ text.charCodeAt(i), 16777619) >>> 0;
  return Array.from({ length: dimensions }, (_, i) => {
    seed = Math.imul(seed ^ (i + 1), 2654435761) >>> 0;
    return Math.round(((seed / 0xffffffff) * 2 - 1) * 1e6) / 1e6;
  });
}

/** The input classes of a `usage_classes` directive held to a prompt of `promptTokens`, in the order cached, 5m, 1h, audio. */
function inputClassesWithin(classes: UsageClasses, promptTokens: number): { cached: number; write5m: number; write1h: number; audio: number } {
  let left = promptTokens;
  const take = (count: number) => {
    const taken = Math.min(count, left);
    left -= taken;
    return taken;
  };
  return { cached: take(classes.cached), write5m: take(classes.write5m), write1h: take(classes.write1h), audio: take(classes.audio) };
}

/**
 * An OpenAI usage with a `usage_classes` directive's counts in OpenAI's own fields: cached and
 * audio tokens in prompt_tokens_details (parts of prompt_tokens; OpenAI reports no cache writes),
 * reasoning tokens in completion_tokens_details and added to completion_tokens (spent, not shown).
 */
function openAiUsageWithClasses(usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number; prompt_tokens_details?: object }, classes: UsageClasses | undefined): object {
  if (classes === undefined) return usage;
  const within = inputClassesWithin(classes, usage.prompt_tokens);
  const completionTokens = usage.completion_tokens + classes.reasoning;
  return {
    prompt_tokens: usage.prompt_tokens, completion_tokens: completionTokens, total_tokens: usage.prompt_tokens + completionTokens,
    prompt_tokens_details: { cached_tokens: within.cached, audio_tokens: within.audio },
    completion_tokens_details: { reasoning_tokens: classes.reasoning },
  };
}

/**
 * An Anthropic usage with a `usage_classes` directive's counts in Anthropic's own fields: the
 * prompt split into input_tokens (fresh), cache_read_input_tokens and cache_creation_input_tokens
 * (with its cache_creation 5m/1h breakdown), whose sum stays the prompt; reasoning (thinking) added
 * to output_tokens, which is how Anthropic counts it.
 */
function anthropicUsageWithClasses(usage: { input_tokens: number; output_tokens: number; cache_creation_input_tokens?: number; cache_read_input_tokens?: number }, classes: UsageClasses | undefined): object {
  if (classes === undefined) return usage;
  const within = inputClassesWithin(classes, usage.input_tokens);
  return {
    input_tokens: usage.input_tokens - within.cached - within.write5m - within.write1h,
    output_tokens: usage.output_tokens + classes.reasoning,
    cache_read_input_tokens: within.cached,
    cache_creation_input_tokens: within.write5m + within.write1h,
    cache_creation: { ephemeral_5m_input_tokens: within.write5m, ephemeral_1h_input_tokens: within.write1h },
  };
}

/**
 * An Anthropic usage of a prompt and a reply: what the modelled prompt cache reported for the
 * prompt, or, when a `usage_classes` directive is given, the whole prompt split by it instead.
 */
function anthropicUsageOf(
  inputUsage: Record<string, unknown>, outputTokens: number, classes: UsageClasses | undefined,
): object {
  if (classes === undefined) return { ...inputUsage, output_tokens: outputTokens };
  const promptTokens = Number(inputUsage.input_tokens) + Number(inputUsage.cache_creation_input_tokens) + Number(inputUsage.cache_read_input_tokens);
  return anthropicUsageWithClasses({ input_tokens: promptTokens, output_tokens: outputTokens }, classes);
}

/**
 * Starts an OpenAI-compatible upstream on node:http (with an Anthropic Messages route at
 * `POST /v1/messages`): the built-in demo upstream of `pnpm start` and the steerable fake of tests. Replies are deterministic; usage is prompt_tokens = words
 * across all message contents + 3 per message + 85 per image (an `image_url` part, or an Anthropic
 * `image` block), completion_tokens = words of the reply. Prompt caching is modelled for both
 * wire formats (prefix-cache.ts): OpenAI's automatic prefix cache in `prompt_tokens_details.cached_tokens`,
 * Anthropic's `cache_control` breakpoints in `cache_read_input_tokens`, `cache_creation_input_tokens`
 * and `cache_creation`. Every
 * response leaks vendor details (see `leakMarkers`) so tests can prove the gateway hides them.
 * Steer it with directives in the last user message (see `parseDirectives`).
 */
export async function startFakeUpstream(options: FakeUpstreamOptions = {}): Promise<FakeUpstream> {
  const host = options.host ?? '127.0.0.1';
  const name = options.name ?? 'fake';
  const requests: RecordedRequest[] = [];
  const sockets = new Set<Socket>();
  let requestCount = 0;
  const promptCache = new PrefixCache(options.promptCache);

  /** The Anthropic usage of a request's prompt: its cache reads and writes (prefix-cache.ts) and the fresh input left. */
  function anthropicInputUsage(request: Record<string, unknown>): Record<string, unknown> {
    const blocks = anthropicPromptBlocks(request);
    const total = blocks.reduce((sum, block) => sum + block.tokens, 0);
    const cache = promptCache.anthropicUsage(typeof request.model === 'string' ? request.model : '', blocks);
    const written = cache.write5mTokens + cache.write1hTokens;
    return {
      input_tokens: total - cache.readTokens - written,
      cache_creation_input_tokens: written,
      cache_read_input_tokens: cache.readTokens,
      cache_creation: { ephemeral_5m_input_tokens: cache.write5mTokens, ephemeral_1h_input_tokens: cache.write1hTokens },
    };
  }

  /** OpenAI's `prompt_tokens_details` of a chat request: the tokens its automatic prefix cache served (prefix-cache.ts). */
  function openAiPromptDetails(body: Record<string, unknown>): { cached_tokens: number } {
    const model = typeof body.model === 'string' ? body.model : '';
    const key = typeof body.prompt_cache_key === 'string' ? body.prompt_cache_key : undefined;
    return { cached_tokens: promptCache.openAiCachedTokens(model, key, openAiPromptBlocks(body)) };
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    requestCount += 1;
    const requestNumber = requestCount;
    const headers = vendorHeaders(requestNumber);
    const raw = await readBody(req);
    let body: unknown;
    let bodyIsJson = true;
    if (raw.length > 0) {
      try { body = JSON.parse(raw.toString('utf8')); } catch { bodyIsJson = false; }
    }
    const path = req.url ?? '/';
    const messages = typeof body === 'object' && body !== null && Array.isArray((body as { messages?: unknown }).messages)
      ? (body as { messages: ChatMessageLike[] }).messages : [];
    const { tag } = parseDirectives(lastUserText(messages));
    requests.push({ method: req.method ?? 'GET', path, headers: req.headers, body, ...(tag === undefined ? {} : { tag }), receivedAtMs: Date.now() });

    const route = `${req.method} ${path.split('?')[0]}`;
    if (route === 'POST /v1/messages') {
      await anthropicMessages(req, body, bodyIsJson, res, headers, requestNumber);
      return;
    }
    if (options.requiredApiKey !== undefined && req.headers.authorization !== `Bearer ${options.requiredApiKey}`) {
      sendJson(res, 401, vendorError(401, 'Incorrect API key provided for vendor account acct_vendor', 'invalid_api_key'), headers);
      return;
    }
    if (route === 'GET /v1/models') {
      sendJson(res, 200, {
        object: 'list',
        data: [{ id: `${name}-model${leakMarkers.vendorModelSuffix}`, object: 'model', created: 1_700_000_000, owned_by: leakMarkers.organisationHeaderValue }],
      }, headers);
      return;
    }
    if (route === 'POST /v1/embeddings') {
      embeddings(body, bodyIsJson, res, headers);
      return;
    }
    if (route !== 'POST /v1/chat/completions') {
      sendJson(res, 404, vendorError(404, `Unknown vendor route ${route}`, 'unknown_url'), headers);
      return;
    }
    if (!bodyIsJson || typeof body !== 'object' || body === null || !Array.isArray((body as { messages?: unknown }).messages)) {
      sendJson(res, 400, vendorError(400, 'Vendor could not parse the request', 'invalid_body'), headers);
      return;
    }
    await completeChat(body as Record<string, unknown>, res, headers, requestNumber);
  }

  async function completeChat(body: Record<string, unknown>, res: ServerResponse, headers: Record<string, string>, requestNumber: number): Promise<void> {
    const messages = body.messages as ChatMessageLike[];
    const directives = parseDirectives(lastUserText(messages));
    if (directives.hang) return; // the socket stays open until the client gives up or close() cuts it
    if (directives.delayMs !== undefined) await delay(directives.delayMs);
    if (directives.status !== undefined) {
      sendJson(res, directives.status, vendorError(directives.status, 'Vendor backend overloaded in cluster vendor-east-7', 'vendor_internal'), headers);
      return;
    }

    const unmatched = unmatchedToolCallId(messages);
    if (unmatched !== undefined) {
      sendJson(res, 400, vendorError(400, `Invalid parameter: tool_call_id ${unmatched.slice(0, 80)} has no matching tool call`, 'invalid_tool_call_id'), headers);
      return;
    }
    const requestedModel = typeof body.model === 'string' ? body.model : 'unknown';
    const vendorModel = `${requestedModel}${leakMarkers.vendorModelSuffix}`;
    // A conversation that ends with the tool's result gets a text answer, as a model would give.
    if (directives.toolCall !== undefined && !endsWithToolResult(messages)) {
      await replyWithToolCall(body, directives.toolCall, res, headers, requestNumber, vendorModel);
      return;
    }
    const maxTokens = isPositiveInteger(body.max_tokens) ? body.max_tokens
      : isPositiveInteger(body.max_completion_tokens) ? body.max_completion_tokens : undefined;
    const { words, cut } = replyWords(messages, directives, maxTokens);
    const finishReason = cut ? 'length' : 'stop';
    const reply = words.join(' ');
    const promptTokens = fakePromptTokens(messages);
    // Reasoning (reasoning.ts) comes before the reply and counts as output: reasoning_tokens of
    // completion_tokens. A usage_classes directive replaces what the modelled prompt cache reports.
    const reasoning = openAiReasoningWords(body);
    const outputTokens = words.length + reasoning.length;
    const usage = openAiUsageWithClasses({
      prompt_tokens: promptTokens, completion_tokens: outputTokens, total_tokens: promptTokens + outputTokens, prompt_tokens_details: openAiPromptDetails(body),
      ...(reasoning.length > 0 ? { completion_tokens_details: { reasoning_tokens: reasoning.length } } : {}),
    }, directives.usageClasses);
    const id = `${leakMarkers.completionIdPrefix}${requestNumber}`;
    const created = Math.floor(Date.now() / 1000);

    if (body.stream === true) {
      const streamOptions = body.stream_options as { include_usage?: unknown } | undefined;
      const includeUsage = streamOptions?.include_usage === true && !directives.noUsage;
      const chunk = (delta: object, finish: string | null, extra: object = {}) => ({
        id, object: 'chat.completion.chunk', created, model: vendorModel, system_fingerprint: leakMarkers.systemFingerprint,
        choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }], ...(includeUsage ? { usage: null } : {}), ...extra,
      });
      const tailFrames: string[] = [`data: ${JSON.stringify(chunk({}, finishReason))}\n\n`];
      if (includeUsage) {
        tailFrames.push(`data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model: vendorModel, system_fingerprint: leakMarkers.systemFingerprint, choices: [], usage })}\n\n`);
      }
      tailFrames.push('data: [DONE]\n\n');
      await streamWords(res, headers, directives, {
        head: [
          `data: ${JSON.stringify(chunk({ role: 'assistant', content: '' }, null))}\n\n`,
          ...reasoning.map((word, i) => `data: ${JSON.stringify(chunk({ reasoning_content: i === 0 ? word : ` ${word}` }, null))}\n\n`),
        ],
        word: (word, i) => `data: ${JSON.stringify(chunk({ content: i === 0 ? word : ` ${word}` }, null))}\n\n`,
        error: `data: ${JSON.stringify(vendorError(500, 'Vendor stream interrupted on node vendor-east-7', 'vendor_stream'))}\n\n`,
        tail: tailFrames,
      }, words);
      return;
    }

    sendJson(res, 200, {
      id, object: 'chat.completion', created, model: vendorModel, system_fingerprint: leakMarkers.systemFingerprint,
      choices: [{
        index: 0, logprobs: null, finish_reason: finishReason,
        message: { role: 'assistant', content: reply, refusal: null, ...(reasoning.length > 0 ? { reasoning_content: reasoning.join(' ') } : {}) },
      }],
      ...(directives.noUsage ? {} : { usage }),
      service_tier: 'default',
      vendor_trace: leakMarkers.vendorTrace,
    }, headers);
  }

  /** A chat completion that calls one tool (`[[fake:tool_call=NAME]]`), streamed or not, with the vendor's tool-call id. */
  async function replyWithToolCall(
    body: Record<string, unknown>, name: string, res: ServerResponse, headers: Record<string, string>, requestNumber: number, vendorModel: string,
  ): Promise<void> {
    const messages = body.messages as ChatMessageLike[];
    const directives = parseDirectives(lastUserText(messages));
    const args = toolCallArguments(messages, directives);
    const pieces = argumentPieces(args);
    const textWords = toolTextWords(directives);
    const promptTokens = fakePromptTokens(messages);
    const completionTokens = textWords.length + pieces.length;
    const usage = {
      prompt_tokens: promptTokens, completion_tokens: completionTokens, total_tokens: promptTokens + completionTokens, prompt_tokens_details: openAiPromptDetails(body),
    };
    const id = `${leakMarkers.completionIdPrefix}${requestNumber}`;
    const callId = `${leakMarkers.toolCallIdPrefix}${requestNumber}`;
    const created = Math.floor(Date.now() / 1000);
    if (body.stream === true) {
      const includeUsage = (body.stream_options as { include_usage?: unknown } | undefined)?.include_usage === true && !directives.noUsage;
      const chunk = (delta: object, finish: string | null) => ({
        id, object: 'chat.completion.chunk', created, model: vendorModel, system_fingerprint: leakMarkers.systemFingerprint,
        choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
      });
      const frame = (value: object) => `data: ${JSON.stringify(value)}\n\n`;
      await streamWords(res, headers, directives, {
        head: [
          frame(chunk({ role: 'assistant', content: textWords.length > 0 ? '' : null }, null)),
          ...textWords.map((word, i) => frame(chunk({ content: i === 0 ? word : ` ${word}` }, null))),
          frame(chunk({ tool_calls: [{ index: 0, id: callId, type: 'function', function: { name, arguments: '' } }] }, null)),
        ],
        word: (piece) => frame(chunk({ tool_calls: [{ index: 0, ...(directives.repeatToolId === true ? { id: callId } : {}), function: { arguments: piece } }] }, null)),
        error: frame(vendorError(500, 'Vendor stream interrupted on node vendor-east-7', 'vendor_stream') as object),
        tail: [
          frame(chunk({}, 'tool_calls')),
          ...(includeUsage ? [frame({ id, object: 'chat.completion.chunk', created, model: vendorModel, choices: [], usage })] : []),
          'data: [DONE]\n\n',
        ],
      }, pieces);
      return;
    }
    sendJson(res, 200, {
      id, object: 'chat.completion', created, model: vendorModel, system_fingerprint: leakMarkers.systemFingerprint,
      choices: [{
        index: 0, logprobs: null, finish_reason: 'tool_calls',
        message: { role: 'assistant', content: textWords.length > 0 ? textWords.join(' ') : null, refusal: null, tool_calls: [{ id: callId, type: 'function', function: { name, arguments: args } }] },
      }],
      ...(directives.noUsage ? {} : { usage }),
      vendor_trace: leakMarkers.vendorTrace,
    }, headers);
  }

  /** `POST /v1/embeddings`: deterministic vectors, usage = words per text (or the token count of token arrays), with the same leaks. */
  function embeddings(body: unknown, bodyIsJson: boolean, res: ServerResponse, headers: Record<string, string>): void {
    const request = body as Record<string, unknown> | undefined;
    const input = isObjectLike(request) ? request.input : undefined;
    const inputs: unknown[] = typeof input === 'string' ? [input]
      : Array.isArray(input) && input.length > 0 && input.every((item) => typeof item === 'number') ? [input]
        : Array.isArray(input) ? input : [];
    const valid = bodyIsJson && isObjectLike(request) && typeof request.model === 'string' && inputs.length > 0
      && inputs.every((item) => typeof item === 'string' || (Array.isArray(item) && item.every((token) => Number.isSafeInteger(token))));
    if (!valid) {
      sendJson(res, 400, vendorError(400, 'Vendor could not parse the embeddings request', 'invalid_body'), headers);
      return;
    }
    const directives = parseDirectives(typeof inputs[0] === 'string' ? inputs[0] : '');
    if (directives.status !== undefined) {
      sendJson(res, directives.status, vendorError(directives.status, 'Vendor embedding backend overloaded', 'vendor_internal'), headers);
      return;
    }
    const dimensions = isPositiveInteger(request.dimensions) ? Math.min(request.dimensions, 4096) : 8;
    let promptTokens = 0;
    const data = inputs.map((item, index) => {
      const text = typeof item === 'string' ? item : (item as number[]).join(' ');
      promptTokens += typeof item === 'string' ? countWords(item) : (item as number[]).length;
      const vector = fakeEmbedding(text, dimensions);
      const embedding = request.encoding_format === 'base64' ? Buffer.from(new Float32Array(vector).buffer).toString('base64') : vector;
      return { object: 'embedding', index, embedding };
    });
    sendJson(res, 200, {
      object: 'list', data, model: `${request.model as string}${leakMarkers.vendorModelSuffix}`,
      ...(directives.noUsage ? {} : { usage: { prompt_tokens: promptTokens, total_tokens: promptTokens } }),
      vendor_trace: leakMarkers.vendorTrace,
    }, headers);
  }

  /** `POST /v1/messages`: Anthropic's Messages API, streamed or not, with the same directives and leaks. */
  async function anthropicMessages(
    req: IncomingMessage, body: unknown, bodyIsJson: boolean, res: ServerResponse, headers: Record<string, string>, requestNumber: number,
  ): Promise<void> {
    if (options.requiredApiKey !== undefined && req.headers['x-api-key'] !== options.requiredApiKey) {
      sendJson(res, 401, anthropicError('authentication_error', 'invalid x-api-key for vendor account acct_vendor'), headers);
      return;
    }
    const request = body as Record<string, unknown> | undefined;
    if (!bodyIsJson || typeof request !== 'object' || request === null || !Array.isArray(request.messages)
      || !isPositiveInteger(request.max_tokens) || typeof req.headers['anthropic-version'] !== 'string') {
      sendJson(res, 400, anthropicError('invalid_request_error', 'Vendor could not parse the request'), headers);
      return;
    }
    const messages = request.messages as ChatMessageLike[];
    const misplaced = misplacedSystemMessage(messages);
    if (misplaced !== undefined) {
      sendJson(res, 400, anthropicError('invalid_request_error', misplaced), headers);
      return;
    }
    const directives = parseDirectives(lastUserText(messages));
    if (directives.hang) return;
    if (directives.delayMs !== undefined) await delay(directives.delayMs);
    if (directives.status !== undefined) {
      sendJson(res, directives.status, anthropicError('overloaded_error', 'Vendor backend overloaded in cluster vendor-east-7'), headers);
      return;
    }
    const unmatched = unmatchedToolCallId(messages);
    if (unmatched !== undefined) {
      sendJson(res, 400, anthropicError('invalid_request_error', `tool_use_id ${unmatched.slice(0, 80)} has no matching tool_use block`), headers);
      return;
    }
    const badThinking = invalidThinkingBlocks(messages);
    if (badThinking !== undefined) {
      sendJson(res, 400, anthropicError('invalid_request_error', badThinking), headers);
      return;
    }
    const vendorModel = `${typeof request.model === 'string' ? request.model : 'unknown'}${leakMarkers.vendorModelSuffix}`;
    if (directives.toolCall !== undefined && !endsWithToolResult(messages)) {
      await anthropicToolUse(request, directives, directives.toolCall, res, headers, requestNumber, vendorModel);
      return;
    }
    const { words, cut } = replyWords(messages, directives, request.max_tokens);
    const stopReason = cut ? 'max_tokens' : 'end_turn';
    const inputUsage = anthropicInputUsage(request);
    const id = `${leakMarkers.messageIdPrefix}${requestNumber}`;
    // Thinking (reasoning.ts) is the first block and counts as output, as Anthropic bills it.
    const thinking = anthropicThinking(request, lastUserText(messages));
    const thinkingTokens = thinking?.words.length ?? 0;
    const textIndex = thinking === undefined ? 0 : 1;

    if (request.stream === true) {
      const event = (name: string, data: object) => `event: ${name}\ndata: ${JSON.stringify({ type: name, ...data })}\n\n`;
      const usageOf = (output: number) => (directives.noUsage ? {} : { usage: anthropicUsageOf(inputUsage, output, directives.usageClasses) });
      await streamWords(res, headers, directives, {
        head: [
          event('message_start', {
            message: {
              id, type: 'message', role: 'assistant', model: vendorModel, content: [], stop_reason: null, stop_sequence: null,
              vendor_trace: leakMarkers.vendorTrace, ...usageOf(1),
            },
          }),
          ...(thinking === undefined ? [] : thinkingStreamEvents(thinking, event)),
          event('content_block_start', { index: textIndex, content_block: { type: 'text', text: '' } }),
          event('ping', {}),
        ],
        word: (word, i) => event('content_block_delta', { index: textIndex, delta: { type: 'text_delta', text: i === 0 ? word : ` ${word}` } }),
        error: event('error', { error: { type: 'overloaded_error', message: `Vendor stream interrupted (${leakMarkers.errorText})` } }),
        tail: [
          event('content_block_stop', { index: textIndex }),
          event('message_delta', { delta: { stop_reason: stopReason, stop_sequence: null }, ...usageOf(words.length + thinkingTokens) }),
          event('message_stop', {}),
        ],
      }, words);
      return;
    }
    sendJson(res, 200, {
      id, type: 'message', role: 'assistant', model: vendorModel,
      content: [...(thinking === undefined ? [] : thinkingBlocks(thinking)), { type: 'text', text: words.join(' ') }],
      stop_reason: stopReason, stop_sequence: null,
      ...(directives.noUsage ? {} : { usage: anthropicUsageOf(inputUsage, words.length + thinkingTokens, directives.usageClasses) }),
      vendor_trace: leakMarkers.vendorTrace,
    }, headers);
  }

  /** An Anthropic answer that calls one tool (`[[fake:tool_call=NAME]]`), streamed or not, with a `toolu_` id. */
  async function anthropicToolUse(
    request: Record<string, unknown>, directives: Directives, name: string, res: ServerResponse, headers: Record<string, string>,
    requestNumber: number, vendorModel: string,
  ): Promise<void> {
    const messages = request.messages as ChatMessageLike[];
    const args = toolCallArguments(messages, directives);
    const pieces = argumentPieces(args);
    const inputUsage = anthropicInputUsage(request);
    const id = `${leakMarkers.messageIdPrefix}${requestNumber}`;
    const toolUseId = `${leakMarkers.toolUseIdPrefix}${requestNumber}`;
    const textWords = toolTextWords(directives);
    // Thinking (reasoning.ts), when asked for, is the first block: Anthropic's tool loops with thinking.
    const thinking = anthropicThinking(request, lastUserText(messages));
    const thinkingIndexes = thinking === undefined ? 0 : 1;
    const usage = directives.noUsage ? {} : { usage: anthropicUsageOf(inputUsage, (thinking?.words.length ?? 0) + textWords.length + pieces.length, directives.usageClasses) };
    // The tool_use block follows the thinking and text blocks when there are some.
    const textIndex = thinkingIndexes;
    const toolIndex = textIndex + (textWords.length > 0 ? 1 : 0);
    if (request.stream === true) {
      const event = (type: string, data: object) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
      await streamWords(res, headers, directives, {
        head: [
          event('message_start', { message: { id, type: 'message', role: 'assistant', model: vendorModel, content: [], stop_reason: null, ...usage } }),
          ...(thinking === undefined ? [] : thinkingStreamEvents(thinking, event)),
          ...(textWords.length > 0 ? [
            event('content_block_start', { index: textIndex, content_block: { type: 'text', text: '' } }),
            ...textWords.map((word, i) => event('content_block_delta', { index: textIndex, delta: { type: 'text_delta', text: i === 0 ? word : ` ${word}` } })),
            event('content_block_stop', { index: textIndex }),
          ] : []),
          event('content_block_start', { index: toolIndex, content_block: { type: 'tool_use', id: toolUseId, name, input: {} } }),
        ],
        word: (piece) => event('content_block_delta', { index: toolIndex, delta: { type: 'input_json_delta', partial_json: piece } }),
        error: event('error', { error: { type: 'overloaded_error', message: `Vendor stream interrupted (${leakMarkers.errorText})` } }),
        tail: [
          event('content_block_stop', { index: toolIndex }),
          event('message_delta', { delta: { stop_reason: 'tool_use', stop_sequence: null }, ...usage }),
          event('message_stop', {}),
        ],
      }, pieces);
      return;
    }
    sendJson(res, 200, {
      id, type: 'message', role: 'assistant', model: vendorModel,
      content: [
        ...(thinking === undefined ? [] : thinkingBlocks(thinking)),
        ...(textWords.length > 0 ? [{ type: 'text', text: textWords.join(' ') }] : []),
        { type: 'tool_use', id: toolUseId, name, input: JSON.parse(args) as unknown },
      ],
      stop_reason: 'tool_use', stop_sequence: null, ...usage, vendor_trace: leakMarkers.vendorTrace,
    }, headers);
  }

  const server = createServer((req, res) => {
    handle(req, res).catch(() => {
      if (!res.headersSent) sendJson(res, 500, vendorError(500, 'Vendor crashed', 'vendor_crash'), vendorHeaders(0));
      else res.destroy();
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => { server.off('error', reject); resolve(); });
  });
  const { port } = server.address() as AddressInfo;
  const urlHost = host.includes(':') ? `[${host}]` : host;

  return {
    baseUrl: `http://${urlHost}:${port}/v1`,
    port,
    requests,
    close: () => new Promise<void>((resolve) => {
      server.close(() => resolve());
      for (const socket of sockets) socket.destroy();
    }),
  };
}
