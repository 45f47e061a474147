import { GatewayError } from '@gateway/errors';
import type { GatewayModelEntry, PriceSheet } from './config-snapshot.ts';
import {
  classTokens, hasClasses, inputSide, outputSide, sideCost, tokensPerMillion, usageByClass,
  type ClassPrices, type ClassUsage, type TokenClass, type TokenUsage,
} from './token-classes.ts';

export type { ClassUsage, TokenUsage } from './token-classes.ts';

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

/** The customer and provider per-class prices a price sheet is built from, µ₹ per million tokens; reasoning undefined = as output. */
export interface PriceSheetInput {
  customer: Omit<ClassPrices, 'reasoning'> & { reasoning: bigint | undefined };
  provider: Omit<ClassPrices, 'reasoning'> & { reasoning: bigint | undefined };
}

/**
 * The price sheet of per-class prices: reasoning resolved to output when unset, and the Reserve's
 * prices. Audio and image input count for the Reserve only where the model takes them (a model
 * without them refuses such parts before the Reserve, so no prompt token can be billed so).
 */
export function priceSheet(input: PriceSheetInput, mediaModalities: ReadonlySet<'image' | 'audio'> = new Set()): PriceSheet {
  const customer: ClassPrices = { ...input.customer, reasoning: input.customer.reasoning ?? input.customer.output };
  const provider: ClassPrices = { ...input.provider, reasoning: input.provider.reasoning ?? input.provider.output };
  let reserveInput = customer.input;
  for (const inputClass of ['cached_input', 'cache_write_5m', 'cache_write_1h'] as const) if (customer[inputClass] > reserveInput) reserveInput = customer[inputClass];
  if (mediaModalities.has('audio') && customer.audio_input > reserveInput) reserveInput = customer.audio_input;
  if (mediaModalities.has('image') && customer.image_input > reserveInput) reserveInput = customer.image_input;
  const reserveOutput = customer.reasoning > customer.output ? customer.reasoning : customer.output;
  return { customer, provider, reserveInput, reserveOutput };
}

/** The prices a sheet needs from a model entry built without one (older tests, hand-built entries): every class at input or output. */
type BasePrices = Pick<GatewayModelEntry, 'inputPriceMicrosPerMtok' | 'outputPriceMicrosPerMtok'> & Partial<Pick<GatewayModelEntry, 'providerInputCostMicrosPerMtok' | 'providerOutputCostMicrosPerMtok' | 'priceSheet'>>;

/** The sheets of entries that carry none, built once each. */
const flatSheets = new WeakMap<object, PriceSheet>();

/** A model's price sheet: the one the config decode built, else every class at the input or output price. */
export function sheetOf(model: BasePrices): PriceSheet {
  if (model.priceSheet !== undefined) return model.priceSheet;
  let sheet = flatSheets.get(model);
  if (sheet === undefined) {
    const flat = (input: bigint, output: bigint) => ({
      input, cached_input: input, cache_write_5m: input, cache_write_1h: input, audio_input: input, image_input: input, output, reasoning: output,
    });
    sheet = priceSheet({
      customer: flat(model.inputPriceMicrosPerMtok, model.outputPriceMicrosPerMtok),
      provider: flat(model.providerInputCostMicrosPerMtok ?? 0n, model.providerOutputCostMicrosPerMtok ?? 0n),
    });
    flatSheets.set(model, sheet);
  }
  return sheet;
}

/**
 * The Reserve of a request, µ₹: the worst case of its usage (BOUNDED_OVERRUN, NO_OVERSPEND):
 * ceil(promptTokens × the highest price a prompt token can be billed at / 1e6) (a 1-hour cache
 * write can cost 2× input) + ceil(maxTokens × max(output, reasoning) / 1e6), and at least 1 µ₹
 * (the ledger holds only positive amounts, and a free-priced model still goes through the same
 * reserve/settle path). Each side of a usage is rounded once (costAt), so no split of the prompt
 * or the output into classes can cost more than this.
 */
export function reserveMicros(promptTokens: number, maxTokens: number, model: GatewayModelEntry): bigint {
  const sheet = sheetOf(model);
  const amount = costMicros(promptTokens, sheet.reserveInput) + costMicros(maxTokens, sheet.reserveOutput);
  return amount > 0n ? amount : 1n;
}

/**
 * The most output tokens a Reserve covers after a prompt, never more than maxTokens: the largest
 * n with ceil(promptTokens × reserve input price / 1e6) + ceil(n × reserve output price / 1e6) ≤
 * reserveMicros (0 when the prompt alone does not fit). Where a non-streaming reply is cut (BOUNDED_OVERRUN).
 */
