import { describe, expect, it } from 'vitest';
import { GatewayError } from '@gateway/errors';
import { checkMediaParts, paramOf, parseChatRequest } from './chat-request.ts';

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

describe('checkMediaParts', () => {
  const seeing = { slug: 'seeing', mediaModalities: new Set(['image', 'audio'] as const) };
  const pixel = 'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAAAAAA6fptVAAAACklEQVR4nGNoAAAAggCBd81ytgAAAABJRU5ErkJggg==';
  const image = (url: string) => ({ type: 'image_url' as const, image_url: { url } });
  const audio = (data: string) => ({ type: 'input_audio' as const, input_audio: { data, format: 'wav' as const } });
  const userWith = (...parts: ReturnType<typeof image | typeof audio>[]) => ({
    messages: [{ role: 'user' as const, content: [{ type: 'text' as const, text: 'look' }, ...parts] }],
  });
  function mediaRefusal(request: Parameters<typeof checkMediaParts>[0], model = seeing): { code: string; param: string | null; message: string } {
    try {
      checkMediaParts(request, model);
    } catch (error) {
      if (error instanceof GatewayError) return { code: error.code, param: error.param, message: error.publicMessage };
      throw error;
    }
    throw new Error('expected a refusal');
  }

  it('counts the image and audio parts of a request, and nothing for text', () => {
    expect(checkMediaParts({ messages: [{ role: 'user', content: 'hi' }] }, { slug: 'plain', mediaModalities: new Set() })).toBe(0);
    expect(checkMediaParts(userWith(image(pixel), image('https://images.example/cat.png'), audio('UklGRg==')), seeing)).toBe(3);
  });

  it('refuses a modality the model does not take, naming the part', () => {
    const refused = mediaRefusal(userWith(image(pixel)), { slug: 'plain', mediaModalities: new Set(['audio'] as const) });
    expect(refused).toMatchObject({ code: 'invalid_request', param: 'messages[0].content[1]' });
    expect(refused.message).toContain("The model 'plain' does not accept images");
    expect(mediaRefusal(userWith(audio('UklGRg==')), { slug: 'plain', mediaModalities: new Set(['image'] as const) }).message).toContain('does not accept audio');
  });

  it('takes media only in user messages', () => {
    const refused = mediaRefusal({ messages: [{ role: 'system', content: [image(pixel)] }, { role: 'user', content: 'hi' }] });
    expect(refused).toMatchObject({ code: 'invalid_request', param: 'messages[0].content[0]' });
    expect(refused.message).toContain('only in user messages');
  });

  it('takes an image as an http(s) URL or a base64 data URL of PNG, JPEG, GIF or WebP, and audio as base64', () => {
    for (const url of ['file:///etc/passwd', 'ftp://images.example/a.png', 'javascript:alert(1)', 'not a url', 'data:image/svg+xml;base64,PHN2Zz4=', 'data:image/png,rawbytes']) {
      expect(mediaRefusal(userWith(image(url))), url).toMatchObject({ code: 'invalid_request', param: 'messages[0].content[1]' });
    }
    expect(mediaRefusal(userWith(image('data:image/png;base64,iVBOR w0K')))).toMatchObject({ code: 'invalid_request', param: 'messages[0].content[1]' });
    expect(mediaRefusal(userWith(audio('UklGR!==')))).toMatchObject({ code: 'invalid_request', param: 'messages[0].content[1]' });
    expect(mediaRefusal(userWith(audio('UklGR')))).toMatchObject({ code: 'invalid_request', param: 'messages[0].content[1]' });
  });

  it('refuses an image over 5 MiB of base64 and audio over 20 MiB decoded with 413, and more than 100 parts with 400', () => {
    const fiveMiB = 5 * 1024 * 1024;
    expect(mediaRefusal(userWith(image(`data:image/jpeg;base64,${'A'.repeat(fiveMiB + 4)}`)))).toMatchObject({
      code: 'request_too_large', param: 'messages[0].content[1]',
      message: `The image in messages[0].content[1] is ${fiveMiB + 4} base64 characters; at most ${fiveMiB} are accepted per image.`,
    });
    expect(checkMediaParts(userWith(image(`data:image/jpeg;base64,${'A'.repeat(fiveMiB)}`)), seeing)).toBe(1);
    const large = 'A'.repeat(Math.ceil((20 * 1024 * 1024) / 3) * 4); // 20 MiB + 1 byte
    expect(mediaRefusal(userWith(audio(large)))).toMatchObject({ code: 'request_too_large', param: 'messages[0].content[1]' });
    expect(checkMediaParts(userWith(audio('A'.repeat(Math.floor((20 * 1024 * 1024) / 3) * 4))), seeing)).toBe(1); // 2 bytes under
    const many = Array.from({ length: 101 }, () => image('https://images.example/cat.png'));
    expect(checkMediaParts({ messages: [{ role: 'user', content: many.slice(0, 100) }] }, seeing)).toBe(100);
    expect(mediaRefusal({ messages: [{ role: 'user', content: many.slice(0, 60) }, { role: 'user', content: many.slice(60) }] }))
      .toMatchObject({ code: 'invalid_request', param: 'messages[1].content[40]', message: 'A request may carry at most 100 image and audio parts.' });
  });

  it('does not count base64 data against the characters of text a message may carry', () => {
    const request = parseChatRequest({ model: 'm', messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }, image(pixel)] }] }, { maxMessageChars: 10 });
    expect(checkMediaParts(request, seeing)).toBe(1);
  });
});

describe('cache_control and prompt_cache_key on chat completions', () => {
  const control = { type: 'ephemeral' };
  const refusalOf = (body: unknown) => {
    try {
      parseChatRequest(body);
    } catch (error) {
      if (error instanceof GatewayError) return `${error.param}: ${error.publicMessage}`;
      throw error;
    }
    return 'accepted';
  };

  it('accepts breakpoints on content parts, tools and messages, counts them, and keeps prompt_cache_key apart from the params', () => {
    const request = parseChatRequest({
      model: 'm', prompt_cache_key: 'repo-1',
      tools: [{ type: 'function', function: { name: 'look' }, cache_control: { type: 'ephemeral', ttl: '1h' } }],
      messages: [{ role: 'system', content: [{ type: 'text', text: 'rules', cache_control: control }] }, { role: 'user', content: 'hi' }],
    });
    expect(request.cacheBreakpoints).toBe(2);
    expect(request.promptCacheKey).toBe('repo-1');
    expect(request.params).not.toHaveProperty('prompt_cache_key');
    expect(request.messages[0]).toEqual({ role: 'system', content: [{ type: 'text', text: 'rules', cache_control: control }] });
  });

  it('refuses a fifth breakpoint and a 1h one after a 5m one, naming the field', () => {
    const parts = Array.from({ length: 5 }, (_, i) => ({ type: 'text', text: `p${i}`, cache_control: control }));
    expect(refusalOf({ model: 'm', messages: [{ role: 'user', content: parts }] }))
      .toBe('messages[0].content[4].cache_control: A request may carry at most 4 cache_control breakpoints.');
    expect(refusalOf({
      model: 'm', messages: [{ role: 'system', content: [{ type: 'text', text: 'a', cache_control: control }] }, { role: 'user', content: 'b', cache_control: { type: 'ephemeral', ttl: '1h' } }],
    })).toMatch(/^messages\[1\]\.cache_control: A cache_control with ttl "1h" must come before/);
    expect(refusalOf({ model: 'm', messages: [{ role: 'user', content: [{ type: 'text', text: 'a', cache_control: { type: 'persistent' } }] }] }))
      .toMatch(/^messages\[0\]\.content/);
  });
});
