import { describe, expect, it } from 'vitest';
import { GatewayError } from '@gateway/errors';
import type { ChatRequest } from '../../domain/chat-request.ts';
import type { StreamEvent } from '../upstream-adapter.ts';
import { anthropicAdapter } from './adapter.ts';

const target = { providerKind: 'anthropic', baseUrl: 'https://api.anthropic.example/v1', model: 'claude-x', apiKey: 'sk-ant' };

function chat(overrides: Partial<ChatRequest>): ChatRequest {
  return { model: 'c', messages: [{ role: 'user', content: 'hi' }], maxTokens: undefined, stream: false, includeUsage: false, params: {}, ...overrides };
}

describe('anthropicAdapter.buildRequest', () => {
  it('translates system, tool calls and tool results, merging consecutive turns, and the params it can honour', () => {
    const built = anthropicAdapter.buildRequest(target, {
      maxTokens: 50,
      request: chat({
        stream: true,
        messages: [
          { role: 'system', content: 'Be terse.' },
          { role: 'developer', content: [{ type: 'text', text: 'Use tools.' }] },
          { role: 'user', content: 'Weather in Pune?' },
          { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'wx', arguments: '{"city":"Pune"}' } }] },
          { role: 'tool', tool_call_id: 'call_1', content: 'sunny' },
          { role: 'user', content: 'Thanks' },
        ],
        params: {
          temperature: 0.3, top_p: 0.9, stop: ['END'], user: 'u-1', tool_choice: 'required', parallel_tool_calls: false,
          tools: [{ type: 'function', function: { name: 'wx', description: 'weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } }],
        },
      }),
    });
    expect(built.path).toBe('/messages');
    expect(built.headers).toEqual({ 'content-type': 'application/json', accept: 'text/event-stream', 'anthropic-version': '2023-06-01', 'x-api-key': 'sk-ant' });
    expect(JSON.parse(built.body)).toEqual({
      model: 'claude-x', max_tokens: 50, stream: true, system: 'Be terse.\n\nUse tools.',
      temperature: 0.3, top_p: 0.9, stop_sequences: ['END'], metadata: { user_id: 'u-1' },
      tools: [{ name: 'wx', description: 'weather', input_schema: { type: 'object', properties: { city: { type: 'string' } } } }],
      tool_choice: { type: 'any', disable_parallel_tool_use: true },
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'Weather in Pune?' }] },
        { role: 'assistant', content: [{ type: 'tool_use', id: 'call_1', name: 'wx', input: { city: 'Pune' } }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'call_1', content: 'sunny' }, { type: 'text', text: 'Thanks' }] },
      ],
    });
  });

  it('refuses, naming the param, what the Messages API cannot honour', () => {
    const refusal = (overrides: Partial<ChatRequest>) => {
      try {
        anthropicAdapter.buildRequest(target, { maxTokens: 5, request: chat(overrides) });
      } catch (error) {
        return error instanceof GatewayError ? `${error.code}:${error.param}` : 'other';
      }
      return 'accepted';
    };
    expect(refusal({ params: { seed: 1 } })).toBe('invalid_request:seed');
    expect(refusal({ params: { logit_bias: { 1: 1 } } })).toBe('invalid_request:logit_bias');
    expect(refusal({ params: { temperature: 1.2 } })).toBe('invalid_request:temperature');
    expect(refusal({ params: { response_format: { type: 'json_schema' } } })).toBe('invalid_request:response_format');
    expect(refusal({ messages: [{ role: 'system', content: 'only system' }] })).toBe('invalid_request:messages');
    for (const args of ['{oops', '[1,2]', '"text"', '7', 'null']) {
      expect(refusal({ messages: [{ role: 'assistant', content: null, tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: args } }] }] }), args)
        .toBe('invalid_request:messages[0].tool_calls[0].function.arguments');
    }
    expect(refusal({ params: { response_format: { type: 'text' }, temperature: 1 } })).toBe('accepted');
  });
});

