import type { UsageSummaryRow, UsageTokenClass } from '../../common/domain/admin-records.ts';

/** Usage summed over some rows: counts and µ₹. */
export interface UsageFigures {
  requests: bigint;
  inputTokens: bigint;
  outputTokens: bigint;
  /** What customers were charged (the usage's cost), µ₹. */
  customerPriceMicros: bigint;
  /** What the providers charge for it, µ₹. */
  providerCostMicros: bigint;
  /** Tokens, customer cost (costMicros) and provider cost per token class of the requests recorded by class, µ₹, ordered by class name. */
  tokenClasses: UsageTokenClass[];
  /** Requests recorded without classes: their cost is in the totals above, in no class. */
  unclassifiedRequests: bigint;
}

/**
 * Adds per-class figures to `into` (exact bigint sums), keeping it ordered by class name, so
 * totals over rows stay comparable with the ledger's per-row classes.
 */
function addTokenClasses(into: UsageTokenClass[], from: readonly UsageTokenClass[]): void {
  for (const entry of from) {
    const sum = into.find((candidate) => candidate.tokenClass === entry.tokenClass);
    if (sum === undefined) {
      into.push({ ...entry });
    } else {
      sum.tokens += entry.tokens;
      sum.costMicros += entry.costMicros;
      sum.providerCostMicros += entry.providerCostMicros;
    }
  }
  into.sort((a, b) => (a.tokenClass < b.tokenClass ? -1 : a.tokenClass > b.tokenClass ? 1 : 0));
}

/** Figures with nothing in them, to add rows to. */
export function emptyFigures(): UsageFigures {
  return { requests: 0n, inputTokens: 0n, outputTokens: 0n, customerPriceMicros: 0n, providerCostMicros: 0n, tokenClasses: [], unclassifiedRequests: 0n };
}

/** Adds one summary row's usage to `into` (exact bigint sums). */
export function addRow(into: UsageFigures, row: UsageSummaryRow): void {
  addFigures(into, { ...row, customerPriceMicros: row.costMicros });
}

/** Adds figures to `into` (exact bigint sums), classes included. */
export function addFigures(into: UsageFigures, from: UsageFigures): void {
  into.requests += from.requests;
  into.inputTokens += from.inputTokens;
  into.outputTokens += from.outputTokens;
  into.customerPriceMicros += from.customerPriceMicros;
  into.providerCostMicros += from.providerCostMicros;
  addTokenClasses(into.tokenClasses, from.tokenClasses);
  into.unclassifiedRequests += from.unclassifiedRequests;
}
