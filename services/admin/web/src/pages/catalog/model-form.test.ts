import { describe, expect, it } from 'vitest';
import { createModelBody, modelFormOf, updateModelBody, type GatewayModelJson } from './model-form.ts';

const model: GatewayModelJson = {
  slug: 'acme-chat',
  display_name: 'Acme Chat',
  default_max_tokens: 1024,
  max_context_tokens: 8192,
  input_price_micros_per_mtok: '150000000',
  output_price_micros_per_mtok: '600000000',
  provider_input_cost_micros_per_mtok: '125',
  provider_output_cost_micros_per_mtok: '0',
  cached_input_price_micros_per_mtok: '75000000',
  cache_write_5m_price_micros_per_mtok: '150000000',
  cache_write_1h_price_micros_per_mtok: '150000000',
  reasoning_price_micros_per_mtok: null,
  audio_input_price_micros_per_mtok: '150000000',
  image_input_price_micros_per_mtok: '150000000',
  provider_cached_input_cost_micros_per_mtok: '125',
  provider_cache_write_5m_cost_micros_per_mtok: '125',
  provider_cache_write_1h_cost_micros_per_mtok: '125',
  provider_reasoning_cost_micros_per_mtok: null,
  provider_audio_input_cost_micros_per_mtok: '125',
  provider_image_input_cost_micros_per_mtok: '125',
  upstream: { provider_kind: 'openai', base_url: 'https://api.openai.com/v1', model: 'gpt-4o-mini', has_api_key: true, allow_private_network: false, priority: 0, weight: 1 },
  created_at: '2026-11-01T00:00:00.000Z',
};

describe('createModelBody', () => {
  it('sends prices as exact µ₹ strings and leaves out an empty credential and display name', () => {
    const form = {
      ...modelFormOf(), slug: ' my-model ', inputPrice: '1,500.50', outputPrice: '0.000001',
      baseUrl: 'https://llm.example.com/v1', upstreamModel: 'llama', providerKind: 'vllm',
    };
    expect(createModelBody(form)).toEqual({
      ok: true,
      body: {
        slug: 'my-model',
        default_max_tokens: 1024,
        max_context_tokens: 8192,
        input_price_micros_per_mtok: '1500500000',
        output_price_micros_per_mtok: '1',
        provider_input_cost_micros_per_mtok: '0',
        provider_output_cost_micros_per_mtok: '0',
        reasoning_efforts: [], thinking_modes: [], max_thinking_budget_tokens: 0, returns_reasoning: false,
        upstream: { provider_kind: 'vllm', base_url: 'https://llm.example.com/v1', model: 'llama', allow_private_network: false, priority: 0, weight: 1 },
      },
    });
  });

  it('sends the reasoning controls as typed lists, and a change of them alone on edit', () => {
    const form = { ...modelFormOf(), inputPrice: '1', outputPrice: '1', reasoningEfforts: 'low, medium,high', thinkingModes: 'adaptive', maxThinkingBudgetTokens: '8192', returnsReasoning: true };
    expect(createModelBody(form)).toMatchObject({
      ok: true, body: { reasoning_efforts: ['low', 'medium', 'high'], thinking_modes: ['adaptive'], max_thinking_budget_tokens: 8192, returns_reasoning: true },
    });
  });

  it('sends a typed credential', () => {
    const result = createModelBody({ ...modelFormOf(), inputPrice: '1', outputPrice: '1', apiKey: ' sk-secret ' });
    expect(result.ok && (result.body.upstream as Record<string, unknown>).api_key).toBe('sk-secret');
  });

  it('names the field a bad amount or count is in', () => {
    expect(createModelBody({ ...modelFormOf(), inputPrice: 'ten', outputPrice: '1' })).toMatchObject({ ok: false, param: 'input_price_micros_per_mtok' });
    expect(createModelBody({ ...modelFormOf(), inputPrice: '1', outputPrice: '1', maxContextTokens: '8k' })).toMatchObject({ ok: false, param: 'max_context_tokens' });
  });
});