describe('anthropicAdapter.buildRequest with reasoning', () => {
  const toolLoop = (reasoning?: NonNullable<ChatRequest['messages'][number]['reasoning']>) => chat({
    messages: [
      { role: 'user', content: 'Weather in Pune?' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'wx', arguments: '{}' } }], ...(reasoning ? { reasoning } : {}) },
      { role: 'tool', tool_call_id: 'call_1', content: 'sunny' },
    ],
  });
  const bodyOf = (request: ChatRequest, reasoning: Parameters<typeof anthropicAdapter.buildRequest>[1]['reasoning']) =>
    JSON.parse(anthropicAdapter.buildRequest(target, { maxTokens: 4096, request, reasoning }).body) as Record<string, any>;

  it('sends thinking and effort, and earlier thinking first in its turn, unchanged', () => {
    const body = bodyOf(toolLoop([{ type: 'thinking', thinking: 'hm', signature: 'sig' }, { type: 'redacted_thinking', data: 'xx' }]), {
      effort: 'low', thinking: { type: 'enabled', budgetTokens: 2048 },
    });
    expect(body.thinking).toEqual({ type: 'enabled', budget_tokens: 2048 });
    expect(body.output_config).toEqual({ effort: 'low' });
    expect(body.messages[1].content).toEqual([
      { type: 'thinking', thinking: 'hm', signature: 'sig' }, { type: 'redacted_thinking', data: 'xx' }, { type: 'tool_use', id: 'call_1', name: 'wx', input: {} },
    ]);
  });

  it('leaves out thinking it implied from an effort when a tool loop\'s turn came back without its thinking (Anthropic would refuse it), never the client\'s own', () => {
    const implied = { effort: 'low', thinking: { type: 'adaptive' as const }, thinkingImplied: true as const };
    expect(bodyOf(toolLoop(), implied).thinking).toBeUndefined();
    expect(bodyOf(toolLoop(), implied).output_config).toEqual({ effort: 'low' });
    expect(bodyOf(toolLoop([{ type: 'thinking', thinking: 'hm', signature: 'sig' }]), implied).thinking).toEqual({ type: 'adaptive' });
    expect(bodyOf(toolLoop(), { thinking: { type: 'adaptive' } }).thinking).toEqual({ type: 'adaptive' });
  });
});

describe('anthropicAdapter.buildRequest with images and audio', () => {
  const pixel = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAAAAAA6fptVAAAACklEQVR4nGNoAAAAggCBd81ytgAAAABJRU5ErkJggg==';
  const image = (url: string) => ({ type: 'image_url' as const, image_url: { url, detail: 'high' as const } });
  const refusal = (request: ChatRequest) => {
    try {
      anthropicAdapter.buildRequest(target, { maxTokens: 5, request });
    } catch (error) {
      return error instanceof GatewayError ? `${error.code}:${error.param}` : 'other';
    }
    return 'accepted';
  };

  it('turns user images into image blocks, a data URL as base64 and an http(s) URL as a url source, in order with the text', () => {
    const built = anthropicAdapter.buildRequest(target, {
      maxTokens: 20,
      request: chat({
        messages: [{
          role: 'user',
          content: [
            { type: 'text', text: 'Compare ' }, { type: 'text', text: 'these:' }, image(`data:image/png;base64,${pixel}`),
            { type: 'text', text: '' }, image('https://images.example/cat.jpg'), { type: 'text', text: 'Which is brighter?' },
          ],
        }],
      }),
    });
    expect((JSON.parse(built.body) as { messages: unknown }).messages).toEqual([{
      role: 'user',
      content: [
        { type: 'text', text: 'Compare these:' },
        { type: 'image', source: { type: 'base64', media_type: 'image/png', data: pixel } },
        { type: 'image', source: { type: 'url', url: 'https://images.example/cat.jpg' } },
        { type: 'text', text: 'Which is brighter?' },
      ],
    }]);
  });

  it('refuses audio naming the part, and leaves the image limits to checkMediaParts (the same for every provider)', () => {
    const audio = { type: 'input_audio' as const, input_audio: { data: 'UklGRg==', format: 'wav' as const } };
    expect(refusal(chat({ messages: [{ role: 'user', content: [{ type: 'text', text: 'listen' }, audio] }] }))).toBe('invalid_request:messages[0].content[1]');
    // An adapter's own refusal of the 101st image would tell a client that Anthropic serves the slug.
    const many = Array.from({ length: 101 }, () => image('https://images.example/cat.jpg'));
    expect(refusal(chat({ messages: [{ role: 'user', content: many }] }))).toBe('accepted');
  });
});

