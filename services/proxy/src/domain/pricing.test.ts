import { encode } from 'gpt-tokenizer/encoding/o200k_base';
import { encode as encodeCl100k } from 'gpt-tokenizer/encoding/cl100k_base';
import { describe, expect, it } from 'vitest';
import { GatewayError } from '@gateway/errors';
import type { GatewayModelEntry } from './config-snapshot.ts';
import { costMicros, effectiveMaxTokens, reserveMicros, usageCostMicros } from './pricing.ts';
import { countTextTokens, estimatePromptTokens, tokenizerForModel } from './token-estimate.ts';

const model: GatewayModelEntry = {
  slug: 'm', displayName: 'M', kind: 'chat', mediaModalities: new Set(), defaultMaxTokens: 100, maxContextTokens: 1000,
  inputPriceMicrosPerMtok: 1_500_000n, outputPriceMicrosPerMtok: 6_000_001n,
  providerInputCostMicrosPerMtok: 999_999n, providerOutputCostMicrosPerMtok: 3n,
  createdAtS: 0, upstream: { providerKind: 'openai_compatible', baseUrl: 'https://x/v1', model: 'v', apiKey: '' },
  tokenizer: 'cl100k_base',
};

describe('costMicros', () => {
  it('rounds each side up to the whole micro-rupee, exactly, beyond float range', () => {
    expect(costMicros(0, 1_500_000n)).toBe(0n);
    expect(costMicros(1, 1_500_000n)).toBe(2n); // 1.5 → 2
    expect(costMicros(2, 1_500_000n)).toBe(3n); // exactly 3
    expect(costMicros(1, 1n)).toBe(1n); // 0.000001 → 1
    expect(costMicros(1_000_000, 7n)).toBe(7n);
    expect(costMicros(10n ** 12n, 9_007_199_254_740_993n)).toBe(9_007_199_254_740_993_000_000n);
  });

  it('prices usage and provider cost separately per side', () => {
    expect(usageCostMicros({ promptTokens: 3, completionTokens: 1 }, model)).toEqual({
      costMicros: 5n + 7n, // 4.5 → 5, 6.000001 → 7
      providerCostMicros: 3n + 1n, // 2.999997 → 3, 0.000003 → 1
    });
  });
});

describe('reserve estimate', () => {
  it('uses the requested max_tokens or the model default, clamped to the context left after the prompt', () => {
    expect(effectiveMaxTokens(undefined, model, 10)).toBe(100);
    expect(effectiveMaxTokens(50, model, 10)).toBe(50);
    expect(effectiveMaxTokens(5000, model, 900)).toBe(100);
    expect(() => effectiveMaxTokens(1, model, 1000)).toThrow(GatewayError);
  });

  it('reserves ceil(prompt × input) + ceil(max × output), at least 1 µ₹', () => {
    expect(reserveMicros(11, 100, model)).toBe(17n + 601n); // 16.5 → 17, 600.0001 → 601
    expect(reserveMicros(5, 5, { ...model, inputPriceMicrosPerMtok: 0n, outputPriceMicrosPerMtok: 0n })).toBe(1n);
  });

  it('counts prompt tokens as Σ(content tokens + 3) + 3, over every text part', () => {
    const request = {
      messages: [
        { role: 'system' as const, content: 'You are terse.' },
        { role: 'user' as const, content: [{ type: 'text' as const, text: 'Hello' }, { type: 'text' as const, text: ' world <|endoftext|>' }] },
      ],
      params: {},
    };
    const expected = encode('You are terse.').length + 3
      + encode('Hello').length + encode(' world <|endoftext|>', { disallowedSpecial: new Set() }).length + 3 + 3;
    expect(estimatePromptTokens(request, 'o200k_base')).toBe(expected);
    expect(countTextTokens('', 'o200k_base')).toBe(0);
  });

  it('chooses the encoding per upstream model: o200k_base for GPT-4o and later, cl100k_base otherwise', () => {
    for (const name of ['gpt-4o-mini', 'gpt-4.1', 'o3-mini', 'gpt-5', 'openai/gpt-oss-20b', 'GPT-4o']) expect(tokenizerForModel(name), name).toBe('o200k_base');
    for (const name of ['gpt-4-turbo', 'gpt-3.5-turbo', 'meta-llama/Llama-3-8b', 'claude-sonnet-4', 'o1x', 'chat-upstream-name']) {
      expect(tokenizerForModel(name), name).toBe('cl100k_base');
    }
    const text = 'Namaste, gateway! 🙏 Tokens differ per encoding.';
    expect(countTextTokens(text, 'cl100k_base')).toBe(encodeCl100k(text).length);
    expect(countTextTokens(text, 'o200k_base')).toBe(encode(text).length);
    expect(countTextTokens(text, 'cl100k_base')).not.toBe(countTextTokens(text, 'o200k_base'));
  });

  it('counts remembered short texts exactly, per encoding, also after the memory fills and is forgotten', () => {
    // The same short texts in both encodings (a shared memory would answer one with the other's
    // count), then more distinct texts than are remembered, then the first ones again.
    const texts = Array.from({ length: 20_000 }, (_, i) => ` word${i % 7 === 0 ? ' 🙏' : ''}${i}`);
    for (const round of [0, 1]) {
      for (const [index, text] of texts.entries()) {
        if (index % 97 !== round) continue;
        expect(countTextTokens(text, 'cl100k_base'), text).toBe(encodeCl100k(text).length);
        expect(countTextTokens(text, 'o200k_base'), text).toBe(encode(text).length);
      }
      for (const text of texts) countTextTokens(text, 'cl100k_base');
    }
    const long = 'a longer text than the remembered ones, '.repeat(4);
    expect(countTextTokens(long, 'cl100k_base')).toBe(encodeCl100k(long).length);
    expect(countTextTokens('🙏', 'o200k_base')).not.toBe(countTextTokens('🙏', 'cl100k_base'));
  });

  it('adds the tool definitions to the prompt estimate', () => {
    const messages = [{ role: 'user' as const, content: 'hi' }];
    const tools = [{ type: 'function', function: { name: 'lookup', parameters: { type: 'object' } } }];
    expect(estimatePromptTokens({ messages, params: { tools } }, 'o200k_base') - estimatePromptTokens({ messages, params: {} }, 'o200k_base'))
      .toBe(encode(JSON.stringify(tools)).length);
  });
});
