import type { GatewayModelEntry } from '../domain/config-snapshot.ts';
import { inputItems, type EmbeddingsRequest } from '../domain/embeddings-request.ts';
import type { UsageSource } from '../domain/ledger-port.ts';
import { reserveMicros, usageCostMicros, type TokenUsage } from '../domain/pricing.ts';
import type { NormalizedEmbeddings, UpstreamEmbeddingsAdapter, UpstreamRequest } from '../upstreams/upstream-adapter.ts';
import { Hold, type BillingInput, type SettleOverrun } from '../billing/hold.ts';
import { callUpstream, type CompleteChatDeps } from './complete-chat.ts';

/** One embeddings call to run: who, which model, the validated request and the gateway's count of it. */
export interface EmbedInput extends BillingInput {
  /** The model's provider's embeddings translation. */
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
  upstreamRequest: UpstreamRequest;
}

/**
 * Upstream model names whose tokens the gateway counts exactly (OpenAI's embedding models:
 * cl100k_base, nothing added per input), after any `vendor/` prefix. Every other model gets the
 * margin of reserveInputTokens.
 */
const exactlyCountedModelPattern = /^text-embedding-(?:3-small|3-large|ada-002)(?:$|[-_.:@])/i;

/**
 * Tokens an encoder model's tokenizer adds to every input, which its server bills: BERT's
 * [CLS] and [SEP] (bge, e5, nomic, MiniLM), XLM-RoBERTa's <s> and </s> (bge-m3, multilingual-e5);
 * vLLM's usage is len(prompt_token_ids), special tokens included (serving_embedding.py).
 * Decoder-based embedders add one (an EOS), covered by this.
 */
const addedTokensPerInput = 2;

/**
 * The margin on the text's own tokens for a model outside OpenAI's families, as a ratio
 * (5/4): BERT-style WordPiece vocabularies hold ~30,000 pieces against cl100k_base's ~100,000,
 * and WordPiece splits every punctuation mark and unknown word into more pieces than cl100k's
 * merges do, so the same text counts more of their tokens. A judgement from the vocabularies,
 * not a measurement; an upstream count past it is still held to the Reserve (billedEmbeddingsUsage).
 */
const marginNumerator = 5;
const marginDenominator = 4;

/**
 * The input tokens an embeddings Reserve is sized on: the gateway's count for OpenAI's models
 * (exact), else ceil(count × 5/4) + 2 per input, so that an encoder model's own count (more
 * pieces, special tokens per input) fits the Reserve and the Settle can bill it (NOTHING_FREE
 * without the operator absorbing the difference).
 */
export function reserveInputTokens(countedTokens: number, inputCount: number, upstreamModel: string): number {
  const name = upstreamModel.includes('/') ? upstreamModel.slice(upstreamModel.lastIndexOf('/') + 1) : upstreamModel;
  if (exactlyCountedModelPattern.test(name)) return countedTokens;
  return Math.ceil((countedTokens * marginNumerator) / marginDenominator) + addedTokensPerInput * inputCount;
}

/** An embeddings answer as it is delivered and billed, for the route to render. */
export interface CompletedEmbeddings {
  /** One vector per input, in the order of the inputs. */
  vectors: number[][];
  /** The usage the Settle carries (no completion tokens). */
  usage: TokenUsage;
  /** Its cost at the model's prices, µ₹: the Settle's own figure (usageCostMicros). */
  costMicros: bigint;
}

/** The usage an embeddings answer is billed at, and what the provider is paid for when that differs. */
interface BilledEmbeddings {
  usage: TokenUsage;
  source: UsageSource;
  overrun: SettleOverrun | undefined;
}

/**
 * The usage to settle for an embeddings answer, held to its Reserve (BOUNDED_OVERRUN): the
 * upstream's input tokens when it reports them and their cost fits the Reserve; the gateway's
 * own count when it reports none (GATEWAY_ESTIMATE; NOTHING_FREE). An answer cannot be cut like
 * a reply (every vector is whole, and a batch missing vectors is no answer), so when the upstream
 * counts more than even the Reserve's margin covers, the client still gets every vector and pays
 * the tokens the Reserve was sized on (GATEWAY_ESTIMATE), which always fit; the provider cost is
 * priced on what the upstream reported, so the difference shows as provider cost, never the wallet's.
 */
export function billedEmbeddingsUsage(
  upstreamTokens: number | undefined, plan: { inputTokens: number; reserveTokens: number; amountMicros: bigint }, model: GatewayModelEntry,
): BilledEmbeddings {
  if (upstreamTokens === undefined) return { usage: { promptTokens: plan.inputTokens, completionTokens: 0 }, source: 'gateway_estimate', overrun: undefined };
  const reported: TokenUsage = { promptTokens: upstreamTokens, completionTokens: 0 };
  if (usageCostMicros(reported, model).costMicros <= plan.amountMicros) return { usage: reported, source: 'upstream', overrun: undefined };
  return {
    usage: { promptTokens: plan.reserveTokens, completionTokens: 0 }, source: 'gateway_estimate',
    overrun: { producedUsage: reported, overrunOutputTokens: 0 },
  };
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
  const plan: EmbeddingsPlan = {
    inputTokens: input.inputTokens,
    reserveTokens,
    // reserveMicros with no output: the input side alone, and never below 1 µ₹.
    amountMicros: reserveMicros(reserveTokens, 0, model),
    upstreamRequest: input.embeddings.buildRequest(model.upstream, {
      input: input.request.input, dimensions: input.request.dimensions, user: input.request.user,
    }),
  };
  const hold = await Hold.open(deps, input, plan.amountMicros);
  // One vector per input, in input order, or the answer is not usable (a 502, its money as Hold.fail decides).
  const { answer, vectors } = await callUpstream(deps, input, hold, plan.upstreamRequest, (json) => {
    const parsed = input.embeddings.parseResponse(json);
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
  const completed: CompletedEmbeddings = { vectors, usage: billed.usage, costMicros: usageCostMicros(billed.usage, model).costMicros };
  // The settle starts before the response is written, so it is in the outbox (a Settle in flight
  // of the organisation) before the client can possibly send its next request.
  const settled = hold.settle(billed.usage, billed.source, billed.overrun);
  respond(completed);
  await settled;
}
