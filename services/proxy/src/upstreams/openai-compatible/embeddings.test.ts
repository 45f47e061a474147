import { describe, expect, it } from 'vitest';
import { adapterFor } from '../upstream-adapters.ts';
import { openAiCompatibleAdapter } from './adapter.ts';

const target = { providerKind: 'openai_compatible', baseUrl: 'https://api.example.com/v1', model: 'vendor-embed-3', apiKey: 'sk-vendor' };
const embeddings = openAiCompatibleAdapter.embeddings!;

/** base64 of little-endian float32 values, written out independently of the code under test. */
function base64Of(values: number[]): string {
  const bytes = Buffer.alloc(values.length * 4);
  values.forEach((value, index) => bytes.writeFloatLE(value, index * 4));
  return bytes.toString('base64');
}

describe('OpenAI-compatible embeddings: buildRequest', () => {
  it('sends the upstream model name, the input as given, dimensions and user, and never an encoding_format', () => {
    const built = embeddings.buildRequest(target, { input: ['a', 'b'], dimensions: 256, user: 'end-user-1' });
    expect(built.path).toBe('/embeddings');
    expect(built.headers).toEqual({ 'content-type': 'application/json', accept: 'application/json', authorization: 'Bearer sk-vendor' });
    expect(JSON.parse(built.body)).toEqual({ model: 'vendor-embed-3', input: ['a', 'b'], dimensions: 256, user: 'end-user-1' });
  });

  it('leaves out what the client did not give, and the credential header when the model has none', () => {
    const built = embeddings.buildRequest({ ...target, apiKey: '' }, { input: [[1, 2, 3]], dimensions: undefined, user: undefined });
    expect(JSON.parse(built.body)).toEqual({ model: 'vendor-embed-3', input: [[1, 2, 3]] });
    expect(built.headers.authorization).toBeUndefined();
  });

  it("puts Azure's credential in api-key and adds its api-version unless the base URL has a query", () => {
    const azure = adapterFor('azure_openai')!.embeddings!;
    const deployment = { ...target, providerKind: 'azure_openai', baseUrl: 'https://acme.openai.azure.com/openai/deployments/embed' };
    const built = azure.buildRequest(deployment, { input: 'hi', dimensions: undefined, user: undefined });
    expect(built.path).toBe('/embeddings?api-version=2024-10-21');
    expect(built.headers['api-key']).toBe('sk-vendor');
    expect(built.headers.authorization).toBeUndefined();
    expect(azure.buildRequest({ ...deployment, baseUrl: `${deployment.baseUrl}?api-version=2025-01-01` }, { input: 'hi', dimensions: undefined, user: undefined }).path)
      .toBe('/embeddings');
  });

  it('is offered by every OpenAI-compatible provider kind and by no Anthropic one', () => {
    for (const kind of ['openai_compatible', 'openai', 'azure_openai', 'vllm', 'ollama', 'groq', 'together']) {
      expect(adapterFor(kind)?.embeddings, kind).toBeDefined();
    }
    expect(adapterFor('anthropic')?.embeddings).toBeUndefined();
  });
});

describe('OpenAI-compatible embeddings: parseResponse', () => {
  it('keeps only the index, the vector and usage.prompt_tokens', () => {
    const parsed = embeddings.parseResponse({
      object: 'list', model: 'vendor-embed-3-internal', id: 'vendor-id', vendor_trace: 'secret',
      data: [
        { object: 'embedding', index: 1, embedding: [0.5, -0.25], vendor_norm: 1 },
        { object: 'embedding', index: 0, embedding: [1, 2] },
      ],
      usage: { prompt_tokens: 7, total_tokens: 7, vendor_cached: 3 },
    });
    expect(parsed).toEqual({ data: [{ index: 1, embedding: [0.5, -0.25] }, { index: 0, embedding: [1, 2] }], promptTokens: 7 });
  });

  it('decodes a base64 vector as little-endian float32, and numbers a vector without an index by its position', () => {
    const values = [0.1, -2.5, 3.25];
    const parsed = embeddings.parseResponse({ data: [{ embedding: base64Of(values) }] });
    expect(parsed.data).toEqual([{ index: 0, embedding: values.map((value) => Math.fround(value)) }]);
  });

  it('has no usage when the upstream reports none or a malformed one', () => {
    expect(embeddings.parseResponse({ data: [{ index: 0, embedding: [1] }] }).promptTokens).toBeUndefined();
    expect(embeddings.parseResponse({ data: [{ index: 0, embedding: [1] }], usage: { prompt_tokens: -1 } }).promptTokens).toBeUndefined();
    expect(embeddings.parseResponse({ data: [{ index: 0, embedding: [1] }], usage: { prompt_tokens: 2.5 } }).promptTokens).toBeUndefined();
  });

  it.each([
    ['not an object', 'vendor says no'],
    ['no data', { object: 'list' }],
    ['empty data', { data: [] }],
    ['an empty vector', { data: [{ index: 0, embedding: [] }] }],
    ['a vector of strings', { data: [{ index: 0, embedding: ['0.1'] }] }],
    ['a negative index', { data: [{ index: -1, embedding: [1] }] }],
    ['text that is not base64', { data: [{ index: 0, embedding: 'not base64!' }] }],
    ['base64 that is not whole floats', { data: [{ index: 0, embedding: Buffer.from([1, 2, 3, 4, 5, 6]).toString('base64') }] }],
  ])('throws on a malformed answer: %s', (_name, answer) => {
    expect(() => embeddings.parseResponse(answer)).toThrow();
  });
});
