import { describe, expect, it } from 'vitest';
import { GatewayError } from '@gateway/errors';
import type { StreamChoice } from '../normalized-completion.ts';
import { createMessagesStreamRenderer } from './messages-stream-renderer.ts';

/** The events of some SSE frames: each frame's event name must equal its data's `type`. */
function events(frames: string): Array<Record<string, any>> {
  return frames.split('\n\n').filter((frame) => frame !== '').map((frame) => {
    const [eventLine, dataLine] = frame.split('\n');
    const data = JSON.parse(dataLine!.slice('data: '.length)) as Record<string, any>;
    expect(eventLine).toBe(`event: ${data.type}`);
    return data;
  });
}

function delta(delta: StreamChoice['delta'], finish: string | null = null): StreamChoice[] {
  return [{ index: 0, delta, logprobs: null, finish_reason: finish }];
}

const usage = { promptTokens: 20, completionTokens: 7 };

describe('createMessagesStreamRenderer', () => {
  it('streams text as one text block between message_start and message_stop, with the billed usage at the end', () => {
    const renderer = createMessagesStreamRenderer({ id: 'msg_abc', modelSlug: 'chat' });
    const frames = renderer.start({ promptTokens: 18 })
      + renderer.chunk(delta({ role: 'assistant', content: '' }))
      + renderer.text('Hello', '[]')
      + renderer.chunk(delta({ content: ' world' }))
      + renderer.chunk(delta({}, 'stop'))
      + renderer.close({ ending: 'completed', usage, costMicros: 99n });
    expect(events(frames)).toEqual([
      {
        type: 'message_start',
        message: {
          id: 'msg_abc', type: 'message', role: 'assistant', model: 'chat', content: [], stop_reason: null, stop_sequence: null,
          usage: { input_tokens: 18, output_tokens: 0, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
        },
      },
      { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
      { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Hello' } },
      { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: ' world' } },
      { type: 'content_block_stop', index: 0 },
      {
        type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null },
        usage: { input_tokens: 20, output_tokens: 7, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, cost_micros: '99', cost_inr: '0.000099' },
      },
      { type: 'message_stop' },
    ]);
  });

  it('numbers a text block and then one tool_use block per call, with their arguments as input_json_delta', () => {
    const renderer = createMessagesStreamRenderer({ id: 'msg_t', modelSlug: 'chat' });
    const frames = renderer.text('Checking.', '[]')
      + renderer.chunk(delta({ tool_calls: [{ index: 0, id: 'call_x', type: 'function', function: { name: 'get_weather', arguments: '' } }] }))
      + renderer.chunk(delta({ tool_calls: [{ index: 0, function: { arguments: '{"city":' } }] }))
      + renderer.chunk(delta({ tool_calls: [{ index: 0, function: { arguments: '"Pune"}' } }] }))
      + renderer.chunk(delta({ tool_calls: [{ index: 1, id: 'call_y', type: 'function', function: { name: 'now', arguments: '{}' } }] }))
      + renderer.chunk(delta({}, 'tool_calls'))
      + renderer.close({ ending: 'completed', usage, costMicros: 1n });
    const shown = events(frames).map((event) => [event.type, event.index, event.content_block ?? event.delta]);
    expect(shown).toEqual([
      ['content_block_start', 0, { type: 'text', text: '' }],
      ['content_block_delta', 0, { type: 'text_delta', text: 'Checking.' }],
      ['content_block_stop', 0, undefined],
      ['content_block_start', 1, { type: 'tool_use', id: 'call_x', name: 'get_weather', input: {} }],
      ['content_block_delta', 1, { type: 'input_json_delta', partial_json: '{"city":' }],
      ['content_block_delta', 1, { type: 'input_json_delta', partial_json: '"Pune"}' }],
      ['content_block_stop', 1, undefined],
      ['content_block_start', 2, { type: 'tool_use', id: 'call_y', name: 'now', input: {} }],
      ['content_block_delta', 2, { type: 'input_json_delta', partial_json: '{}' }],
      ['content_block_stop', 2, undefined],
      ['message_delta', undefined, { stop_reason: 'tool_use', stop_sequence: null }],
      ['message_stop', undefined, undefined],
    ]);
  });

  it('ends a cost stop with stop_reason max_tokens, and an empty reply with one empty text block', () => {
    const cut = createMessagesStreamRenderer({ id: 'm', modelSlug: 'chat' });
    const cutEvents = events(cut.text('w1', '[]') + cut.close({ ending: 'cost_stop', usage, costMicros: 5n }));
    expect(cutEvents.find((event) => event.type === 'message_delta')!.delta.stop_reason).toBe('max_tokens');

    const empty = createMessagesStreamRenderer({ id: 'm', modelSlug: 'chat' });
    expect(events(empty.chunk(delta({}, 'length')) + empty.close({ ending: 'completed', usage, costMicros: 5n })).map((event) => event.type)).toEqual([
      'content_block_start', 'content_block_stop', 'message_delta', 'message_stop',
    ]);
  });

  it('fails with an error event in Anthropic\'s error shape', () => {
    const renderer = createMessagesStreamRenderer({ id: 'm', modelSlug: 'chat' });
    expect(events(renderer.fail(new GatewayError('upstream_timeout')))).toEqual([
      { type: 'error', error: { type: 'timeout_error', message: expect.any(String) } },
    ]);
  });
});
