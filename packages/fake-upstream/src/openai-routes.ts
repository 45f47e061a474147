// The OpenAI routes: `POST /v1/chat/completions` (text or a tool call, streamed or not) and
// `POST /v1/embeddings`, each with the vendor's leaks.
import type { ServerResponse } from 'node:http';
import { parseDirectives } from './directives.ts';
import {
  argumentPieces, countWords, endsWithToolResult, fakePromptTokens, isObjectLike, isPositiveInteger, lastUserText, replyWords,
  toolCallArguments, toolTextWords, unmatchedToolCallId, type ChatMessageLike,
} from './conversation.ts';
import type { PrefixCache } from './prefix-cache.ts';
import { openAiReasoningWords } from './reasoning.ts';
import { openAiPromptDetails, openAiUsageWithClasses } from './usage.ts';
import { delay, leakMarkers, sendJson, streamWords, vendorError } from './wire.ts';

/** A deterministic unit-free vector for a text: what the fake's embeddings return (values in [-1, 1], 6 decimals). */
function fakeEmbedding(text: string, dimensions: number): number[] {
  let seed = 2166136261;
  for (let i = 0; i < text.length; i += 1) seed = Math.imul(seed ^ text.charCodeAt(i), 16777619) >>> 0;
  return Array.from({ length: dimensions }, (_, i) => {
    seed = Math.imul(seed ^ (i + 1), 2654435761) >>> 0;
    return Math.round(((seed / 0xffffffff) * 2 - 1) * 1e6) / 1e6;
  });
}

/** `POST /v1/chat/completions` with a parsed body: the reply (or tool call) its directives ask for, streamed or not. */
export async function completeChat(
  body: Record<string, unknown>, res: ServerResponse, headers: Record<string, string>, requestNumber: number, promptCache: PrefixCache,
): Promise<void> {
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
    await replyWithToolCall(body, directives.toolCall, res, headers, requestNumber, vendorModel, promptCache);
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
    prompt_tokens: promptTokens, completion_tokens: outputTokens, total_tokens: promptTokens + outputTokens, prompt_tokens_details: openAiPromptDetails(promptCache, body),
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
  promptCache: PrefixCache,
): Promise<void> {
  const messages = body.messages as ChatMessageLike[];
  const directives = parseDirectives(lastUserText(messages));
  const args = toolCallArguments(messages, directives);
  const pieces = argumentPieces(args);
  const textWords = toolTextWords(directives);
  const promptTokens = fakePromptTokens(messages);
  const completionTokens = textWords.length + pieces.length;
  const usage = {
    prompt_tokens: promptTokens, completion_tokens: completionTokens, total_tokens: promptTokens + completionTokens, prompt_tokens_details: openAiPromptDetails(promptCache, body),
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
export function embeddings(body: unknown, bodyIsJson: boolean, res: ServerResponse, headers: Record<string, string>): void {
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
