import { describe, expect, it } from 'vitest';
import type { NormalizedChoice } from '../normalized-completion.ts';
import { parseMessagesRequest } from './messages-request.ts';
import { buildMessagesBody, messageIdOf, stopReasonOf } from './messages-response.ts';

function choice(overrides: Partial<NormalizedChoice>): NormalizedChoice {
  return { index: 0, content: null, refusal: null, toolCalls: [], finishReason: 'stop', logprobs: null, ...overrides };
}

function body(overrides: Partial<NormalizedChoice>) {
  return buildMessagesBody({
    id: 'msg_1', modelSlug: 'chat', completion: { choices: [choice(overrides)], usage: undefined },
    billedUsage: { promptTokens: 12, completionTokens: 5 }, costMicros: 1_234_567n,
  });
}

describe('buildMessagesBody', () => {
  it('renders text with the slug, the billed usage and its cost', () => {
    expect(body({ content: 'Hello there' })).toEqual({
      id: 'msg_1', type: 'message', role: 'assistant', model: 'chat',
      content: [{ type: 'text', text: 'Hello there' }],
      stop_reason: 'end_turn', stop_sequence: null,
      usage: { input_tokens: 12, output_tokens: 5, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, cost_micros: '1234567', cost_inr: '1.234567' },
    });
  });

  it('puts the text first, then one tool_use block per call with its arguments parsed', () => {
    const answer = body({
      content: 'Let me check.', finishReason: 'tool_calls',
      toolCalls: [
        { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Pune"}' } },
        { id: 'call_2', type: 'function', function: { name: 'now', arguments: '' } },
      ],
    });
    expect(answer.content).toEqual([
      { type: 'text', text: 'Let me check.' },
      { type: 'tool_use', id: 'call_1', name: 'get_weather', input: { city: 'Pune' } },
      { type: 'tool_use', id: 'call_2', name: 'now', input: {} },
    ]);
    expect(answer.stop_reason).toBe('tool_use');
  });

  it('has no text block beside tool calls without text, and one empty text block for an empty reply', () => {
    expect(body({ finishReason: 'tool_calls', toolCalls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: '{}' } }] }).content)
      .toEqual([{ type: 'tool_use', id: 'c', name: 'f', input: {} }]);
    expect(body({ content: '' }).content).toEqual([{ type: 'text', text: '' }]);
  });

  it('delivers arguments that are not a JSON object as their text, losing nothing', () => {
    const calls = ['{"a":', '[1,2]', '"x"'].map((args, i) => ({ id: `c${i}`, type: 'function' as const, function: { name: 'f', arguments: args } }));
    expect(body({ toolCalls: calls, finishReason: 'tool_calls' }).content.map((block) => (block as { input: unknown }).input)).toEqual(['{"a":', '[1,2]', '"x"']);
  });

  it('round trip: every tool_use block it emits, echoed back in an assistant turn, is taken and reaches the upstream as the arguments the model wrote', () => {
    const argumentsTexts = ['{"city":"Pune"}', '{"a":', '[1,2]', '"x"', 'not json'];
    const calls = argumentsTexts.map((args, i) => ({ id: `c${i}`, type: 'function' as const, function: { name: 'f', arguments: args } }));
    const emitted = body({ toolCalls: calls, finishReason: 'tool_calls' }).content;
    const echoed = parseMessagesRequest({
      model: 'chat', max_tokens: 10,
      messages: [
        { role: 'user', content: 'go' },
        { role: 'assistant', content: emitted },
        { role: 'user', content: calls.map((call) => ({ type: 'tool_result', tool_use_id: call.id, content: 'done' })) },
      ],
    }, 'create', { maxMessageChars: 1000 }).chat;
    expect(echoed.messages[1]!.tool_calls!.map((call) => call.function.arguments)).toEqual(argumentsTexts);
  });

  it('shows a refusal as text with stop_reason refusal', () => {
    expect(body({ refusal: 'I cannot help with that.', finishReason: 'content_filter' })).toMatchObject({
      content: [{ type: 'text', text: 'I cannot help with that.' }], stop_reason: 'refusal',
    });
  });
});

describe('stopReasonOf', () => {
  it('maps the gateway finish reasons to Anthropic stop reasons', () => {
    expect(['stop', 'length', 'tool_calls', 'function_call', 'content_filter', null].map(stopReasonOf))
      .toEqual(['end_turn', 'max_tokens', 'tool_use', 'tool_use', 'refusal', 'end_turn']);
  });
});

describe('messageIdOf', () => {
  it('is msg_ and the request UUID without dashes', () => {
    expect(messageIdOf('0f8fad5b-d9cb-469f-a165-70867728950e')).toBe('msg_0f8fad5bd9cb469fa16570867728950e');
  });
});
