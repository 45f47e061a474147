import { encode } from 'gpt-tokenizer/encoding/cl100k_base';
import { describe, expect, it } from 'vitest';
import { GatewayError } from '@gateway/errors';
import { countEmbeddingsTokens, inputItems, parseEmbeddingsRequest } from './embeddings-request.ts';

const limits = { maxInputChars: 1000 };
const model = { maxContextTokens: 8, tokenizer: 'cl100k_base' as const };

/** The param and message of the 400 a call throws. */
function refusal(call: () => unknown): { param: string | undefined; message: string } {
  try {
    call();
  } catch (error) {
    expect(error).toBeInstanceOf(GatewayError);
    expect((error as GatewayError).code).toBe('invalid_request');
    return { param: (error as GatewayError).param ?? undefined, message: (error as GatewayError).publicMessage };
  }
  throw new Error('expected a 400');
}

describe('parseEmbeddingsRequest', () => {
  it('takes a text, a batch of texts, a token array and a batch of token arrays, keeping their shape', () => {
    for (const input of ['hello', ['a', 'b'], [1, 2, 3], [[1], [2, 3]]]) {
      expect(parseEmbeddingsRequest({ model: 'e', input }, limits).input).toEqual(input);
    }
  });

  it('defaults encoding_format to float, counts null as absent, and drops unknown fields', () => {
    expect(parseEmbeddingsRequest({ model: 'e', input: 'x', dimensions: null, encoding_format: null, user: null, truncate: 'END' }, limits)).toEqual({
      model: 'e', input: 'x', dimensions: undefined, encodingFormat: 'float', user: undefined,
    });
    expect(parseEmbeddingsRequest({ model: 'e', input: 'x', dimensions: 64, encoding_format: 'base64', user: 'u-1' }, limits)).toEqual({
      model: 'e', input: 'x', dimensions: 64, encodingFormat: 'base64', user: 'u-1',
    });
  });

  it.each<[string, unknown, string | undefined]>([
    ['a body that is not an object', ['x'], undefined],
    ['no model', { input: 'x' }, 'model'],
    ['an empty model', { model: '', input: 'x' }, 'model'],
    ['no input', { model: 'e' }, 'input'],
    ['an input of another type', { model: 'e', input: { text: 'x' } }, 'input'],
    ['an empty text', { model: 'e', input: '' }, 'input'],
    ['an empty array', { model: 'e', input: [] }, 'input'],
    ['an empty text in a batch', { model: 'e', input: ['a', ''] }, 'input[1]'],
    ['a text over the character limit', { model: 'e', input: 'x'.repeat(1001) }, 'input'],
    ['a text in a batch over the character limit', { model: 'e', input: ['a', 'x'.repeat(1001)] }, 'input[1]'],
    ['a batch mixing texts and token arrays', { model: 'e', input: ['a', [1]] }, 'input[1]'],
    ['a batch mixing token arrays and texts', { model: 'e', input: [[1], 'a'] }, 'input[1]'],
    ['an empty token array in a batch', { model: 'e', input: [[1], []] }, 'input[1]'],
    ['a token id that is not an integer', { model: 'e', input: [1, 2.5] }, 'input[1]'],
    ['a negative token id in a batch', { model: 'e', input: [[1], [2, -3]] }, 'input[1][1]'],
    ['a token id out of range', { model: 'e', input: [2 ** 31] }, 'input[0]'],
    ['more than 2048 inputs', { model: 'e', input: Array.from({ length: 2049 }, () => 'a') }, 'input'],
    ['dimensions of zero', { model: 'e', input: 'x', dimensions: 0 }, 'dimensions'],
    ['dimensions that are not an integer', { model: 'e', input: 'x', dimensions: 1.5 }, 'dimensions'],
    ['an unknown encoding_format', { model: 'e', input: 'x', encoding_format: 'int8' }, 'encoding_format'],
    ['a user that is not a string', { model: 'e', input: 'x', user: 7 }, 'user'],
  ])('400 for %s, naming the param', (_name, body, param) => {
    expect(refusal(() => parseEmbeddingsRequest(body, limits)).param).toBe(param);
  });

  it('takes 2048 inputs, and one token array longer than 2048 tokens (it is one input)', () => {
    expect(inputItems(parseEmbeddingsRequest({ model: 'e', input: Array.from({ length: 2048 }, () => 'a') }, limits).input)).toHaveLength(2048);
    expect(inputItems(parseEmbeddingsRequest({ model: 'e', input: Array.from({ length: 3000 }, () => 1) }, limits).input)).toHaveLength(1);
  });
});

describe('countEmbeddingsTokens', () => {
  it("counts texts with the model's tokenizer and token arrays by their length", () => {
    const text = 'Embeddings are vectors';
    expect(countEmbeddingsTokens(text, model)).toBe(encode(text).length);
    expect(countEmbeddingsTokens([text, 'hi'], model)).toBe(encode(text).length + encode('hi').length);
    expect(countEmbeddingsTokens([5, 6, 7], model)).toBe(3);
    expect(countEmbeddingsTokens([[5, 6], [7]], model)).toBe(3);
  });

  it("refuses an input over the model's context, naming it", () => {
    expect(refusal(() => countEmbeddingsTokens(Array.from({ length: 9 }, () => 1), model)).param).toBe('input');
    expect(refusal(() => countEmbeddingsTokens('one two three four five six seven eight nine', model)).param).toBe('input');
    const refused = refusal(() => countEmbeddingsTokens(['ok', 'one two three four five six seven eight nine'], model));
    expect(refused.param).toBe('input[1]');
    expect(refused.message).toContain('at most 8 tokens per input');
    expect(countEmbeddingsTokens(Array.from({ length: 8 }, () => 1), model)).toBe(8);
  });

  it('refuses more than 300,000 tokens in all, and takes exactly 300,000', () => {
    const wide = { maxContextTokens: 1_000_000, tokenizer: 'cl100k_base' as const };
    expect(countEmbeddingsTokens([Array.from({ length: 150_000 }, () => 1), Array.from({ length: 150_000 }, () => 2)], wide)).toBe(300_000);
    const refused = refusal(() => countEmbeddingsTokens([Array.from({ length: 150_000 }, () => 1), Array.from({ length: 150_001 }, () => 2)], wide));
    expect(refused.param).toBe('input');
    expect(refused.message).toContain('300000');
  });
});
