import { GatewayError } from '@gateway/errors';
import { z } from 'zod';
import type { UpstreamTarget } from '../../domain/config-snapshot.ts';
import { inputItems } from '../../domain/embeddings-request.ts';
import type {
  NormalizedEmbedding, NormalizedEmbeddings, UpstreamEmbeddingsAdapter, UpstreamEmbeddingsRequest, UpstreamRequest,
} from '../upstream-adapter.ts';
import { upstreamResponseMaxBytes } from '../upstream-transport.ts';

/** Base64 as OpenAI sends a vector: the standard alphabet, padded. */
const base64Pattern = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

// Only the fields below survive parsing (zod drops unknown keys): the allowlist of what an
// upstream's embeddings answer may contribute to the client's. Its `model`, `id`, `object` and
// any vendor field go nowhere.
const answerSchema = z.object({
  data: z.array(z.object({
    index: z.number().int().nonnegative().optional(),
    embedding: z.union([z.array(z.number()).min(1), z.string().min(1).regex(base64Pattern)]),
  })).min(1),
});

const usageSchema = z.object({ prompt_tokens: z.number().int().nonnegative() });

/** The float32 values of a base64 vector (little-endian, as OpenAI encodes it); throws when its bytes are not whole floats. */
function decodeBase64Vector(text: string): number[] {
  const bytes = Buffer.from(text, 'base64');
  if (bytes.length === 0 || bytes.length % 4 !== 0) throw new Error('a base64 embedding is not a whole number of float32 values');
  const vector = new Array<number>(bytes.length / 4);
  for (let index = 0; index < vector.length; index += 1) vector[index] = bytes.readFloatLE(index * 4);
  return vector;
}

/** What the embeddings call needs of an OpenAI-compatible provider's configuration (adapter.ts, OpenAiCompatibleProvider). */
interface EmbeddingsProvider {
  /** The `provider_kind` of its gateway models: decides whether the upstream is asked for base64. */
  providerKind: string;
  /** How the credential travels: `Authorization: Bearer` (most) or Azure's `api-key` header. */
  credentialHeader: 'bearer' | 'api-key';
  /** Query string the provider requires on every call when the base URL has none (Azure's api-version). */
  defaultQuery?: string | undefined;
}

/**
 * Provider kinds whose embeddings API documents `encoding_format: "base64"` (little-endian
 * float32, as OpenAI sends it): OpenAI's and Azure OpenAI's API references, and vLLM's server
 * (serving_embedding.py encodes float32 bytes as base64). The others (any compatible server,
 * Ollama, Groq, Together) are asked for floats, their default: some compatible servers refuse
 * or ignore base64 (docs/surfaces/embeddings.md).
 */
const base64ProviderKinds: ReadonlySet<string> = new Set(['openai', 'azure_openai', 'vllm']);

/**
 * Vector sizes of OpenAI's embedding models when no `dimensions` is sent (OpenAI's embeddings
 * guide), so a batch for them can be sized before the call; any other model's size is unknown.
 */
const defaultDimensionsOfModel: ReadonlyArray<[RegExp, number]> = [
  [/^text-embedding-3-large(?:$|[-_.:@])/i, 3072],
  [/^text-embedding-3-small(?:$|[-_.:@])/i, 1536],
  [/^text-embedding-ada-002(?:$|[-_.:@])/i, 1536],
];

/** Bytes of an answer besides its vectors (object, model, usage, vendor fields), bytes: a generous bound. */
const answerEnvelopeBytes = 16 * 1024;
/** Bytes of one `data` item besides its vector (object, index, keys, indentation of a pretty-printed answer): a generous bound. */
const itemEnvelopeBytes = 256;
/**
 * Bytes of one component in a compact JSON float answer, at most: Python servers print a float32
 * as the float64 that round-trips it, up to 23 characters (`-1.2345678901234567e-05`), plus `, `.
 */
const floatComponentMaxBytes = 25;

/** The vector size an answer will have: the `dimensions` asked for, else the model's known default, else unknown. */
function answerDimensions(upstreamModel: string, dimensions: number | undefined): number | undefined {
  if (dimensions !== undefined) return dimensions;
  const name = upstreamModel.includes('/') ? upstreamModel.slice(upstreamModel.lastIndexOf('/') + 1) : upstreamModel;
  return defaultDimensionsOfModel.find(([pattern]) => pattern.test(name))?.[1];
}

