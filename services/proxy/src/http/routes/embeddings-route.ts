import type { Router } from '../router.ts';
import { GatewayError } from '@gateway/errors';
import { countEmbeddingsTokens, parseEmbeddingsRequest, type EmbeddingsEncoding } from '../../domain/embeddings-request.ts';
import { usageCostFields, type UsageCostFields } from '../../domain/pricing.ts';
import { embed, type CompletedEmbeddings } from '../../inference/embed.ts';
import type { InferenceRouteKit } from '../route-kit.ts';

/** OpenAI's embeddings answer, as the gateway builds it: the vectors, the slug, and the billed usage with its cost. */
interface EmbeddingsBody {
  object: 'list';
  data: Array<{ object: 'embedding'; index: number; embedding: number[] | string }>;
  model: string;
  usage: { prompt_tokens: number; total_tokens: number } & UsageCostFields;
}

/** A vector as base64 of its little-endian float32 bytes, as OpenAI sends `encoding_format: "base64"`. */
function base64Vector(vector: readonly number[]): string {
  const bytes = Buffer.allocUnsafe(vector.length * 4);
  for (let index = 0; index < vector.length; index += 1) bytes.writeFloatLE(vector[index]!, index * 4);
  return bytes.toString('base64');
}

/** The response body: built from the gateway's own figures only (nothing of the upstream's answer but the vectors). */
function embeddingsBody(completed: CompletedEmbeddings, modelSlug: string, encoding: EmbeddingsEncoding): EmbeddingsBody {
  return {
    object: 'list',
    data: completed.vectors.map((vector, index) => ({
      object: 'embedding', index, embedding: encoding === 'base64' ? base64Vector(vector) : vector,
    })),
    model: modelSlug,
    usage: { prompt_tokens: completed.usage.promptTokens, total_tokens: completed.usage.promptTokens, ...usageCostFields(completed.costMicros) },
  };
}

/**
 * `POST /v1/embeddings`: OpenAI's embeddings for gateway models of kind `embedding`, through the
 * same key check, RPM pool, Reserve, Settle and concealment as chat (docs/surfaces/embeddings.md).
 * Every limit is checked before the Reserve, so a refused request moves no money. Whatever the
 * upstream was asked for (base64 where its provider documents it, else floats), its vectors
 * arrive here as numbers, and the encoding the client asked for is made here.
 */
export function mountEmbeddingsRoute(router: Router, kit: InferenceRouteKit): void {
  router.add('POST', '/v1/embeddings', kit.inference('/v1/embeddings', async (req, res, context, observer) => {
    const { snapshot, caller } = kit.identify(req, context);
    const json = await kit.readBodyWithinRateLimit(req, res, context, caller);
    const request = parseEmbeddingsRequest(json, { maxInputChars: kit.services.maxMessageChars });
    context.log.model = request.model;
    const model = kit.resolveModel(snapshot, caller, request.model, 'embedding', observer, false);
    const embeddings = kit.adapterOf(model).embeddings;
    if (embeddings === undefined) {
      throw new GatewayError('invalid_request', { param: 'model', publicMessage: `The model '${model.slug}' cannot serve embeddings.` });
    }
    const inputTokens = countEmbeddingsTokens(request.input, model);
    await embed(kit.inferenceDeps, {
      requestId: context.requestId, requestUuid: context.requestUuid, caller, model, log: context.log, observer, embeddings, request, inputTokens,
    }, (completed) => {
      kit.sendJson(res, embeddingsBody(completed, model.slug, request.encodingFormat), observer);
    });
  }));
}
