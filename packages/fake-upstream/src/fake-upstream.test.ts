import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { leakMarkers, parseDirectives, startFakeUpstream, type FakeUpstream } from './index.ts';

/** The parts of a completion these tests read. */
interface Completion {
  choices: Array<{ message: { content: string }; finish_reason: string }>;
  usage?: { completion_tokens: number };
}

let upstream: FakeUpstream;
beforeAll(async () => { upstream = await startFakeUpstream({ requiredApiKey: 'sk-test-upstream' }); });
afterAll(async () => { await upstream.close(); });

function post(body: unknown, apiKey = 'sk-test-upstream'): Promise<Response> {
  return fetch(`${upstream.baseUrl}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${apiKey}` },
    body: JSON.stringify(body),
  });
}

describe('fake upstream completions', () => {
  it('replies deterministically with the documented usage formula and leaks vendor details', async () => {
    const response = await post({
      model: 'tiny',
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: [{ type: 'text', text: 'hello there' }, { type: 'text', text: 'friend' }] },
      ],
    });
    expect(response.status).toBe(200);
    expect(response.headers.get(leakMarkers.organisationHeaderName)).toBe(leakMarkers.organisationHeaderValue);
    expect(response.headers.get('server')).toBe(leakMarkers.serverHeaderValue);
    expect(response.headers.get(leakMarkers.requestIdHeaderName)).toMatch(/^vreq_secret_\d+$/);
    const body = await response.json() as Record<string, any>;
    const reply = 'Hello from the demo upstream! You said: hello there friend';
    expect(body.model).toBe('tiny-vendor-internal-2024');
    expect(body.system_fingerprint).toBe(leakMarkers.systemFingerprint);
    expect(body.choices[0].message).toEqual({ role: 'assistant', content: reply, refusal: null });
    // prompt: "Be brief." = 2 words + 3, "hello there friend" = 3 words + 3
    expect(body.usage).toMatchObject({ prompt_tokens: 11, completion_tokens: 10, total_tokens: 21 });
    expect(upstream.requests.at(-1)).toMatchObject({ method: 'POST', path: '/v1/chat/completions', body: { model: 'tiny' } });
  });

  it('refuses a wrong key with vendor text', async () => {
    const response = await post({ model: 'tiny', messages: [] }, 'sk-wrong');
    expect(response.status).toBe(401);
    expect(await response.text()).toContain(leakMarkers.errorText);
  });

  it('follows directives: status, reply_words, no_usage, and max_tokens cuts with finish_reason length', async () => {
    const failing = await post({ model: 'm', messages: [{ role: 'user', content: 'x [[fake:status=503]]' }] });
    expect(failing.status).toBe(503);
    expect(await failing.text()).toContain(leakMarkers.errorText);

    const words = await (await post({ model: 'm', messages: [{ role: 'user', content: '[[fake:reply_words=5]] [[fake:no_usage]]' }] })).json() as Completion;
    expect(words.choices[0]!.message.content).toBe('w1 w2 w3 w4 w5');
    expect(words.usage).toBeUndefined();

    const cut = await (await post({ model: 'm', max_tokens: 2, messages: [{ role: 'user', content: '[[fake:reply_words=5]]' }] })).json() as Completion;
    expect(cut.choices[0]).toMatchObject({ message: { content: 'w1 w2' }, finish_reason: 'length' });
    expect(cut.usage?.completion_tokens).toBe(2);
  });

  it('records the tag of a request without changing its reply', async () => {
    const tagged = await (await post({ model: 'm', messages: [{ role: 'user', content: '[[fake:reply_words=2]] [[fake:tag=fault-1.a:b]]' }] })).json() as Completion;
    expect(tagged.choices[0]!.message.content).toBe('w1 w2');
    expect(upstream.requests.at(-1)?.tag).toBe('fault-1.a:b');
    expect(parseDirectives('[[fake:tag=has space]] [[fake:tag=]]').tag).toBeUndefined();
  });

  it('parses directives and ignores malformed ones', () => {
    expect(parseDirectives('[[fake:status=99]] [[fake:delay_ms=abc]] [[fake:hang]]')).toEqual({ noUsage: false, hang: true, ignoreMaxTokens: false });
    expect(parseDirectives('[[fake:delay_ms=20]][[fake:status=429]]')).toEqual({ noUsage: false, hang: false, ignoreMaxTokens: false, delayMs: 20, status: 429 });
    expect(parseDirectives('[[fake:ignore_max_tokens]] [[fake:chunk_delay_ms=5]] [[fake:fail_after=2]] [[fake:error_after=3]]')).toEqual({
      noUsage: false, hang: false, ignoreMaxTokens: true, chunkDelayMs: 5, failAfter: 2, errorAfter: 3,
    });
    expect(parseDirectives('[[fake:pause_after=3]] [[fake:pause_ms=250]]')).toEqual({ noUsage: false, hang: false, ignoreMaxTokens: false, pauseAfter: 3, pauseMs: 250 });
  });
});

