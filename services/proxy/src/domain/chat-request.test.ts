import { describe, expect, it } from 'vitest';
import { GatewayError } from '@gateway/errors';
import { paramOf, parseChatRequest } from './chat-request.ts';

function refusal(body: unknown): { code: string; param: string | null; message: string } {
  try {
    parseChatRequest(body);
  } catch (error) {
    if (error instanceof GatewayError) return { code: error.code, param: error.param, message: error.publicMessage };
    throw error;
  }
  throw new Error('expected a refusal');
}

const messages = [{ role: 'user', content: 'hi' }];

describe('parseChatRequest', () => {
  it('keeps the validated fields and the forwarded params, and drops everything else', () => {
    const request = parseChatRequest({
      model: 'chat', messages: [{ role: 'system', content: 'be brief', extra: 1 }, { role: 'user', content: [{ type: 'text', text: 'hi', cache: true }] }],
      max_tokens: 20, temperature: 0.2, stop: ['\n'], n: 1, tool_choice: 'auto', logit_bias: { '50256': -100 },
      stream: false, metadata: { a: 'b' }, top_p: null, store: true,
    });
    expect(request).toEqual({
      model: 'chat',
      messages: [{ role: 'system', content: 'be brief' }, { role: 'user', content: [{ type: 'text', text: 'hi' }] }],
      maxTokens: 20,
      stream: false,
      includeUsage: false,
      params: { temperature: 0.2, stop: ['\n'], n: 1, tool_choice: 'auto', logit_bias: { '50256': -100 } },
    });
  });

  it('accepts max_completion_tokens as the newer name of max_tokens, and refuses disagreement', () => {
    expect(parseChatRequest({ model: 'm', messages, max_completion_tokens: 9 }).maxTokens).toBe(9);
    expect(refusal({ model: 'm', messages, max_tokens: 8, max_completion_tokens: 9 }).param).toBe('max_completion_tokens');
  });

  it('accepts assistant tool calls with null content and tool results', () => {
    const request = parseChatRequest({
      model: 'm',
      messages: [
        { role: 'user', content: 'weather?' },
        { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'wx', arguments: '{}' } }] },
        { role: 'tool', tool_call_id: 'c1', content: 'sunny' },
      ],
      tools: [{ type: 'function', function: { name: 'wx', parameters: { type: 'object' } } }],
    });
    expect(request.messages).toHaveLength(3);
    expect(request.params.tools).toEqual([{ type: 'function', function: { name: 'wx', parameters: { type: 'object' } } }]);
  });

  it('refuses bad bodies with invalid_request and the param at fault', () => {
    expect(refusal('text')).toMatchObject({ code: 'invalid_request', param: null });
    expect(refusal({ messages })).toMatchObject({ param: 'model' });
    expect(refusal({ model: '', messages })).toMatchObject({ param: 'model' });
    expect(refusal({ model: 'm' })).toMatchObject({ param: 'messages' });
    expect(refusal({ model: 'm', messages: [] })).toMatchObject({ param: 'messages' });
    expect(refusal({ model: 'm', messages: [{ role: 'user' }] })).toMatchObject({ param: 'messages[0].content' });
    expect(refusal({ model: 'm', messages: [{ role: 'user', content: [{ type: 'image_url', image_url: {} }] }] })).toMatchObject({ param: 'messages[0].content' });
    expect(refusal({ model: 'm', messages: [{ role: 'tool', content: 'x' }] })).toMatchObject({ param: 'messages[0].tool_call_id' });
    expect(refusal({ model: 'm', messages: [{ role: 'user', content: 'x', tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: '' } }] }] }))
      .toMatchObject({ param: 'messages[0].tool_calls' });
    expect(refusal({ model: 'm', messages, max_tokens: -1 })).toMatchObject({ param: 'max_tokens' });
    expect(refusal({ model: 'm', messages, stream: 'yes' })).toMatchObject({ param: 'stream' });
    expect(refusal({ model: 'm', messages, n: 3 })).toMatchObject({ param: 'n', message: 'Invalid n: only n = 1 is supported' });
    expect(refusal({ model: 'm', messages, stop: ['a', 'b', 'c', 'd', 'e'] })).toMatchObject({ param: 'stop' });
    expect(refusal({ model: 'm', messages, response_format: { type: 'xml' } })).toMatchObject({ param: 'response_format.type' });
    expect(refusal({ model: 'm', messages, logit_bias: { abc: 1 } })).toMatchObject({ param: 'logit_bias.abc' });
  });

  it('accepts streaming, with the usage chunk only when asked, and stream_options only with stream', () => {
    expect(parseChatRequest({ model: 'm', messages, stream: true })).toMatchObject({ stream: true, includeUsage: false });
    expect(parseChatRequest({ model: 'm', messages, stream: true, stream_options: { include_usage: true } })).toMatchObject({ stream: true, includeUsage: true });
    expect(parseChatRequest({ model: 'm', messages, stream: true, stream_options: null })).toMatchObject({ includeUsage: false });
    expect(refusal({ model: 'm', messages, stream_options: { include_usage: true } })).toMatchObject({ code: 'invalid_request', param: 'stream_options' });
    expect(refusal({ model: 'm', messages, stream: true, stream_options: { include_usage: 'yes' } })).toMatchObject({ param: 'stream_options.include_usage' });
    // stream_options never reaches the upstream as such: the adapter decides what to ask for.
    expect(parseChatRequest({ model: 'm', messages, stream: true, stream_options: { include_usage: true } }).params).toEqual({});
  });

  it('forwards logprobs, top_logprobs and parallel_tool_calls, and refuses what it cannot honour by name', () => {
    expect(parseChatRequest({ model: 'm', messages, logprobs: true, top_logprobs: 3, parallel_tool_calls: false }).params)
      .toEqual({ logprobs: true, top_logprobs: 3, parallel_tool_calls: false });
    expect(refusal({ model: 'm', messages, top_logprobs: 3 })).toMatchObject({ param: 'top_logprobs' });
    expect(refusal({ model: 'm', messages, logprobs: true, top_logprobs: 21 })).toMatchObject({ param: 'top_logprobs' });
    for (const field of ['audio', 'prediction', 'functions', 'function_call', 'web_search_options']) {
      expect(refusal({ model: 'm', messages, [field]: {} }), field).toMatchObject({ code: 'invalid_request', param: field });
    }
    expect(refusal({ model: 'm', messages, modalities: ['text', 'audio'] })).toMatchObject({ param: 'modalities' });
    expect(parseChatRequest({ model: 'm', messages, modalities: ['text'], audio: null }).params).toEqual({});
  });

  it('limits the text of one message', () => {
    const limits = { maxMessageChars: 10 };
    expect(parseChatRequest({ model: 'm', messages: [{ role: 'user', content: 'x'.repeat(10) }] }, limits).messages).toHaveLength(1);
    expect(() => parseChatRequest({ model: 'm', messages: [messages[0], { role: 'user', content: [{ type: 'text', text: 'x'.repeat(6) }, { type: 'text', text: 'y'.repeat(5) }] }] }, limits))
      .toThrow(expect.objectContaining({ code: 'invalid_request', param: 'messages[1]' }));
  });

  it('names params the way OpenAI does', () => {
    expect(paramOf(['messages', 3, 'content', 0, 'text'])).toBe('messages[3].content[0].text');
    expect(paramOf([])).toBeUndefined();
  });
});