export function outputTokensWithin(reserveMicros: bigint, promptTokens: number, maxTokens: number, model: GatewayModelEntry): number {
  const sheet = sheetOf(model);
  const budgetMicros = reserveMicros - costMicros(promptTokens, sheet.reserveInput);
  if (budgetMicros < 0n) return 0;
  if (sheet.reserveOutput === 0n) return maxTokens;
  // ceil(n × p / 1e6) ≤ b  ⇔  n × p ≤ b × 1e6 (integers), so n = floor(b × 1e6 / p).
  const fits = (budgetMicros * tokensPerMillion) / sheet.reserveOutput;
  return fits < BigInt(maxTokens) ? Number(fits) : maxTokens;
}

/** What a Settle bills beyond its usage when the upstream produced more than the client got (BOUNDED_OVERRUN). */
export interface SettleOverrun {
  /** Everything the upstream produced: the provider cost is priced on it. */
  producedUsage: TokenUsage;
  /** Output tokens produced beyond what was delivered: provider cost, never the wallet's. */
  overrunOutputTokens: number;
}

/** Cost of a usage at per-class prices, µ₹: the input side and the output side each rounded up once. */
function costAt(usage: TokenUsage, prices: ClassPrices): bigint {
  if (!hasClasses(usage)) return costMicros(usage.promptTokens, prices.input) + costMicros(usage.completionTokens, prices.output);
  const tokens = classTokens(usage);
  return sideCost(tokens, prices, inputSide) + sideCost(tokens, prices, outputSide);
}

/** Customer cost of a usage at a model's prices, µ₹, each side (input, output) rounded up once: what a Settle debits. */
export function customerCostMicros(usage: TokenUsage, model: BasePrices): bigint {
  return costAt(usage, sheetOf(model).customer);
}

/** Customer cost and provider cost of a usage, µ₹, each side rounded up once. */
export function usageCostMicros(usage: TokenUsage, model: GatewayModelEntry): { costMicros: bigint; providerCostMicros: bigint } {
  const sheet = sheetOf(model);
  return { costMicros: costAt(usage, sheet.customer), providerCostMicros: costAt(usage, sheet.provider) };
}

/**
 * A usage priced once, µ₹: the figures a response shows (`costMicros`, `costByClass`) are the
 * ones its Settle carries, so the two cannot disagree. The customer side is priced on `usage`
 * (what was delivered), the provider side on everything produced (`overrun.producedUsage`).
 */
export interface PricedUsage {
  usage: TokenUsage;
  /** Customer cost, µ₹: what the Settle debits and the response's `usage.cost_micros`. */
  costMicros: bigint;
  /** Provider cost of everything produced, µ₹. */
  providerCostMicros: bigint;
  /** The customer cost by token class, when the usage has a class besides plain input and output; undefined otherwise (the Settle itemises it anyway). */
  costByClass: ClassUsage[] | undefined;
  /** What was produced beyond the delivered usage (BOUNDED_OVERRUN), if anything. */
  overrun: SettleOverrun | undefined;
}

/** Prices a usage at the prices of the model as its deployment serves it (one price sheet, one pass per side), µ₹. */
export function priceUsage(usage: TokenUsage, served: GatewayModelEntry, overrun?: SettleOverrun): PricedUsage {
  const sheet = sheetOf(served);
  return {
    usage,
    costMicros: costAt(usage, sheet.customer),
    providerCostMicros: costAt(overrun?.producedUsage ?? usage, sheet.provider),
    costByClass: hasClasses(usage) ? usageByClass(usage, sheet) : undefined,
    overrun,
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

/** One token class of a response's `usage.cost_by_class`: its tokens and customer cost (µ₹, a decimal string). */
interface ClassCostField {
  tokens: number;
  cost_micros: string;
}

/** The cost fields a response's `usage` carries: what the request's Settle prices it at, µ₹ and rupees, as decimal strings. */
export interface UsageCostFields {
  /** µ₹, a decimal string (money never travels as a JSON number). */
  cost_micros: string;
  /** The same amount in rupees, a decimal string with six places. */
  cost_inr: string;
  /**
   * The usage by token class, classes with tokens only, whose `cost_micros` sum to the
   * total's; present when the usage has a class besides plain input and output (priceUsage).
   */
  cost_by_class?: Partial<Record<TokenClass, ClassCostField>>;
}

/**
 * The `usage` cost fields of an amount µ₹ (usageCostMicros's costMicros: the Settle's own
 * figure) and, when given, its classes (priceUsage): customer cost only, never the provider's.
 */
export function usageCostFields(costMicros: bigint, byClass?: readonly ClassUsage[]): UsageCostFields {
  const fields: UsageCostFields = { cost_micros: costMicros.toString(), cost_inr: rupeesText(costMicros) };
  if (byClass !== undefined) {
    const classes: Partial<Record<TokenClass, ClassCostField>> = {};
    for (const entry of byClass) classes[entry.tokenClass] = { tokens: entry.tokens, cost_micros: entry.costMicros.toString() };
    fields.cost_by_class = classes;
  }
  return fields;
}
