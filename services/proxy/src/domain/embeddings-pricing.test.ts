import { describe, expect, it } from 'vitest';
import type { GatewayModelEntry } from './config-snapshot.ts';
import { billedEmbeddingsUsage, reserveInputTokens } from './embeddings-pricing.ts';

/** Prices in µ₹ per million tokens: odd, so every ceil shows. */
const model = {
  slug: 'embed', kind: 'embedding', tokenizer: 'cl100k_base', maxContextTokens: 8192, defaultMaxTokens: 1,
  inputPriceMicrosPerMtok: 2_500_001n, outputPriceMicrosPerMtok: 0n, providerInputCostMicrosPerMtok: 1_000_001n, providerOutputCostMicrosPerMtok: 0n,
  upstream: { providerKind: 'openai_compatible', baseUrl: 'https://api.example.com/v1', model: 'vendor-embed', apiKey: '' },
} as unknown as GatewayModelEntry;

describe('reserveInputTokens', () => {
  it("is the gateway's count for OpenAI's embedding models, which cl100k_base counts exactly", () => {
    for (const name of ['text-embedding-3-small', 'text-embedding-3-large', 'text-embedding-ada-002', 'openai/text-embedding-3-large']) {
      expect(reserveInputTokens(10, 2, name), name).toBe(10);
    }
  });

  it('adds a quarter (rounded up) and 2 tokens per input for any other model (BERT-style [CLS]/[SEP], a smaller vocabulary)', () => {
    expect(reserveInputTokens(10, 2, 'BAAI/bge-base-en-v1.5')).toBe(13 + 4); // ceil(12.5) + 2 × 2
    expect(reserveInputTokens(8, 1, 'intfloat/e5-large-v2')).toBe(10 + 2);
    expect(reserveInputTokens(0, 3, 'vendor-embed')).toBe(6);
    expect(reserveInputTokens(300_000, 2048, 'text-embedding-3-smaller')).toBe(375_000 + 4096);
  });
});

describe('billedEmbeddingsUsage', () => {
  // The gateway counted 8; the Reserve was sized on 10 of them: ceil(10 × 2.500001) = 26 µ₹.
  const plan = { inputTokens: 8, reserveTokens: 10, amountMicros: 26n };

  it("bills the upstream's count when it reports one that fits the Reserve, even above the gateway's", () => {
    expect(billedEmbeddingsUsage(9, plan, model)).toEqual({ usage: { promptTokens: 9, completionTokens: 0 }, source: 'upstream', overrun: undefined });
    expect(billedEmbeddingsUsage(10, plan, model).source).toBe('upstream');
  });

  it("bills the gateway's own count, without the margin, when the upstream reports none", () => {
    expect(billedEmbeddingsUsage(undefined, plan, model)).toEqual({ usage: { promptTokens: 8, completionTokens: 0 }, source: 'gateway_estimate', overrun: undefined });
  });

  it("bills the tokens the Reserve was sized on, and prices the provider on the upstream's, when the upstream counts past the Reserve", () => {
    // 11 tokens cost ceil(27.500011) = 28 µ₹ > 26: the wallet pays for 10, the provider is priced on 11.
    expect(billedEmbeddingsUsage(11, plan, model)).toEqual({
      usage: { promptTokens: 10, completionTokens: 0 }, source: 'gateway_estimate',
      overrun: { producedUsage: { promptTokens: 11, completionTokens: 0 }, overrunOutputTokens: 0 },
    });
  });

  it('bills whatever a free model reports: its cost, 0, always fits the 1 µ₹ Reserve', () => {
    const free = { ...model, inputPriceMicrosPerMtok: 0n };
    expect(billedEmbeddingsUsage(1_000, { inputTokens: 10, reserveTokens: 10, amountMicros: 1n }, free)).toMatchObject({ usage: { promptTokens: 1_000 }, source: 'upstream' });
  });
});
