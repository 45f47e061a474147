import { describe, expect, it } from 'vitest';
import type { NormalizedChoice } from '../normalized-completion.ts';
import { parseResponsesRequest } from './responses-request.ts';
import { buildResponseBody, responseFrame } from './responses-response.ts';

const uuid = '0f0e0d0c-0b0a-4908-8706-050403020100';
const frame = responseFrame({
  requestUuid: uuid, createdAtS: 1_700_000_000, modelSlug: 'chat',
  echoed: parseResponsesRequest({ model: 'chat', input: 'x', metadata: { k: 'v' } }, { maxMessageChars: 100 }).echoed,
});

function choice(overrides: Partial<NormalizedChoice>): NormalizedChoice {
  return { index: 0, content: null, refusal: null, toolCalls: [], finishReason: 'stop', logprobs: null, ...overrides };
}

function body(overrides: Partial<NormalizedChoice>) {
  return buildResponseBody(frame, {
    completion: { choices: [choice(overrides)], usage: undefined }, usage: { promptTokens: 12, completionTokens: 7 }, costMicros: 1_234_567n, createdS: 1_700_000_005,
  });
}

describe('buildResponseBody', () => {
  it('renders text as one message item, with the gateway\'s ids, the echoed request fields and the billed usage with its cost', () => {
    expect(body({ content: 'Hi there' })).toEqual({
      id: `resp_${uuid}`, object: 'response', created_at: 1_700_000_000, status: 'completed', completed_at: 1_700_000_005,
      error: null, incomplete_details: null, model: 'chat',
      output: [{
        id: 'msg_0f0e0d0c0b0a49088706050403020100_0', type: 'message', status: 'completed', role: 'assistant',
        content: [{ type: 'output_text', text: 'Hi there', annotations: [], logprobs: [] }],
      }],
      usage: {
        input_tokens: 12, input_tokens_details: { cached_tokens: 0 }, output_tokens: 7, output_tokens_details: { reasoning_tokens: 0 },
        total_tokens: 19, cost_micros: '1234567', cost_inr: '1.234567',
      },
      instructions: null, max_output_tokens: null, metadata: { k: 'v' }, parallel_tool_calls: true, temperature: null, top_p: null,
      text: { format: { type: 'text' } }, tool_choice: 'auto', tools: [], truncation: 'disabled', store: false, background: false,
      previous_response_id: null, reasoning: { effort: null, summary: null }, max_tool_calls: null,
    });
  });

  it('renders tool calls as function_call items after the text, with the call ids it was given', () => {
    const calls = [
      { id: 'call_gw_1', type: 'function' as const, function: { name: 'a', arguments: '{}' } },
      { id: 'call_gw_2', type: 'function' as const, function: { name: 'b', arguments: '{"x":1}' } },
    ];
    expect(body({ content: 'Calling.', toolCalls: calls, finishReason: 'tool_calls' }).output).toEqual([
      expect.objectContaining({ id: 'msg_0f0e0d0c0b0a49088706050403020100_0', type: 'message' }),
      { id: 'fc_0f0e0d0c0b0a49088706050403020100_1', type: 'function_call', status: 'completed', call_id: 'call_gw_1', name: 'a', arguments: '{}' },
      { id: 'fc_0f0e0d0c0b0a49088706050403020100_2', type: 'function_call', status: 'completed', call_id: 'call_gw_2', name: 'b', arguments: '{"x":1}' },
    ]);
    // No text, only a call: no message item.
    expect(body({ content: null, toolCalls: calls.slice(0, 1) }).output.map((item) => item.type)).toEqual(['function_call']);
  });

  it('a refusal is a refusal part; an answer with nothing in it still has its empty message', () => {
    expect(body({ refusal: 'I cannot.' }).output[0]).toMatchObject({ content: [{ type: 'refusal', refusal: 'I cannot.' }] });
    expect(body({ content: '' }).output[0]).toMatchObject({ type: 'message', content: [{ type: 'output_text', text: '' }] });
  });

  it('a length finish (the upstream\'s, or the cut at the Reserve) is incomplete: max_output_tokens; content_filter likewise', () => {
    expect(body({ content: 'cut', finishReason: 'length' })).toMatchObject({
      status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' }, output: [{ status: 'incomplete' }],
    });
    expect(body({ content: 'x', finishReason: 'content_filter' })).toMatchObject({ status: 'incomplete', incomplete_details: { reason: 'content_filter' } });
  });
});
