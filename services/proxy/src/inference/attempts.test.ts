import { describe, expect, it } from 'vitest';
import type { Hold } from '../billing/hold.ts';
import type { GatewayModelEntry, UpstreamDeploymentEntry } from '../domain/config-snapshot.ts';
import { DeploymentRouter } from '../routing/deployment-router.ts';
import type { UpstreamRequest } from '../upstreams/upstream-adapter.ts';
import { failedCallResult, planRoute, runAttempts, type AttemptResult, type Routing } from './attempts.ts';

/** A model with deployments a, b, c at priorities 0, 1, 2. */
function threeDeploymentModel(): GatewayModelEntry {
  const model = { slug: 'chat', upstream: { providerKind: 'openai_compatible', baseUrl: 'http://a.test/v1', model: 'm', apiKey: '' } } as GatewayModelEntry;
  model.deployments = ['a', 'b', 'c'].map((name, priority): UpstreamDeploymentEntry => ({
    name, priority, weight: 1, upstream: { ...model.upstream, baseUrl: `http://${name}.test/v1` }, served: model,
  }));
  return model;
}

/** What the loop told the hold: the deployment of each attempt and the failed attempts it recorded. */
function recordingHold() {
  const attempted: string[] = [];
  const recorded: Array<[number, string, string]> = [];
  const hold = {
    attemptOn: (deployment: UpstreamDeploymentEntry) => { attempted.push(deployment.name); },
    failedAttempt: (attempt: number, deployment: UpstreamDeploymentEntry, outcome: string) => { recorded.push([attempt, deployment.name, outcome]); },
  } as unknown as Hold;
  return { hold, attempted, recorded };
}

function routingWith(maxAttempts: number, deadlineMs = 60_000): Routing & { failovers: () => number } {
  let failovers = 0;
  const router = new DeploymentRouter({ consecutiveFailures: 100, baseEjectionMs: 1_000, maxEjectionMs: 1_000 }, { now: () => 0, random: () => 0 }, {
    attempt() {}, ejected() {}, failedOver: () => { failovers += 1; },
  });
  return { router, policy: { maxAttempts, deadlineMs, attemptTimeoutMs: 100, upstreamTotalMs: 300_000 }, failovers: () => failovers };
}

const request = (name: string): UpstreamRequest => ({ path: '/chat/completions', headers: {}, body: name });
const timedOut = (): AttemptResult<string> => ({
  kind: 'failed', outcome: 'timeout', retryable: true, billable: { outcome: 'timeout', usage: { promptTokens: 10, completionTokens: 0 } },
  giveUp: () => Promise.reject(new Error('gave up after a timeout')),
});
const refused = (retryable: boolean): AttemptResult<string> => ({
  kind: 'failed', outcome: retryable ? 'http_5xx' : 'http_error', retryable, giveUp: () => Promise.reject(new Error(`gave up: ${retryable ? '5xx' : '4xx'}`)),
});

