import { describe, expect, it } from 'vitest';
import { GatewayError } from '@gateway/errors';
import { createCreditBody } from '../../billing/http/balance-schemas.ts';
import { createGatewayModelBody, updateGatewayModelBody } from '../../catalog/http/catalog-schemas.ts';
import { createOrganisationBody, updateOrganisationBody } from '../../tenancy/http/tenancy-schemas.ts';
import { parseInput } from '../../test-support/parse-input.ts';

function problemOf(run: () => unknown): { message: string; param: string | null } {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(GatewayError);
    return { message: (error as GatewayError).publicMessage, param: (error as GatewayError).param };
  }
  throw new Error('expected the input to be refused');
}

const validModel = {
  slug: 'acme-chat', default_max_tokens: 64, max_context_tokens: 4096,
  input_price_micros_per_mtok: '2000000', output_price_micros_per_mtok: 5_000_000,
  upstream: { provider_kind: 'openai_compatible', base_url: 'https://api.example.com/v1', model: 'm', api_key: 'sk-x' },
};

describe('money in request bodies', () => {
  it('accepts a decimal string or a safe JSON integer, exactly, as bigint', () => {
    expect(parseInput(createCreditBody, { amount_micros: '999999999999999', reason: 'r' }, 'body').amount_micros).toBe(999_999_999_999_999n);
    expect(parseInput(createCreditBody, { amount_micros: '1000000000000000', reason: 'r' }, 'body').amount_micros).toBe(1_000_000_000_000_000n);
    expect(parseInput(createCreditBody, { amount_micros: 1_500_000, reason: 'r' }, 'body').amount_micros).toBe(1_500_000n);
  });

  it.each([
    [0, /at least 1/],
    ['0', /at least 1/],
    [-5, /at least 1/],
    ['-5', /decimal string/],
    ['1.5', /decimal string/],
    [1.5, /decimal string/],
    [2 ** 60, /safe integer/],
    ['1e6', /decimal string/],
    [true, /decimal string/],
    ['1000000000000001', /at most 1000000000000000/],
    ['123456789012345678901234567890', /at most 1000000000000000/],
  ])('refuses amount_micros %j', (amount, reason) => {
    const problem = problemOf(() => parseInput(createCreditBody, { amount_micros: amount, reason: 'r' }, 'body'));
    expect(problem.param).toBe('amount_micros');
    expect(problem.message).toMatch(reason);
  });
});

