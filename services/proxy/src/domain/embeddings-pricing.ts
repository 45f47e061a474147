/**
 * How an embeddings call is reserved and billed (NO_OVERSPEND, NOTHING_FREE, BOUNDED_OVERRUN):
 * rules only; inference/embed.ts runs the call and moves the money through its Hold.
 */
import type { GatewayModelEntry } from './config-snapshot.ts';
import type { UsageSource } from './ledger-port.ts';
import { usageCostMicros, type SettleOverrun, type TokenUsage } from './pricing.ts';

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

/** The usage an embeddings answer is billed at, and what the provider is paid for when that differs. */
export interface BilledEmbeddings {
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
