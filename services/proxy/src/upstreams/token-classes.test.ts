import { describe, expect, it } from 'vitest';
import { AnthropicStreamDecoder } from './anthropic/stream-decoder.ts';
import { anthropicTokenClasses } from './anthropic/token-classes.ts';
import { openAiTokenClasses } from './openai-compatible/token-classes.ts';
import type { StreamEvent } from './upstream-adapter.ts';

describe('reading token price classes from each wire format', () => {
  it('reads OpenAI cached, audio and reasoning counts, leaving out absent and malformed ones', () => {
    expect(openAiTokenClasses({
      prompt_tokens: 100, completion_tokens: 50,
      prompt_tokens_details: { cached_tokens: 40, audio_tokens: 7 }, completion_tokens_details: { reasoning_tokens: 30 },
    })).toEqual({ cachedInputTokens: 40, audioInputTokens: 7, reasoningTokens: 30 });
    expect(openAiTokenClasses({ prompt_tokens: 1, completion_tokens: 1 })).toEqual({});
    expect(openAiTokenClasses({ prompt_tokens_details: { cached_tokens: -1, audio_tokens: 1.5 }, completion_tokens_details: 'x' })).toEqual({});
  });

  it('reads Anthropic cache reads and writes, split by lifetime when the breakdown is given, else 5-minute', () => {
    expect(anthropicTokenClasses({
      input_tokens: 10, cache_read_input_tokens: 40, cache_creation_input_tokens: 30,
      cache_creation: { ephemeral_5m_input_tokens: 10, ephemeral_1h_input_tokens: 20 },
    })).toEqual({ cachedInputTokens: 40, cacheWrite5mTokens: 10, cacheWrite1hTokens: 20 });
    expect(anthropicTokenClasses({ input_tokens: 10, cache_creation_input_tokens: 6 })).toEqual({ cacheWrite5mTokens: 6 });
    // A breakdown that says more than the total is held to it.
    expect(anthropicTokenClasses({ cache_creation_input_tokens: 5, cache_creation: { ephemeral_1h_input_tokens: 9 } })).toEqual({ cacheWrite1hTokens: 5 });
    expect(anthropicTokenClasses({ input_tokens: 3 })).toEqual({});
  });
});

describe('the Anthropic stream decoder\'s token classes', () => {
  it('keeps message_start\'s 5-minute/1-hour split when message_delta repeats the cache writes without it', () => {
    const decoder = new AnthropicStreamDecoder();
    const events: StreamEvent[] = [];
    decoder.decode(undefined, JSON.stringify({
      type: 'message_start',
      message: { usage: { input_tokens: 5, output_tokens: 1, cache_read_input_tokens: 40, cache_creation_input_tokens: 15, cache_creation: { ephemeral_5m_input_tokens: 10, ephemeral_1h_input_tokens: 5 } } },
    }), events);
    decoder.decode(undefined, JSON.stringify({
      type: 'message_delta', delta: { stop_reason: 'end_turn' },
      usage: { input_tokens: 5, output_tokens: 9, cache_read_input_tokens: 40, cache_creation_input_tokens: 15 },
    }), events);
    expect(events.at(-1)).toEqual({
      kind: 'usage', usage: { promptTokens: 60, completionTokens: 9, cachedInputTokens: 40, cacheWrite5mTokens: 10, cacheWrite1hTokens: 5 },
    });
  });
});
