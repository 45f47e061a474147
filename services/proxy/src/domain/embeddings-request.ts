import { GatewayError } from '@gateway/errors';
import { z } from 'zod';
import { paramOf } from './chat-request.ts';
import type { GatewayModelEntry } from './config-snapshot.ts';
import { countTextTokens } from './token-estimate.ts';

/** Most inputs one embeddings request may carry: OpenAI's documented limit. */
const maxInputs = 2048;

/** Most tokens all inputs of one request may count together: OpenAI's documented limit. */
const maxTotalTokens = 300_000;

/** The largest token id accepted in a token-array input (a signed 32-bit integer, as every vocabulary fits). */
const maxTokenId = 2_147_483_647;

/**
 * What `input` may be, as OpenAI's embeddings API takes it: one text, a batch of texts, one
 * token-id array, or a batch of token-id arrays. Kept in the client's shape, which is how the
 * upstream receives it.
 */
export type EmbeddingsInput = string | string[] | number[] | number[][];

/** How the client wants each vector: a JSON array of numbers, or base64 of its little-endian float32 bytes. */
export type EmbeddingsEncoding = 'float' | 'base64';

/** A validated embeddings request. */
export interface EmbeddingsRequest {
  /** The Gateway Model slug asked for. */
  model: string;
  input: EmbeddingsInput;
  /** The vector size asked for; undefined: the model's own. */
  dimensions: number | undefined;
  /** Default `float`, as OpenAI's API. */
  encodingFormat: EmbeddingsEncoding;
  /** The client's end-user id, forwarded. */
  user: string | undefined;
}

/** Limits of parseEmbeddingsRequest. */
export interface EmbeddingsRequestLimits {
  /** Most characters one text input may carry (PROXY_MAX_MESSAGE_CHARS, the chat message limit). */
  maxInputChars: number;
}

/**
 * The fields besides `input` (which gets its own checks, so a fault names the very item). Any
 * other field is dropped, never forwarded, as for chat: none changes what the client gets back.
 * `null` counts as absent.
 */
const embeddingsRequestSchema = z.object({
  model: z.string({ error: 'model is required and must be a string' }).min(1, 'model must not be empty').max(256),
  dimensions: z.number({ error: 'must be a positive integer' }).int('must be a positive integer').positive('must be a positive integer').nullish(),
  encoding_format: z.enum(['float', 'base64'], { error: 'must be "float" or "base64"' }).nullish(),
  user: z.string({ error: 'must be a string' }).max(256).nullish(),
});

function invalid(param: string, publicMessage: string): GatewayError {
  return new GatewayError('invalid_request', { param, publicMessage });
}

const inputShapes = 'input must be a string, an array of strings, an array of token ids, or an array of token-id arrays';

/** Refuses a token-id array that is empty or holds anything but token ids; `param` names it. */
function checkTokenArray(tokens: readonly unknown[], param: string): void {
  if (tokens.length === 0) throw invalid(param, `Invalid ${param}: a token-id array must not be empty.`);
  for (let index = 0; index < tokens.length; index += 1) {
    const token = tokens[index];
    if (typeof token !== 'number' || !Number.isInteger(token) || token < 0 || token > maxTokenId) {
      throw invalid(`${param}[${index}]`, `Invalid ${param}[${index}]: a token id must be an integer from 0 to ${maxTokenId}.`);
    }
  }
}