describe('fake upstream streaming', () => {
  it('sends one chunk per word, a stop chunk, a usage chunk when asked, then [DONE]', async () => {
    const response = await post({
      model: 'm', stream: true, stream_options: { include_usage: true },
      messages: [{ role: 'user', content: '[[fake:reply_words=3]]' }],
    });
    expect(response.headers.get('content-type')).toBe('text/event-stream');
    const frames = (await response.text()).split('\n\n').filter((f) => f.length > 0).map((f) => f.replace(/^data: /, ''));
    expect(frames.at(-1)).toBe('[DONE]');
    const chunks = frames.slice(0, -1).map((f) => JSON.parse(f));
    expect(chunks.every((c) => c.model === 'm-vendor-internal-2024')).toBe(true);
    const text = chunks.map((c) => c.choices[0]?.delta?.content ?? '').join('');
    expect(text).toBe('w1 w2 w3');
    expect(chunks.at(-2).choices[0].finish_reason).toBe('stop');
    expect(chunks.at(-1)).toMatchObject({ choices: [], usage: { prompt_tokens: 4, completion_tokens: 3, total_tokens: 7 } });
  });

  it('lists models under the vendor name', async () => {
    const response = await fetch(`${upstream.baseUrl}/models`, { headers: { authorization: 'Bearer sk-test-upstream' } });
    const body = await response.json() as { data: Array<{ id: string }> };
    expect(body.data[0]!.id).toBe('fake-model-vendor-internal-2024');
  });
});

/** The data payloads of an SSE body. */
function dataOf(text: string): string[] {
  return text.split('\n\n').filter((f) => f.length > 0).map((f) => f.split('\n').find((line) => line.startsWith('data: '))!.slice(6));
}

describe('fake upstream streaming directives', () => {
  it('ignores max_tokens on request, and sends a vendor error event after N words', async () => {
    const runaway = await post({ model: 'm', stream: true, max_tokens: 2, messages: [{ role: 'user', content: '[[fake:reply_words=4]] [[fake:ignore_max_tokens]]' }] });
    const chunks = dataOf(await runaway.text()).slice(0, -1).map((f) => JSON.parse(f));
    expect(chunks.map((c) => c.choices[0]?.delta?.content ?? '').join('')).toBe('w1 w2 w3 w4');

    const failing = await post({ model: 'm', stream: true, messages: [{ role: 'user', content: '[[fake:reply_words=4]] [[fake:error_after=2]]' }] });
    const frames = dataOf(await failing.text());
    expect(frames).toHaveLength(4); // role chunk, w1, w2, error
    expect(frames.at(-1)).toContain(leakMarkers.errorText);
  });

  it('cuts the connection after N words', async () => {
    const body = async () => (await post({ model: 'm', stream: true, messages: [{ role: 'user', content: '[[fake:reply_words=4]] [[fake:fail_after=1]]' }] })).text();
    await expect(body()).rejects.toThrow();
  });
});

