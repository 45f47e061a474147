/**
 * Two proxy processes share one organisation's RPM pool in Redis exactly: with a limit of N,
 * exactly N requests succeed across both, the rest get RateLimitError with OpenAI's headers.
 */
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testPostgresUrl, testRedisUrl, uniqueRedisPrefix } from '@gateway/testkit';
import { e2eCostMicros, startE2eGateway, type E2eGateway } from '../support/e2e-gateway.ts';

const serverUrl = testPostgresUrl();
const redisUrl = testRedisUrl();
const rpmLimit = 5;

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
    const attempts = await Promise.all(Array.from({ length: 14 }, async (_, i) => {
      try {
        const completion = await clients[i % 2]!.chat.completions.create({
          model: gateway.modelSlug, messages: [{ role: 'user', content: 'hi [[fake:reply_words=2]]' }],
        });
        return { proxy: i % 2, ok: true as const, usage: completion.usage! };
      } catch (error) {
        return { proxy: i % 2, ok: false as const, error };
      }
    }));
    const admitted = attempts.filter((a) => a.ok);
    const refused = attempts.filter((a) => !a.ok);
    expect(admitted).toHaveLength(rpmLimit);
    expect(refused).toHaveLength(14 - rpmLimit);
    for (const attempt of refused) {
      const error = attempt.error as InstanceType<typeof OpenAI.RateLimitError>;
      expect(error).toBeInstanceOf(OpenAI.RateLimitError);
      expect(error.code).toBe('rate_limit_exceeded');
      expect((error.error as { message: string }).message).toBe('Rate limit exceeded');
      expect(Number(error.headers?.get('retry-after'))).toBeGreaterThanOrEqual(1);
      expect(error.headers?.get('x-ratelimit-limit-requests')).toBe(String(rpmLimit));
      expect(error.headers?.get('x-ratelimit-remaining-requests')).toBe('0');
    }
    // Both proxies drew from the one pool (neither could have admitted 5 on its own).
    expect(new Set(attempts.map((a) => a.proxy)).size).toBe(2);

    // Only the admitted requests cost anything: each prompt is 2 words + 3, each reply 2 words.
    const expectedDebit = e2eCostMicros(5, 2) * BigInt(rpmLimit);
    for (const attempt of admitted) if (attempt.ok) expect(attempt.usage).toMatchObject({ prompt_tokens: 5, completion_tokens: 2 });
    const balance = await gateway.settledBalance();
    expect(balance).toMatchObject({ held_micros: '0', debited_micros: expectedDebit.toString() });
    expect((await gateway.admin('GET', `/organisations/${gateway.organisationId}/usage`)).data).toHaveLength(rpmLimit);
  });
});
