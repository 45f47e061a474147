import { describe, expect, it } from 'vitest';
import { createDeploymentBody, deploymentFormOf, updateDeploymentBody, type DeploymentJson } from './deployment-form.ts';

const deployment: DeploymentJson = {
  id: 'udep_0123456789abcdef01234567', gateway_model: 'acme-chat', name: 'backup-eu', priority: 1, weight: 3,
  upstream: { provider_kind: 'openai', base_url: 'https://eu.example.com/v1', model: 'gpt-4o-mini', has_api_key: true, allow_private_network: false },
  provider_input_cost_micros_per_mtok: '125000000', provider_output_cost_micros_per_mtok: '500000001',
  created_at: '2026-11-28T00:00:00.000Z',
};

describe('createDeploymentBody', () => {
  it('sends costs as exact µ₹ strings, priority and weight as integers, and leaves out an empty credential', () => {
    const form = { ...deploymentFormOf(undefined, 'openai'), name: ' backup-us ', baseUrl: 'https://us.example.com/v1 ', upstreamModel: 'gpt-4o-mini',
      priority: '2', weight: '10', providerInputCost: '1,25.000001', providerOutputCost: '₹ 500' };
    expect(createDeploymentBody('acme-chat', form)).toEqual({
      ok: true,
      body: {
        gateway_model: 'acme-chat', name: 'backup-us', priority: 2, weight: 10,
        upstream: { provider_kind: 'openai', base_url: 'https://us.example.com/v1', model: 'gpt-4o-mini', allow_private_network: false },
        provider_input_cost_micros_per_mtok: '125000001', provider_output_cost_micros_per_mtok: '500000000',
      },
    });
  });

  it('names the field a person typed wrongly', () => {
    const form = { ...deploymentFormOf(undefined, 'openai'), name: 'x', baseUrl: 'https://x.example/v1', upstreamModel: 'm' };
    expect(createDeploymentBody('acme-chat', { ...form, weight: 'heavy' })).toEqual({ ok: false, param: 'weight', problem: 'Enter a whole number.' });
    expect(createDeploymentBody('acme-chat', { ...form, providerInputCost: '0.0000001' })).toMatchObject({ ok: false, param: 'provider_input_cost_micros_per_mtok' });
  });
});

describe('updateDeploymentBody', () => {
  it('sends only what changed, the credential only when typed or removed', () => {
    const form = deploymentFormOf(deployment, 'openai');
    expect(form.providerOutputCost).toBe('500.000001');
    expect(updateDeploymentBody(deployment, form)).toEqual({ ok: true, body: {} });
    expect(updateDeploymentBody(deployment, { ...form, weight: '5', providerOutputCost: '500.000002' }))
      .toEqual({ ok: true, body: { weight: 5, provider_output_cost_micros_per_mtok: '500000002' } });
    expect(updateDeploymentBody(deployment, { ...form, apiKey: 'sk-new' })).toEqual({ ok: true, body: { upstream: { api_key: 'sk-new' } } });
    expect(updateDeploymentBody(deployment, { ...form, removeApiKey: true })).toEqual({ ok: true, body: { upstream: { api_key: null } } });
  });
});
