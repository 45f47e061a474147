/**
 * A usage's token price classes (cache reads and writes, audio and image input, reasoning) and
 * how their costs are rounded: the rules pricing.ts prices a usage by (CONSERVATION: the classes
 * of a usage always sum to its cost), with no model or price sheet of their own.
 */
import type { TokenClassCounts } from './normalized-completion.ts';

/** µ₹ per million tokens: the denominator of every per-token price. */
export const tokensPerMillion = 1_000_000n;

/**
 * The token price classes of a price sheet. The input classes are parts of the
 * prompt (plain `input` is what is left of it), `reasoning` is part of the output (plain
 * `output` is what is left of it).
 */
export type TokenClass = 'input' | 'cached_input' | 'cache_write_5m' | 'cache_write_1h' | 'audio_input' | 'image_input' | 'output' | 'reasoning';

/** A price per token class, µ₹ per million tokens. */
export type ClassPrices = Readonly<Record<TokenClass, bigint>>;

/** The input classes other than plain input, in the order their tokens are taken from the prompt. */
const inputClasses = ['cached_input', 'cache_write_5m', 'cache_write_1h', 'audio_input', 'image_input'] as const;

/** Token counts of one request's usage: the totals, and their price classes where the upstream reported them (absent = 0). */
export interface TokenUsage extends TokenClassCounts {
  promptTokens: number;
  completionTokens: number;
}

/** Tokens of a usage by class, each ≥ 0, summing to the totals. */
type ClassTokens = Record<TokenClass, number>;

/**
 * A usage's tokens by class. The classes are parts of the totals; an upstream that reports more
 * class tokens than the total (a bug on its side) is clamped, in the order of `inputClasses`, so
 * the classes never sum past what the totals say (nothing is billed twice).
 */
export function classTokens(usage: TokenUsage): ClassTokens {
  let left = usage.promptTokens;
  const take = (count: number | undefined) => {
    const taken = count === undefined || count <= 0 ? 0 : Math.min(count, left);
    left -= taken;
    return taken;
  };
  const cachedInput = take(usage.cachedInputTokens);
  const cacheWrite5m = take(usage.cacheWrite5mTokens);
  const cacheWrite1h = take(usage.cacheWrite1hTokens);
  const audioInput = take(usage.audioInputTokens);
  const imageInput = take(usage.imageInputTokens);
  const reasoning = Math.min(Math.max(usage.reasoningTokens ?? 0, 0), usage.completionTokens);
  return {
    input: left, cached_input: cachedInput, cache_write_5m: cacheWrite5m, cache_write_1h: cacheWrite1h,
    audio_input: audioInput, image_input: imageInput, output: usage.completionTokens - reasoning, reasoning,
  };
}

/** Whether a usage carries any class besides plain input and output (the common case does not: two roundings only). */
export function hasClasses(usage: TokenUsage): boolean {
  return (usage.cachedInputTokens ?? 0) > 0 || (usage.cacheWrite5mTokens ?? 0) > 0 || (usage.cacheWrite1hTokens ?? 0) > 0
    || (usage.audioInputTokens ?? 0) > 0 || (usage.imageInputTokens ?? 0) > 0 || (usage.reasoningTokens ?? 0) > 0;
}

/** The input-side classes, plain input first: the order that side's classes are rounded in. */
export const inputSide = ['input', ...inputClasses] as const;
/** The output-side classes, plain output first: the order that side's classes are rounded in. */
export const outputSide = ['output', 'reasoning'] as const;

/** ceil(numerator / 1e6) for a non-negative numerator: µ₹ of an exact µ₹ × 1e6 amount, rounded up. */
function ceilMillionth(numerator: bigint): bigint {
  return (numerator + tokensPerMillion - 1n) / tokensPerMillion;
}

/**
 * Cost of one side of a usage (input or output) at per-class prices, µ₹: the exact sum of its
 * classes rounded up once, so a side's cost is what it was before prices by token class when every class
 * costs the same (a flat sheet: nobody's bill changes until an admin sets class prices), and
 * never more than the side's tokens at its highest price (the Reserve's worst case).
 */
export function sideCost(tokens: ClassTokens, prices: ClassPrices, side: readonly TokenClass[]): bigint {
  let numerator = 0n;
  for (const tokenClass of side) if (tokens[tokenClass] > 0) numerator += BigInt(tokens[tokenClass]) * prices[tokenClass];
  return ceilMillionth(numerator);
}

/** One class of a usage: its tokens, customer cost and provider cost, µ₹. */
export interface ClassUsage {
  tokenClass: TokenClass;
  tokens: number;
  costMicros: bigint;
  providerCostMicros: bigint;
}

/**
 * A usage by class, the classes with tokens only, input side then output side: what the Settle
 * and the response itemise. Within a side each class gets the growth of the side's running cost
 * rounded up (ceil(Sₖ) − ceil(Sₖ₋₁) of the exact running sums), so every class's cost is within
 * 1 µ₹ of its exact price and the classes sum to the cost pricing.ts's usageCostMicros gives to the µ₹ (CONSERVATION:
 * cost_micros is the sum of the classes).
 */
export function usageByClass(usage: TokenUsage, sheet: { customer: ClassPrices; provider: ClassPrices }): ClassUsage[] {
  const tokens = classTokens(usage);
  const classes: ClassUsage[] = [];
  for (const side of [inputSide, outputSide]) {
    let customerSum = 0n;
    let providerSum = 0n;
    for (const tokenClass of side) {
      const count = tokens[tokenClass];
      if (count <= 0) continue;
      const nextCustomer = customerSum + BigInt(count) * sheet.customer[tokenClass];
      const nextProvider = providerSum + BigInt(count) * sheet.provider[tokenClass];
      classes.push({
        tokenClass, tokens: count,
        costMicros: ceilMillionth(nextCustomer) - ceilMillionth(customerSum),
        providerCostMicros: ceilMillionth(nextProvider) - ceilMillionth(providerSum),
      });
      customerSum = nextCustomer;
      providerSum = nextProvider;
    }
  }
  return classes;
}
