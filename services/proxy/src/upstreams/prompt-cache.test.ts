import { describe, expect, it } from 'vitest';
import { cacheScopeMarker, cacheScopeOf } from '../test-support/cache-scopes.ts';
import type { ChatRequest } from '../domain/chat-request.ts';
import { anthropicAdapter } from './anthropic/adapter.ts';
import { anthropicTokenClasses } from './anthropic/token-classes.ts';
import { openAiCompatibleAdapters } from './openai-compatible/providers.ts';
import { openAiCompatibleAdapter } from './openai-compatible/adapter.ts';
import { openAiTokenClasses } from './openai-compatible/token-classes.ts';

const key = Buffer.alloc(32, 7);
const scope = cacheScopeOf(key, 'org_a', undefined);
const control = { type: 'ephemeral' as const };
const target = (providerKind: string) => ({ providerKind, baseUrl: 'https://upstream.example/v1', model: 'm', apiKey: '' });

function chat(overrides: Partial<ChatRequest>): ChatRequest {
  return { model: 'c', messages: [{ role: 'user', content: 'hi' }], maxTokens: undefined, stream: false, includeUsage: false, params: {}, ...overrides };
}

describe('the cache scope', () => {
  it('is an HMAC of the organisation: the same for one organisation, different for another and under another key, never the id', () => {
    expect(scope.marker).toMatch(/^\[cache scope [0-9a-f]{16}\]$/);
    expect(cacheScopeMarker(key, 'org_a')).toBe(scope.marker);
    expect(cacheScopeMarker(key, 'org_b')).not.toBe(scope.marker);
    expect(cacheScopeMarker(Buffer.alloc(32, 8), 'org_a')).not.toBe(scope.marker);
    expect(scope.marker).not.toContain('org_a');
    // The client's prompt_cache_key only ever leaves inside its organisation's.
    const keyed = cacheScopeOf(key, 'org_a', 'repo-1');
    expect(keyed.promptCacheKey).toMatch(/^pck_[0-9a-f]{32}$/);
    expect(keyed.promptCacheKey).not.toBe(cacheScopeOf(key, 'org_b', 'repo-1').promptCacheKey);
    expect(keyed.promptCacheKey).not.toBe(scope.promptCacheKey);
  });
});

describe('the Anthropic adapter with breakpoints and a cache scope', () => {
  it('keeps each breakpoint on its block and puts the marker first: the first tool\'s description, else the system prompt', () => {
    const request = chat({
      cacheBreakpoints: 4,
      messages: [
        { role: 'system', content: [{ type: 'text', text: 'static' }, { type: 'text', text: 'rules', cache_control: { type: 'ephemeral', ttl: '1h' } }] },
        { role: 'user', content: [{ type: 'text', text: 'a', cache_control: control }, { type: 'text', text: 'b' }] },
        { role: 'assistant', content: null, tool_calls: [{ id: 't1', type: 'function', function: { name: 'look', arguments: '{}' }, cache_control: control }] },
        { role: 'tool', tool_call_id: 't1', content: 'found', cache_control: control },
      ],
      params: { tools: [{ type: 'function', function: { name: 'look', description: 'Looks.', parameters: { type: 'object' } }, cache_control: control }] },
    });
    const built = anthropicAdapter.buildRequest(target('anthropic'), { request, maxTokens: 10, cacheScope: scope });
    // A 1-hour breakpoint comes with the beta that introduced the lifetime.
    expect(built.headers['anthropic-beta']).toBe('extended-cache-ttl-2025-04-11');
    const body = JSON.parse(built.body);
    expect(body.tools).toEqual([{ name: 'look', description: `${scope.marker}\n\nLooks.`, input_schema: { type: 'object' }, cache_control: control }]);
    expect(body.system).toEqual([{ type: 'text', text: 'static' }, { type: 'text', text: 'rules', cache_control: { type: 'ephemeral', ttl: '1h' } }]);
    expect(body.messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'a', cache_control: control }, { type: 'text', text: 'b' }] },
      { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'look', input: {}, cache_control: control }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: 'found', cache_control: control }] },
    ]);
    const noTools = JSON.parse(anthropicAdapter.buildRequest(target('anthropic'), {
      request: chat({ messages: [{ role: 'system', content: 'Be terse.' }, { role: 'user', content: 'hi' }] }), maxTokens: 10, cacheScope: scope,
    }).body);
    expect(noTools.system).toBe(`${scope.marker}\n\nBe terse.`);
    // Unscoped and without breakpoints: the request as before.
    expect(JSON.parse(anthropicAdapter.buildRequest(target('anthropic'), { request: chat({ messages: [{ role: 'system', content: 'Be terse.' }, { role: 'user', content: 'hi' }] }), maxTokens: 10 }).body).system)
      .toBe('Be terse.');
  });
});

