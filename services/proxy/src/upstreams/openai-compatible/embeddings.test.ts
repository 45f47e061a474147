import { describe, expect, it } from 'vitest';
import { GatewayError } from '@gateway/errors';
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
  it('sends the upstream model name, the input as given, dimensions and user, and no encoding_format to a server of unknown kind', () => {
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

  it('asks for base64 exactly the provider kinds that document it (OpenAI, Azure OpenAI, vLLM)', () => {
    const asked = ['openai_compatible', 'openai', 'azure_openai', 'vllm', 'ollama', 'groq', 'together'].filter((kind) => {
      const built = adapterFor(kind)!.embeddings!.buildRequest({ ...target, providerKind: kind }, { input: 'hi', dimensions: undefined, user: undefined });
      return (JSON.parse(built.body) as { encoding_format?: string }).encoding_format === 'base64';
    });
    expect(asked).toEqual(['openai', 'azure_openai', 'vllm']);
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

/** The 400 a buildRequest threw, or undefined when it built the request. */
function refusalOf(build: () => unknown): GatewayError | undefined {
  try {
    build();
    return undefined;
  } catch (error) {
    return error as GatewayError;
  }
}

describe('OpenAI-compatible embeddings: a batch whose answer cannot fit the read limit', () => {
  const openai = adapterFor('openai')!.embeddings!;
  const texts = (count: number) => Array.from({ length: count }, () => 'x');
  /** The most inputs buildRequest lets through at `dimensions`, as its refusal of a far larger batch names it (base64: an OpenAI target; floats: a server of unknown kind). */
  const maxInputsWithin = (dimensions: number, encoding: 'base64' | 'float'): number => {
    const build = () => (encoding === 'base64'
      ? openai.buildRequest({ ...target, providerKind: 'openai' }, { input: texts(100_000), dimensions, user: undefined })
      : embeddings.buildRequest(target, { input: texts(100_000), dimensions, user: undefined }));
    return Number(/at most (\d+) inputs/.exec(refusalOf(build)!.publicMessage)![1]);
  };

  it('sizes the most inputs per vector size: (16 MiB − 16 KiB) / (vector + 256 B), base64 4/3 of 4 B per component, floats 25 B', () => {
    // Written out: 16,777,216 − 16,384 = 16,760,832 bytes for the vectors.
    expect(maxInputsWithin(3072, 'base64')).toBe(Math.floor(16_760_832 / (16_384 + 256))); // 1007
    expect(maxInputsWithin(1536, 'base64')).toBe(Math.floor(16_760_832 / (8_192 + 256))); // 1984
    expect(maxInputsWithin(1024, 'base64')).toBe(Math.floor(16_760_832 / (5_464 + 256))); // 2930: ceil(4096 / 3) × 4 = 5464
    expect(maxInputsWithin(1536, 'float')).toBe(Math.floor(16_760_832 / (38_400 + 256))); // 433
  });

  it("refuses past the most for the dimensions asked, naming input and the most, and builds the request at the most", () => {
    const refusal = refusalOf(() => openai.buildRequest({ ...target, providerKind: 'openai' }, { input: texts(1008), dimensions: 3072, user: undefined }));
    expect(refusal).toBeInstanceOf(GatewayError);
    expect(refusal).toMatchObject({ code: 'invalid_request', param: 'input' });
    expect(refusal!.publicMessage).toContain('at most 1007 inputs');
    expect(refusal!.publicMessage).toContain('dimensions 3072');
    expect(refusalOf(() => openai.buildRequest({ ...target, providerKind: 'openai' }, { input: texts(1007), dimensions: 3072, user: undefined }))).toBeUndefined();
  });

  it("sizes an OpenAI model's batch by its default vector size when no dimensions is given, and leaves an unknown model's alone", () => {
    const large = { ...target, providerKind: 'openai', model: 'text-embedding-3-large' };
    expect(refusalOf(() => openai.buildRequest(large, { input: texts(1008), dimensions: undefined, user: undefined }))!.publicMessage)
      .toContain("this model's 3072 dimensions");
    expect(refusalOf(() => openai.buildRequest({ ...large, model: 'text-embedding-3-small' }, { input: texts(1985), dimensions: undefined, user: undefined }))).toBeDefined();
    expect(refusalOf(() => openai.buildRequest({ ...large, model: 'text-embedding-3-small' }, { input: texts(1984), dimensions: undefined, user: undefined }))).toBeUndefined();
    expect(refusalOf(() => openai.buildRequest({ ...target, providerKind: 'openai' }, { input: texts(2048), dimensions: undefined, user: undefined }))).toBeUndefined();
  });

  it('sizes a float provider by 25 bytes a component: fewer inputs fit', () => {
    expect(refusalOf(() => embeddings.buildRequest(target, { input: texts(434), dimensions: 1536, user: undefined }))).toMatchObject({ param: 'input' });
    expect(refusalOf(() => embeddings.buildRequest(target, { input: texts(433), dimensions: 1536, user: undefined }))).toBeUndefined();
  });
});
