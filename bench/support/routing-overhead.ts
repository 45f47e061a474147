/**
 * The proxy CPU that routing (issue 29: deployments, failover, ejection) costs a request of a
 * model with one deployment, measured in process with the proxy's own functions: a whole-proxy
 * A/B on this 2-core machine moves by 10-15% between runs (docs/benchmarks.md), far more than
 * the 2% the routing may cost.
 *
 * Per request, a one-deployment model now goes through planRoute (the router's order, the
 * upstream request built through a closure) and runAttempts (the attempt as a closure, its
 * timing, its report to the router: the health lookup and the attempt metrics, a counter and a
 * histogram observation, with the real ProxyMetrics); before routing the proxy called the
 * upstream directly. Both are timed here around the same trivial upstream call (an async
 * function answering at once), so the difference is the routing layer's. The Hold's part
 * (`attemptOn`: four field writes) is not in it: a Hold needs a ledger, and its cost is that of
 * the writes.
 */
import { createServiceMetrics, type ProxyMetrics } from '@gateway/telemetry';
import type { Hold } from '../../services/proxy/src/billing/hold.ts';
import type { GatewayModelEntry, UpstreamDeploymentEntry } from '../../services/proxy/src/domain/config-snapshot.ts';
import { planRoute, runAttempts, type AttemptResult, type Routing } from '../../services/proxy/src/inference/attempts.ts';
import { DeploymentRouter } from '../../services/proxy/src/routing/deployment-router.ts';
import { DeploymentMetrics } from '../../services/proxy/src/telemetry/deployment-metrics.ts';
import type { UpstreamRequest } from '../../services/proxy/src/upstreams/upstream-adapter.ts';

/** CPU µs per request of a one-deployment model's upstream call, routed and direct. */
export interface RoutingOverhead {
  routedUsPerRequest: number;
  directUsPerRequest: number;
  /** routed − direct: what routing adds to a request, µs of CPU. */
  addedUsPerRequest: number;
  iterations: number;
}

/** A chat model with one upstream (no deployment list: its own upstream is the one deployment). */
function benchModel(): GatewayModelEntry {
  return {
    slug: 'bench-routing', displayName: 'bench-routing', kind: 'chat', mediaModalities: new Set(), defaultMaxTokens: 1024, maxContextTokens: 128_000,
    inputPriceMicrosPerMtok: 150_000_000n, outputPriceMicrosPerMtok: 600_000_000n,
    providerInputCostMicrosPerMtok: 100_000_000n, providerOutputCostMicrosPerMtok: 400_000_000n,
    createdAtS: 0, tokenizer: 'o200k_base',
    upstream: { providerKind: 'openai_compatible', baseUrl: 'http://127.0.0.1:1', model: 'bench', apiKey: '' },
  };
}

/** CPU µs per iteration of the async `step`, after a warm-up that lets the JIT settle. */
async function cpuUsPerIteration(iterations: number, step: (i: number) => Promise<unknown>): Promise<number> {
  let sink = 0;
  for (let i = 0; i < iterations / 10; i += 1) if (await step(i) !== undefined) sink += 1;
  const before = process.cpuUsage();
  for (let i = 0; i < iterations; i += 1) if (await step(i) !== undefined) sink += 1;
  const spent = process.cpuUsage(before);
  if (sink < 0) throw new Error('unreachable');
  return (spent.user + spent.system) / iterations;
}

/** Measures the routed and the direct call, `iterations` requests each (the medians of five alternated runs). */
export async function measureRoutingOverhead(iterations = 200_000, metrics: ProxyMetrics = createServiceMetrics('proxy')): Promise<RoutingOverhead> {
  const model = benchModel();
  const routing: Routing = {
    router: new DeploymentRouter({ consecutiveFailures: 5, baseEjectionMs: 30_000, maxEjectionMs: 300_000 }, undefined, new DeploymentMetrics(metrics)),
    policy: { maxAttempts: 3, deadlineMs: 60_000, attemptTimeoutMs: 20_000, upstreamTotalMs: 300_000 },
  };
  const request: UpstreamRequest = { path: '/chat/completions', headers: {}, body: '{}' };
  const hold = { attemptOn: () => undefined, failedAttempt: () => undefined } as unknown as Hold;
  // The upstream call both paths make: answers at once.
  const call = async (_deployment: UpstreamDeploymentEntry | GatewayModelEntry, upstreamRequest: UpstreamRequest): Promise<number> => upstreamRequest.body.length;

  const routed = async (i: number) => {
    const route = planRoute(routing, model, () => request);
    return runAttempts(routing, model, hold, route, async (deployment, upstreamRequest): Promise<AttemptResult<number>> => (
      { kind: 'answered', value: await call(deployment, upstreamRequest) + (i & 1) }
    ));
  };
  const direct = async (i: number) => await call(model, request) + (i & 1);

  const routedRuns: number[] = [];
  const directRuns: number[] = [];
  for (let run = 0; run < 5; run += 1) {
    routedRuns.push(await cpuUsPerIteration(iterations, routed));
    directRuns.push(await cpuUsPerIteration(iterations, direct));
  }
  const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
  const routedUs = median(routedRuns);
  const directUs = median(directRuns);
  return {
    routedUsPerRequest: Number(routedUs.toFixed(3)), directUsPerRequest: Number(directUs.toFixed(3)),
    addedUsPerRequest: Number((routedUs - directUs).toFixed(3)), iterations,
  };
}
