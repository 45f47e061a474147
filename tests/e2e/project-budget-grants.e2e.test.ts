/**
 * Money at the edges of credit grants, over proxy PROCESSES, asserted to the micro-rupee:
 * - PROJECT_BUDGET during traffic: a cap set while 3 proxies hold grants for the project binds
 *   every request that starts after the admin's PUT has answered (the ledger recalls the
 *   project's grants and answers only once their owners have), with 6 concurrent callers;
 * - a dead proxy's grant: SIGKILLed while its grant holds money, the money is back in the wallet
 *   as soon as the ledger sees its Operate stream end, and the other proxy answers exactly the
 *   balance's capacity, no false 402 (docs/proxy.md, "Credit grants").
 * Every request costs exactly its Reserve (grant-gateway.ts), so a Reserve that fits is a cost that fits.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testPostgresUrl, testRedisUrl } from '@gateway/testkit';
import { waitFor } from '../faults/support/fault-load.ts';
import {
  creditGrantsMode, exactRequestMicros, startGrantGateway, type ChatOutcome, type GrantGateway, type GrantOrganisation,
} from '../support/grant-gateway.ts';

const serverUrl = testPostgresUrl();
const redisUrl = testRedisUrl();

/** One request as a caller saw it: when it started (performance.now() of this process) and how it ended. */
interface TimedOutcome extends ChatOutcome {
  startedAtMs: number;
}

/** Callers, each sending exact requests one after another through its proxy until stopped. */
function startCallers(gateway: GrantGateway, organisation: GrantOrganisation, callers: number, prefix: string) {
  const outcomes: TimedOutcome[] = [];
  let stopping = false;
  const running = Promise.all(Array.from({ length: callers }, async (_, caller) => {
    for (let n = 0; !stopping; n += 1) {
      const startedAtMs = performance.now();
      const outcome = await gateway.exactChat(caller % gateway.proxies.length, organisation.apiKey, `${prefix}-c${caller}-${n}`);
      outcomes.push({ ...outcome, startedAtMs });
    }
  }));
  return { outcomes, async stop() { stopping = true; await running; } };
}

/** Status of an outcome, with 402's error code. */
const statusOf = (o: ChatOutcome) => (o.status === 402 ? `402 ${o.errorCode ?? ''}` : String(o.status));

/** How many outcomes ended with each status. */
function tally(outcomes: readonly ChatOutcome[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const o of outcomes) counts[statusOf(o)] = (counts[statusOf(o)] ?? 0) + 1;
  return counts;
}

