import { GatewayError } from '@gateway/errors';
import { describe, expect, it } from 'vitest';
import type { StreamChoice } from '../normalized-completion.ts';
import { parseResponsesRequest } from './responses-request.ts';
import { responseFrame } from './responses-response.ts';
import { createResponsesStreamRenderer } from './responses-stream-renderer.ts';

const frame = responseFrame({
  requestUuid: '00000000-0000-4000-8000-000000000001', createdAtS: 1_700_000_000, modelSlug: 'chat',
  echoed: parseResponsesRequest({ model: 'chat', input: 'x' }, { maxMessageChars: 100 }).echoed,
});
const msgId = 'msg_00000000000040008000000000000001_0';
const usage = { promptTokens: 10, completionTokens: 4 };

/** The events of rendered SSE text: each frame's event name must equal its data's type. */
function events(text: string): Array<Record<string, any>> {
  return text.split('\n\n').filter((frame) => frame !== '').map((frame) => {
    const match = /^event: ([a-z._]+)\ndata: (.*)$/s.exec(frame);
    expect(match, frame).not.toBeNull();
    const data = JSON.parse(match![2]!) as Record<string, any>;
    expect(data.type).toBe(match![1]);
    return data;
  });
}

function delta(fields: StreamChoice['delta'], finish: string | null = null): StreamChoice[] {
  return [{ index: 0, delta: fields, logprobs: null, finish_reason: finish }];
}

