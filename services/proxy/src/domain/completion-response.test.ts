import { describe, expect, it } from 'vitest';
import { createChatStreamRenderer, cutCompletion, estimateCompletionTokens } from './completion-response.ts';
import type { NormalizedChoice, NormalizedCompletion } from './normalized-completion.ts';
import { outputTokensWithin } from './pricing.ts';
import type { GatewayModelEntry } from './config-snapshot.ts';
import { countTextTokens, truncateToTokens } from './token-estimate.ts';

const tokenizer = 'cl100k_base' as const;

function completionOf(choice: Partial<NormalizedChoice>): NormalizedCompletion {
  return {
    choices: [{ index: 0, content: null, refusal: null, toolCalls: [], finishReason: 'stop', logprobs: null, ...choice }],
    usage: undefined,
  };
}

const call = (id: string, args: string) => ({ id, type: 'function' as const, function: { name: 'lookup', arguments: args } });

describe('truncateToTokens', () => {
  it('keeps the longest start within the limit, whole when it fits, and never splits a character into garbage', () => {
    const text = 'The quick brown fox jumps over the lazy dog. '.repeat(20);
    expect(truncateToTokens(text, 10_000, tokenizer)).toBe(text);
    const cut = truncateToTokens(text, 25, tokenizer);
    expect(text.startsWith(cut)).toBe(true);
    expect(countTextTokens(cut, tokenizer)).toBeLessThanOrEqual(25);
    expect(countTextTokens(cut, tokenizer)).toBeGreaterThanOrEqual(24);
    expect(truncateToTokens(text, 0, tokenizer)).toBe('');
    // Characters that take several byte-level tokens: a cut inside one drops it rather than emit U+FFFD.
    const emoji = '🦜🦜🦜🦜';
    for (let tokens = 1; tokens <= 8; tokens += 1) {
      const prefix = truncateToTokens(emoji, tokens, tokenizer);
      expect(emoji.startsWith(prefix)).toBe(true);
      expect(prefix).not.toContain('\uFFFD');
    }
  });
});

describe('cutCompletion (the non-streaming stop at the Reserve)', () => {
  it('returns a reply that fits unchanged', () => {
    const completion = completionOf({ content: 'short answer' });
    expect(cutCompletion(completion, 100, tokenizer)).toEqual({ completion, cut: false });
  });

  it('cuts content at the limit, ends it with length and drops logprobs that would show the rest', () => {
    const completion = completionOf({ content: 'one two three four five six seven eight', logprobs: { content: [], refusal: null } });
    const { completion: cut, cut: wasCut } = cutCompletion(completion, 3, tokenizer);
    expect(wasCut).toBe(true);
    expect(cut.choices[0]).toMatchObject({ content: 'one two three', finishReason: 'length', logprobs: null, toolCalls: [] });
    expect(estimateCompletionTokens(cut, tokenizer)).toBe(3);
  });

  it('keeps tool calls only whole: one that does not fit, and every one after it, is dropped', () => {
    const first = call('call_1', '{"city":"Pune"}');
    const second = call('call_2', '{"city":"Thiruvananthapuram","units":"metric","days":7}');
    const third = call('call_3', '{"city":"Goa"}');
    const completion = completionOf({ content: 'Looking up.', toolCalls: [first, second, third], finishReason: 'tool_calls' });
    const budget = countTextTokens('Looking up.', tokenizer) + countTextTokens('lookup', tokenizer) + countTextTokens(first.function.arguments, tokenizer) + 2;
    const { completion: cut, cut: wasCut } = cutCompletion(completion, budget, tokenizer);
    expect(wasCut).toBe(true);
    expect(cut.choices[0]).toMatchObject({ content: 'Looking up.', toolCalls: [first], finishReason: 'length' });
    expect(estimateCompletionTokens(cut, tokenizer)).toBeLessThanOrEqual(budget);
  });

  it('drops every tool call when the content already used the budget', () => {
    const completion = completionOf({ content: 'a long preamble before the call', toolCalls: [call('call_1', '{}')], finishReason: 'tool_calls' });
    const { completion: cut } = cutCompletion(completion, 2, tokenizer);
    expect(cut.choices[0]).toMatchObject({ toolCalls: [], finishReason: 'length' });
    expect(estimateCompletionTokens(cut, tokenizer)).toBeLessThanOrEqual(2);
  });
});

describe('outputTokensWithin', () => {
  const model = { inputPriceMicrosPerMtok: 2_500_001n, outputPriceMicrosPerMtok: 7_000_003n } as GatewayModelEntry;
  const cost = (tokens: number, price: bigint) => (BigInt(tokens) * price + 999_999n) / 1_000_000n;

  it('is the most output tokens whose cost after the prompt stays within the Reserve, capped at max_tokens', () => {
    const reserve = cost(12, model.inputPriceMicrosPerMtok) + cost(100, model.outputPriceMicrosPerMtok);
    expect(outputTokensWithin(reserve, 12, 100, model)).toBe(100);
    expect(outputTokensWithin(reserve, 12, 50, model)).toBe(50);
    const fits = outputTokensWithin(reserve, 40, 100, model);
    expect(cost(40, model.inputPriceMicrosPerMtok) + cost(fits, model.outputPriceMicrosPerMtok)).toBeLessThanOrEqual(reserve);
    expect(cost(40, model.inputPriceMicrosPerMtok) + cost(fits + 1, model.outputPriceMicrosPerMtok)).toBeGreaterThan(reserve);
    expect(outputTokensWithin(1n, 10_000, 100, model)).toBe(0);
  });
});

describe('the chunk frame head', () => {
  it('carries the gateway id, created and the Gateway Model slug (escaped), and completes to the chunk JSON clients parse', () => {
    // The head is what the renderer writes before a chunk's choices.
    const choices = '[{"index":0,"delta":{"content":"hi"}}]';
    const frame = createChatStreamRenderer({ id: 'chatcmpl-1', createdS: 1_700_000_000, modelSlug: 'team "fast"', includeUsage: false }).text('hi', choices);
    const head = frame.slice(0, frame.indexOf(choices));
    expect(head.startsWith('data: ')).toBe(true);
    const chunk = JSON.parse(`${head.slice('data: '.length)}[{"index":0,"delta":{"content":"hi"}}]}`) as Record<string, unknown>;
    expect(chunk).toEqual({
      id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1_700_000_000, model: 'team "fast"',
      choices: [{ index: 0, delta: { content: 'hi' } }],
    });
  });
});