describe('runAttempts', () => {
  it('goes on past retryable failures to the deployment that answers, recording only the billable ones that failed over', async () => {
    const model = threeDeploymentModel();
    const routing = routingWith(3);
    const { hold, attempted, recorded } = recordingHold();
    const route = planRoute(routing, model, (deployment) => request(deployment.name));
    const timeouts: Array<number | undefined> = [];
    const totals: Array<number | undefined> = [];
    const answer = await runAttempts(routing, model, hold, route, async (deployment, sent, limits) => {
      timeouts.push(limits?.headersTimeoutMs);
      totals.push(limits?.totalTimeoutMs);
      expect(sent.body).toBe(deployment.name);
      if (deployment.name === 'a') return timedOut();
      if (deployment.name === 'b') return refused(true);
      return { kind: 'answered', value: `answer of ${deployment.name}` };
    });
    expect(answer).toBe('answer of c');
    expect(attempted).toEqual(['a', 'b', 'c']);
    expect(recorded).toEqual([[1, 'a', 'timeout']]);
    expect(routing.failovers()).toBe(2);
    // The attempt timeout for all but the last deployment, which has the rest of the deadline.
    expect(timeouts.slice(0, 2)).toEqual([100, 100]);
    expect(timeouts[2]).toBeGreaterThan(100);
    // The first attempt has the transport's whole-call time; the later ones what is left of it.
    expect(totals[0]).toBeUndefined();
    expect(totals[1]).toBeLessThanOrEqual(300_000);
    expect(totals[2]).toBeLessThanOrEqual(totals[1]!);
  });

  it('answers a failure that is not retryable at once, and the last failure when attempts run out', async () => {
    const model = threeDeploymentModel();
    const { hold, attempted } = recordingHold();
    const routing = routingWith(3);
    await expect(runAttempts(routing, model, hold, planRoute(routing, model, (d) => request(d.name)), async () => refused(false))).rejects.toThrow('gave up: 4xx');
    expect(attempted).toEqual(['a']);

    const two = routingWith(2);
    const second = recordingHold();
    await expect(runAttempts(two, model, second.hold, planRoute(two, model, (d) => request(d.name)), async () => timedOut())).rejects.toThrow('gave up after a timeout');
    expect(second.attempted).toEqual(['a', 'b']);
    // Only the attempt that failed over is recorded; the last one's money is its giveUp's.
    expect(second.recorded).toEqual([[1, 'a', 'timeout']]);
  });

  it('starts no attempt after the deadline', async () => {
    const model = threeDeploymentModel();
    const routing = routingWith(3, 1);
    const { hold, attempted } = recordingHold();
    await expect(runAttempts(routing, model, hold, planRoute(routing, model, (d) => request(d.name)), async () => {
      await new Promise((resolve) => setTimeout(resolve, 5));
      return refused(true);
    })).rejects.toThrow('gave up: 5xx');
    expect(attempted).toEqual(['a']);
  });

  it('skips a deployment whose provider cannot take the request; refuses when none can', async () => {
    const model = threeDeploymentModel();
    const routing = routingWith(3);
    const refusing = (names: string[]) => (deployment: UpstreamDeploymentEntry) => {
      if (names.includes(deployment.name)) throw new Error(`${deployment.name} cannot`);
      return request(deployment.name);
    };
    const route = planRoute(routing, model, refusing(['a', 'b']));
    expect(route.deployments.map((deployment) => deployment.name)).toEqual(['c']);
    expect(() => planRoute(routing, model, refusing(['a', 'b', 'c']))).toThrow('a cannot');
    const skipping = planRoute(routing, model, refusing(['b']));
    expect(skipping.build(model.deployments![1]!)).toBeUndefined();
  });

  it('classifies transport failures: connect errors, timeouts, 429 and 5xx are retried, other statuses and broken answers are not', () => {
    /** What failedCallResult says of a failure: its outcome and whether the next deployment may be tried. */
    const classified = (failed: Parameters<typeof failedCallResult>[0], stopped = false) => {
      const result = failedCallResult(failed, 7, stopped, () => Promise.resolve());
      return result.kind === 'failed' ? { outcome: result.outcome, retryable: result.retryable } : undefined;
    };
    expect(classified({ kind: 'unreachable', reason: 'x' })).toEqual({ outcome: 'connect_error', retryable: true });
    expect(classified({ kind: 'timeout', reason: 'x' })).toEqual({ outcome: 'timeout', retryable: true });
    expect(classified({ kind: 'http_error', statusCode: 429 })).toEqual({ outcome: 'http_429', retryable: true });
    expect(classified({ kind: 'http_error', statusCode: 502 })).toEqual({ outcome: 'http_5xx', retryable: true });
    expect(classified({ kind: 'http_error', statusCode: 400 })).toEqual({ outcome: 'http_error', retryable: false });
    expect(classified({ kind: 'failed', reason: 'x' })).toEqual({ outcome: 'bad_response', retryable: false });
  });

  it('keeps a 429\'s Retry-After, bills a timeout\'s prompt as its provider may have, and never retries a stopped request', () => {
    expect(failedCallResult({ kind: 'http_error', statusCode: 429, retryAfterMs: 1500 }, 7, false, () => Promise.resolve()))
      .toMatchObject({ outcome: 'http_429', retryAfterMs: 1500, billable: undefined });
    expect(failedCallResult({ kind: 'timeout', reason: 'x' }, 7, false, () => Promise.resolve()))
      .toMatchObject({ billable: { outcome: 'timeout', usage: { promptTokens: 7, completionTokens: 0 } } });
    expect(failedCallResult({ kind: 'unreachable', reason: 'x' }, 7, true, () => Promise.resolve())).toMatchObject({ retryable: false });
  });
});