describe('fake upstream Anthropic Messages', () => {
  function postMessages(body: unknown, apiKey = 'sk-test-upstream'): Promise<Response> {
    return fetch(`${upstream.baseUrl}/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': apiKey, 'anthropic-version': '2023-06-01' },
      body: JSON.stringify(body),
    });
  }

  it('answers a message with text content, a stop reason, usage and leaks', async () => {
    const response = await postMessages({ model: 'claude', max_tokens: 3, system: 'Be brief.', messages: [{ role: 'user', content: [{ type: 'text', text: 'hi [[fake:reply_words=5]]' }] }] });
    expect(response.status).toBe(200);
    expect(response.headers.get(leakMarkers.organisationHeaderName)).toBe(leakMarkers.organisationHeaderValue);
    const body = await response.json() as Record<string, any>;
    expect(body).toMatchObject({
      type: 'message', model: 'claude-vendor-internal-2024', content: [{ type: 'text', text: 'w1 w2 w3' }], stop_reason: 'max_tokens',
      usage: { input_tokens: 2 + 3 + 2 + 3, output_tokens: 3 }, vendor_trace: leakMarkers.vendorTrace,
    });
  });

  it('streams Anthropic events word by word and refuses a wrong key with vendor text', async () => {
    const response = await postMessages({ model: 'claude', max_tokens: 50, stream: true, messages: [{ role: 'user', content: '[[fake:reply_words=2]]' }] });
    const events = dataOf(await response.text()).map((f) => JSON.parse(f));
    expect(events.map((e) => e.type)).toEqual([
      'message_start', 'content_block_start', 'ping', 'content_block_delta', 'content_block_delta', 'content_block_stop', 'message_delta', 'message_stop',
    ]);
    expect(events[3].delta.text + events[4].delta.text).toBe('w1 w2');
    expect(events[6]).toMatchObject({ delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 2 } });

    const refused = await postMessages({ model: 'claude', max_tokens: 5, messages: [] }, 'sk-wrong');
    expect(refused.status).toBe(401);
    expect(await refused.text()).toContain(leakMarkers.errorText);
  });
});

describe('fake upstream tool_text: text before the tool call', () => {
  const content = 'Look it up [[fake:tool_call=lookup]] [[fake:tool_text=3]]';
  const args = JSON.stringify({ query: 'Look it up' });
  const argumentPieces = Math.ceil(args.length / 8);

  it('writes the words, then the call, on the OpenAI route, streamed and not', async () => {
    const plain = await (await post({ model: 'm', messages: [{ role: 'user', content }] })).json() as Record<string, any>;
    expect(plain.choices[0]).toMatchObject({
      finish_reason: 'tool_calls',
      message: { content: 'w1 w2 w3', tool_calls: [{ id: expect.stringMatching(/^call_vendorsecret_/), function: { name: 'lookup', arguments: args } }] },
    });
    expect(plain.usage.completion_tokens).toBe(3 + argumentPieces);

    const streamed = await post({ model: 'm', stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content }] });
    const chunks = dataOf(await streamed.text()).slice(0, -1).map((f) => JSON.parse(f));
    const deltas = chunks.map((c) => c.choices[0]?.delta ?? {});
    const firstCall = deltas.findIndex((d) => d.tool_calls !== undefined);
    expect(deltas.slice(0, firstCall).map((d) => d.content ?? '').join('')).toBe('w1 w2 w3');
    expect(deltas.slice(firstCall).every((d) => d.content === undefined)).toBe(true);
    expect(deltas.flatMap((d) => d.tool_calls ?? []).map((call) => call.function.arguments).join('')).toBe(args);
    expect(chunks.at(-1).usage.completion_tokens).toBe(3 + argumentPieces);
  });

  it('writes a text block, then the tool_use block, on the Anthropic route, streamed and not', async () => {
    const postMessages = (body: unknown) => fetch(`${upstream.baseUrl}/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': 'sk-test-upstream', 'anthropic-version': '2023-06-01' },
      body: JSON.stringify(body),
    });
    const plain = await (await postMessages({ model: 'claude', max_tokens: 50, messages: [{ role: 'user', content }] })).json() as Record<string, any>;
    expect(plain).toMatchObject({
      stop_reason: 'tool_use', usage: { output_tokens: 3 + argumentPieces },
      content: [{ type: 'text', text: 'w1 w2 w3' }, { type: 'tool_use', name: 'lookup', input: { query: 'Look it up' } }],
    });

    const streamed = await postMessages({ model: 'claude', max_tokens: 50, stream: true, messages: [{ role: 'user', content }] });
    const events = dataOf(await streamed.text()).map((f) => JSON.parse(f));
    expect(events.filter((e) => e.type === 'content_block_start').map((e) => [e.index, e.content_block.type])).toEqual([[0, 'text'], [1, 'tool_use']]);
    expect(events.filter((e) => e.delta?.type === 'text_delta').map((e) => e.delta.text).join('')).toBe('w1 w2 w3');
    const json = events.filter((e) => e.delta?.type === 'input_json_delta');
    expect(json.every((e) => e.index === 1)).toBe(true);
    expect(json.map((e) => e.delta.partial_json).join('')).toBe(args);
    expect(events.filter((e) => e.type === 'content_block_stop').map((e) => e.index)).toEqual([0, 1]);
    expect(events.find((e) => e.type === 'message_delta')).toMatchObject({ delta: { stop_reason: 'tool_use' }, usage: { output_tokens: 3 + argumentPieces } });
  });
});

