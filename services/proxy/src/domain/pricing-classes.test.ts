import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { GatewayModelEntry } from './config-snapshot.ts';
import {
  outputTokensWithin, priceSheet, reserveMicros, sheetOf, usageCostMicros, type PriceSheetInput, type TokenUsage,
} from './pricing.ts';
import { classTokens, usageByClass } from './token-classes.ts';

const base: GatewayModelEntry = {
  slug: 'm', displayName: 'M', kind: 'chat', mediaModalities: new Set(), defaultMaxTokens: 100, maxContextTokens: 1_000_000,
  inputPriceMicrosPerMtok: 3_000_000n, outputPriceMicrosPerMtok: 15_000_000n,
  providerInputCostMicrosPerMtok: 2_000_000n, providerOutputCostMicrosPerMtok: 10_000_000n,
  createdAtS: 0, upstream: { providerKind: 'anthropic', baseUrl: 'https://x/v1', model: 'v', apiKey: '' },
  tokenizer: 'cl100k_base',
};

/** An Anthropic-like sheet: cache reads 0.1×, 5-minute writes 1.25×, 1-hour writes 2× input; reasoning at output. */
const anthropicLike: PriceSheetInput = {
  customer: {
    input: 3_000_000n, cached_input: 300_000n, cache_write_5m: 3_750_000n, cache_write_1h: 6_000_000n,
    audio_input: 3_000_000n, image_input: 3_000_000n, output: 15_000_000n, reasoning: undefined,
  },
  provider: {
    input: 2_000_000n, cached_input: 200_000n, cache_write_5m: 2_500_000n, cache_write_1h: 4_000_000n,
    audio_input: 2_000_000n, image_input: 2_000_000n, output: 10_000_000n, reasoning: 12_000_000n,
  },
};
const model: GatewayModelEntry = { ...base, priceSheet: priceSheet(anthropicLike) };

