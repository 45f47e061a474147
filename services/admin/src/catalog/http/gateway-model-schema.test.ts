import { describe, expect, it } from 'vitest';
import { createGatewayModelBody, updateGatewayModelBody, gatewayModelResponse } from './catalog-schemas.ts';
import { parseInput } from '../../test-support/parse-input.ts';
import { camelCase, camelKeys } from '../domain/camel-case.ts';
import { gatewayModelLeaves, type GatewayModel } from '../domain/gateway-model-fields.ts';
import { gatewayModelShown } from './gateway-model-schema.ts';
import { gatewayModelJson as gatewayModelToJson } from './catalog-views.ts';

const model: GatewayModel = {
  slug: 'acme-chat',
  displayName: 'Acme chat',
  kind: 'chat',
  inputModalities: ['text', 'image'],
  reasoningEfforts: ['low', 'high'],
  thinkingModes: ['enabled'],
  maxThinkingBudgetTokens: 16_000,
  returnsReasoning: true,
  defaultMaxTokens: 64,
  maxContextTokens: 4096,
  inputPriceMicrosPerMtok: 2_000_000n,
  outputPriceMicrosPerMtok: 9_007_199_254_740_993n, // past 2^53: exact only as a string
  providerInputCostMicrosPerMtok: 1n,
  providerOutputCostMicrosPerMtok: 0n,
  cachedInputPriceMicrosPerMtok: 200_000n,
  cacheWrite5mPriceMicrosPerMtok: 2_500_000n,
  cacheWrite1hPriceMicrosPerMtok: 4_000_000n,
  reasoningPriceMicrosPerMtok: null,
  audioInputPriceMicrosPerMtok: 2_000_000n,
  imageInputPriceMicrosPerMtok: 2_000_000n,
  providerCachedInputCostMicrosPerMtok: 1n,
  providerCacheWrite5mCostMicrosPerMtok: 1n,
  providerCacheWrite1hCostMicrosPerMtok: 2n,
  providerReasoningCostMicrosPerMtok: 5n,
  providerAudioInputCostMicrosPerMtok: 1n,
  providerImageInputCostMicrosPerMtok: 1n,
  upstream: { providerKind: 'anthropic', baseUrl: 'https://api.example.com/v1', model: 'vendor-x', hasApiKey: true, allowPrivateNetwork: false, priority: 3, weight: 7 },
  createdAt: new Date('2026-11-24T09:00:00.000Z'),
};

/** The keys of a JSON object at every depth, as dotted paths. */
function paths(value: object, prefix = ''): string[] {
  return Object.entries(value).flatMap(([key, inner]) => (inner !== null && typeof inner === 'object' && !Array.isArray(inner) && !(inner instanceof Date)
    ? paths(inner as object, `${prefix}${key}.`)
    : [`${prefix}${key}`]));
}

