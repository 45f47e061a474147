import { Hold, type BillingInput } from '../billing/hold.ts';
import { inputItems, type EmbeddingsRequest } from '../domain/embeddings-request.ts';
import { billedEmbeddingsUsage, reserveInputTokens } from '../domain/embeddings-pricing.ts';
import { reserveMicros, type TokenUsage } from '../domain/pricing.ts';
import type { UpstreamDeploymentEntry } from '../domain/config-snapshot.ts';
import { adapterFor } from '../upstreams/upstream-adapters.ts';
import type { NormalizedEmbeddings, UpstreamEmbeddingsAdapter, UpstreamEmbeddingsRequest } from '../upstreams/upstream-adapter.ts';
import { planRoute, type RoutePlan } from './attempts.ts';
import { callUpstream, type CompleteChatDeps } from './complete-chat.ts';

/** One embeddings call to run: who, which model, the validated request and the gateway's count of it. */
export interface EmbedInput extends BillingInput {
  /** The embeddings translation of the model's own provider kind (other kinds' come from their adapters). */
  embeddings: UpstreamEmbeddingsAdapter;
  request: EmbeddingsRequest;
  /** The input tokens in the model's tokenizer (countEmbeddingsTokens): what the Reserve is sized on (reserveInputTokens). */
  inputTokens: number;
}

/** What the gateway decided for an embeddings call before any money moves. */
interface EmbeddingsPlan {
  /** The Reserve, µ₹. */
  amountMicros: bigint;
  /** The gateway's own count of the input tokens (what an answer without usage is billed). */
  inputTokens: number;
  /** The input tokens the Reserve is sized on: the count plus the margin of reserveInputTokens. */
  reserveTokens: number;
  /** The deployments to try and the upstream request of each. */
  route: RoutePlan;
}

/** An embeddings answer as it is delivered and billed, for the route to render. */
export interface CompletedEmbeddings {
  /** One vector per input, in the order of the inputs. */
  vectors: number[][];
  /** The usage the Settle carries (no completion tokens). */
  usage: TokenUsage;
  /** Its cost at the model's prices, µ₹: the Settle's own figure (Hold.price). */
  costMicros: bigint;
}

/**
 * The vectors of an answer in input order, or undefined unless it has exactly one per input, all
 * of one length, and that length is `dimensions` when the client asked for a size (a base64
 * vector decodes to whatever whole floats it holds, so its length is checked here).
 */
function vectorsInInputOrder(answer: NormalizedEmbeddings, inputCount: number, dimensions: number | undefined): number[][] | undefined {
  if (answer.data.length !== inputCount) return undefined;
  const length = dimensions ?? answer.data[0]?.embedding.length;
  const vectors = new Array<number[] | undefined>(inputCount);
  for (const { index, embedding } of answer.data) {
    if (index >= inputCount || vectors[index] !== undefined || embedding.length !== length) return undefined;
    vectors[index] = embedding;
  }
  return vectors as number[][];
}

/** The embeddings translation of a deployment: the request's own when its provider kind is the model's; throws when its kind has none. */
function embeddingsAdapterOf(input: EmbedInput, deployment: UpstreamDeploymentEntry): UpstreamEmbeddingsAdapter {
  if (deployment.upstream.providerKind === input.model.upstream.providerKind) return input.embeddings;
  const embeddings = adapterFor(deployment.upstream.providerKind)?.embeddings;
  if (embeddings === undefined) throw new Error(`provider kind ${deployment.upstream.providerKind} has no embeddings API`);
  return embeddings;
}

/**
 * Runs one embeddings call with its money, as completeChat runs a completion: Reserve =
 * ceil(reserveInputTokens × input price / 1e6), at least 1 µ₹ (NO_OVERSPEND: held before the
 * upstream call, after the adapter's buildRequest, which may refuse the batch); the upstream
 * call; then exactly one of Settle (the request may have reached the upstream; NOTHING_FREE)
 * or Release (it certainly did not), as Hold.fail decides for a failure. A usable answer
 * (one vector per input) is handed to `respond` first and settled right after with the
 * upstream's input tokens, or the gateway's count when it reports none (billedEmbeddingsUsage);
 * the promise resolves once the settle has run.
 */
export async function embed(deps: CompleteChatDeps, input: EmbedInput, respond: (completed: CompletedEmbeddings) => void): Promise<void> {
  const { model } = input;
  const inputCount = inputItems(input.request.input).length;
  const reserveTokens = reserveInputTokens(input.inputTokens, inputCount, model.upstream.model);
  const upstreamRequest: UpstreamEmbeddingsRequest = { input: input.request.input, dimensions: input.request.dimensions, user: input.request.user };
  const plan: EmbeddingsPlan = {
    inputTokens: input.inputTokens,
    reserveTokens,
    // reserveMicros with no output: the input side alone, and never below 1 µ₹.
    amountMicros: reserveMicros(reserveTokens, 0, model),
    // A deployment whose provider has no embeddings API cannot take the request: it is skipped.
    route: planRoute(deps.routing, model, (deployment) => embeddingsAdapterOf(input, deployment).buildRequest(deployment.upstream, upstreamRequest)),
  };
  const hold = await Hold.open(deps, input, plan.amountMicros);
  // One vector per input, in input order, or the answer is not usable (a 502, its money as Hold.fail decides).
  const { answer, vectors } = await callUpstream(deps, input, hold, plan.route, plan.inputTokens, (json, deployment) => {
    const parsed = embeddingsAdapterOf(input, deployment).parseResponse(json);
    const ordered = vectorsInInputOrder(parsed, inputCount, input.request.dimensions);
    if (ordered === undefined) throw new Error('the answer does not hold one vector per input');
    return { answer: parsed, vectors: ordered };
  });

  const billed = billedEmbeddingsUsage(answer.promptTokens, plan, model);
  if (billed.overrun !== undefined) {
    deps.logger.info({
      requestId: input.requestId, upstreamInputTokens: answer.promptTokens, billedInputTokens: billed.usage.promptTokens,
    }, 'embeddings: the upstream counted more input tokens than the Reserve covers; the difference is provider cost');
  }
  // Priced once: the response shows the figure its Settle carries.
  const priced = hold.price(billed.usage, billed.overrun);
  const completed: CompletedEmbeddings = { vectors, usage: billed.usage, costMicros: priced.costMicros };
  // The settle starts before the response is written, so it is in the outbox (a Settle in flight
  // of the organisation) before the client can possibly send its next request.
  const settled = hold.settle(priced, billed.source);
  respond(completed);
  await settled;
}
