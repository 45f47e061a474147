import { describe, expect, it } from 'vitest';
import { adapterFor, supportedProviderKinds } from '../upstream-adapters.ts';
import type { StreamEvent } from '../upstream-adapter.ts';
import { openAiCompatibleAdapter } from './adapter.ts';

const target = { providerKind: 'openai_compatible', baseUrl: 'https://api.example.com/v1', model: 'vendor-model-7', apiKey: 'sk-vendor' };
const request = {
  model: 'chat',
  messages: [{ role: 'user' as const, content: 'hi' }],
  maxTokens: undefined,
  stream: false,
  includeUsage: false,
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

describe('OpenAI-compatible streaming and providers', () => {
  it('always asks the upstream for the usage chunk when streaming, whatever the client asked', () => {
    const built = openAiCompatibleAdapter.buildRequest(target, { request: { ...request, stream: true, includeUsage: false }, maxTokens: 9 });
    expect(built.headers.accept).toBe('text/event-stream');
    expect(JSON.parse(built.body)).toMatchObject({ stream: true, stream_options: { include_usage: true }, max_tokens: 9 });
  });

  it('configures each provider over the one base: Azure api-key and api-version, OpenAI max_completion_tokens, refused params', () => {
    const azure = adapterFor('azure_openai')!;
    const built = azure.buildRequest({ ...target, providerKind: 'azure_openai', baseUrl: 'https://r.openai.azure.com/openai/deployments/d1' }, { request, maxTokens: 7 });
    expect(built.path).toBe('/chat/completions?api-version=2024-10-21');
    expect(built.headers['api-key']).toBe('sk-vendor');
    expect(built.headers.authorization).toBeUndefined();
    expect(JSON.parse(built.body)).toMatchObject({ max_completion_tokens: 7 });
    expect(JSON.parse(adapterFor('openai')!.buildRequest(target, { request, maxTokens: 7 }).body)).toMatchObject({ max_completion_tokens: 7 });
    expect(JSON.parse(adapterFor('vllm')!.buildRequest(target, { request, maxTokens: 7 }).body)).toMatchObject({ max_tokens: 7 });
    expect(() => adapterFor('groq')!.buildRequest(target, { request: { ...request, params: { logprobs: true } }, maxTokens: 7 }))
      .toThrow(expect.objectContaining({ code: 'invalid_request', param: 'logprobs' }));
    expect(supportedProviderKinds()).toEqual(['anthropic', 'azure_openai', 'groq', 'ollama', 'openai', 'openai_compatible', 'together', 'vllm']);
  });

  it('rebuilds every chunk from the allowlist, maps finish reasons, and reads usage, [DONE] and errors', () => {
    const decoder = openAiCompatibleAdapter.createStreamDecoder();
    const out: StreamEvent[] = [];
    decoder.decode(undefined, JSON.stringify({
      id: 'vendor-id', model: 'vendor-model', system_fingerprint: 'fp_secret', vendor: 1,
      choices: [{ index: 0, delta: { role: 'assistant', content: 'Hi', audio: { id: 'x' }, tool_calls: [{ index: 0, id: 'c1', type: 'function', function: { name: 'f', arguments: '{' }, vendor: 2 }] }, finish_reason: null, vendor_score: 3 }],
    }), out);
    decoder.decode(undefined, JSON.stringify({ choices: [{ index: 0, delta: {}, finish_reason: 'eos_vendor' }], usage: null }), out);
    decoder.decode(undefined, JSON.stringify({ choices: [], usage: { prompt_tokens: 4, completion_tokens: 2, total_tokens: 6, vendor_cached: 1 } }), out);
    decoder.decode(undefined, '[DONE]', out);
    decoder.decode(undefined, JSON.stringify({ error: { message: 'vendor secret' } }), out);
    expect(out).toEqual([
      { kind: 'chunk', text: 'Hif{', choices: [{ index: 0, logprobs: null, finish_reason: null, delta: { role: 'assistant', content: 'Hi', tool_calls: [{ index: 0, id: 'c1', type: 'function', function: { name: 'f', arguments: '{' } }] } }] },
      { kind: 'chunk', text: '', choices: [{ index: 0, logprobs: null, finish_reason: 'stop', delta: {} }] },
      { kind: 'usage', usage: { promptTokens: 4, completionTokens: 2 } },
      { kind: 'done' },
      { kind: 'error', reason: 'upstream sent an error event' },
    ]);
  });

  it('decodes the common text chunk without a parse into the same events and bytes as the parse, and leaves every other shape to it', () => {
    const chunk = (delta: string, rest = '', head = '"id":"vendor-id","object":"chat.completion.chunk","created":1,"model":"vendor-model","system_fingerprint":"fp_secret",') =>
      `{${head}"choices":[{"index":0,"delta":${delta},"logprobs":null,"finish_reason":null}]${rest}}`;
    const decode = (data: string) => {
      const out: StreamEvent[] = [];
      openAiCompatibleAdapter.createStreamDecoder().decode(undefined, data, out);
      return out;
    };
    const viaParse = (data: string) => {
      // The same chunk with a nested vendor member cannot take the fast path.
      const out: StreamEvent[] = [];
      openAiCompatibleAdapter.createStreamDecoder().decode(undefined, `${data.slice(0, -1)},"vendor":{"region":"east-7"}}`, out);
      return out;
    };
    for (const data of [
      chunk('{"content":" w2 é\u2028"}', ',"usage":null'),
      chunk('{"role":"assistant","content":""}', ',"service_tier":"default","obfuscation":"abc"'),
      chunk('{"content":"Hi there"}', '', ''),
      chunk('{"content":"a}] choices: [{b"}', ',"note":"choices","n":-1.5e3'),
    ]) {
      const [fast] = decode(data);
      expect(fast).toMatchObject({ kind: 'text' });
      if (fast?.kind !== 'text') continue;
      const [parsed] = viaParse(data);
      expect(parsed).toMatchObject({ kind: 'chunk', text: fast.text });
      if (parsed?.kind !== 'chunk') continue;
      // The same bytes reach the client either way, and the same text is counted.
      expect(fast.json).toBe(JSON.stringify(parsed.choices));
      expect(parsed.choices).toEqual([{ index: 0, delta: data.includes('"role"') ? { role: 'assistant', content: fast.text } : { content: fast.text }, logprobs: null, finish_reason: null }]);
    }
    // Not the common shape: an error member (anywhere), escapes, nested vendor members, a raw control character.
    expect(decode(chunk('{"content":"x"}', ',"error":{"message":"vendor secret"}'))).toEqual([{ kind: 'error', reason: 'upstream sent an error event' }]);
    expect(decode(chunk('{"content":"x"}', '', '"error":"vendor secret",'))).toEqual([{ kind: 'error', reason: 'upstream sent an error event' }]);
    expect(decode(chunk('{"content":"a\\nb"}'))).toEqual([{ kind: 'chunk', text: 'a\nb', choices: [{ index: 0, delta: { content: 'a\nb' }, logprobs: null, finish_reason: null }] }]);
    expect(decode(chunk('{"content":"x"}', ',"vendor":{"region":"east-7"}'))).toEqual([{ kind: 'chunk', text: 'x', choices: [{ index: 0, delta: { content: 'x' }, logprobs: null, finish_reason: null }] }]);
    expect(decode(chunk('{"content":"a\nb"}'))).toEqual([{ kind: 'error', reason: 'chunk is not JSON' }]);
  });
});
