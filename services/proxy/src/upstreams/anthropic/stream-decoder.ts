import type { TokenClassCounts } from '../../domain/normalized-completion.ts';
import type { StreamDecoder, StreamEventSink } from '../upstream-adapter.ts';
import { anthropicPromptTokens, anthropicTokenClasses } from './token-classes.ts';
import { countOf as count, isObject } from '../wire-values.ts';

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
 * message_delta become the usage, with its cache reads and writes (anthropicTokenClasses). Thinking
 * becomes reasoning_content deltas, its signature a reasoning_signature delta, a redacted thinking
 * block a redacted_reasoning delta; other block kinds are not relayed.
 */
export class AnthropicStreamDecoder implements StreamDecoder {
  #promptTokens = 0;
  /** The price classes of the input counts message_start gave. */
  #inputClasses: TokenClassCounts = {};
  #toolIndexByBlock = new Map<number, number>();

  /**
   * The classes of message_delta's repeated input counts. A delta that repeats the cache writes
   * without their lifetime breakdown keeps message_start's split when the totals agree (else all
   * its writes would read as 5-minute ones and a 1-hour write would be billed as the cheaper kind).
   */
  #repeatedClasses(usage: Record<string, unknown>): TokenClassCounts {
    const classes = anthropicTokenClasses(usage);
    const startWrites = (this.#inputClasses.cacheWrite5mTokens ?? 0) + (this.#inputClasses.cacheWrite1hTokens ?? 0);
    const writes = (classes.cacheWrite5mTokens ?? 0) + (classes.cacheWrite1hTokens ?? 0);
    if (usage.cache_creation === undefined && writes === startWrites && writes > 0) {
      const { cacheWrite5mTokens: _fiveMinutes, cacheWrite1hTokens: _oneHour, ...rest } = classes;
      return {
        ...rest,
        ...(this.#inputClasses.cacheWrite5mTokens === undefined ? {} : { cacheWrite5mTokens: this.#inputClasses.cacheWrite5mTokens }),
        ...(this.#inputClasses.cacheWrite1hTokens === undefined ? {} : { cacheWrite1hTokens: this.#inputClasses.cacheWrite1hTokens }),
      };
    }
    return classes;
  }

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
        this.#promptTokens = anthropicPromptTokens(usage);
        this.#inputClasses = anthropicTokenClasses(usage);
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
          const repeated = usage.input_tokens !== undefined;
          const promptTokens = repeated ? anthropicPromptTokens(usage) : this.#promptTokens;
          const classes = repeated ? this.#repeatedClasses(usage) : this.#inputClasses;
          out.push({ kind: 'usage', usage: { promptTokens, completionTokens: count(usage.output_tokens), ...classes } });
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