describe.skipIf(!serverUrl || !redisUrl)(`project budgets and dead proxies with credit grants (PROXY_CREDIT_GRANTS=${creditGrantsMode})`, () => {
  describe('a cap set during traffic over 3 proxies', () => {
    let gateway: GrantGateway;
    beforeAll(async () => {
      // Grants live long, are never returned idle, and are sized by 20 s of recent spend, so each
      // proxy holds dozens of Reserves when the cap is set: only the budget change can take them back.
      gateway = await startGrantGateway({
        serverUrl: serverUrl!, redisUrl: redisUrl!, proxies: 3,
        proxyEnv: { PROXY_GRANT_IDLE_RETURN_MS: '600000', PROXY_GRANT_TTL_MS: '300000', PROXY_GRANT_WINDOW_MS: '20000' },
      });
    }, 120_000);
    afterAll(async () => { await gateway?.close(); });

    /** Waits until the organisation holds nothing but the grants' uncarved money, and every answered request is settled. */
    async function settledSpend(organisation: GrantOrganisation, answered: number) {
      await waitFor('every answered request settled', async () => (await gateway.usage(organisation.id)).length === answered, 30_000);
      return gateway.projectSpend(organisation.projectId);
    }

    it('a cap below what was spent refuses every request that starts after the PUT answered', async () => {
      const organisation = await gateway.createOrganisation('cap-below', 10_000_000n);
      const callers = startCallers(gateway, organisation, 6, 'below');
      await waitFor('steady traffic on every proxy', () => [0, 1, 2].every((p) => callers.outcomes.filter((o) => o.proxyIndex === p && o.status === 200).length >= 40), 60_000, 10);
      const answer = await gateway.setProjectBudget(organisation.projectId, 1n);
      const answeredAtMs = performance.now();
      const after = () => callers.outcomes.filter((o) => o.startedAtMs > answeredAtMs);
      await waitFor('each caller to send 5 requests after the PUT', () => after().length >= 30, 60_000, 10);
      await callers.stop();

      const before = callers.outcomes.filter((o) => o.startedAtMs <= answeredAtMs);
      console.log(`cap below spend: before the PUT answered ${JSON.stringify(tally(before))}, after ${JSON.stringify(tally(after()))}; PUT answered with settled ${answer.settledMicros} µ₹, held ${answer.heldMicros} µ₹`);
      expect(tally(after())).toEqual({ '402 budget_exceeded': after().length });
      const answered = callers.outcomes.filter((o) => o.status === 200).length;
      const spend = await settledSpend(organisation, answered);
      expect(spend.settledMicros).toBe(exactRequestMicros * BigInt(answered));
      const verify = await gateway.verify();
      expect(verify.exitCode, verify.line).toBe(0);
    }, 180_000);

    it('a cap with headroom is spent up to, never past, the cap by requests that start after the PUT answered', async () => {
      const organisation = await gateway.createOrganisation('cap-headroom', 10_000_000n);
      const callers = startCallers(gateway, organisation, 6, 'headroom');
      await waitFor('steady traffic on every proxy', () => [0, 1, 2].every((p) => callers.outcomes.filter((o) => o.proxyIndex === p && o.status === 200).length >= 40), 60_000, 10);
      // 40 requests of headroom over what is settled now (the grants hold far more than that).
      const now = await gateway.projectSpend(organisation.projectId);
      const capMicros = now.settledMicros + 40n * exactRequestMicros;
      const answer = await gateway.setProjectBudget(organisation.projectId, capMicros);
      const answeredAtMs = performance.now();
      const after = () => callers.outcomes.filter((o) => o.startedAtMs > answeredAtMs);
      await waitFor('every caller refused after the PUT', () => [0, 1, 2, 3, 4, 5].every((caller) =>
        after().some((o) => o.requestId.startsWith(`headroom-c${caller}-`) && o.status === 402)), 60_000, 10);
      await callers.stop();

      const answered = callers.outcomes.filter((o) => o.status === 200).length;
      // Requests that started before the PUT answered may settle past the cap (they were admitted under the old one).
      const answeredBefore = callers.outcomes.filter((o) => o.startedAtMs <= answeredAtMs && o.status === 200).length;
      const spend = await settledSpend(organisation, answered);
      const bound = capMicros > exactRequestMicros * BigInt(answeredBefore) ? capMicros : exactRequestMicros * BigInt(answeredBefore);
      console.log(`cap with headroom: cap ${capMicros} µ₹ set at settled ${now.settledMicros} µ₹ (the PUT answered with settled ${answer.settledMicros}, held ${answer.heldMicros}); ` +
        `${answeredBefore} answered before it, ${answered - answeredBefore} after (${JSON.stringify(tally(after()))}); settled in the end ${spend.settledMicros} µ₹ (bound ${bound})`);
      expect(spend.settledMicros).toBeLessThanOrEqual(bound);
      expect(spend.settledMicros).toBe(exactRequestMicros * BigInt(answered));
      expect(tally(after())['402 budget_exceeded']).toBeGreaterThan(0);
      const verify = await gateway.verify();
      expect(verify.exitCode, verify.line).toBe(0);
    }, 180_000);
  });

  describe('a SIGKILLed proxy\'s grant', () => {
    let gateway: GrantGateway;
    beforeAll(async () => {
      // Neither an idle return nor a deadline gives proxy 0's grant back during the test.
      gateway = await startGrantGateway({
        serverUrl: serverUrl!, redisUrl: redisUrl!, proxies: 2,
        proxyEnv: { PROXY_GRANT_IDLE_RETURN_MS: '600000', PROXY_GRANT_TTL_MS: '300000' },
      });
    }, 120_000);
    afterAll(async () => { await gateway?.close(); });

    it('is back in the wallet as soon as its Operate stream ends, and the other proxy answers exactly the capacity', async () => {
      const capacity = 40;
      const firstOnProxy0 = 2;
      const creditMicros = exactRequestMicros * BigInt(capacity);
      const organisation = await gateway.createOrganisation('dead-grant', creditMicros);
      for (let i = 0; i < firstOnProxy0; i += 1) expect((await gateway.exactChat(0, organisation.apiKey, `dead-p0-${i}`)).status).toBe(200);
      await waitFor('proxy 0\'s usage records', async () => (await gateway.usage(organisation.id)).length === firstOnProxy0, 15_000);
      const beforeKill = await gateway.balance(organisation.id);
      if (creditGrantsMode === 'on') expect(beforeKill.heldMicros).toBeGreaterThan(0n);

      const killedAtMs = performance.now();
      await gateway.kill(0);
      await waitFor('the dead proxy\'s grant back in the wallet', async () => (await gateway.balance(organisation.id)).heldMicros === 0n, 10_000, 10);
      console.log(`dead grant: ${beforeKill.heldMicros} µ₹ held by the killed proxy back in the wallet ${Math.round(performance.now() - killedAtMs)} ms after the kill`);

      const second: ChatOutcome[] = [];
      for (let i = 0; i < capacity - firstOnProxy0 + 5; i += 1) second.push(await gateway.exactChat(1, organisation.apiKey, `dead-p1-${String(i).padStart(2, '0')}`));
      expect(second.map(statusOf)).toEqual([...Array<string>(capacity - firstOnProxy0).fill('200'), ...Array<string>(5).fill('402 insufficient_balance')]);
      await waitFor('nothing held', async () => (await gateway.balance(organisation.id)).heldMicros === 0n, 30_000);
      expect(await gateway.balance(organisation.id)).toEqual({ creditedMicros: creditMicros, availableMicros: 0n, heldMicros: 0n, debitedMicros: creditMicros });
      const verify = await gateway.verify();
      expect(verify.exitCode, verify.line).toBe(0);
    }, 120_000);
  });
});
