import { describe, expect, it } from 'vitest';
import { GatewayError } from '@gateway/errors';
import { parseMessagesRequest, type MessagesRequestPurpose } from './messages-request.ts';

const limits = { maxMessageChars: 1000 };

function parse(body: unknown, purpose: MessagesRequestPurpose = 'create') {
  return parseMessagesRequest(body, purpose, limits).chat;
}

/** The 400 a body gets: its code and message (which names the field, Anthropic's error shape having no param). */
function refusal(body: unknown, purpose: MessagesRequestPurpose = 'create'): { code: string; message: string } {
  try {
    parse(body, purpose);
  } catch (error) {
    if (error instanceof GatewayError) return { code: error.code, message: error.publicMessage };
    throw error;
  }
  throw new Error('expected a refusal');
}

const base = { model: 'chat', max_tokens: 100 };
const hi = [{ role: 'user', content: 'hi' }];

describe('parseMessagesRequest', () => {
  it('translates system, text turns and the sampling params into the internal chat request, dropping what it ignores', () => {
    const request = parse({
      ...base, system: 'be brief', messages: [{ role: 'user', content: 'hi' }, { role: 'assistant', content: 'hello' }, { role: 'user', content: 'again' }],
      temperature: 0.3, top_p: 0.9, stop_sequences: ['END'], metadata: { user_id: 'u-1' }, stream: true,
      thinking: { type: 'enabled', budget_tokens: 2048 },
      context_management: { edits: [{ type: 'clear_thinking_20251015', keep: 'all' }] }, service_tier: 'auto', cache_control: { type: 'ephemeral' }, output_config: { effort: 'high' },
    });
    expect(request).toEqual({
      model: 'chat',
      messages: [
        // The top-level cache_control is a breakpoint on the conversation's last block.
        { role: 'system', content: 'be brief' }, { role: 'user', content: 'hi' }, { role: 'assistant', content: 'hello' },
        { role: 'user', content: 'again', cache_control: { type: 'ephemeral' } },
      ],
      maxTokens: 100, stream: true, includeUsage: false,
      params: { temperature: 0.3, top_p: 0.9, stop: ['END'], user: 'u-1' },
      cacheBreakpoints: 1,
      // Judged against the model in planChat (domain/reasoning.ts); "high" is Anthropic's default effort.
      reasoning: {
        effort: { value: 'high', param: 'output_config.effort', isSurfaceDefault: true },
        thinking: { type: 'enabled', budgetTokens: 2048, param: 'thinking' },
      },
    });
  });

  it('joins system text blocks, and keeps them apart with their cache_control when one has a breakpoint, as on content blocks', () => {
    expect(parse({ ...base, system: [{ type: 'text', text: 'You are a CLI.' }, { type: 'text', text: 'Be careful.' }], messages: hi }).messages[0])
      .toEqual({ role: 'system', content: 'You are a CLI.\n\nBe careful.' });
    const request = parse({
      ...base,
      system: [{ type: 'text', text: 'You are a CLI.' }, { type: 'text', text: 'Be careful.', cache_control: { type: 'ephemeral', ttl: '1h' } }],
      messages: [{ role: 'user', content: [{ type: 'text', text: 'a', cache_control: { type: 'ephemeral' } }, { type: 'text', text: 'b' }] }],
    });
    expect(request.messages).toEqual([
      { role: 'system', content: [{ type: 'text', text: 'You are a CLI.' }, { type: 'text', text: 'Be careful.', cache_control: { type: 'ephemeral', ttl: '1h' } }] },
      { role: 'user', content: [{ type: 'text', text: 'a', cache_control: { type: 'ephemeral' } }, { type: 'text', text: 'b' }] },
    ]);
    expect(request.cacheBreakpoints).toBe(2);
  });

  it('carries cache_control on tools, tool_use and tool_result blocks, and refuses a fifth breakpoint or a 1h one after a 5m one', () => {
    const control = { type: 'ephemeral' };
    const request = parse({
      ...base,
      tools: [{ name: 'look', input_schema: { type: 'object' }, cache_control: { type: 'ephemeral', ttl: '1h' } }],
      messages: [
        { role: 'user', content: 'find it' },
        { role: 'assistant', content: [{ type: 'tool_use', id: 'tu_1', name: 'look', input: {}, cache_control: control }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'tu_1', content: [{ type: 'text', text: 'found', cache_control: control }] }] },
      ],
    });
    expect(request.params.tools).toEqual([{ type: 'function', function: { name: 'look', parameters: { type: 'object' } }, cache_control: { type: 'ephemeral', ttl: '1h' } }]);
    expect(request.messages.slice(1)).toEqual([
      { role: 'assistant', content: null, tool_calls: [{ id: 'tu_1', type: 'function', function: { name: 'look', arguments: '{}' }, cache_control: control }] },
      { role: 'tool', tool_call_id: 'tu_1', content: 'found', cache_control: control },
    ]);
    expect(request.cacheBreakpoints).toBe(3);
    const five = Array.from({ length: 5 }, (_, i) => ({ type: 'text', text: `t${i}`, cache_control: control }));
    expect(refusal({ ...base, system: five, messages: hi }).message).toBe('system.4.cache_control: A maximum of 4 blocks with cache_control may be provided.');
    expect(refusal({ ...base, system: [{ type: 'text', text: 'a', cache_control: control }], messages: hi, cache_control: { type: 'ephemeral', ttl: '1h' } }).message)
      .toMatch(/^cache_control: a cache_control with ttl "1h" must come before/);
    expect(refusal({ ...base, messages: [{ role: 'user', content: [{ type: 'text', text: 'a', cache_control: { type: 'ephemeral', ttl: '2h' } }] }] }).message)
      .toBe('messages.0.content.0.cache_control.ttl: cache_control.ttl must be "5m" or "1h"');
  });

  it('turns image blocks into image_url parts: base64 as a data URL, url as itself', () => {
    const request = parse({
      ...base,
      messages: [{
        role: 'user', content: [
          { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } },
          { type: 'image', source: { type: 'url', url: 'https://example.com/cat.jpg' } },
          { type: 'text', text: 'what is this?' },
        ],
      }],
    });
    expect(request.messages).toEqual([{
      role: 'user', content: [
        { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } },
        { type: 'image_url', image_url: { url: 'https://example.com/cat.jpg' } },
        { type: 'text', text: 'what is this?' },
      ],
    }]);
  });

  it('turns tool_use into assistant tool calls and tool_result into tool messages, keeping the order', () => {
    const request = parse({
      ...base,
      tools: [{ name: 'get_weather', description: 'Weather of a city', input_schema: { type: 'object', properties: { city: { type: 'string' } } } }],
      messages: [
        { role: 'user', content: 'weather in Pune and Goa?' },
        {
          role: 'assistant', content: [
            { type: 'thinking', thinking: 'two calls', signature: 'sig' },
            { type: 'text', text: 'Checking.' },
            { type: 'tool_use', id: 'call_a', name: 'get_weather', input: { city: 'Pune' } },
            { type: 'tool_use', id: 'call_b', name: 'get_weather', input: { city: 'Goa' } },
          ],
        },
        {
          role: 'user', content: [
            { type: 'tool_result', tool_use_id: 'call_a', content: '31C' },
            { type: 'tool_result', tool_use_id: 'call_b', content: [{ type: 'text', text: 'rain' }, { type: 'image', source: { type: 'url', url: 'https://x.test/radar.png' } }], is_error: true },
            { type: 'text', text: 'thanks' },
          ],
        },
      ],
    });
    expect(request.messages).toEqual([
      { role: 'user', content: 'weather in Pune and Goa?' },
      {
        role: 'assistant', content: 'Checking.', tool_calls: [
          { id: 'call_a', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Pune"}' } },
          { id: 'call_b', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Goa"}' } },
        ],
        reasoning: [{ type: 'thinking', thinking: 'two calls', signature: 'sig' }],
      },
      { role: 'tool', tool_call_id: 'call_a', content: '31C' },
      { role: 'tool', tool_call_id: 'call_b', content: 'Error: rain' },
      { role: 'user', content: [{ type: 'image_url', image_url: { url: 'https://x.test/radar.png' } }, { type: 'text', text: 'thanks' }] },
    ]);
    expect(request.params.tools).toEqual([{
      type: 'function',
      function: { name: 'get_weather', description: 'Weather of a city', parameters: { type: 'object', properties: { city: { type: 'string' } } } },
    }]);
  });

  it('an assistant turn of tool calls only has null content; one of thinking only keeps its reasoning with empty content', () => {
    const request = parse({
      ...base,
      messages: [
        { role: 'user', content: 'go' },
        { role: 'assistant', content: [{ type: 'redacted_thinking', data: 'x' }] },
        { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'run', input: {} }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1' }] },
      ],
    });
    expect(request.messages).toEqual([
      { role: 'user', content: 'go' },
      { role: 'assistant', content: '', reasoning: [{ type: 'redacted_thinking', data: 'x' }] },
      { role: 'assistant', content: null, tool_calls: [{ id: 't1', type: 'function', function: { name: 'run', arguments: '{}' } }] },
      { role: 'tool', tool_call_id: 't1', content: '' },
    ]);
  });

  it('maps tool_choice auto/any/tool/none and disable_parallel_tool_use', () => {
    const tools = [{ name: 'run', input_schema: { type: 'object' } }];
    const choice = (tool_choice: unknown) => parse({ ...base, messages: hi, tools, tool_choice }).params;
    expect(choice({ type: 'auto' })).toMatchObject({ tool_choice: 'auto' });
    expect(choice({ type: 'any', disable_parallel_tool_use: true })).toMatchObject({ tool_choice: 'required', parallel_tool_calls: false });
    expect(choice({ type: 'tool', name: 'run' })).toMatchObject({ tool_choice: { type: 'function', function: { name: 'run' } } });
    expect(choice({ type: 'none' })).toMatchObject({ tool_choice: 'none' });
    expect(choice({ type: 'none' }).parallel_tool_calls).toBeUndefined();
    // An empty tools list is no tools; auto without tools is harmless and dropped.
    expect(parse({ ...base, messages: hi, tools: [], tool_choice: { type: 'auto' } }).params).toEqual({});
  });

  it('keeps a system message inside messages (Claude Code\'s environment block) as a system message at its place, its text blocks joined unless one has a breakpoint', () => {
    const request = parse({
      ...base, system: [{ type: 'text', text: 'be brief', cache_control: { type: 'ephemeral' } }],
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'reminder' }, { type: 'text', text: 'read it' }] },
        { role: 'system', content: [{ type: 'text', text: '# Environment' }, { type: 'text', text: 'cwd: /tmp', cache_control: { type: 'ephemeral' } }] },
        { role: 'assistant', content: 'done' },
        { role: 'user', content: 'thanks' },
        { role: 'system', content: 'be kind' },
      ],
    });
    const control = { type: 'ephemeral' };
    expect(request.messages).toEqual([
      { role: 'system', content: [{ type: 'text', text: 'be brief', cache_control: control }] },
      { role: 'user', content: [{ type: 'text', text: 'reminder' }, { type: 'text', text: 'read it' }] },
      { role: 'system', content: [{ type: 'text', text: '# Environment' }, { type: 'text', text: 'cwd: /tmp', cache_control: control }] },
      { role: 'assistant', content: 'done' },
      { role: 'user', content: 'thanks' },
      { role: 'system', content: 'be kind' },
    ]);
  });

  it('leaves a tool with defer_loading out of the upstream request, as Anthropic leaves it out of the prompt until a tool search loads it', () => {
    const request = parse({
      ...base, messages: hi,
      tools: [
        { name: 'Read', input_schema: { type: 'object' } },
        { name: 'DeferredToolPlaceholder', description: 'never call this tool', input_schema: { type: 'object', properties: {} }, defer_loading: true },
      ],
    });
    expect(request.params.tools).toEqual([{ type: 'function', function: { name: 'Read', parameters: { type: 'object' } } }]);
    // Deferred tools only: no tools at all reach the upstream.
    expect(parse({ ...base, messages: hi, tools: [{ name: 'Later', input_schema: { type: 'object' }, defer_loading: true }] }).params).toEqual({});
    expect(refusal({ ...base, messages: hi, tools: [{ name: 'Later', input_schema: { type: 'object' }, defer_loading: true }], tool_choice: { type: 'tool', name: 'Later' } }).message)
      .toContain("tool_choice.name: the tool 'Later' is deferred (defer_loading)");
    expect(refusal({ ...base, messages: hi, tools: [{ name: 'Later', input_schema: { type: 'object' }, defer_loading: 'yes' }] }).message)
      .toContain('tools.0.defer_loading: defer_loading must be a boolean');
  });

  it('count_tokens needs no max_tokens and never streams', () => {
    const request = parse({ model: 'chat', messages: hi, stream: true }, 'count_tokens');
    expect(request).toMatchObject({ maxTokens: undefined, stream: false });
  });

  it('refuses what it cannot honour with a 400 naming the field the way Anthropic does', () => {
    const cases: Array<[unknown, string]> = [
      [{ model: 'chat', messages: hi }, 'max_tokens: Field required'],
      [{ ...base, max_tokens: 0, messages: hi }, 'max_tokens: max_tokens must be a positive integer'],
      [{ ...base, max_tokens: 1.5, messages: hi }, 'max_tokens: max_tokens must be a positive integer'],
      [{ max_tokens: 5, messages: hi }, 'model: Field required'],
      [{ ...base }, 'messages: Field required'],
      [{ ...base, messages: [] }, 'messages: messages must not be empty'],
      [{ ...base, messages: [{ role: 'tool', content: 'x' }] }, 'messages.0.role: role must be "user", "assistant" or "system"'],
      [{ ...base, messages: [{ role: 'system', content: 'x' }, ...hi] }, 'messages.0.role: a system message cannot be the first message'],
      [{ ...base, messages: [...hi, { role: 'assistant', content: 'a' }, { role: 'system', content: 'x' }] }, 'messages.2.role: a system message must immediately follow a user message'],
      [{ ...base, messages: [...hi, { role: 'system', content: 'x' }, { role: 'system', content: 'y' }] }, 'messages.1.role: a system message must be the last message or be followed by an assistant'],
      [{ ...base, messages: [...hi, { role: 'system', content: 'x' }, { role: 'user', content: 'again' }] }, 'messages.1.role: a system message must be the last message or be followed by an assistant message'],
      [{ ...base, messages: [...hi, { role: 'system', content: [{ type: 'image', source: { type: 'url', url: 'https://x.test/a.png' } }] }] },
        "messages.1.content.0.type: 'image' blocks are not supported in system messages"],
      [{ ...base, messages: [...hi, { role: 'system', content: '' }] }, 'messages.1.content: text content must not be empty'],
      [{ ...base, messages: [{ role: 'user', content: [] }] }, 'messages.0.content: content must not be an empty array'],
      [{ ...base, messages: [{ role: 'user', content: [{ type: 'text', text: 'a' }, { type: 'image', source: { type: 'base64', media_type: 'image/bmp', data: 'x' } }] }] },
        'messages.0.content.1.source.media_type'],
      [{ ...base, messages: [{ role: 'user', content: [{ type: 'text', text: 'a' }, { type: 'image', source: { type: 'file', file_id: 'file_1' } }] }] },
        'messages.0.content.1.source: file sources are not supported'],
      [{ ...base, messages: [{ role: 'user', content: [{ type: 'text', text: 'a' }, { type: 'image' }] }] }, 'messages.0.content.1.source'],
      [{ ...base, messages: [{ role: 'user', content: [{ type: 'document', source: {} }] }] }, "messages.0.content.0.type: 'document' blocks are not supported in user turns"],
      [{ ...base, messages: [{ role: 'user', content: [{ type: 'search_result' }] }] }, "messages.0.content.0.type: 'search_result' blocks"],
      [{ ...base, messages: [{ role: 'user', content: [{ type: 'container_upload', file_id: 'f' }] }] }, "'container_upload' blocks"],
      [{ ...base, messages: [{ role: 'user', content: [{ type: 'tool_use', id: 'a', name: 'b', input: {} }] }] }, "messages.0.content.0.type: 'tool_use' blocks are not supported in user turns"],
      [{ ...base, messages: [{ role: 'assistant', content: [{ type: 'server_tool_use', id: 'a', name: 'web_search', input: {} }] }] }, "messages.0.content.0.type: 'server_tool_use' blocks"],
      [{ ...base, messages: [{ role: 'assistant', content: [{ type: 'image', source: { type: 'url', url: 'https://x' } }] }] }, "'image' blocks are not supported in assistant turns"],
      [{ ...base, messages: [{ role: 'assistant', content: [{ type: 'tool_use', id: 'a', name: 'b', input: [] }] }] }, 'messages.0.content.0.input'],
      [{ ...base, messages: [{ role: 'assistant', content: [{ type: 'tool_use', id: 'a', name: 'b', input: 3 }] }] }, 'messages.0.content.0.input: input must be an object'],
      [{ ...base, messages: [{ role: 'user', content: [{ type: 'tool_result', tool_use_id: 'a', content: [{ type: 'document' }] }] }] }, 'messages.0.content.0.content.0.type'],
      [{ ...base, messages: hi, top_k: 5 }, 'top_k: top_k is not supported'],
      [{ ...base, messages: hi, mcp_servers: [{ type: 'url', url: 'https://m', name: 'm' }] }, 'mcp_servers: MCP connectors'],
      [{ ...base, messages: hi, container: 'c_1' }, 'container: Containers'],
      [{ ...base, messages: hi, context_management: 'clear' }, 'context_management: context_management must be an object'],
      [{ ...base, messages: hi, context_management: { edits: [{ type: 'clear_tool_uses_20250919' }] } }, 'context_management.edits.0.type: only clear_thinking_20251015 edits'],
      [{ ...base, messages: hi, context_management: { edits: [{ type: 'clear_thinking_20251015', keep: { type: 'thinking_turns', value: 1 } }] } }, 'context_management.edits.0.keep'],
      [{ ...base, messages: hi, context_management: { edits: [{ type: 'clear_thinking_20251015' }] } }, 'context_management.edits.0.keep'],
      [{ ...base, messages: hi, context_management: { edits: [], clear_at_least: 1 } }, 'context_management'],
      [{ ...base, messages: hi, output_config: { format: { type: 'json_schema', schema: {} } } }, 'output_config.format: Structured outputs'],
      [{ ...base, messages: hi, temperature: 1.5 }, 'temperature: temperature must be between 0 and 1'],
      [{ ...base, messages: hi, stop_sequences: ['a', 'b', 'c', 'd', 'e'] }, 'stop_sequences: at most 4 stop sequences'],
      [{ ...base, messages: hi, tools: [{ type: 'web_search_20250305', name: 'web_search' }] }, "tools.0.type: server tools ('web_search_20250305')"],
      [{ ...base, messages: hi, tools: [{ type: 'bash_20250124', name: 'bash' }] }, "tools.0.type: server tools ('bash_20250124')"],
      [{ ...base, messages: hi, tools: [{ name: 'ok', input_schema: { type: 'object' } }, { type: 'text_editor_20250728', name: 'str_replace_based_edit_tool' }] }, 'tools.1.type'],
      [{ ...base, messages: hi, tools: [{ name: 'run' }] }, 'tools.0.input_schema: Field required'],
      [{ ...base, messages: hi, tools: [{ name: 'has space', input_schema: { type: 'object' } }] }, 'tools.0.name'],
      [{ ...base, messages: hi, tool_choice: { type: 'any' } }, 'tool_choice: tool_choice "any" needs tools'],
      [{ ...base, messages: hi, tools: [{ name: 'run', input_schema: { type: 'object' } }], tool_choice: { type: 'tool', name: 'walk' } }, "tool_choice.name: no tool named 'walk'"],
      [{ ...base, messages: hi, tool_choice: { type: 'maybe' } }, 'tool_choice'],
      [{ ...base, messages: hi, stream: 'yes' }, 'stream: stream must be a boolean'],
      [{ ...base, messages: [{ role: 'user', content: 'x'.repeat(1001) }] }, 'messages.0: a message may carry at most 1000 characters'],
      [{ ...base, messages: hi, system: 'x'.repeat(1001) }, 'system: the system prompt may carry at most 1000 characters'],
      [{ ...base, messages: [{ role: 'assistant', content: [{ type: 'text', text: 'a' }, { type: 'thinking', thinking: 'hm', signature: 's' }] }, ...hi] }, 'messages.0.content.1: thinking blocks must come first'],
      [{ ...base, messages: hi, thinking: { type: 'enabled' } }, 'thinking.budget_tokens'],
      [{ ...base, messages: [{ role: 'user', content: '' }] }, "messages.0.content: text content must not be empty"],
      [{ ...base, messages: [{ role: 'user', content: [{ type: 'text', text: 'a' }, { type: 'text', text: '' }] }] }, 'messages.0.content.1: text content must not be empty'],
      [{ ...base, messages: [{ role: 'user', content: [{ type: 'text', text: 'a' }, { type: 'tool_result', tool_use_id: 't' }] }] }, 'messages.0.content.1: tool_result blocks must come first'],
      [{ ...base, messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'url', url: 'https://x.test/a.png' } }, { type: 'tool_result', tool_use_id: 't' }] }] },
        'messages.0.content.1: tool_result blocks must come first'],
      [{ ...base, messages: [{ role: 'user', content: [{ type: 'tool_result', tool_use_id: 't' }, { type: 'text', text: 'a' }, { type: 'tool_result', tool_use_id: 'u' }] }] },
        'messages.0.content.2: tool_result blocks must come first'],
      ['[]', 'The request body must be a JSON object.'],
    ];
    for (const [body, message] of cases) {
      const answer = refusal(body);
      expect(answer.code, message).toBe('invalid_request');
      expect(answer.message, JSON.stringify(body).slice(0, 200)).toContain(message);
    }
  });
});

