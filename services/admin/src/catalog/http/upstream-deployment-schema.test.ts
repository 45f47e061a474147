import { GatewayError } from '@gateway/errors';
import { describe, expect, it } from 'vitest';
import { createUpstreamDeploymentBody, updateUpstreamDeploymentBody } from './catalog-schemas.ts';
import { parseInput } from '../../test-support/parse-input.ts';

/** The refusal of a parse: its public message and the field it names. */
function problemOf(run: () => unknown): { message: string; param: string | null } {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(GatewayError);
    return { message: (error as GatewayError).publicMessage, param: (error as GatewayError).param };
  }
  throw new Error('expected the input to be refused');
}

const valid = {
  gateway_model: 'acme-chat', name: 'azure-eu',
  upstream: { provider_kind: 'azure_openai', base_url: 'https://r.openai.azure.com/openai/deployments/d?api-version=2024-10-21', model: 'gpt', api_key: 'sk-x' },
};
const strict = createUpstreamDeploymentBody({ allowPrivate: false });

describe('the upstream deployment bodies', () => {
  it('parse a create body with the defaults: priority 0, weight 1, costs 0, class costs left for the service, reasoning as output', () => {
    expect(parseInput(strict, valid, 'body')).toEqual({
      ...valid, priority: 0, weight: 1,
      upstream: { ...valid.upstream, allow_private_network: false },
      provider_input_cost_micros_per_mtok: 0n, provider_output_cost_micros_per_mtok: 0n, provider_reasoning_cost_micros_per_mtok: null,
    });
    expect(parseInput(strict, { ...valid, priority: 100, weight: 1000, provider_cached_input_cost_micros_per_mtok: '7' }, 'body'))
      .toMatchObject({ priority: 100, weight: 1000, provider_cached_input_cost_micros_per_mtok: 7n });
  });

  it('refuse a bad name, priority, weight and unknown fields, naming each', () => {
    expect(problemOf(() => parseInput(strict, { ...valid, name: '-lead' }, 'body')).param).toBe('name');
    expect(problemOf(() => parseInput(strict, { ...valid, name: 'a'.repeat(33) }, 'body')).param).toBe('name');
    expect(problemOf(() => parseInput(strict, { ...valid, priority: -1 }, 'body')).message).toBe('Invalid request: priority: must be an integer between 0 and 100.');
    expect(problemOf(() => parseInput(strict, { ...valid, weight: 2.5 }, 'body')).message).toBe('Invalid request: weight: must be an integer between 1 and 1000.');
    expect(problemOf(() => parseInput(strict, { ...valid, slug: 'x' }, 'body')).message).toContain('slug');
  });

  it('judge the base URL by the SSRF rule as a model\'s upstream: with the kind, and private only with the exception', () => {
    expect(problemOf(() => parseInput(strict, { ...valid, upstream: { ...valid.upstream, provider_kind: 'openai' } }, 'body')))
      .toEqual({ message: 'Invalid request: upstream.base_url: must not contain a query or a fragment.', param: 'upstream.base_url' });
    const privateUpstream = { ...valid.upstream, provider_kind: 'vllm', base_url: 'http://10.1.2.3:8000/v1' };
    expect(problemOf(() => parseInput(strict, { ...valid, upstream: privateUpstream }, 'body')).param).toBe('upstream.base_url');
    expect(parseInput(strict, { ...valid, upstream: { ...privateUpstream, allow_private_network: true } }, 'body').upstream.allow_private_network).toBe(true);
    expect(parseInput(createUpstreamDeploymentBody({ allowPrivate: true }), { ...valid, upstream: privateUpstream }, 'body').upstream.base_url)
      .toBe('http://10.1.2.3:8000/v1');
  });

  it('let an update change priority, weight, the upstream target, credential and costs, never the name, model or kind', () => {
    const update = updateUpstreamDeploymentBody({ allowPrivate: false });
    expect(parseInput(update, { weight: 4, upstream: { api_key: null }, provider_reasoning_cost_micros_per_mtok: null }, 'body'))
      .toEqual({ weight: 4, upstream: { api_key: null }, provider_reasoning_cost_micros_per_mtok: null });
    expect(problemOf(() => parseInput(update, {}, 'body')).message).toContain('must change at least one field');
    expect(problemOf(() => parseInput(update, { upstream: {} }, 'body')).param).toBe('upstream');
    for (const fixed of [{ name: 'x' }, { gateway_model: 'x' }, { upstream: { provider_kind: 'openai' } }]) {
      expect(() => parseInput(update, fixed, 'body')).toThrow(GatewayError);
    }
    // The address rule is judged here when the exception is given beside the URL; otherwise the service judges it.
    expect(problemOf(() => parseInput(update, { upstream: { base_url: 'http://10.0.0.1/v1', allow_private_network: false } }, 'body')).param).toBe('upstream.base_url');
    expect(parseInput(update, { upstream: { base_url: 'http://10.0.0.1/v1' } }, 'body').upstream?.base_url).toBe('http://10.0.0.1/v1');
  });
});
