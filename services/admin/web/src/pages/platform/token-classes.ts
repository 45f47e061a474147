// Per-token-class figures of the dashboard: summed from the API's rows with bigint
// arithmetic on µ₹ decimal strings, so a breakdown's cost adds up to the usage's cost exactly.

/** One token price class of a summary row: tokens and µ₹ as decimal strings (usage/summary shape). */
export interface TokenClassFigures {
  class: string;
  tokens: number;
  cost_micros: string;
  /** Provider cost of the class, µ₹ (shown to platform admins only). */
  provider_cost_micros: string;
}

/** A usage summary row's part the class breakdown reads: its cost, classes and requests without classes. */
export interface ClassifiedRow {
  cost_micros: string;
  provider_cost_micros?: string;
  token_classes: TokenClassFigures[];
  unclassified_requests: number;
}

/** A period's usage by token class, with the requests recorded without classes kept apart (never hidden). */
export interface ClassBreakdown {
  /** Ordered by class name; tokens as a decimal string, µ₹ as decimal strings. */
  classes: Array<{ class: string; tokens: string; costMicros: string; providerCostMicros: string }>;
  /** Requests recorded without classes, and their cost (the rows' cost minus the classes' cost), µ₹. */
  unclassified: { requests: string; costMicros: string; providerCostMicros: string };
}

/** Sums summary rows into one breakdown by class, exactly (bigint µ₹). */
export function classBreakdown(rows: readonly ClassifiedRow[]): ClassBreakdown {
  const sums = new Map<string, { tokens: bigint; cost: bigint; provider: bigint }>();
  let unclassifiedRequests = 0n;
  let unclassifiedCost = 0n;
  let unclassifiedProvider = 0n;
  for (const row of rows) {
    unclassifiedRequests += BigInt(row.unclassified_requests);
    unclassifiedCost += BigInt(row.cost_micros);
    unclassifiedProvider += BigInt(row.provider_cost_micros ?? '0');
    for (const entry of row.token_classes) {
      const sum = sums.get(entry.class) ?? { tokens: 0n, cost: 0n, provider: 0n };
      sum.tokens += BigInt(entry.tokens);
      sum.cost += BigInt(entry.cost_micros);
      sum.provider += BigInt(entry.provider_cost_micros);
      sums.set(entry.class, sum);
      unclassifiedCost -= BigInt(entry.cost_micros);
      unclassifiedProvider -= BigInt(entry.provider_cost_micros);
    }
  }
  const names = [...sums.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  return {
    classes: names.map((name) => {
      const sum = sums.get(name)!;
      return { class: name, tokens: sum.tokens.toString(), costMicros: sum.cost.toString(), providerCostMicros: sum.provider.toString() };
    }),
    unclassified: {
      requests: unclassifiedRequests.toString(),
      costMicros: unclassifiedRequests === 0n ? '0' : unclassifiedCost.toString(),
      providerCostMicros: unclassifiedRequests === 0n ? '0' : unclassifiedProvider.toString(),
    },
  };
}

/** A class name as people read it: `cached_input` → "cached input". */
export function tokenClassLabel(name: string): string {
  return name.replaceAll('_', ' ');
}