describe('translateError', () => {
  const png = { type: 'image', source: { type: 'url', url: 'https://x.test/a.png' } };
  const { chat, translateError } = parseMessagesRequest({
    ...base, system: 'sys', tools: [{ name: 'run', input_schema: { type: 'object' } }],
    messages: [
      { role: 'user', content: 'go' },
      { role: 'assistant', content: [{ type: 'text', text: 'ok' }, { type: 'tool_use', id: 't1', name: 'run', input: {} }, { type: 'tool_use', id: 't2', name: 'run', input: {} }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1' }, { type: 'tool_result', tool_use_id: 't2', content: [png] }, { type: 'text', text: 'look' }, png] },
      { role: 'user', content: [{ type: 'text', text: 'only' }] },
    ],
  }, 'create', limits);

  /** The param and message the client sees for an error the pipeline raised naming an internal param. */
  function translated(param: string, publicMessage = `Invalid ${param}: no.`, code: 'invalid_request' | 'request_too_large' = 'invalid_request') {
    const error = translateError(new GatewayError(code, { param, publicMessage })) as GatewayError;
    return { param: error.param, message: error.publicMessage, code: error.code };
  }

  it('names the Messages field, in Anthropic\'s dotted form, for every internal message and part it came from', () => {
    expect(chat.messages.map((message) => message.role)).toEqual(['system', 'user', 'assistant', 'tool', 'tool', 'user', 'user']);
    const cases: Array<[string, string]> = [
      ['messages[0].content', 'system'],
      ['messages[1].content', 'messages.0.content'],
      ['messages[2].content', 'messages.1.content'],
      ['messages[2].tool_calls[1].id', 'messages.1.content.2.id'],
      ['messages[2].tool_calls[0].function.arguments', 'messages.1.content.1.input'],
      ['messages[4].tool_call_id', 'messages.2.content.1.tool_use_id'],
      ['messages[4].content', 'messages.2.content.1.content'],
      ['messages[5].content[0]', 'messages.2.content.1.content.0'],
      ['messages[5].content[1].text', 'messages.2.content.2.text'],
      ['messages[5].content[2].image_url.url', 'messages.2.content.3.source'],
      ['messages[6].content', 'messages.3.content.0'],
      ['messages[6]', 'messages.3'],
      ['tools[0].function.parameters', 'tools.0.input_schema'],
      ['stop', 'stop_sequences'],
    ];
    for (const [internal, expected] of cases) expect(translated(internal), internal).toEqual({ param: expected, message: `Invalid ${expected}: no.`, code: 'invalid_request' });
  });

  it('names a tool by the client\'s index when a deferred tool before it was not sent', () => {
    const { translateError: rename } = parseMessagesRequest({
      ...base, messages: hi,
      tools: [{ name: 'Later', input_schema: { type: 'object' }, defer_loading: true }, { name: 'Read', input_schema: { type: 'object' } }],
    }, 'create', limits);
    const error = rename(new GatewayError('invalid_request', { param: 'tools[0].function.parameters', publicMessage: 'Invalid tools[0].function.parameters: no.' })) as GatewayError;
    expect(error.param).toBe('tools.1.input_schema');
  });

  it('keeps the code, prefixes a message that did not name the field, and leaves other errors as they are', () => {
    expect(translated('messages[5].content[2]', 'Too big.', 'request_too_large')).toEqual({
      param: 'messages.2.content.3', message: 'messages.2.content.3: Too big.', code: 'request_too_large',
    });
    const unchanged = new GatewayError('invalid_request', { param: 'temperature', publicMessage: 'no' });
    expect(translateError(unchanged)).toBe(unchanged);
    const plain = new Error('boom');
    expect(translateError(plain)).toBe(plain);
  });
});
