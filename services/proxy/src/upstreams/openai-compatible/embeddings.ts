import { z } from 'zod';
import type { UpstreamTarget } from '../../domain/config-snapshot.ts';
import type {
  NormalizedEmbedding, NormalizedEmbeddings, UpstreamEmbeddingsAdapter, UpstreamEmbeddingsRequest, UpstreamRequest,
} from '../upstream-adapter.ts';

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
  /** How the credential travels: `Authorization: Bearer` (most) or Azure's `api-key` header. */
  credentialHeader: 'bearer' | 'api-key';
  /** Query string the provider requires on every call when the base URL has none (Azure's api-version). */
  defaultQuery?: string | undefined;
}

/**
 * The embeddings translation of an OpenAI-compatible provider: `POST {base}/embeddings` with the
 * upstream's model name, the client's input as given, and `dimensions` and `user` when present;
 * the credential in the provider's header, and its required query (Azure's api-version) as the
 * chat path sends them. `encoding_format` is never sent, so every upstream answers its default,
 * floats: some OpenAI-compatible servers refuse base64 and others ignore it, while all of them
 * speak floats, and the gateway encodes base64 itself for the clients that ask
 * (docs/surfaces/embeddings.md). An answer in base64 anyway is decoded all the same.
 */
export function createOpenAiCompatibleEmbeddings(provider: EmbeddingsProvider): UpstreamEmbeddingsAdapter {
  return {
    buildRequest(target: UpstreamTarget, request: UpstreamEmbeddingsRequest): UpstreamRequest {
      const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json' };
      if (target.apiKey !== '') {
        if (provider.credentialHeader === 'api-key') headers['api-key'] = target.apiKey;
        else headers.authorization = `Bearer ${target.apiKey}`;
      }
      const body: Record<string, unknown> = { model: target.model, input: request.input };
      if (request.dimensions !== undefined) body.dimensions = request.dimensions;
      if (request.user !== undefined) body.user = request.user;
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
