/**
 * Two proxy processes share one organisation's RPM pool in Redis exactly: with a limit of N,
 * exactly N requests succeed across both, the rest get RateLimitError with OpenAI's headers.
 * Each proxy's own request log shows it decided the requests sent to it, so the N are one
 * pool's (two pools, one per process, would admit up to 2N).
 */
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testPostgresUrl, testRedisUrl, uniqueRedisPrefix } from '@gateway/testkit';
import { e2eCostMicros, startE2eGateway, type E2eGateway } from '../support/e2e-gateway.ts';
import type { ServiceProcess } from '../support/service-processes.ts';

const serverUrl = testPostgresUrl();
const redisUrl = testRedisUrl();
const rpmLimit = 5;
const attemptCount = 14;
const requestIdPrefix = 'proxy-rpm-e2e-';

/** The `x-request-id` of attempt `i`, sent through proxy `i % 2`. */
function requestIdOf(i: number): string {
  return `${requestIdPrefix}${i}`;
}

/** requestId -> HTTP status of the request lines one proxy process has logged for this test. */
function loggedStatuses(proxy: ServiceProcess): Map<string, number> {
  const statuses = new Map<string, number>();
  // Only whole lines: the last one may still be arriving (the next poll reads it complete).
  for (const text of proxy.output().split('\n').slice(0, -1)) {
    if (!text.startsWith('{')) continue;
    const line = JSON.parse(text) as { msg?: string; requestId?: string; status?: number };
    if (line.msg === 'request' && line.requestId?.startsWith(requestIdPrefix) && line.status !== undefined) {
      statuses.set(line.requestId, line.status);
    }
  }
  return statuses;
}

describe.skipIf(!serverUrl || !redisUrl)('two proxies, one RPM pool', () => {
  let gateway: E2eGateway;

  beforeAll(async () => {
    gateway = await startE2eGateway({
      serverUrl: serverUrl!, proxies: 2, rpmLimit,
      proxyEnv: { REDIS_URL: redisUrl!, PROXY_REDIS_PREFIX: uniqueRedisPrefix('proxy-rpm-e2e') },
    });
  }, 120_000);
  afterAll(async () => { await gateway?.close(); });

  it(`admits exactly ${rpmLimit} requests across both proxies and refuses the rest with 429`, async () => {
    const clients = [gateway.client(0), gateway.client(1)];
    const attempts = await Promise.all(Array.from({ length: attemptCount }, async (_, i) => {
      const requestId = requestIdOf(i);
      try {
        const completion = await clients[i % 2]!.chat.completions.create({
          model: gateway.modelSlug, messages: [{ role: 'user', content: 'hi [[fake:reply_words=2]]' }],
        }, { headers: { 'x-request-id': requestId } });
        return { proxy: i % 2, requestId, ok: true as const, usage: completion.usage! };
      } catch (error) {
        return { proxy: i % 2, requestId, ok: false as const, error };
      }
    }));
    const admitted = attempts.filter((a) => a.ok);
    const refused = attempts.filter((a) => !a.ok);
    expect(admitted).toHaveLength(rpmLimit);
    expect(refused).toHaveLength(attemptCount - rpmLimit);
    for (const attempt of refused) {
      const error = attempt.error as InstanceType<typeof OpenAI.RateLimitError>;
      expect(error).toBeInstanceOf(OpenAI.RateLimitError);
      expect(error.code).toBe('rate_limit_exceeded');
      expect((error.error as { message: string }).message).toBe('Rate limit exceeded');
      expect(Number(error.headers?.get('retry-after'))).toBeGreaterThanOrEqual(1);
      expect(error.headers?.get('x-ratelimit-limit-requests')).toBe(String(rpmLimit));
      expect(error.headers?.get('x-ratelimit-remaining-requests')).toBe('0');
    }
    // Each proxy process logged exactly the requests sent to it, with the status its client saw:
    // the two clients reached two processes, each deciding its own half, and together they
    // admitted rpmLimit, not up to twice that, so both drew from the one pool in Redis. (Log
    // lines are written once a request's work is done, which may trail its response.)
    const proxies = gateway.services.filter((service) => service.name === 'proxy');
    expect(proxies).toHaveLength(2);
    for (const [index, proxy] of proxies.entries()) {
      const expected = new Map(attempts.filter((a) => a.proxy === index).map((a) => [a.requestId, a.ok ? 200 : 429]));
      await expect.poll(() => loggedStatuses(proxy), { timeout: 10_000, interval: 50 }).toEqual(expected);
    }

    // Only the admitted requests cost anything: each prompt is 2 words + 3, each reply 2 words.
    const expectedDebit = e2eCostMicros(5, 2) * BigInt(rpmLimit);
    for (const attempt of admitted) if (attempt.ok) expect(attempt.usage).toMatchObject({ prompt_tokens: 5, completion_tokens: 2 });
    const balance = await gateway.settledBalance();
    expect(balance).toMatchObject({ held_micros: '0', debited_micros: expectedDebit.toString() });
    expect((await gateway.admin('GET', `/organisations/${gateway.organisationId}/usage`)).data).toHaveLength(rpmLimit);
  });
});
