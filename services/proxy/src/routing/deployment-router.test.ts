import { describe, expect, it } from 'vitest';
import type { GatewayModelEntry, UpstreamDeploymentEntry } from '../domain/config-snapshot.ts';
import { DeploymentRouter, deploymentsOf } from './deployment-router.ts';

/** The clock a router reads (its constructor's second parameter). */
type RouterClock = NonNullable<ConstructorParameters<typeof DeploymentRouter>[1]>;

/** A clock whose time the test moves and whose random numbers it lists (then 0). */
function testClock(randoms: number[] = []): RouterClock & { advance(ms: number): void } {
  let nowMs = 1_000_000;
  return { now: () => nowMs, random: () => randoms.shift() ?? 0, advance: (ms) => { nowMs += ms; } };
}

/** A model with the given deployments (name, priority, weight). */
function modelWith(...specs: Array<[string, number, number]>): GatewayModelEntry {
  const model = {
    slug: 'chat', upstream: { providerKind: 'openai_compatible', baseUrl: 'http://primary.test/v1', model: 'm', apiKey: '' },
  } as GatewayModelEntry;
  model.deployments = specs.map(([name, priority, weight]): UpstreamDeploymentEntry => ({
    name, priority, weight, upstream: { ...model.upstream, baseUrl: `http://${name}.test/v1` }, served: model,
  }));
  return model;
}

const policy = { consecutiveFailures: 2, baseEjectionMs: 1_000, maxEjectionMs: 3_000 };
const names = (list: readonly UpstreamDeploymentEntry[]) => list.map((deployment) => deployment.name);

describe('DeploymentRouter', () => {
  it('orders by priority, weighted random without replacement within one', () => {
    const model = modelWith(['c', 1, 1], ['a', 0, 1], ['b', 0, 3]);
    // random 0.5 of total weight 4 = 2: past a (1), within b.
    expect(names(new DeploymentRouter(policy, testClock([0.5])).order(model))).toEqual(['b', 'a', 'c']);
    // random 0.1 of 4 = 0.4: a.
    expect(names(new DeploymentRouter(policy, testClock([0.1])).order(model))).toEqual(['a', 'b', 'c']);
  });

  it('gives a one-deployment model its list as it is (no allocation), and a hand-built entry its primary', () => {
    const model = modelWith(['primary', 0, 1]);
    const router = new DeploymentRouter(policy, testClock());
    expect(router.order(model)).toBe(model.deployments);
    const bare = { slug: 'bare', upstream: model.upstream } as GatewayModelEntry;
    expect(names(router.order(bare))).toEqual(['primary']);
    expect(deploymentsOf(bare)).toBe(deploymentsOf(bare));
  });

  it('ejects after consecutive failures for base × 2^(n-1) capped, a success resetting the run', () => {
    const clock = testClock();
    const ejected: string[] = [];
    const router = new DeploymentRouter(policy, clock, { attempt() {}, ejected: (_m, d) => ejected.push(d), failedOver() {} });
    const model = modelWith(['a', 0, 1], ['b', 1, 1]);
    router.failed('chat', 'a', 'http_5xx', 0);
    router.succeeded('chat', 'a', 0);
    router.failed('chat', 'a', 'http_5xx', 0);
    expect(router.isEjected('chat', 'a')).toBe(false); // the success ended the first run
    router.failed('chat', 'a', 'timeout', 0);
    expect(router.isEjected('chat', 'a')).toBe(true);
    expect(ejected).toEqual(['a']);
    expect(names(router.order(model))).toEqual(['b']);
    clock.advance(1_000);
    expect(names(router.order(model))).toEqual(['a', 'b']);
    // Failing again before any success: twice as long, then capped at the max.
    router.failed('chat', 'a', 'connect_error', 0);
    router.failed('chat', 'a', 'connect_error', 0);
    clock.advance(1_999);
    expect(router.isEjected('chat', 'a')).toBe(true);
    clock.advance(1);
    expect(router.isEjected('chat', 'a')).toBe(false);
    router.failed('chat', 'a', 'connect_error', 0);
    router.failed('chat', 'a', 'connect_error', 0);
    clock.advance(3_000);
    expect(router.isEjected('chat', 'a')).toBe(false);
    // A 4xx other than 429 says nothing of the deployment.
    router.failed('chat', 'b', 'http_error', 0);
    router.failed('chat', 'b', 'http_error', 0);
    expect(router.isEjected('chat', 'b')).toBe(false);
  });

  it('skips a deployment in its Retry-After back-off, and tries the one ejected longest ago when all are out', () => {
    const clock = testClock();
    const router = new DeploymentRouter(policy, clock);
    const model = modelWith(['a', 0, 1], ['b', 1, 1]);
    router.failed('chat', 'a', 'http_429', 0, 500);
    expect(names(router.order(model))).toEqual(['b']);
    clock.advance(500);
    expect(names(router.order(model))).toEqual(['a', 'b']);
    router.failed('chat', 'b', 'http_5xx', 0);
    router.failed('chat', 'b', 'http_5xx', 0);
    clock.advance(10);
    router.failed('chat', 'a', 'http_5xx', 0);
    expect(names(router.order(model))).toEqual(['b']); // b ejected before a
    // Both back off: the back-off that ends first.
    router.failed('chat', 'a', 'http_429', 0, 2_000);
    router.failed('chat', 'b', 'http_429', 0, 1_000);
    expect(names(router.order(model))).toEqual(['b']);
  });

  it('keeps health across config updates for deployments that still exist and drops the rest', () => {
    const router = new DeploymentRouter(policy, testClock());
    router.failed('chat', 'a', 'http_5xx', 0);
    router.failed('chat', 'a', 'http_5xx', 0);
    router.failed('chat', 'gone', 'http_5xx', 0);
    router.failed('other', 'primary', 'http_5xx', 0);
    const dropped = router.retain(new Map([['chat', modelWith(['a', 0, 1], ['b', 0, 1])]]));
    expect(dropped).toEqual([['chat', 'gone'], ['other', 'primary']]);
    expect(router.isEjected('chat', 'a')).toBe(true);
  });
});
