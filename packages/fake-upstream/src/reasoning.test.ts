import { describe, expect, it } from 'vitest';
import { startFakeUpstream } from './fake-upstream.ts';
import { fakeThinkingSignature } from './reasoning.ts';

/** One call of the fake's Anthropic route. */
async function messages(baseUrl: string, body: object): Promise<{ status: number; json: any }> {
  const response = await fetch(`${baseUrl}/messages`, {
    method: 'POST', headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' }, body: JSON.stringify(body),
  });
  return { status: response.status, json: await response.json() };
}

describe('the fake upstream\'s reasoning', () => {
  it('thinks when asked (Anthropic thinking, OpenAI reasoning_effort), counts it as output, and refuses a thinking block whose signature it did not give', async () => {
    const upstream = await startFakeUpstream();
    try {
      const question = { role: 'user', content: 'hi [[fake:reply_words=2]]' };
      const first = await messages(upstream.baseUrl, { model: 'm', max_tokens: 4096, thinking: { type: 'enabled', budget_tokens: 1024 }, messages: [question] });
      expect(first.json.content).toEqual([
        { type: 'thinking', thinking: 'r1 r2 r3', signature: fakeThinkingSignature('r1 r2 r3') },
        { type: 'text', text: 'w1 w2' },
      ]);
      expect(first.json.usage.output_tokens).toBe(5);
      const back = (signature: string) => messages(upstream.baseUrl, {
        model: 'm', max_tokens: 4096, messages: [question, { role: 'assistant', content: [{ type: 'thinking', thinking: 'r1 r2 r3', signature }, { type: 'text', text: 'w1 w2' }] }, question],
      });
      expect((await back(fakeThinkingSignature('r1 r2 r3'))).status).toBe(200);
      const forged = await back(fakeThinkingSignature('r1 r2'));
      expect(forged.status).toBe(400);
      expect(forged.json.error.message).toContain('Invalid `signature` in `thinking` block');

      const chat = await fetch(`${upstream.baseUrl}/chat/completions`, {
        method: 'POST', headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'm', reasoning_effort: 'low', messages: [question] }),
      }).then((response) => response.json() as Promise<any>);
      expect(chat.choices[0].message).toMatchObject({ content: 'w1 w2', reasoning_content: 'r1 r2 r3 r4' });
      expect(chat.usage).toMatchObject({ completion_tokens: 6, completion_tokens_details: { reasoning_tokens: 4 } });
    } finally {
      await upstream.close();
    }
  });
});