describe('updateModelBody', () => {
  it('sends nothing when nothing changed, and never pre-fills the credential', () => {
    const form = modelFormOf(model);
    expect(form.apiKey).toBe('');
    expect(form.providerInputCost).toBe('0.000125');
    expect(updateModelBody(model, form)).toEqual({ ok: true, body: {} });
  });

  it('sends only the changed fields', () => {
    const form = { ...modelFormOf(model), outputPrice: '650', upstreamModel: 'gpt-4o', displayName: 'Acme Chat 2' };
    expect(updateModelBody(model, form)).toEqual({
      ok: true,
      body: { display_name: 'Acme Chat 2', output_price_micros_per_mtok: '650000000', upstream: { model: 'gpt-4o' } },
    });
  });

  it('replaces the credential only when one is typed, and removes it only on request', () => {
    expect(updateModelBody(model, { ...modelFormOf(model), apiKey: 'sk-new' })).toEqual({ ok: true, body: { upstream: { api_key: 'sk-new' } } });
    expect(updateModelBody(model, { ...modelFormOf(model), removeApiKey: true })).toEqual({ ok: true, body: { upstream: { api_key: null } } });
    const withoutKey = { ...model, upstream: { ...model.upstream, has_api_key: false } };
    expect(updateModelBody(withoutKey, { ...modelFormOf(withoutKey), removeApiKey: true })).toEqual({ ok: true, body: {} });
  });

  it('sends the private-network flag when it changes', () => {
    expect(updateModelBody(model, { ...modelFormOf(model), allowPrivateNetwork: true })).toEqual({ ok: true, body: { upstream: { allow_private_network: true } } });
  });

  it('sends the upstream\'s priority and weight among the deployments when they change, and names a bad one', () => {
    expect(updateModelBody(model, { ...modelFormOf(model), priority: '2', weight: '30' })).toEqual({ ok: true, body: { upstream: { priority: 2, weight: 30 } } });
    expect(updateModelBody(model, { ...modelFormOf(model), weight: 'lots' })).toEqual({ ok: false, param: 'upstream.weight', problem: 'Enter a whole number.' });
  });
});

describe('token class prices in the model form', () => {
  it('leaves empty class prices out of a create (the input price, reasoning as output) and sends typed ones as µ₹', () => {
    const form = { ...modelFormOf(), slug: 'm', inputPrice: '3', outputPrice: '15', baseUrl: 'https://x.example/v1', upstreamModel: 'u' };
    form.classPrices = { ...form.classPrices, cached_input_price_micros_per_mtok: '0.30', reasoning_price_micros_per_mtok: '20' };
    const built = createModelBody(form);
    expect(built).toMatchObject({ ok: true, body: { cached_input_price_micros_per_mtok: '300000', reasoning_price_micros_per_mtok: '20000000' } });
    expect(built.ok && Object.keys(built.body).filter((key) => key.includes('cache_write'))).toEqual([]);
    form.classPrices = { ...form.classPrices, cache_write_1h_price_micros_per_mtok: 'six' };
    expect(createModelBody(form)).toMatchObject({ ok: false, param: 'cache_write_1h_price_micros_per_mtok' });
  });

  it('shows a model\'s class prices in rupees, sends only the changed ones, and an emptied reasoning price as null (as output)', () => {
    const form = modelFormOf({ ...model, reasoning_price_micros_per_mtok: '900000000' });
    expect(form.classPrices.cached_input_price_micros_per_mtok).toBe('75');
    expect(form.classPrices.reasoning_price_micros_per_mtok).toBe('900');
    expect(updateModelBody({ ...model, reasoning_price_micros_per_mtok: '900000000' }, form)).toEqual({ ok: true, body: {} });
    form.classPrices = { ...form.classPrices, reasoning_price_micros_per_mtok: '', cache_write_1h_price_micros_per_mtok: '300' };
    expect(updateModelBody({ ...model, reasoning_price_micros_per_mtok: '900000000' }, form)).toEqual({
      ok: true, body: { cache_write_1h_price_micros_per_mtok: '300000000', reasoning_price_micros_per_mtok: null },
    });
  });
});
