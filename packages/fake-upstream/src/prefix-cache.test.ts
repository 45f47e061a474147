import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeUpstream, type FakeUpstream } from './index.ts';

let upstream: FakeUpstream;
let nowMs = 1_000_000;
beforeAll(async () => { upstream = await startFakeUpstream({ promptCache: { minTokens: 20, now: () => nowMs } }); });
afterAll(async () => { await upstream.close(); });

/** A text of n words. */
function words(n: number, stem = 'w'): string {
  return Array.from({ length: n }, (_, i) => `${stem}${i}`).join(' ');
}

async function post(path: string, body: unknown): Promise<Record<string, any>> {
  const response = await fetch(`${upstream.baseUrl}${path}`, {
    method: 'POST', headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' }, body: JSON.stringify(body),
  });
  expect(response.status).toBe(200);
  return await response.json() as Record<string, any>;
}

describe('OpenAI automatic prefix cache', () => {
  const chat = (system: string, user: string, extra: object = {}) => post('/chat/completions', {
    model: 'cache-openai', messages: [{ role: 'system', content: system }, { role: 'user', content: user }], ...extra,
  });

  it('serves the longest earlier prefix of whole messages from a minimum length on, to anyone with the same key', async () => {
    const system = words(30, 's'); // 33 tokens: one block past the minimum
    expect((await chat(system, 'first question')).usage.prompt_tokens_details).toEqual({ cached_tokens: 0 });
    // The system message was seen: 33 tokens read; the new user message is not.
    expect((await chat(system, 'second question')).usage.prompt_tokens_details).toEqual({ cached_tokens: 33 });
    // The whole conversation seen before: every prompt token read.
    expect((await chat(system, 'second question')).usage).toMatchObject({ prompt_tokens: 38, prompt_tokens_details: { cached_tokens: 38 } });
    // A prefix under the minimum is never cached.
    await chat('short', 'one');
    expect((await chat('short', 'two')).usage.prompt_tokens_details).toEqual({ cached_tokens: 0 });
  });

  it('keeps prompt_cache_key partitions apart', async () => {
    const system = words(30, 'k');
    await chat(system, 'q', { prompt_cache_key: 'a' });
    expect((await chat(system, 'q', { prompt_cache_key: 'b' })).usage.prompt_tokens_details).toEqual({ cached_tokens: 0 });
    expect((await chat(system, 'q', { prompt_cache_key: 'a' })).usage.prompt_tokens_details).toEqual({ cached_tokens: 37 });
  });
});

describe('Anthropic breakpoint cache', () => {
  const message = (system: unknown, user: string, tools?: unknown) => post('/messages', {
    model: 'cache-claude', max_tokens: 5, system, messages: [{ role: 'user', content: user }], ...(tools === undefined ? {} : { tools }),
  });

  it('writes at breakpoints (5m and 1h apart), reads the longest live prefix, and lets it expire', async () => {
    const system = [
      { type: 'text', text: words(25, 'a'), cache_control: { type: 'ephemeral', ttl: '1h' } },
      { type: 'text', text: words(10, 'b'), cache_control: { type: 'ephemeral' } },
    ];
    // 28 tokens to the first breakpoint (25 words + the system's 3), 10 more to the second; the user turn is 1 + 3.
    const first = await message(system, 'hello');
    expect(first.usage).toMatchObject({
      input_tokens: 4, cache_creation_input_tokens: 38, cache_read_input_tokens: 0,
      cache_creation: { ephemeral_5m_input_tokens: 10, ephemeral_1h_input_tokens: 28 },
    });
    const second = await message(system, 'again');
    expect(second.usage).toMatchObject({ input_tokens: 4, cache_creation_input_tokens: 0, cache_read_input_tokens: 38 });
    // Six minutes on the 5-minute entry has expired and is written again; 61 minutes later nothing is left.
    nowMs += 6 * 60_000;
    expect((await message(system, 'later')).usage).toMatchObject({ cache_read_input_tokens: 28, cache_creation: { ephemeral_5m_input_tokens: 10, ephemeral_1h_input_tokens: 0 } });
    nowMs += 61 * 60_000;
    expect((await message(system, 'much later')).usage).toMatchObject({ cache_read_input_tokens: 0, cache_creation_input_tokens: 38 });
  });

  it('caches nothing without a breakpoint, and a prefix is tools → system → messages', async () => {
    const system = words(30, 'n');
    await message(system, 'x');
    expect((await message(system, 'x')).usage).toMatchObject({ cache_read_input_tokens: 0, cache_creation_input_tokens: 0 });
    const cached = [{ type: 'text', text: words(30, 't'), cache_control: { type: 'ephemeral' } }];
    const tool = (description: string) => [{ name: 'look', description, input_schema: { type: 'object' } }];
    await message(cached, 'y', tool('one'));
    expect((await message(cached, 'y', tool('one'))).usage).toMatchObject({ cache_read_input_tokens: 33 });
    // Another tool in front: another prefix.
    expect((await message(cached, 'y', tool('two'))).usage).toMatchObject({ cache_read_input_tokens: 0, cache_creation_input_tokens: 33 });
  });
});