describe('request validation messages', () => {
  it('names every bad field, with param the first', () => {
    const problem = problemOf(() => parseInput(createOrganisationBody, { name: '', rpm_limit: 0, billing_mode: 'free', extra: 1 }, 'body'));
    expect(problem.param).toBe('name');
    expect(problem.message).toContain('name: must not be empty');
    expect(problem.message).toContain('rpm_limit: must be an integer between 1 and 1000000');
    expect(problem.message).toContain('billing_mode: must be "commercial" or "internal"');
    expect(problem.message).toContain('extra: is not a known field');
  });

  it('says which required fields are missing and that a body must be an object', () => {
    expect(problemOf(() => parseInput(createCreditBody, {}, 'body')).message).toBe('Invalid request: amount_micros: is required; reason: is required.');
    expect(problemOf(() => parseInput(createCreditBody, undefined, 'body')).message).toBe('Invalid request: body: must be a JSON object.');
    expect(problemOf(() => parseInput(createCreditBody, [1], 'body')).message).toBe('Invalid request: body: must be a JSON object.');
  });

  it('refuses an empty PATCH', () => {
    expect(problemOf(() => parseInput(updateOrganisationBody, {}, 'body')).message).toMatch(/at least one of name, status/);
  });

  it('applies the SSRF rule and the context rule to gateway models, naming nested fields', () => {
    const strict = createGatewayModelBody({ allowPrivate: false });
    expect(parseInput(strict, validModel, 'body').input_price_micros_per_mtok).toBe(2_000_000n);
    const problem = problemOf(() => parseInput(strict, {
      ...validModel, slug: 'Bad Slug', max_context_tokens: 10,
      upstream: { ...validModel.upstream, base_url: 'http://10.0.0.1/v1', provider_kind: 'carrier_pigeon' },
    }, 'body'));
    expect(problem.param).toBe('slug');
    expect(problem.message).toContain('upstream.base_url: must use https');
    expect(problem.message).toContain('upstream.provider_kind: must be one of "openai_compatible", "openai", "azure_openai", "vllm", "ollama", "groq", "together", "anthropic"');
    expect(parseInput(strict, { ...validModel, upstream: { ...validModel.upstream, provider_kind: 'anthropic', base_url: 'https://api.anthropic.com/v1' } }, 'body').upstream.provider_kind)
      .toBe('anthropic');
    // Only azure_openai may pin ?api-version=…; the rule is judged with the kind.
    const azure = { ...validModel.upstream, provider_kind: 'azure_openai', base_url: 'https://r.openai.azure.com/openai/deployments/d?api-version=2024-10-21' };
    expect(parseInput(strict, { ...validModel, upstream: azure }, 'body').upstream.base_url).toBe(azure.base_url);
    expect(problemOf(() => parseInput(strict, { ...validModel, upstream: { ...azure, provider_kind: 'openai' } }, 'body')))
      .toEqual({ message: 'Invalid request: upstream.base_url: must not contain a query or a fragment.', param: 'upstream.base_url' });
    expect(problemOf(() => parseInput(strict, { ...validModel, max_context_tokens: 10 }, 'body')).message)
      .toBe('Invalid request: max_context_tokens: must be at least default_max_tokens.');
    const lenient = createGatewayModelBody({ allowPrivate: true });
    expect(parseInput(lenient, { ...validModel, upstream: { ...validModel.upstream, base_url: 'http://10.0.0.1/v1' } }, 'body').upstream.base_url)
      .toBe('http://10.0.0.1/v1');
  });

  it('judges a base URL with private addresses allowed only for a model with upstream.allow_private_network, defaulting it to false', () => {
    const strict = createGatewayModelBody({ allowPrivate: false });
    const privateUpstream = { ...validModel.upstream, base_url: 'http://10.1.2.3:8000/v1' };
    expect(parseInput(strict, validModel, 'body').upstream.allow_private_network).toBe(false);
    expect(problemOf(() => parseInput(strict, { ...validModel, upstream: privateUpstream }, 'body')))
      .toEqual({ message: expect.stringMatching(/^Invalid request: upstream\.base_url: must use https \(http is allowed only for a model with upstream\.allow_private_network true/), param: 'upstream.base_url' });
    expect(problemOf(() => parseInput(strict, { ...validModel, upstream: { ...privateUpstream, allow_private_network: false } }, 'body')).param)
      .toBe('upstream.base_url');
    const accepted = parseInput(strict, { ...validModel, upstream: { ...privateUpstream, allow_private_network: true } }, 'body');
    expect(accepted.upstream).toMatchObject({ base_url: 'http://10.1.2.3:8000/v1', allow_private_network: true });
    // The flag allows addresses, not a malformed URL; a bad flag is named once, without a second complaint about the URL.
    expect(problemOf(() => parseInput(strict, { ...validModel, upstream: { ...privateUpstream, base_url: 'http://u:p@10.1.2.3/v1', allow_private_network: true } }, 'body')).message)
      .toBe('Invalid request: upstream.base_url: must not contain credentials; give the credential as upstream.api_key.');
    expect(problemOf(() => parseInput(strict, { ...validModel, upstream: { ...privateUpstream, allow_private_network: 'yes' } }, 'body')))
      .toEqual({ message: 'Invalid request: upstream.allow_private_network: must be true or false.', param: 'upstream.allow_private_network' });
    // A PATCH body judges the form only, unless it gives the flag: the service applies the address rule with the stored flag.
    const update = updateGatewayModelBody({ allowPrivate: false });
    expect(parseInput(update, { upstream: { base_url: 'http://10.1.2.3:8000/v1' } }, 'body').upstream?.base_url).toBe('http://10.1.2.3:8000/v1');
    expect(parseInput(update, { upstream: { allow_private_network: false } }, 'body').upstream?.allow_private_network).toBe(false);
    expect(problemOf(() => parseInput(update, { upstream: { base_url: 'https://api.example.com/v1#x' } }, 'body')).param).toBe('upstream.base_url');
    expect(problemOf(() => parseInput(update, { upstream: { allow_private_network: 1 } }, 'body')).param).toBe('upstream.allow_private_network');
    expect(problemOf(() => parseInput(update, { upstream: { base_url: 'http://10.1.2.3:8000/v1', allow_private_network: false } }, 'body')).param)
      .toBe('upstream.base_url');
    expect(parseInput(update, { upstream: { base_url: 'http://10.1.2.3:8000/v1', allow_private_network: true } }, 'body').upstream?.base_url)
      .toBe('http://10.1.2.3:8000/v1');
  });

  it('never echoes a refused credential', () => {
    const credential = 'sk secret with spaces';
    const problem = problemOf(() => parseInput(createGatewayModelBody({ allowPrivate: false }), {
      ...validModel, upstream: { ...validModel.upstream, api_key: credential },
    }, 'body'));
    expect(problem.message).toBe('Invalid request: upstream.api_key: must not contain whitespace.');
  });
});
