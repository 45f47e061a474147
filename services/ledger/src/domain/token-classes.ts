/** One token price class of a usage: its tokens, customer cost and provider cost, µ₹. */
export interface TokenClassUsage {
  tokenClass: string;
  tokens: bigint;
  costMicros: bigint;
  providerCostMicros: bigint;
}

/** The classes whose tokens are parts of a usage's input tokens. */
const inputSideClasses: ReadonlySet<string> = new Set(['input', 'cached_input', 'cache_write_5m', 'cache_write_1h', 'audio_input', 'image_input']);
/** The classes whose tokens are parts of a usage's output tokens. */
const outputSideClasses: ReadonlySet<string> = new Set(['output', 'reasoning']);

/** Whether a token class is one the ledger knows (input-side or output-side). */
export function isKnownTokenClass(tokenClass: string): boolean {
  return inputSideClasses.has(tokenClass) || outputSideClasses.has(tokenClass);
}

/** The figures a Settle's token classes must agree with. */
interface SettleTotals {
  inputTokens: bigint;
  outputTokens: bigint;
  costMicros: bigint;
  providerCostMicros: bigint;
}

/**
 * Why a Settle's token classes do not describe its usage, or undefined (none given is fine: a
 * plain usage). Each class known and given once, every figure non-negative, the input-side
 * tokens summing to input_tokens and the output-side ones to output_tokens, the costs summing
 * to cost_micros (CONSERVATION: the record's cost is the sum of its classes), and their provider
 * cost at most provider_cost_micros (which also holds the provider cost of an overrun).
 */
export function tokenClassesProblem(classes: readonly TokenClassUsage[], totals: SettleTotals): string | undefined {
  if (classes.length === 0) return undefined;
  const seen = new Set<string>();
  let inputTokens = 0n;
  let outputTokens = 0n;
  let cost = 0n;
  let providerCost = 0n;
  for (const entry of classes) {
    if (!inputSideClasses.has(entry.tokenClass) && !outputSideClasses.has(entry.tokenClass)) {
      return `token_classes: unknown token_class ${JSON.stringify(entry.tokenClass.slice(0, 40))}`;
    }
    if (seen.has(entry.tokenClass)) return `token_classes: ${entry.tokenClass} is given twice`;
    seen.add(entry.tokenClass);
    if (entry.tokens < 0n || entry.costMicros < 0n || entry.providerCostMicros < 0n) return `token_classes: ${entry.tokenClass} has a negative figure`;
    if (inputSideClasses.has(entry.tokenClass)) inputTokens += entry.tokens;
    else outputTokens += entry.tokens;
    cost += entry.costMicros;
    providerCost += entry.providerCostMicros;
  }
  if (inputTokens !== totals.inputTokens) return `token_classes: input-side tokens sum to ${inputTokens}, not input_tokens ${totals.inputTokens}`;
  if (outputTokens !== totals.outputTokens) return `token_classes: output-side tokens sum to ${outputTokens}, not output_tokens ${totals.outputTokens}`;
  if (cost !== totals.costMicros) return `token_classes: costs sum to ${cost}, not cost_micros ${totals.costMicros}`;
  if (providerCost > totals.providerCostMicros) return `token_classes: provider costs sum to ${providerCost}, more than provider_cost_micros ${totals.providerCostMicros}`;
  return undefined;
}

/** The classes as a usage record stores them (jsonb): figures as decimal strings, in the order given. */
export function tokenClassesJson(classes: readonly TokenClassUsage[]): Array<Record<string, string>> {
  return classes.map((entry) => ({
    tokenClass: entry.tokenClass, tokens: entry.tokens.toString(), costMicros: entry.costMicros.toString(), providerCostMicros: entry.providerCostMicros.toString(),
  }));
}

/** The classes of a usage record as stored (tokenClassesJson's form, or NULL: none). */
export function tokenClassesFromJson(stored: unknown): TokenClassUsage[] {
  if (!Array.isArray(stored)) return [];
  return (stored as Array<Record<string, string>>).map((entry) => ({
    tokenClass: entry.tokenClass!, tokens: BigInt(entry.tokens!), costMicros: BigInt(entry.costMicros!), providerCostMicros: BigInt(entry.providerCostMicros!),
  }));
}