describe('createResponsesStreamRenderer', () => {
  it('text: created, in_progress, item and part added, deltas, done events, completed with the whole response and usage; sequence numbers count from 0', () => {
    const renderer = createResponsesStreamRenderer(frame);
    const text = renderer.start({ promptTokens: 10 })
      + renderer.chunk(delta({ role: 'assistant', content: '' }))
      + renderer.text('Hel', '[]')
      + renderer.chunk(delta({ content: 'lo' }))
      + renderer.chunk(delta({}, 'stop'))
      + renderer.close({ ending: 'completed', usage, costMicros: 42n });
    const all = events(text);
    expect(all.map((e) => e.type)).toEqual([
      'response.created', 'response.in_progress', 'response.output_item.added', 'response.content_part.added',
      'response.output_text.delta', 'response.output_text.delta', 'response.output_text.done', 'response.content_part.done',
      'response.output_item.done', 'response.completed',
    ]);
    expect(all.map((e) => e.sequence_number)).toEqual(all.map((_, i) => i));
    expect(all[0]!.response).toMatchObject({ id: frame.id, status: 'in_progress', model: 'chat', output: [], usage: null, completed_at: null });
    expect(all[2]).toMatchObject({ output_index: 0, item: { id: msgId, type: 'message', status: 'in_progress', role: 'assistant', content: [] } });
    expect(all[3]).toMatchObject({ item_id: msgId, output_index: 0, content_index: 0, part: { type: 'output_text', text: '' } });
    expect(all[4]).toEqual({ type: 'response.output_text.delta', sequence_number: 4, item_id: msgId, output_index: 0, content_index: 0, delta: 'Hel', logprobs: [] });
    expect(all[6]).toMatchObject({ text: 'Hello' });
    expect(all[8]).toMatchObject({ item: { id: msgId, status: 'completed', content: [{ type: 'output_text', text: 'Hello', annotations: [] }] } });
    expect(all[9]!.response).toMatchObject({
      status: 'completed', incomplete_details: null, output: [all[8]!.item],
      usage: { input_tokens: 10, output_tokens: 4, total_tokens: 14, cost_micros: '42', cost_inr: '0.000042' },
    });
  });

  it('tool calls: the message closes when a call starts; each call is an item with argument deltas, closed at the end in output order', () => {
    const renderer = createResponsesStreamRenderer(frame);
    const text = renderer.start({ promptTokens: 10 })
      + renderer.chunk(delta({ content: 'Let me look.' }))
      + renderer.chunk(delta({ tool_calls: [{ index: 0, id: 'call_gw_a', type: 'function', function: { name: 'look', arguments: '' } }] }))
      + renderer.chunk(delta({ tool_calls: [{ index: 0, function: { arguments: '{"q":' } }] }))
      + renderer.chunk(delta({ tool_calls: [{ index: 1, id: 'call_gw_b', type: 'function', function: { name: 'see', arguments: '{}' } }] }))
      + renderer.chunk(delta({ tool_calls: [{ index: 0, function: { arguments: '1}' } }] }, 'tool_calls'))
      + renderer.close({ ending: 'completed', usage, costMicros: 1n });
    const all = events(text);
    expect(all.map((e) => e.type)).toEqual([
      'response.created', 'response.in_progress',
      'response.output_item.added', 'response.content_part.added', 'response.output_text.delta',
      'response.output_text.done', 'response.content_part.done', 'response.output_item.done',
      'response.output_item.added', 'response.function_call_arguments.delta',
      'response.output_item.added', 'response.function_call_arguments.delta',
      'response.function_call_arguments.delta',
      'response.function_call_arguments.done', 'response.output_item.done',
      'response.function_call_arguments.done', 'response.output_item.done',
      'response.completed',
    ]);
    expect(all[8]!.item).toEqual({ id: 'fc_00000000000040008000000000000001_1', type: 'function_call', status: 'in_progress', call_id: 'call_gw_a', name: 'look', arguments: '' });
    expect(all[13]).toMatchObject({ item_id: 'fc_00000000000040008000000000000001_1', output_index: 1, arguments: '{"q":1}' });
    expect(all[15]).toMatchObject({ item_id: 'fc_00000000000040008000000000000001_2', output_index: 2, arguments: '{}' });
    expect(all.at(-1)!.response.output).toEqual([
      expect.objectContaining({ type: 'message', status: 'completed' }),
      { id: 'fc_00000000000040008000000000000001_1', type: 'function_call', status: 'completed', call_id: 'call_gw_a', name: 'look', arguments: '{"q":1}' },
      { id: 'fc_00000000000040008000000000000001_2', type: 'function_call', status: 'completed', call_id: 'call_gw_b', name: 'see', arguments: '{}' },
    ]);
  });

  it('text after a tool call is a new message item; the items still open end in output order', () => {
    const renderer = createResponsesStreamRenderer(frame);
    const all = events(renderer.start({ promptTokens: 1 })
      + renderer.chunk(delta({ tool_calls: [{ index: 0, id: 'call_gw_a', type: 'function', function: { name: 'look', arguments: '{}' } }] }))
      + renderer.chunk(delta({ content: 'Done.' }, 'stop'))
      + renderer.close({ ending: 'completed', usage, costMicros: 1n }));
    const itemEvents = all.filter((e) => e.type === 'response.output_item.added' || e.type === 'response.output_item.done')
      .map((e) => `${e.type.slice('response.output_item.'.length)} ${e.output_index} ${e.item.type}`);
    expect(itemEvents).toEqual(['added 0 function_call', 'added 1 message', 'done 0 function_call', 'done 1 message']);
    expect(all.at(-1)!.response.output.map((item: { id: string }) => item.id)).toEqual([
      'fc_00000000000040008000000000000001_0', 'msg_00000000000040008000000000000001_1',
    ]);
  });

  it('a cost stop (BOUNDED_OVERRUN) or a length finish ends with response.incomplete, reason max_output_tokens, the cut item incomplete', () => {
    for (const [ending, finish] of [['cost_stop', null], ['completed', 'length']] as const) {
      const renderer = createResponsesStreamRenderer(frame);
      const text = renderer.start({ promptTokens: 10 }) + renderer.chunk(delta({ content: 'w1 w2' }, finish)) + renderer.close({ ending, usage, costMicros: 5n });
      const last = events(text).at(-1)!;
      expect(last.type).toBe('response.incomplete');
      expect(last.response).toMatchObject({ status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' }, output: [{ status: 'incomplete' }] });
    }
    const filtered = createResponsesStreamRenderer(frame);
    const text = filtered.start({ promptTokens: 1 }) + filtered.chunk(delta({ content: 'x' }, 'content_filter')) + filtered.close({ ending: 'completed', usage, costMicros: 5n });
    expect(events(text).at(-1)!.response.incomplete_details).toEqual({ reason: 'content_filter' });
  });

  it('a refusal streams as a refusal part; a stream with nothing in it still opens and closes its empty message', () => {
    const refusing = createResponsesStreamRenderer(frame);
    const refusal = events(refusing.start({ promptTokens: 1 }) + refusing.chunk(delta({ refusal: 'No.' })) + refusing.close({ ending: 'completed', usage, costMicros: 1n }));
    expect(refusal.map((e) => e.type)).toContain('response.refusal.delta');
    expect(refusal.find((e) => e.type === 'response.refusal.done')).toMatchObject({ refusal: 'No.' });
    expect(refusal.at(-1)!.response.output[0].content).toEqual([{ type: 'refusal', refusal: 'No.' }]);

    const empty = createResponsesStreamRenderer(frame);
    const nothing = events(empty.start({ promptTokens: 1 }) + empty.close({ ending: 'completed', usage, costMicros: 1n }));
    expect(nothing.map((e) => e.type)).toEqual([
      'response.created', 'response.in_progress', 'response.output_item.added', 'response.content_part.added',
      'response.output_text.done', 'response.content_part.done', 'response.output_item.done', 'response.completed',
    ]);
  });

  it('an error after the stream opened is one error event in the gateway\'s words', () => {
    const renderer = createResponsesStreamRenderer(frame);
    renderer.start({ promptTokens: 1 });
    const [error] = events(renderer.fail(new GatewayError('upstream_timeout')));
    expect(error).toEqual({ type: 'error', sequence_number: 2, code: 'upstream_timeout', message: expect.any(String), param: null });
  });
});
