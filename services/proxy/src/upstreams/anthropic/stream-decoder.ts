import type { StreamDecoder, StreamEventSink } from '../upstream-adapter.ts';

type Json = Record<string, unknown>;

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function count(value: unknown): number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 ? value : 0;
}

/** OpenAI's finish reason for an Anthropic stop reason. */
export function finishReasonOf(stopReason: unknown, hasToolCalls: boolean): string {
  switch (stopReason) {
    case 'max_tokens': return 'length';
    case 'tool_use': return 'tool_calls';
    case 'refusal': return 'content_filter';
    default: return hasToolCalls ? 'tool_calls' : 'stop';
  }
}

/**
 * Decodes Anthropic's Messages stream (message_start, content_block_start/delta/stop,
 * message_delta, message_stop, ping, error) into OpenAI chunks: text deltas become content,
 * tool_use blocks become tool call fragments numbered in order of appearance, the stop reason
 * becomes a finish reason, and the input tokens of message_start with the output tokens of
 * message_delta become the usage. Thinking becomes reasoning_content deltas, its signature a
 * reasoning_signature delta, a redacted thinking block a redacted_reasoning delta; other block
 * kinds are not relayed.
 */
export class AnthropicStreamDecoder implements StreamDecoder {
  #promptTokens = 0;
  #toolIndexByBlock = new Map<number, number>();

  /** Decodes one event; the `type` inside its data decides, as Anthropic documents. */
  decode(_event: string | undefined, data: string, out: StreamEventSink): void {
    let message: unknown;
    try {
      message = JSON.parse(data);
    } catch {
      out.push({ kind: 'error', reason: 'event is not JSON' });
      return;
    }
    if (!isObject(message)) { out.push({ kind: 'error', reason: 'event is not an object' }); return; }
    switch (message.type) {
      case 'message_start': {
        const usage = isObject(message.message) && isObject(message.message.usage) ? message.message.usage : {};
        this.#promptTokens = count(usage.input_tokens) + count(usage.cache_creation_input_tokens) + count(usage.cache_read_input_tokens);
        out.push({ kind: 'chunk', text: '', choices: [{ index: 0, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }] });
        return;
      }
      case 'content_block_start': {
        const block = isObject(message.content_block) ? message.content_block : {};
        if (block.type === 'text' && typeof block.text === 'string' && block.text !== '') {
          out.push({ kind: 'chunk', text: block.text, choices: [{ index: 0, delta: { content: block.text }, logprobs: null, finish_reason: null }] });
        } else if (block.type === 'redacted_thinking' && typeof block.data === 'string') {
          out.push({ kind: 'chunk', text: '', choices: [{ index: 0, delta: { redacted_reasoning: block.data }, logprobs: null, finish_reason: null }] });
        } else if (block.type === 'tool_use' && typeof block.id === 'string' && typeof block.name === 'string') {
          const toolIndex = this.#toolIndexByBlock.size;
          this.#toolIndexByBlock.set(count(message.index), toolIndex);
          out.push({
            kind: 'chunk', text: block.name,
            choices: [{
              index: 0, logprobs: null, finish_reason: null,
              delta: { tool_calls: [{ index: toolIndex, id: block.id, type: 'function', function: { name: block.name, arguments: '' } }] },
            }],
          });
        }
        return;
      }
      case 'content_block_delta': {
        const delta = isObject(message.delta) ? message.delta : {};
        if (delta.type === 'text_delta' && typeof delta.text === 'string') {
          out.push({ kind: 'chunk', text: delta.text, choices: [{ index: 0, delta: { content: delta.text }, logprobs: null, finish_reason: null }] });
        } else if (delta.type === 'thinking_delta' && typeof delta.thinking === 'string') {
          // Thinking is output Anthropic bills: it counts towards the running cost like text.
          out.push({ kind: 'chunk', text: delta.thinking, choices: [{ index: 0, delta: { reasoning_content: delta.thinking }, logprobs: null, finish_reason: null }] });
        } else if (delta.type === 'signature_delta' && typeof delta.signature === 'string') {
          out.push({ kind: 'chunk', text: '', choices: [{ index: 0, delta: { reasoning_signature: delta.signature }, logprobs: null, finish_reason: null }] });
        } else if (delta.type === 'input_json_delta' && typeof delta.partial_json === 'string') {
          const toolIndex = this.#toolIndexByBlock.get(count(message.index));
          if (toolIndex === undefined) return;
          out.push({
            kind: 'chunk', text: delta.partial_json,
            choices: [{ index: 0, logprobs: null, finish_reason: null, delta: { tool_calls: [{ index: toolIndex, function: { arguments: delta.partial_json } }] } }],
          });
        }
        return;
      }
      case 'message_delta': {
        const delta = isObject(message.delta) ? message.delta : {};
        if (delta.stop_reason !== undefined && delta.stop_reason !== null) {
          const finishReason = finishReasonOf(delta.stop_reason, this.#toolIndexByBlock.size > 0);
          out.push({ kind: 'chunk', text: '', choices: [{ index: 0, delta: {}, logprobs: null, finish_reason: finishReason }] });
        }
        if (isObject(message.usage) && typeof message.usage.output_tokens === 'number') {
          const usage = message.usage;
          // Newer API versions repeat the (cumulative) input counts here; they win when present.
          const promptTokens = usage.input_tokens === undefined
            ? this.#promptTokens
            : count(usage.input_tokens) + count(usage.cache_creation_input_tokens) + count(usage.cache_read_input_tokens);
          out.push({ kind: 'usage', usage: { promptTokens, completionTokens: count(usage.output_tokens) } });
        }
        return;
      }
      case 'message_stop':
        out.push({ kind: 'done' });
        return;
      case 'error':
        out.push({ kind: 'error', reason: 'upstream sent an error event' });
        return;
      default:
        return; // ping, content_block_stop, and event kinds added later
    }
  }
}