describe('the one Gateway Model schema', () => {
  it('shows every field of the record in the response, money as exact decimal strings, and parses under the strict response schema', () => {
    const json = gatewayModelToJson(model);
    expect(gatewayModelResponse.parse(json)).toEqual(json);
    expect(json).toEqual({
      slug: 'acme-chat', display_name: 'Acme chat', kind: 'chat', input_modalities: ['text', 'image'],
      reasoning_efforts: ['low', 'high'], thinking_modes: ['enabled'], max_thinking_budget_tokens: 16_000, returns_reasoning: true, default_max_tokens: 64, max_context_tokens: 4096,
      input_price_micros_per_mtok: '2000000', output_price_micros_per_mtok: '9007199254740993',
      provider_input_cost_micros_per_mtok: '1', provider_output_cost_micros_per_mtok: '0',
      cached_input_price_micros_per_mtok: '200000', cache_write_5m_price_micros_per_mtok: '2500000', cache_write_1h_price_micros_per_mtok: '4000000',
      reasoning_price_micros_per_mtok: null, audio_input_price_micros_per_mtok: '2000000', image_input_price_micros_per_mtok: '2000000',
      provider_cached_input_cost_micros_per_mtok: '1', provider_cache_write_5m_cost_micros_per_mtok: '1', provider_cache_write_1h_cost_micros_per_mtok: '2',
      provider_reasoning_cost_micros_per_mtok: '5', provider_audio_input_cost_micros_per_mtok: '1', provider_image_input_cost_micros_per_mtok: '1',
      upstream: { provider_kind: 'anthropic', base_url: 'https://api.example.com/v1', model: 'vendor-x', has_api_key: true, allow_private_network: false, priority: 3, weight: 7 },
      created_at: '2026-11-24T09:00:00.000Z',
    });
    // Every key of the domain record, camelCased back from the response, and nothing else.
    expect(paths(json).map((path) => path.split('.').map(camelCase).join('.'))).toEqual(paths(model));
    // Every field of the response schema is one the view fills.
    expect(paths(json).sort()).toEqual(gatewayModelLeaves.filter((leaf) => leaf.shown).map((leaf) => leaf.wireName).sort());
    expect(Object.keys(gatewayModelShown.shape)).toEqual(Object.keys(json));
  });

  it('never copies into the JSON what the object carries beyond the shown fields (a sealed credential)', () => {
    const stored = { ...model, upstreamApiKeyEncrypted: 'v1:iv:tag:SEALED', upstream: { ...model.upstream, apiKey: 'sk-PLAIN' } };
    const text = JSON.stringify(gatewayModelToJson(stored));
    expect(text).not.toContain('SEALED');
    expect(text).not.toContain('PLAIN');
  });

  it('stores every field a create may give and a response shows, each in a column of its own', () => {
    const written = gatewayModelLeaves.filter((leaf) => leaf.creatable && leaf.shown);
    expect(written.filter((leaf) => leaf.column === null)).toEqual([]);
    const columns = gatewayModelLeaves.flatMap((leaf) => (leaf.column === null ? [] : [leaf.column]));
    expect(new Set(columns).size).toBe(columns.length);
    // Every field an update may change is one a create may give (else a create could never set it).
    expect(gatewayModelLeaves.filter((leaf) => leaf.updatable && !leaf.creatable)).toEqual([]);
  });

  it('parses a create body into the service input: camelCased, money as bigint, the defaults applied', () => {
    const body = parseInput(createGatewayModelBody({ allowPrivate: false }), {
      slug: 'acme-chat', default_max_tokens: 64, max_context_tokens: 4096,
      input_price_micros_per_mtok: '2000000', output_price_micros_per_mtok: 5_000_000,
      upstream: { provider_kind: 'openai', base_url: 'https://api.example.com/v1', model: 'm', api_key: 'sk-x' },
    }, 'body');
    expect(camelKeys(body)).toEqual({
      slug: 'acme-chat', kind: 'chat', inputModalities: ['text'],
      reasoningEfforts: [], thinkingModes: [], maxThinkingBudgetTokens: 0, returnsReasoning: false, defaultMaxTokens: 64, maxContextTokens: 4096,
      inputPriceMicrosPerMtok: 2_000_000n, outputPriceMicrosPerMtok: 5_000_000n,
      providerInputCostMicrosPerMtok: 0n, providerOutputCostMicrosPerMtok: 0n,
      // Left out: reasoning priced as output; the input classes are filled from the input price by the service.
      reasoningPriceMicrosPerMtok: null, providerReasoningCostMicrosPerMtok: null,
      upstream: { providerKind: 'openai', baseUrl: 'https://api.example.com/v1', model: 'm', apiKey: 'sk-x', allowPrivateNetwork: false, priority: 0, weight: 1 },
    });
  });

  it('parses token class prices as bigint µ₹ per million tokens, and refuses a negative or fractional one naming the field', () => {
    const base = {
      slug: 'acme-chat', default_max_tokens: 64, max_context_tokens: 4096, input_price_micros_per_mtok: '2000000', output_price_micros_per_mtok: '5000000',
      upstream: { provider_kind: 'anthropic', base_url: 'https://api.example.com/v1', model: 'm' },
    };
    const body = camelKeys(parseInput(createGatewayModelBody({ allowPrivate: false }), {
      ...base, cached_input_price_micros_per_mtok: '200000', cache_write_1h_price_micros_per_mtok: 4_000_000, reasoning_price_micros_per_mtok: '6000000',
      provider_cache_write_5m_cost_micros_per_mtok: '1250000',
    }, 'body'));
    expect(body).toMatchObject({
      cachedInputPriceMicrosPerMtok: 200_000n, cacheWrite1hPriceMicrosPerMtok: 4_000_000n, reasoningPriceMicrosPerMtok: 6_000_000n,
      providerCacheWrite5mCostMicrosPerMtok: 1_250_000n,
    });
    for (const [field, value] of [['cached_input_price_micros_per_mtok', '-1'], ['provider_reasoning_cost_micros_per_mtok', 1.5], ['image_input_price_micros_per_mtok', 'x']] as const) {
      expect(() => parseInput(createGatewayModelBody({ allowPrivate: false }), { ...base, [field]: value }, 'body')).toThrow(expect.objectContaining({ param: field }));
    }
    // An update may set reasoning back to null: priced as output again.
    expect(camelKeys(parseInput(updateGatewayModelBody({ allowPrivate: false }), { reasoning_price_micros_per_mtok: null }, 'body')))
      .toEqual({ reasoningPriceMicrosPerMtok: null });
  });

  it('parses an update body into changes holding only what the body gives', () => {
    const body = parseInput(updateGatewayModelBody({ allowPrivate: false }), {
      provider_output_cost_micros_per_mtok: '7', upstream: { api_key: null },
    }, 'body');
    expect(camelKeys(body)).toEqual({ providerOutputCostMicrosPerMtok: 7n, upstream: { apiKey: null } });
  });
});