describe('price by token class', () => {
  it('prices each class at its own price and the classes sum to the cost (CONSERVATION)', () => {
    const usage: TokenUsage = {
      promptTokens: 1000, completionTokens: 300, cachedInputTokens: 600, cacheWrite5mTokens: 100, cacheWrite1hTokens: 50, reasoningTokens: 200,
    };
    expect(classTokens(usage)).toEqual({
      input: 250, cached_input: 600, cache_write_5m: 100, cache_write_1h: 50, audio_input: 0, image_input: 0, output: 100, reasoning: 200,
    });
    // Input: 250×3 + 600×0.3 + 100×3.75 + 50×6 = 750 + 180 + 375 + 300 = 1605 µ₹; output: 100×15 + 200×15 = 4500 µ₹.
    expect(usageCostMicros(usage, model)).toEqual({ costMicros: 6105n, providerCostMicros: 500n + 120n + 250n + 200n + 1000n + 2400n });
    const classes = usageByClass(usage, sheetOf(model));
    expect(classes.map((entry) => [entry.tokenClass, entry.tokens, entry.costMicros, entry.providerCostMicros])).toEqual([
      ['input', 250, 750n, 500n], ['cached_input', 600, 180n, 120n], ['cache_write_5m', 100, 375n, 250n], ['cache_write_1h', 50, 300n, 200n],
      ['output', 100, 1500n, 1000n], ['reasoning', 200, 3000n, 2400n],
    ]);
  });

  it('bills a model without class prices exactly as before: a side rounded once, whatever its split', () => {
    // 1 µ₹ per million: three classes of one token each would be 3 µ₹ rounded on their own; once, 1 µ₹, as before prices by token class.
    const cheap = { ...base, inputPriceMicrosPerMtok: 1n, outputPriceMicrosPerMtok: 1n, providerInputCostMicrosPerMtok: 1n, providerOutputCostMicrosPerMtok: 1n };
    const split = { promptTokens: 3, completionTokens: 2, cachedInputTokens: 1, cacheWrite5mTokens: 1, reasoningTokens: 1 };
    expect(usageCostMicros(split, cheap)).toEqual(usageCostMicros({ promptTokens: 3, completionTokens: 2 }, cheap));
    expect(usageCostMicros(split, cheap)).toEqual({ costMicros: 2n, providerCostMicros: 2n });
    const classes = usageByClass(split, sheetOf(cheap));
    expect(classes.reduce((sum, entry) => sum + entry.costMicros, 0n)).toBe(2n);
  });

  it('reserves the prompt at the highest input-side price and max tokens at max(output, reasoning)', () => {
    // 1000 × 6 (1-hour write) + 100 × 15.
    expect(reserveMicros(1000, 100, model)).toBe(6000n + 1500n);
    const dearReasoning = { ...base, priceSheet: priceSheet({ ...anthropicLike, customer: { ...anthropicLike.customer, reasoning: 20_000_000n } }) };
    expect(reserveMicros(1000, 100, dearReasoning)).toBe(6000n + 2000n);
    // Audio and image count only where the model takes them.
    const dearAudio = { ...anthropicLike, customer: { ...anthropicLike.customer, audio_input: 50_000_000n } };
    expect(reserveMicros(1000, 0, { ...base, priceSheet: priceSheet(dearAudio) })).toBe(6000n);
    expect(reserveMicros(1000, 0, { ...base, priceSheet: priceSheet(dearAudio, new Set(['audio'])) })).toBe(50_000n);
  });

  it('clamps class counts an upstream over-reports to the totals (nothing billed twice)', () => {
    expect(classTokens({ promptTokens: 10, completionTokens: 5, cachedInputTokens: 8, cacheWrite1hTokens: 7, reasoningTokens: 9 })).toEqual({
      input: 0, cached_input: 8, cache_write_5m: 0, cache_write_1h: 2, audio_input: 0, image_input: 0, output: 0, reasoning: 5,
    });
  });

  const price = fc.bigInt({ min: 0n, max: 100_000_000n });
  const sheetArbitrary = fc.record({
    customer: fc.record({
      input: price, cached_input: price, cache_write_5m: price, cache_write_1h: price, audio_input: price, image_input: price, output: price,
      reasoning: fc.option(price, { nil: undefined }),
    }),
    modalities: fc.subarray(['audio', 'image'] as const),
  });

  it('property: the Reserve covers every usage it allows (NO_OVERSPEND, BOUNDED_OVERRUN), and the classes always sum to the cost', () => {
    fc.assert(fc.property(
      sheetArbitrary, fc.integer({ min: 0, max: 200_000 }), fc.integer({ min: 0, max: 100_000 }),
      fc.array(fc.nat({ max: 200_000 }), { minLength: 6, maxLength: 6 }), fc.nat({ max: 100_000 }), fc.integer({ min: 0, max: 100_000 }),
      (sheetGiven, promptTokens, maxTokens, [cached, write5m, write1h, audio, image], reasoningTokens, completionWanted) => {
        const sheet = priceSheet({ customer: sheetGiven.customer, provider: sheetGiven.customer }, new Set(sheetGiven.modalities));
        const entry = { ...base, mediaModalities: new Set(sheetGiven.modalities), priceSheet: sheet };
        const reserve = reserveMicros(promptTokens, maxTokens, entry);
        // Any split of the prompt the model can be billed (audio and image only where it takes them), any output up to max_tokens.
        const completionTokens = Math.min(completionWanted, maxTokens);
        const usage: TokenUsage = {
          promptTokens, completionTokens, cachedInputTokens: cached, cacheWrite5mTokens: write5m, cacheWrite1hTokens: write1h,
          audioInputTokens: sheetGiven.modalities.includes('audio') ? audio : 0, imageInputTokens: sheetGiven.modalities.includes('image') ? image : 0,
          reasoningTokens,
        };
        const { costMicros } = usageCostMicros(usage, entry);
        expect(costMicros).toBeLessThanOrEqual(reserve);
        expect(usageByClass(usage, sheetOf(entry)).reduce((sum, item) => sum + item.costMicros, 0n)).toBe(costMicros);
        // The cut of a non-streaming reply: whatever its split, the output it allows fits the Reserve.
        const allowed = outputTokensWithin(reserve, promptTokens, maxTokens, entry);
        expect(allowed).toBeLessThanOrEqual(maxTokens);
        const cut = usageCostMicros({ ...usage, completionTokens: allowed, reasoningTokens: Math.min(reasoningTokens, allowed) }, entry).costMicros;
        expect(cut).toBeLessThanOrEqual(reserve);
        // ...and it is the most that does: at max tokens the Reserve is the worst case itself.
        expect(outputTokensWithin(reserve, promptTokens, maxTokens, entry)).toBe(maxTokens);
      },
    ), { numRuns: 2000 });
  });
});