/** Validates `input` (none of its items empty, one kind of item per batch, at most 2048 items). */
function parseInput(value: unknown, limits: EmbeddingsRequestLimits): EmbeddingsInput {
  if (value === undefined || value === null) throw invalid('input', 'input is required.');
  if (typeof value === 'string') {
    if (value.length === 0) throw invalid('input', 'Invalid input: must not be an empty string.');
    if (value.length > limits.maxInputChars) throw invalid('input', `Invalid input: a text may carry at most ${limits.maxInputChars} characters.`);
    return value;
  }
  if (!Array.isArray(value)) throw invalid('input', `Invalid input: ${inputShapes}.`);
  if (value.length === 0) throw invalid('input', 'Invalid input: must not be an empty array.');
  // An array whose first item is a number is one token-id array (one input), not a batch.
  if (typeof value[0] === 'number') {
    checkTokenArray(value, 'input');
    return value as number[];
  }
  if (value.length > maxInputs) throw invalid('input', `Invalid input: at most ${maxInputs} inputs are allowed in one request.`);
  const batchOfTexts = typeof value[0] === 'string';
  for (let index = 0; index < value.length; index += 1) {
    const item: unknown = value[index];
    const param = `input[${index}]`;
    if (batchOfTexts) {
      if (typeof item !== 'string') throw invalid(param, `Invalid ${param}: a batch holds only strings or only token-id arrays.`);
      if (item.length === 0) throw invalid(param, `Invalid ${param}: must not be an empty string.`);
      if (item.length > limits.maxInputChars) throw invalid(param, `Invalid ${param}: a text may carry at most ${limits.maxInputChars} characters.`);
    } else {
      if (!Array.isArray(item)) throw invalid(param, `Invalid ${param}: ${inputShapes}.`);
      checkTokenArray(item, param);
    }
  }
  return value as string[] | number[][];
}

/**
 * Validates a parsed JSON body as an embeddings request. Throws `invalid_request` with OpenAI's
 * `param` naming the first field (or input item) at fault.
 */
export function parseEmbeddingsRequest(body: unknown, limits: EmbeddingsRequestLimits): EmbeddingsRequest {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new GatewayError('invalid_request', { publicMessage: 'The request body must be a JSON object.' });
  }
  const result = embeddingsRequestSchema.safeParse(body);
  if (!result.success) {
    const issue = result.error.issues[0]!;
    const param = paramOf(issue.path);
    throw new GatewayError('invalid_request', {
      publicMessage: param === undefined || issue.message.startsWith(param) ? issue.message : `Invalid ${param}: ${issue.message}`,
      ...(param === undefined ? {} : { param }),
    });
  }
  const request = result.data;
  return {
    model: request.model,
    input: parseInput((body as { input?: unknown }).input, limits),
    dimensions: request.dimensions ?? undefined,
    encodingFormat: request.encoding_format ?? 'float',
    user: request.user ?? undefined,
  };
}

/** The inputs of a request one by one (a single text or token array is a batch of one). */
export function inputItems(input: EmbeddingsInput): Array<string | number[]> {
  if (typeof input === 'string') return [input];
  if (typeof input[0] === 'number') return [input as number[]];
  return input as Array<string | number[]>;
}

/**
 * The input tokens of a request in the model's tokenizer (a token array counts its length), as
 * the Reserve is sized on them. Throws a 400 naming the input when one counts more than the
 * model's `maxContextTokens` (`input[i]`, or `input` for a single one), and when all of them
 * together count more than 300,000 (`input`); counting stops at the first fault.
 */
export function countEmbeddingsTokens(input: EmbeddingsInput, model: Pick<GatewayModelEntry, 'maxContextTokens' | 'tokenizer'>): number {
  const items = inputItems(input);
  const single = items.length === 1 && (typeof input === 'string' || typeof input[0] === 'number');
  let total = 0;
  for (let index = 0; index < items.length; index += 1) {
    const item = items[index]!;
    const tokens = typeof item === 'string' ? countTextTokens(item, model.tokenizer) : item.length;
    if (tokens > model.maxContextTokens) {
      const param = single ? 'input' : `input[${index}]`;
      throw invalid(param, `Invalid ${param}: it is ${tokens} tokens; this model takes at most ${model.maxContextTokens} tokens per input.`);
    }
    total += tokens;
    if (total > maxTotalTokens) {
      throw invalid('input', `Invalid input: the inputs count more than ${maxTotalTokens} tokens in all; send them in smaller batches.`);
    }
  }
  return total;
}
