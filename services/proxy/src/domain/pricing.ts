import { GatewayError } from '@gateway/errors';
import type { GatewayModelEntry } from './config-snapshot.ts';

const tokensPerMillion = 1_000_000n;

/** Cost of some tokens at a price in µ₹ per million tokens, rounded up to the whole µ₹. */
export function costMicros(tokens: number | bigint, priceMicrosPerMtok: bigint): bigint {
  const numerator = BigInt(tokens) * priceMicrosPerMtok;
  // ceil for non-negative values; prices and token counts are never negative here.
  return (numerator + tokensPerMillion - 1n) / tokensPerMillion;
}

/**
 * The completion budget of a request: what the caller asked for (or the model's default),
 * clamped to what the context window leaves after the prompt. A prompt that fills the window
 * by itself is refused before anything is reserved.
 */
export function effectiveMaxTokens(requestedMaxTokens: number | undefined, model: GatewayModelEntry, promptTokens: number): number {
  const room = model.maxContextTokens - promptTokens;
  if (room <= 0) {
    throw new GatewayError('invalid_request', {
      param: 'messages',
      publicMessage: `The messages are about ${promptTokens} tokens, which leaves no room for a reply in this model's context of ${model.maxContextTokens} tokens.`,
    });
  }
  return Math.min(requestedMaxTokens ?? model.defaultMaxTokens, room);
}

/**
 * The Reserve of a request, µ₹: ceil(promptTokens × inputPrice / 1e6) + ceil(maxTokens ×
 * outputPrice / 1e6), and at least 1 µ₹ (the ledger holds only positive amounts, and a
 * free-priced model still goes through the same reserve/settle path).
 */
export function reserveMicros(promptTokens: number, maxTokens: number, model: GatewayModelEntry): bigint {
  const amount = costMicros(promptTokens, model.inputPriceMicrosPerMtok) + costMicros(maxTokens, model.outputPriceMicrosPerMtok);
  return amount > 0n ? amount : 1n;
}

/**
 * The most output tokens a Reserve covers after a prompt, never more than maxTokens: the largest
 * n with ceil(promptTokens × inputPrice / 1e6) + ceil(n × outputPrice / 1e6) ≤ reserveMicros
 * (0 when the prompt alone does not fit). Where a non-streaming reply is cut (BOUNDED_OVERRUN).
 */
export function outputTokensWithin(reserveMicros: bigint, promptTokens: number, maxTokens: number, model: GatewayModelEntry): number {
  const budgetMicros = reserveMicros - costMicros(promptTokens, model.inputPriceMicrosPerMtok);
  if (budgetMicros < 0n) return 0;
  if (model.outputPriceMicrosPerMtok === 0n) return maxTokens;
  // ceil(n × p / 1e6) ≤ b  ⇔  n × p ≤ b × 1e6 (integers), so n = floor(b × 1e6 / p).
  const fits = (budgetMicros * tokensPerMillion) / model.outputPriceMicrosPerMtok;
  return fits < BigInt(maxTokens) ? Number(fits) : maxTokens;
}

/** Token counts of one request's usage. */
export interface TokenUsage {
  promptTokens: number;
  completionTokens: number;
}

/** Customer cost of a usage at a model's prices, µ₹, each side rounded up on its own: what a Settle debits. */
export function customerCostMicros(usage: TokenUsage, model: Pick<GatewayModelEntry, 'inputPriceMicrosPerMtok' | 'outputPriceMicrosPerMtok'>): bigint {
  return costMicros(usage.promptTokens, model.inputPriceMicrosPerMtok) + costMicros(usage.completionTokens, model.outputPriceMicrosPerMtok);
}

/** Customer cost and provider cost of a usage, µ₹, each side rounded up on its own. */
export function usageCostMicros(usage: TokenUsage, model: GatewayModelEntry): { costMicros: bigint; providerCostMicros: bigint } {
  return {
    costMicros: customerCostMicros(usage, model),
    providerCostMicros: costMicros(usage.promptTokens, model.providerInputCostMicrosPerMtok)
      + costMicros(usage.completionTokens, model.providerOutputCostMicrosPerMtok),
  };
}

/** µ₹ in one rupee. */
const microsPerRupee = 1_000_000n;

/** An amount of µ₹ as a decimal string of rupees with six places, e.g. 1234567n → "1.234567" (never a float). */
function rupeesText(micros: bigint): string {
  const sign = micros < 0n ? '-' : '';
  const magnitude = micros < 0n ? -micros : micros;
  return `${sign}${magnitude / microsPerRupee}.${(magnitude % microsPerRupee).toString().padStart(6, '0')}`;
}

/** The cost fields a response's `usage` carries: what the request's Settle prices it at, µ₹ and rupees, as decimal strings. */
export interface UsageCostFields {
  /** µ₹, a decimal string (money never travels as a JSON number). */
  cost_micros: string;
  /** The same amount in rupees, a decimal string with six places. */
  cost_inr: string;
}

/** The `usage` cost fields of an amount µ₹ (usageCostMicros's costMicros: the Settle's own figure). */
export function usageCostFields(costMicros: bigint): UsageCostFields {
  return { cost_micros: costMicros.toString(), cost_inr: rupeesText(costMicros) };
}
