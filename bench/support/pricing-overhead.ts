/**
 * The proxy CPU that per-class pricing and model aliases cost per request (the bound:
 * at most 3% of the proxy's CPU per request), measured in process with the proxy's own functions
 * so that the figure is the code's, not the noise of two whole gateway runs (which differ by
 * more than 3% between runs on a shared machine).
 *
 * Per request the proxy resolves the requested model name (resolveModelName), prices its Reserve
 * (reserveMicros), prices the usage once for the response and the Settle (priceUsage: cost, provider
 * cost and the token classes) and renders the response's cost fields (usageCostFields). The run
 * times that sequence for the hardest case per-class prices and aliases added — an alias resolved through the
 * organisation's and the platform's maps, a model with its own price sheet, a usage with every
 * token class — and for the plain case (a slug, a flat-priced model, a usage with no classes),
 * and reports both in µs of CPU per request. The whole classed sequence (not only its difference
 * from the plain one) is compared with the gateway proxy's CPU per request measured in the same
 * run: an upper bound of what pricing and aliases can add.
 */
import { resolveModelName } from '../../services/proxy/src/domain/model-aliases.ts';
import { priceSheet, priceUsage, reserveMicros, usageCostFields, type TokenUsage } from '../../services/proxy/src/domain/pricing.ts';
import type { ConfigSnapshot, GatewayModelEntry, OrganisationEntry } from '../../services/proxy/src/domain/config-snapshot.ts';

/** CPU µs per request of the pricing-and-lookup sequence, classed (alias, price sheet, every class) and plain. */
export interface PricingOverhead {
  classedUsPerRequest: number;
  plainUsPerRequest: number;
  iterations: number;
}

/** A chat model entry with prices µ₹ per million tokens; `classed` gives it a price sheet of its own. */
function benchModel(slug: string, classed: boolean): GatewayModelEntry {
  const input = 150_000_000n;
  const output = 600_000_000n;
  const cost = { input: 100_000_000n, output: 400_000_000n };
  return {
    slug, displayName: slug, kind: 'chat', mediaModalities: new Set(['audio']), defaultMaxTokens: 1024, maxContextTokens: 128_000,
    inputPriceMicrosPerMtok: input, outputPriceMicrosPerMtok: output,
    providerInputCostMicrosPerMtok: cost.input, providerOutputCostMicrosPerMtok: cost.output,
    createdAtS: 0, tokenizer: 'o200k_base',
    upstream: { providerKind: 'openai_compatible', baseUrl: 'http://127.0.0.1:1', model: 'bench', apiKey: '' },
    ...(classed ? {
      priceSheet: priceSheet({
        customer: { input, cached_input: 15_000_000n, cache_write_5m: 187_500_000n, cache_write_1h: 300_000_000n, audio_input: 400_000_000n, image_input: input, output, reasoning: 800_000_000n },
        provider: { input: cost.input, cached_input: 10_000_000n, cache_write_5m: 125_000_000n, cache_write_1h: 200_000_000n, audio_input: 300_000_000n, image_input: cost.input, output: cost.output, reasoning: undefined },
      }, new Set(['audio'])),
    } : {}),
  };
}

/** CPU µs per iteration of `step`, after a warm-up that lets the JIT settle. */
function cpuUsPerIteration(iterations: number, step: (i: number) => unknown): number {
  let sink = 0;
  for (let i = 0; i < iterations / 10; i += 1) if (step(i) !== undefined) sink += 1;
  const before = process.cpuUsage();
  for (let i = 0; i < iterations; i += 1) if (step(i) !== undefined) sink += 1;
  const spent = process.cpuUsage(before);
  if (sink < 0) throw new Error('unreachable');
  return (spent.user + spent.system) / iterations;
}

/** Measures the classed and the plain sequence, `iterations` requests each (the median of three runs). */
export function measurePricingOverhead(iterations = 200_000): PricingOverhead {
  const classedModel = benchModel('bench-classed', true);
  const plainModel = benchModel('bench-plain', false);
  // An organisation alias that shadows nothing and a platform alias reached only after it: the longest lookup.
  const snapshot = {
    modelsBySlug: new Map([[classedModel.slug, classedModel], [plainModel.slug, plainModel]]),
    platformModelAliases: new Map([['claude-sonnet-bench', classedModel.slug]]),
  } as unknown as ConfigSnapshot;
  const organisation = { modelAliases: new Map([['other-alias', plainModel.slug]]) } as unknown as OrganisationEntry;
  const classedUsage: TokenUsage = {
    promptTokens: 20_000, completionTokens: 900, cachedInputTokens: 15_000, cacheWrite5mTokens: 2_000, cacheWrite1hTokens: 1_000,
    audioInputTokens: 200, reasoningTokens: 600,
  };
  const plainUsage: TokenUsage = { promptTokens: 20_000, completionTokens: 900 };

  const sequence = (name: string, usage: TokenUsage) => (i: number) => {
    const model = resolveModelName(snapshot, organisation, name)!;
    const reserve = reserveMicros(usage.promptTokens + (i & 7), 1024, model);
    const billed = { ...usage, completionTokens: usage.completionTokens + (i & 3) };
    const priced = priceUsage(billed, model);
    const fields = usageCostFields(priced.costMicros, priced.costByClass);
    return reserve + priced.providerCostMicros > 0n ? fields : undefined;
  };
  const median = (samples: number[]) => samples.sort((a, b) => a - b)[1]!;
  const classed: number[] = [];
  const plain: number[] = [];
  for (let run = 0; run < 3; run += 1) {
    classed.push(cpuUsPerIteration(iterations, sequence('claude-sonnet-bench', classedUsage)));
    plain.push(cpuUsPerIteration(iterations, sequence(plainModel.slug, plainUsage)));
  }
  return { classedUsPerRequest: Number(median(classed).toFixed(3)), plainUsPerRequest: Number(median(plain).toFixed(3)), iterations };
}
