import { describe, expect, it } from 'vitest';
import { openAiCompatibleAdapter } from './adapter.ts';

const target = { providerKind: 'openai_compatible', baseUrl: 'https://api.example.com/v1', model: 'vendor-model-7', apiKey: 'sk-vendor' };
const request = {
  model: 'chat',
  messages: [{ role: 'user' as const, content: 'hi' }],
  maxTokens: undefined,
  params: { temperature: 0, tools: [{ type: 'function', function: { name: 'f' } }] },
};

describe('openAiCompatibleAdapter.buildRequest', () => {
  it('sends the upstream model, the validated messages, our max_tokens and the forwarded params only', () => {
    const built = openAiCompatibleAdapter.buildRequest(target, { request, maxTokens: 33 });
    expect(built.path).toBe('/chat/completions');
    expect(built.headers).toEqual({ 'content-type': 'application/json', accept: 'application/json', authorization: 'Bearer sk-vendor' });
    expect(JSON.parse(built.body)).toEqual({
      model: 'vendor-model-7', messages: [{ role: 'user', content: 'hi' }], max_tokens: 33, temperature: 0,
      tools: [{ type: 'function', function: { name: 'f' } }],
    });
  });

  it('sends no Authorization header when the model has no credential', () => {
    expect(openAiCompatibleAdapter.buildRequest({ ...target, apiKey: '' }, { request, maxTokens: 1 }).headers.authorization).toBeUndefined();
  });
});

describe('openAiCompatibleAdapter.parseResponse', () => {
  it('keeps only allowlisted fields of each choice, and the usage', () => {
    const parsed = openAiCompatibleAdapter.parseResponse({
      id: 'vendor-id', model: 'vendor-model-7', system_fingerprint: 'fp', vendor_debug: { node: 'x' },
      choices: [{
        index: 0, finish_reason: 'stop', vendor_score: 9,
        message: { role: 'assistant', content: 'hello', refusal: null, annotations: [{ url: 'x' }], audio: { id: 'a' } },
        logprobs: { content: [{ token: 'hello', logprob: -0.1, bytes: [104], top_logprobs: [{ token: 'hi', logprob: -2, bytes: null, extra: 1 }], extra: 2 }] },
      }],
      usage: { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4, vendor_cache_tokens: 2 },
    });
    expect(parsed).toEqual({
      choices: [{
        index: 0, content: 'hello', refusal: null, toolCalls: [], finishReason: 'stop',
        logprobs: { content: [{ token: 'hello', logprob: -0.1, bytes: [104], top_logprobs: [{ token: 'hi', logprob: -2, bytes: null }] }], refusal: null },
      }],
      usage: { promptTokens: 3, completionTokens: 1 },
    });
  });

  it('maps a vendor finish reason to a standard one, keeps tool calls, and ignores malformed usage', () => {
    const parsed = openAiCompatibleAdapter.parseResponse({
      choices: [{ message: { content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '{}' }, vendor: 1 }] }, finish_reason: 'vendor_eos' }],
      usage: { prompt_tokens: -1, completion_tokens: 2 },
    });
    expect(parsed.choices[0]).toMatchObject({ index: 0, content: null, finishReason: 'tool_calls', toolCalls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '{}' } }] });
    expect(parsed.usage).toBeUndefined();
  });

  it('throws on an answer that is not a completion', () => {
    expect(() => openAiCompatibleAdapter.parseResponse({ error: 'nope' })).toThrow();
    expect(() => openAiCompatibleAdapter.parseResponse({ choices: [] })).toThrow();
    expect(() => openAiCompatibleAdapter.parseResponse(null)).toThrow();
  });
});
