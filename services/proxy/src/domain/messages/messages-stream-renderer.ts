import { toAnthropicHttpError, type GatewayError } from '@gateway/errors';
import type { StreamChoice } from '../normalized-completion.ts';
import type { StreamClose, StreamRenderer } from '../stream-renderer.ts';
import { messagesUsage, stopReasonOf } from './messages-response.ts';

/** One SSE frame of Anthropic's stream: the event name, and its data with the same `type`. */
function frame(type: string, data: Record<string, unknown>): string {
  return `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
}

/**
 * The Anthropic Messages surface's stream (`@anthropic-ai/sdk`'s RawMessageStreamEvent):
 * `message_start` (the gateway's id, the slug, input_tokens = the prompt estimate the Reserve
 * was sized on), then content blocks numbered from 0 in order — a text block for text deltas
 * (`text_delta`), a tool_use block per tool call (the gateway's id, `input_json_delta` pieces of
 * its arguments) — each started and stopped around its deltas, then `message_delta` (the stop
 * reason; the billed usage with its cost) and `message_stop`. A cost stop (BOUNDED_OVERRUN) ends
 * with stop_reason `max_tokens`; an error after the stream opened is an `error` event with
 * Anthropic's error body.
 */
export function createMessagesStreamRenderer(input: { id: string; modelSlug: string; thinkingOmitted?: boolean }): StreamRenderer {
  /** The index of the next content block, and of the block open now (-1: none). */
  let nextBlock = 0;
  let openBlock = -1;
  let openIsText = false;
  /** Content block index of each tool call, by the call's index in the chunks. */
  const toolBlocks = new Map<number, number>();
  let finishReason: string | null = null;

  /** Stops the open block, if any. */
  const stopOpenBlock = (): string => {
    if (openBlock < 0) return '';
    const stop = `event: content_block_stop\ndata: {"type":"content_block_stop","index":${openBlock}}\n\n`;
    openBlock = -1;
    return stop;
  };
  /** Stops the open block and starts a new one at the next index. */
  const startBlock = (contentBlock: Record<string, unknown>, isText: boolean): string => {
    const frames = stopOpenBlock() + frame('content_block_start', { index: nextBlock, content_block: contentBlock });
    openBlock = nextBlock;
    openIsText = isText;
    openIsThinking = false;
    nextBlock += 1;
    return frames;
  };
  /** Whether the open block is a thinking block (its signature_delta closes it). */
  let openIsThinking = false;
  /** Starts a thinking block. */
  const thinkingOpen = (): string => {
    const frames = startBlock({ type: 'thinking', thinking: '', signature: '' }, false);
    openIsThinking = true;
    return frames;
  };
  /** A thinking delta, in the open thinking block (started when the open block is not one). */
  const thinkingDelta = (thinking: string): string => {
    const start = openBlock >= 0 && openIsThinking ? '' : startBlock({ type: 'thinking', thinking: '', signature: '' }, false);
    openIsThinking = true;
    return start + frame('content_block_delta', { index: openBlock, delta: { type: 'thinking_delta', thinking } });
  };
  /** A thinking block's signature (sealed by the gateway): its last delta. */
  const signatureDelta = (signature: string): string => {
    const start = openBlock >= 0 && openIsThinking ? '' : startBlock({ type: 'thinking', thinking: '', signature: '' }, false);
    openIsThinking = true;
    return start + frame('content_block_delta', { index: openBlock, delta: { type: 'signature_delta', signature } });
  };
  /** A redacted thinking block, whole: started and stopped at once. */
  const redactedBlock = (data: string): string => {
    const frames = startBlock({ type: 'redacted_thinking', data }, false);
    return frames + stopOpenBlock();
  };
  /** The reasoning parts of a delta, as Anthropic's thinking events. */
  const reasoningFrames = (delta: StreamChoice['delta']): string => {
    let frames = '';
    if (delta.redacted_reasoning !== undefined) frames += redactedBlock(delta.redacted_reasoning);
    // With display "omitted" the block opens (its signature follows) but its text is not sent, as Anthropic does.
    if (delta.reasoning_content !== undefined && delta.reasoning_content !== '') {
      frames += input.thinkingOmitted === true
        ? (openBlock >= 0 && openIsThinking ? '' : thinkingOpen())
        : thinkingDelta(delta.reasoning_content);
    }
    if (delta.reasoning_signature !== undefined) frames += signatureDelta(delta.reasoning_signature);
    return frames;
  };
  /** A text delta, in the open text block (started when the open block is not one). */
  const textDelta = (text: string): string => {
    if (text === '') return '';
    const start = openBlock >= 0 && openIsText ? '' : startBlock({ type: 'text', text: '' }, true);
    return `${start}event: content_block_delta\ndata: {"type":"content_block_delta","index":${openBlock},"delta":{"type":"text_delta","text":${JSON.stringify(text)}}}\n\n`;
  };
  /** A tool call fragment: its first starts a tool_use block; arguments pieces are input_json_delta of the call's block. */
  const toolDelta = (call: NonNullable<StreamChoice['delta']['tool_calls']>[number]): string => {
    let frames = '';
    let block = toolBlocks.get(call.index);
    if (block === undefined) {
      frames += startBlock({ type: 'tool_use', id: call.id ?? '', name: call.function?.name ?? '', input: {} }, false);
      block = openBlock;
      toolBlocks.set(call.index, block);
    }
    const piece = call.function?.arguments ?? '';
    if (piece !== '') frames += frame('content_block_delta', { index: block, delta: { type: 'input_json_delta', partial_json: piece } });
    return frames;
  };

  return {
    start: (opening) => frame('message_start', {
      message: {
        id: input.id, type: 'message', role: 'assistant', model: input.modelSlug, content: [], stop_reason: null, stop_sequence: null,
        usage: { input_tokens: opening.promptTokens, output_tokens: 0, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
      },
    }),
    chunk(choices: StreamChoice[]): string {
      let frames = '';
      // The gateway asks upstreams for one choice (n = 1); Anthropic's answer has no choices.
      for (const choice of choices) {
        if (choice.index !== 0) continue;
        frames += reasoningFrames(choice.delta);
        frames += textDelta(choice.delta.content ?? '') + textDelta(choice.delta.refusal ?? '');
        for (const call of choice.delta.tool_calls ?? []) frames += toolDelta(call);
        if (choice.finish_reason !== null) finishReason = choice.finish_reason;
      }
      return frames;
    },
    text: (text: string) => textDelta(text),
    close(close: StreamClose): string {
      // content is never empty, as in a non-streaming answer: an empty reply has one empty text block.
      let frames = nextBlock === 0 ? startBlock({ type: 'text', text: '' }, true) : '';
      frames += stopOpenBlock();
      const stopReason = close.ending === 'cost_stop' ? 'max_tokens' : stopReasonOf(finishReason);
      frames += frame('message_delta', { delta: { stop_reason: stopReason, stop_sequence: null }, usage: messagesUsage(close.usage, close.costMicros, close.costByClass) });
      return `${frames}event: message_stop\ndata: {"type":"message_stop"}\n\n`;
    },
    // Anthropic's in-stream error: an `error` event with its error body, then the end.
    fail: (error: GatewayError) => frame('error', { error: toAnthropicHttpError(error).body.error }),
  };
}