describe('fake upstream: agents\' requests (a system message inside messages, a tool call with set arguments)', () => {
  const postMessages = (body: unknown) => fetch(`${upstream.baseUrl}/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': 'sk-test-upstream', 'anthropic-version': '2023-06-01' },
    body: JSON.stringify(body),
  });

  it('Anthropic route: takes a system message right after a user message as Anthropic\'s API does, and refuses one placed as Anthropic refuses it', async () => {
    const answered = await postMessages({
      model: 'claude', max_tokens: 50,
      messages: [{ role: 'user', content: 'hi [[fake:reply_words=2]]' }, { role: 'system', content: [{ type: 'text', text: 'two words here' }] }],
    });
    expect(answered.status).toBe(200);
    // Each message counts its words (a directive is one) + 3, the system message like the others.
    expect(await answered.json()).toMatchObject({ content: [{ type: 'text', text: 'w1 w2' }], usage: { input_tokens: 2 + 3 + 3 + 3 } });

    const misplaced: unknown[][] = [
      [{ role: 'system', content: 'first' }, { role: 'user', content: 'hi' }],
      [{ role: 'user', content: 'hi' }, { role: 'system', content: 'x' }, { role: 'user', content: 'again' }],
      [{ role: 'user', content: 'hi' }, { role: 'assistant', content: 'a' }, { role: 'system', content: 'x' }],
      [{ role: 'user', content: 'hi' }, { role: 'system', content: [{ type: 'image', source: { type: 'url', url: 'https://x.test/a.png' } }] }],
    ];
    for (const messages of misplaced) {
      const refused = await postMessages({ model: 'claude', max_tokens: 50, messages });
      expect(refused.status, JSON.stringify(messages)).toBe(400);
      expect(await refused.json()).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });
    }
  });

  it('tool_arg sets the call\'s arguments on both routes, and a tool result followed by a system message is answered with text', async () => {
    const content = 'Read it [[fake:tool_call=Read]] [[fake:tool_arg=file_path:/tmp/a b/note.txt]]';
    const chat = await (await post({ model: 'm', messages: [{ role: 'user', content }] })).json() as Record<string, any>;
    const call = chat.choices[0].message.tool_calls[0];
    expect(call.function).toEqual({ name: 'Read', arguments: JSON.stringify({ file_path: '/tmp/a b/note.txt' }) });
    const answeredChat = await (await post({
      model: 'm', messages: [
        { role: 'user', content }, { role: 'assistant', content: null, tool_calls: [call] },
        { role: 'tool', tool_call_id: call.id, content: 'the text' }, { role: 'system', content: 'be brief' },
      ],
    })).json() as Record<string, any>;
    expect(answeredChat.choices[0]).toMatchObject({ finish_reason: 'stop', message: { content: expect.any(String) } });

    const message = await (await postMessages({ model: 'claude', max_tokens: 50, messages: [{ role: 'user', content }] })).json() as Record<string, any>;
    const toolUse = message.content[0];
    expect(toolUse).toMatchObject({ type: 'tool_use', name: 'Read', input: { file_path: '/tmp/a b/note.txt' } });
    const answered = await (await postMessages({
      model: 'claude', max_tokens: 50, messages: [
        { role: 'user', content }, { role: 'assistant', content: [toolUse] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: toolUse.id, content: 'the text' }] }, { role: 'system', content: 'be brief' },
      ],
    })).json() as Record<string, any>;
    expect(answered).toMatchObject({ stop_reason: 'end_turn', content: [{ type: 'text' }] });
  });
});

describe('fake upstream usage_classes: token price classes in each wire format\'s own usage fields', () => {
  const directive = '[[fake:usage_classes=cached:6,write5m:2,write1h:1,reasoning:4,audio:1]]';

  it('reports cached, audio and reasoning tokens in OpenAI\'s fields, streamed and not, reasoning spent on top of the words', async () => {
    // prompt: 11 words and 2 directives (counted as words) + 3 = 16 tokens; reply: 3 words + 4 reasoning.
    const content = `one two three four five six seven eight nine ten eleven [[fake:reply_words=3]] ${directive}`;
    const body = await (await post({ model: 'tiny', messages: [{ role: 'user', content }] })).json() as Record<string, any>;
    expect(body.usage).toEqual({
      prompt_tokens: 16, completion_tokens: 7, total_tokens: 23,
      prompt_tokens_details: { cached_tokens: 6, audio_tokens: 1 }, completion_tokens_details: { reasoning_tokens: 4 },
    });
    const streamed = await (await post({ model: 'tiny', messages: [{ role: 'user', content }], stream: true, stream_options: { include_usage: true } })).text();
    const usageFrame = streamed.split('\n\n').map((frame) => frame.replace(/^data: /, '')).filter((frame) => frame.includes('"usage":{')).at(-1)!;
    expect((JSON.parse(usageFrame) as { usage: unknown }).usage).toEqual(body.usage);
  });

  it('splits the prompt into fresh input, cache reads and writes with their lifetimes in Anthropic\'s fields, streamed and not', async () => {
    const request = (stream: boolean) => fetch(`${upstream.baseUrl}/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': 'sk-test-upstream', 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({ model: 'c', max_tokens: 50, stream, messages: [{ role: 'user', content: `a b c d e f g h i j k [[fake:reply_words=3]] ${directive}` }] }),
    });
    const body = await (await request(false)).json() as Record<string, any>;
    // 16 prompt tokens (11 words and 2 directives + 3): 6 read, 3 written (2 for 5 minutes, 1 for an hour), 7 fresh; output 3 words + 4 thinking.
    expect(body.usage).toEqual({
      input_tokens: 7, output_tokens: 7, cache_read_input_tokens: 6, cache_creation_input_tokens: 3,
      cache_creation: { ephemeral_5m_input_tokens: 2, ephemeral_1h_input_tokens: 1 },
    });
    const events = (await (await request(true)).text()).split('\n\n').filter((frame) => frame.includes('"usage"'))
      .map((frame) => JSON.parse(frame.split('\ndata: ')[1]!) as Record<string, any>);
    expect(events.at(-1)!.usage).toEqual(body.usage);
  });
});

describe('fake upstream without a record of requests (pnpm start\'s demo)', () => {
  it('answers as usual and keeps nothing of what it answered', async () => {
    const quiet = await startFakeUpstream({ recordRequests: false });
    try {
      for (let index = 0; index < 3; index += 1) {
        const response = await fetch(`${quiet.baseUrl}/chat/completions`, {
          method: 'POST', headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ model: 'tiny', messages: [{ role: 'user', content: 'hello there' }] }),
        });
        expect(response.status).toBe(200);
        expect(((await response.json()) as Completion).choices[0]!.message.content).toContain('hello there');
      }
      expect(quiet.requests).toEqual([]);
    } finally {
      await quiet.close();
    }
  });
});