describe('anthropicAdapter.parseResponse', () => {
  it('keeps text and tool calls, maps the stop reason, and counts cached input as prompt', () => {
    expect(anthropicAdapter.parseResponse({
      id: 'msg_vendor', model: 'claude-x-internal', vendor_trace: 'x',
      content: [{ type: 'thinking', thinking: 'secret' }, { type: 'text', text: 'Checking.' }, { type: 'tool_use', id: 'tu_1', name: 'wx', input: { city: 'Pune' } }],
      stop_reason: 'tool_use',
      usage: { input_tokens: 10, output_tokens: 4, cache_creation_input_tokens: 2, cache_read_input_tokens: 3 },
    })).toEqual({
      choices: [{
        index: 0, content: 'Checking.', refusal: null, logprobs: null, finishReason: 'tool_calls',
        toolCalls: [{ id: 'tu_1', type: 'function', function: { name: 'wx', arguments: '{"city":"Pune"}' } }],
        // Thinking is kept (without a signature here), for the surfaces to return.
        reasoning: [{ type: 'thinking', thinking: 'secret', signature: '' }],
      }],
      // Cache writes without a breakdown are 5-minute writes (Anthropic's default lifetime).
      usage: { promptTokens: 15, completionTokens: 4, cachedInputTokens: 3, cacheWrite5mTokens: 2 },
    });
    expect(anthropicAdapter.parseResponse({ content: [{ type: 'text', text: 'x' }], stop_reason: 'max_tokens' }).choices[0]!.finishReason).toBe('length');
    expect(() => anthropicAdapter.parseResponse({ type: 'error' })).toThrow();
  });
});

describe('the Anthropic stream decoder', () => {
  it('turns message events into OpenAI chunks with tool call fragments, a finish reason and the usage', () => {
    const decoder = anthropicAdapter.createStreamDecoder();
    const out: StreamEvent[] = [];
    const events: Array<Record<string, unknown>> = [
      { type: 'message_start', message: { id: 'msg_vendor', model: 'claude-internal', usage: { input_tokens: 12, output_tokens: 1, cache_read_input_tokens: 4 } } },
      { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
      { type: 'ping' },
      { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Let me check.' } },
      { type: 'content_block_stop', index: 0 },
      { type: 'content_block_start', index: 1, content_block: { type: 'tool_use', id: 'tu_1', name: 'wx', input: {} } },
      { type: 'content_block_delta', index: 1, delta: { type: 'input_json_delta', partial_json: '{"city":' } },
      { type: 'content_block_delta', index: 1, delta: { type: 'input_json_delta', partial_json: '"Pune"}' } },
      { type: 'message_delta', delta: { stop_reason: 'tool_use' }, usage: { output_tokens: 9 } },
      { type: 'message_stop' },
    ];
    for (const event of events) decoder.decode(String(event.type), JSON.stringify(event), out);
    expect(out).toEqual([
      { kind: 'chunk', text: '', choices: [{ index: 0, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }] },
      { kind: 'chunk', text: 'Let me check.', choices: [{ index: 0, delta: { content: 'Let me check.' }, logprobs: null, finish_reason: null }] },
      { kind: 'chunk', text: 'wx', choices: [{ index: 0, logprobs: null, finish_reason: null, delta: { tool_calls: [{ index: 0, id: 'tu_1', type: 'function', function: { name: 'wx', arguments: '' } }] } }] },
      { kind: 'chunk', text: '{"city":', choices: [{ index: 0, logprobs: null, finish_reason: null, delta: { tool_calls: [{ index: 0, function: { arguments: '{"city":' } }] } }] },
      { kind: 'chunk', text: '"Pune"}', choices: [{ index: 0, logprobs: null, finish_reason: null, delta: { tool_calls: [{ index: 0, function: { arguments: '"Pune"}' } }] } }] },
      { kind: 'chunk', text: '', choices: [{ index: 0, delta: {}, logprobs: null, finish_reason: 'tool_calls' }] },
      { kind: 'usage', usage: { promptTokens: 16, completionTokens: 9, cachedInputTokens: 4 } },
      { kind: 'done' },
    ]);
  });

  it('reports an error event or garbage as an upstream failure', () => {
    const out: StreamEvent[] = [];
    const decoder = anthropicAdapter.createStreamDecoder();
    decoder.decode('error', '{"type":"error","error":{"type":"overloaded_error","message":"vendor text"}}', out);
    decoder.decode(undefined, 'not json', out);
    expect(out.map((e) => e.kind)).toEqual(['error', 'error']);
    expect(JSON.stringify(out)).not.toContain('vendor text');
  });
});