/** Bytes one vector of `dimensions` components takes in an answer, item included, at most. */
function vectorAnswerBytes(dimensions: number, encoding: 'base64' | 'float'): number {
  const vectorBytes = encoding === 'base64' ? 4 * Math.ceil((dimensions * 4) / 3) : dimensions * floatComponentMaxBytes;
  return vectorBytes + itemEnvelopeBytes;
}

/**
 * The most inputs one request may carry so that the upstream's answer of `dimensions`-sized
 * vectors, in the encoding asked of it, fits the transport's read limit (upstreamResponseMaxBytes).
 */
function maxInputsWithin(dimensions: number, encoding: 'base64' | 'float', maxResponseBytes = upstreamResponseMaxBytes): number {
  return Math.max(0, Math.floor((maxResponseBytes - answerEnvelopeBytes) / vectorAnswerBytes(dimensions, encoding)));
}

/**
 * The embeddings translation of an OpenAI-compatible provider: `POST {base}/embeddings` with the
 * upstream's model name, the client's input as given, and `dimensions` and `user` when present;
 * the credential in the provider's header, and its required query (Azure's api-version) as the
 * chat path sends them. `encoding_format: "base64"` is sent to the providers that document it
 * (base64ProviderKinds): a quarter to a fifth of the bytes of JSON floats, so a batch's answer
 * fits the transport's read limit; the others answer their default, floats. Either is decoded to
 * numbers, and the route encodes what the client asked for.
 *
 * buildRequest runs before the Reserve and refuses (400 naming `input`) a batch whose answer
 * cannot fit the read limit when its vector size is known (`dimensions`, or an OpenAI model's
 * default): past the limit the answer is cut after the provider did all the work, a 502 the
 * wallet is not charged for and the operator pays.
 */
export function createOpenAiCompatibleEmbeddings(provider: EmbeddingsProvider): UpstreamEmbeddingsAdapter {
  const encoding = base64ProviderKinds.has(provider.providerKind) ? 'base64' : 'float';
  return {
    buildRequest(target: UpstreamTarget, request: UpstreamEmbeddingsRequest): UpstreamRequest {
      const dimensions = answerDimensions(target.model, request.dimensions);
      const inputCount = inputItems(request.input).length;
      if (dimensions !== undefined && inputCount > maxInputsWithin(dimensions, encoding)) {
        const most = maxInputsWithin(dimensions, encoding);
        const sized = request.dimensions === undefined ? `this model's ${dimensions} dimensions` : `dimensions ${dimensions}`;
        throw new GatewayError('invalid_request', {
          param: 'input',
          publicMessage: `Invalid input: at most ${most} inputs are allowed in one request at ${sized} (the answer would be too large); send them in smaller batches.`,
        });
      }
      const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json' };
      if (target.apiKey !== '') {
        if (provider.credentialHeader === 'api-key') headers['api-key'] = target.apiKey;
        else headers.authorization = `Bearer ${target.apiKey}`;
      }
      const body: Record<string, unknown> = { model: target.model, input: request.input };
      if (request.dimensions !== undefined) body.dimensions = request.dimensions;
      if (request.user !== undefined) body.user = request.user;
      if (encoding === 'base64') body.encoding_format = 'base64';
      const query = provider.defaultQuery !== undefined && !target.baseUrl.includes('?') ? `?${provider.defaultQuery}` : '';
      return { path: `/embeddings${query}`, headers, body: JSON.stringify(body) };
    },

    parseResponse(json: unknown): NormalizedEmbeddings {
      const answer = answerSchema.parse(json);
      const data = answer.data.map((item, position): NormalizedEmbedding => ({
        index: item.index ?? position,
        embedding: typeof item.embedding === 'string' ? decodeBase64Vector(item.embedding) : item.embedding,
      }));
      const usage = usageSchema.safeParse((json as { usage?: unknown }).usage);
      return { data, promptTokens: usage.success ? usage.data.prompt_tokens : undefined };
    },
  };
}