describe('the OpenAI-compatible adapters with breakpoints and a cache scope', () => {
  it('strip every breakpoint, put the marker in front of the prompt, and send prompt_cache_key by the provider\'s policy', () => {
    const request = chat({
      cacheBreakpoints: 2,
      promptCacheKey: 'repo-1',
      messages: [{ role: 'system', content: [{ type: 'text', text: 'rules', cache_control: control }] }, { role: 'user', content: 'hi', cache_control: control }],
      params: { tools: [{ type: 'function', function: { name: 'look' }, cache_control: control }] },
    });
    const keyed = cacheScopeOf(key, 'org_a', 'repo-1');
    const body = JSON.parse(openAiCompatibleAdapter.buildRequest(target('openai_compatible'), { request, maxTokens: 10, cacheScope: keyed }).body);
    expect(body.messages).toEqual([{ role: 'system', content: [{ type: 'text', text: `${scope.marker}\n\n` }, { type: 'text', text: 'rules' }] }, { role: 'user', content: 'hi' }]);
    expect(body.tools).toEqual([{ type: 'function', function: { name: 'look' } }]);
    expect(body.prompt_cache_key).toBe(keyed.promptCacheKey);
    // A conversation without a system message gets the marker as one of its own.
    const plain = chat({ messages: [{ role: 'user', content: 'hi' }] });
    expect(JSON.parse(openAiCompatibleAdapter.buildRequest(target('openai_compatible'), { request: plain, maxTokens: 10, cacheScope: scope }).body))
      .toMatchObject({ messages: [{ role: 'system', content: scope.marker }, { role: 'user', content: 'hi' }] });
    const adapterOf = (kind: string) => openAiCompatibleAdapters.find((adapter) => adapter.providerKind === kind)!;
    const sentKey = (kind: string, withKey: ChatRequest) => JSON.parse(adapterOf(kind).buildRequest(target(kind), { request: withKey, maxTokens: 10, cacheScope: scope }).body).prompt_cache_key;
    expect(sentKey('openai', plain)).toBe(scope.promptCacheKey);
    expect(sentKey('openai_compatible', plain)).toBeUndefined();
    expect(sentKey('vllm', request)).toBeUndefined();
  });
});

describe('token classes of each wire format', () => {
  it('reads cache reads (OpenAI) and reads and writes by lifetime (Anthropic)', () => {
    expect(openAiTokenClasses({ prompt_tokens: 100, prompt_tokens_details: { cached_tokens: 64 } })).toEqual({ cachedInputTokens: 64 });
    expect(openAiTokenClasses({ prompt_tokens: 10, prompt_tokens_details: { cached_tokens: 64 } })).toEqual({ cachedInputTokens: 10 });
    expect(openAiTokenClasses({ prompt_tokens: 10 })).toEqual({});
    expect(anthropicTokenClasses({
      input_tokens: 5, cache_read_input_tokens: 30, cache_creation_input_tokens: 12, cache_creation: { ephemeral_5m_input_tokens: 2, ephemeral_1h_input_tokens: 10 },
    })).toEqual({ cachedInputTokens: 30, cacheWrite5mTokens: 2, cacheWrite1hTokens: 10 });
    expect(anthropicTokenClasses({ input_tokens: 5, cache_creation_input_tokens: 12 })).toEqual({ cacheWrite5mTokens: 12 });
    expect(anthropicTokenClasses({ input_tokens: 5, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 })).toEqual({});
  });
});
