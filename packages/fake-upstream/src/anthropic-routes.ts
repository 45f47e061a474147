// The Anthropic route, `POST /v1/messages`: Messages API answers (text, thinking, a tool call),
// streamed or not, with the vendor's checks and leaks.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { parseDirectives, type Directives } from './directives.ts';
import {
  argumentPieces, endsWithToolResult, isPositiveInteger, lastUserText, misplacedSystemMessage, replyWords, toolCallArguments, toolTextWords,
  unmatchedToolCallId, type ChatMessageLike,
} from './conversation.ts';
import type { PrefixCache } from './prefix-cache.ts';
import { anthropicThinking, invalidThinkingBlocks, thinkingBlocks, thinkingStreamEvents } from './reasoning.ts';
import { anthropicInputUsage, anthropicUsageOf } from './usage.ts';
import { anthropicError, delay, leakMarkers, sendJson, streamWords } from './wire.ts';

/** `POST /v1/messages`: Anthropic's Messages API, streamed or not, with the same directives and leaks. */
export async function anthropicMessages(
  req: IncomingMessage, body: unknown, bodyIsJson: boolean, res: ServerResponse, headers: Record<string, string>, requestNumber: number,
  promptCache: PrefixCache, requiredApiKey: string | undefined,
): Promise<void> {
  if (requiredApiKey !== undefined && req.headers['x-api-key'] !== requiredApiKey) {
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
    await anthropicToolUse(request, directives, directives.toolCall, res, headers, requestNumber, vendorModel, promptCache);
    return;
  }
  const { words, cut } = replyWords(messages, directives, request.max_tokens);
  const stopReason = cut ? 'max_tokens' : 'end_turn';
  const inputUsage = anthropicInputUsage(promptCache, request);
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
  requestNumber: number, vendorModel: string, promptCache: PrefixCache,
): Promise<void> {
  const messages = request.messages as ChatMessageLike[];
  const args = toolCallArguments(messages, directives);
  const pieces = argumentPieces(args);
  const inputUsage = anthropicInputUsage(promptCache, request);
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
