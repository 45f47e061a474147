import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { GatewayModelEntry, UpstreamDeploymentEntry } from '../domain/config-snapshot.ts';
import { DeploymentRouter } from './deployment-router.ts';

// Properties of the router's order (docs/proxy.md "Routing"): priority strict, ejected
// deployments skipped, every usable one offered exactly once, and weights respected in
// proportion, measured with a seeded random so the run is the same every time.

/** A seeded random in [0, 1) (mulberry32): the statistics below are the same on every run. */
function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/** A model with the given deployments (name, priority, weight). */
function modelWith(specs: ReadonlyArray<readonly [string, number, number]>): GatewayModelEntry {
  const model = {
    slug: 'chat', upstream: { providerKind: 'openai_compatible', baseUrl: 'http://primary.test/v1', model: 'm', apiKey: '' },
  } as GatewayModelEntry;
  model.deployments = specs.map(([name, priority, weight]): UpstreamDeploymentEntry => ({
    name, priority, weight, upstream: { ...model.upstream, baseUrl: `http://${name}.test/v1` }, served: model,
  }));
  return model;
}

/** One failure ejects (for an hour): the properties choose which deployments are out. */
const policy = { consecutiveFailures: 1, baseEjectionMs: 3_600_000, maxEjectionMs: 3_600_000 };

describe('DeploymentRouter order (properties)', () => {
  it('offers every deployment not ejected exactly once, ejected ones never, in non-decreasing priority', () => {
    const specs = fc.uniqueArray(
      fc.record({ name: fc.stringMatching(/^[a-z][a-z0-9-]{0,7}$/), priority: fc.integer({ min: 0, max: 3 }), weight: fc.integer({ min: 1, max: 1000 }), ejected: fc.boolean() }),
      { minLength: 2, maxLength: 10, selector: (spec) => spec.name },
    ).filter((list) => list.some((spec) => !spec.ejected));
    fc.assert(fc.property(specs, fc.integer(), (list, seed) => {
      const router = new DeploymentRouter(policy, { now: () => 1_000_000, random: seededRandom(seed) });
      const model = modelWith(list.map((spec) => [spec.name, spec.priority, spec.weight] as const));
      for (const spec of list) if (spec.ejected) router.failed('chat', spec.name, 'http_5xx', 0);
      const order = router.order(model);
      expect(order.map((d) => d.name).sort()).toEqual(list.filter((spec) => !spec.ejected).map((spec) => spec.name).sort());
      for (let index = 1; index < order.length; index += 1) expect(order[index]!.priority).toBeGreaterThanOrEqual(order[index - 1]!.priority);
    }), { numRuns: 300 });
  });

  it('puts a deployment first in proportion to its weight within its priority, and a lower priority never first', () => {
    const weights = { a: 1, b: 3, c: 6 } as const;
    const model = modelWith([['a', 0, weights.a], ['b', 0, weights.b], ['c', 0, weights.c], ['z', 1, 1000]]);
    const router = new DeploymentRouter(policy, { now: () => 1_000_000, random: seededRandom(29) });
    const runs = 30_000;
    const first = new Map<string, number>();
    const last = new Map<string, number>();
    for (let run = 0; run < runs; run += 1) {
      const order = router.order(model);
      first.set(order[0]!.name, (first.get(order[0]!.name) ?? 0) + 1);
      last.set(order.at(-1)!.name, (last.get(order.at(-1)!.name) ?? 0) + 1);
    }
    // The standard error of a share near 0.5 over 30 000 draws is about 0.003: 0.015 is five of them.
    for (const [name, weight] of Object.entries(weights)) expect(Math.abs((first.get(name) ?? 0) / runs - weight / 10)).toBeLessThan(0.015);
    // The heaviest weight does not lift `z` above its priority: it is last every time.
    expect(first.get('z')).toBeUndefined();
    expect(last.get('z')).toBe(runs);
  });
});
