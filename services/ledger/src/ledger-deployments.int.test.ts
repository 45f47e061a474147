import { ledgerV1 } from '@gateway/contracts';
import { testPostgresUrl } from '@gateway/testkit';
import { describe, expect, it } from 'vitest';
import { expireDueReservations } from './domain/expire-due-reservations.ts';
import { balancesOf, fundedOrganisation, uniqueId } from './testing/start-test-ledger.ts';
import { useTestLedger } from './testing/ledger-test-setup.ts';

const { SettleResult, ReleaseResult, CheckpointResult } = ledgerV1;
const serverUrl = testPostgresUrl();

/** A failed attempt its provider may have billed: 100 prompt tokens at the deployment's 2 µ₹ each. */
function timedOut(attempt: number, deployment: string): ledgerV1.ProviderAttempt {
  return { attempt, deployment, outcome: 'timeout', inputTokens: 100n, outputTokens: 0n, providerCostMicros: 200n };
}

/**
 * Upstream deployments on the ledger (issue 29): a Settle names the deployment that answered and
 * the failed attempts its provider may have billed; the record keeps the deployment, the attempts
 * are kept once, nothing of it moves money, and both are part of the settle's idempotency payload.
 */
describe.skipIf(!serverUrl)('deployments and failed attempts', () => {
  const ledger = useTestLedger('postgres', { serverUrl, sweepIntervalMs: 600_000, conservation: 'after-each' });

  async function attemptsOf(reservationId: string): Promise<Array<Record<string, unknown>>> {
    const { rows } = await ledger.database.query<Record<string, unknown>>(
      `SELECT attempt, deployment, outcome, input_tokens, output_tokens, provider_cost_micros, model_slug, organisation_id
       FROM provider_attempts WHERE reservation_id = $1 ORDER BY attempt`, [reservationId]);
    return rows;
  }

  it('keeps the answering deployment on the record and the failed attempts once; the wallet pays only the answer', async () => {
    const organisationId = await fundedOrganisation(ledger, 1_000_000n);
    const reservationId = uniqueId('dep');
    await ledger.reserve({ reservationId, organisationId, amountMicros: 10_000n, modelSlug: 'chat-x' });
    const usage = {
      reservationId, inputTokens: 100n, outputTokens: 20n, costMicros: 500n, providerCostMicros: 300n, modelSlug: 'chat-x',
      deployment: 'backup-eu', failedAttempts: [timedOut(1, 'primary')],
    };
    const settled = await ledger.settle(usage);
    expect(settled).toMatchObject({ result: SettleResult.SETTLE_RESULT_OK, debitedMicros: 500n });
    expect(await balancesOf(ledger, organisationId)).toEqual({
      creditedMicros: 1_000_000n, availableMicros: 999_500n, heldMicros: 0n, debitedMicros: 500n,
    });
    expect((await ledger.listUsage({ organisationId })).records).toEqual([
      expect.objectContaining({ reservationId, deployment: 'backup-eu', costMicros: 500n, providerCostMicros: 300n }),
    ]);
    expect(await attemptsOf(reservationId)).toEqual([{
      attempt: 1, deployment: 'primary', outcome: 'timeout', input_tokens: 100n, output_tokens: 0n, provider_cost_micros: 200n,
      model_slug: 'chat-x', organisation_id: organisationId,
    }]);

    // A replay answers the same and writes nothing twice; another deployment or other attempts are a conflict.
    expect(await ledger.settle(usage)).toEqual(settled);
    expect(await attemptsOf(reservationId)).toHaveLength(1);
    expect((await ledger.settle({ ...usage, deployment: 'primary' })).result).toBe(SettleResult.SETTLE_RESULT_IDEMPOTENCY_CONFLICT);
    expect((await ledger.settle({ ...usage, failedAttempts: [timedOut(1, 'primary'), timedOut(2, 'backup-us')] })).result)
      .toBe(SettleResult.SETTLE_RESULT_IDEMPOTENCY_CONFLICT);
    expect(await attemptsOf(reservationId)).toHaveLength(1);
    expect((await ledger.listUsage({ organisationId })).records).toHaveLength(1);
  });

  it('names the deployment of every record of a set-based batch and of a carved Settle', async () => {
    const organisationId = await fundedOrganisation(ledger, 1_000_000n);
    const ids = Array.from({ length: 6 }, (_, index) => uniqueId(`batch${index}`));
    await Promise.all(ids.map((reservationId) => ledger.reserve({ reservationId, organisationId, amountMicros: 1_000n })));
    const answers = await Promise.all(ids.map((reservationId, index) => ledger.settle({
      reservationId, inputTokens: 10n, outputTokens: 10n, costMicros: 100n, providerCostMicros: 50n,
      deployment: index % 2 === 0 ? 'primary' : 'second', failedAttempts: index === 1 ? [timedOut(1, 'primary')] : [],
    })));
    expect(answers.map((answer) => answer.result)).toEqual(ids.map(() => SettleResult.SETTLE_RESULT_OK));

    const grantId = uniqueId('grant');
    await ledger.acquireGrant({ grantId, organisationId, minMicros: 1_000n, wantMicros: 50_000n });
    const carved = uniqueId('carve');
    expect((await ledger.settle({
      reservationId: carved, grantId, reservedMicros: 1_000n, inputTokens: 10n, outputTokens: 10n, costMicros: 100n,
      providerCostMicros: 70n, deployment: 'third', failedAttempts: [timedOut(1, 'primary'), timedOut(2, 'second')],
    })).result).toBe(SettleResult.SETTLE_RESULT_OK);

    const records = (await ledger.listUsage({ organisationId })).records;
    const deploymentOf = new Map(records.map((record) => [record.reservationId, record.deployment]));
    expect(ids.map((id) => deploymentOf.get(id))).toEqual(['primary', 'second', 'primary', 'second', 'primary', 'second']);
    expect(deploymentOf.get(carved)).toBe('third');
    expect((await attemptsOf(ids[1]!)).map((row) => row.deployment)).toEqual(['primary']);
    expect((await attemptsOf(carved)).map((row) => row.deployment)).toEqual(['primary', 'second']);
  });

  it('keeps a Release\'s failed attempts once and moves no money for them', async () => {
    const organisationId = await fundedOrganisation(ledger, 1_000_000n);
    const reservationId = uniqueId('rel');
    await ledger.reserve({ reservationId, organisationId, amountMicros: 10_000n, modelSlug: 'chat-y' });
    const request = { reservationId, reason: 'upstream_failed', failedAttempts: [timedOut(1, 'primary'), { ...timedOut(2, 'second'), outcome: 'stream_broken', outputTokens: 5n }] };
    expect((await ledger.release(request)).result).toBe(ReleaseResult.RELEASE_RESULT_OK);
    expect((await ledger.release(request)).result).toBe(ReleaseResult.RELEASE_RESULT_OK);
    expect((await attemptsOf(reservationId)).map((row) => [row.attempt, row.deployment, row.outcome, row.model_slug]))
      .toEqual([[1, 'primary', 'timeout', 'chat-y'], [2, 'second', 'stream_broken', 'chat-y']]);
    expect(await balancesOf(ledger, organisationId)).toEqual({
      creditedMicros: 1_000_000n, availableMicros: 1_000_000n, heldMicros: 0n, debitedMicros: 0n,
    });
  });

  it('names the streaming deployment on the provisional record an expiry writes, and a late Settle keeps it', async () => {
    const organisationId = await fundedOrganisation(ledger, 1_000_000n);
    const reservationId = uniqueId('exp');
    await ledger.reserve({ reservationId, organisationId, amountMicros: 10_000n });
    expect((await ledger.checkpoint({ reservationId, sequence: 1n, inputTokens: 10n, outputTokens: 5n, costMicros: 70n, deployment: 'second' })).result)
      .toBe(CheckpointResult.CHECKPOINT_RESULT_OK);
    // A later checkpoint cannot rename it.
    expect((await ledger.checkpoint({ reservationId, sequence: 2n, inputTokens: 10n, outputTokens: 6n, costMicros: 80n, deployment: 'third' })).result)
      .toBe(CheckpointResult.CHECKPOINT_RESULT_OK);
    await ledger.database.query("UPDATE reservations SET expires_at = now() - interval '1 second' WHERE id = $1", [reservationId]);
    await expireDueReservations(ledger.database, 500);
    expect((await ledger.listUsage({ organisationId })).records).toEqual([expect.objectContaining({ reservationId, deployment: 'second', costMicros: 80n })]);
    expect((await ledger.settle({ reservationId, inputTokens: 10n, outputTokens: 9n, costMicros: 110n })).result).toBe(SettleResult.SETTLE_RESULT_OK);
    expect((await ledger.listUsage({ organisationId })).records).toEqual([expect.objectContaining({ reservationId, deployment: 'second', costMicros: 110n })]);
  });

  it('refuses a malformed deployment or attempt as INVALID_ARGUMENT and writes nothing', async () => {
    const organisationId = await fundedOrganisation(ledger, 1_000_000n);
    const cases: Array<Partial<ledgerV1.SettleRequest>> = [
      { deployment: 'Bad Name' },
      { failedAttempts: [{ ...timedOut(1, 'primary'), outcome: 'http_503' }] },
      { failedAttempts: [timedOut(1, 'primary'), timedOut(1, 'second')] },
      { failedAttempts: [{ ...timedOut(0, 'primary') }] },
      { failedAttempts: [{ ...timedOut(1, 'primary'), providerCostMicros: -1n }] },
    ];
    for (const extra of cases) {
      const reservationId = uniqueId('bad');
      await ledger.reserve({ reservationId, organisationId, amountMicros: 1_000n });
      const answer = await ledger.settle({ reservationId, inputTokens: 1n, outputTokens: 1n, costMicros: 10n, ...extra });
      expect(answer.result).toBe(SettleResult.SETTLE_RESULT_INVALID_ARGUMENT);
      expect(await attemptsOf(reservationId)).toEqual([]);
      expect((await ledger.release({ reservationId, reason: 'cleanup' })).result).toBe(ReleaseResult.RELEASE_RESULT_OK);
    }
    expect((await ledger.listUsage({ organisationId })).records).toEqual([]);
  });

  it('summarizes requests, cost, provider cost and failed attempts per model and deployment', async () => {
    const organisationId = await fundedOrganisation(ledger, 1_000_000n);
    const model = uniqueId('sum-model').toLowerCase();
    const fromMs = BigInt(Date.now() - 1_000);
    for (const [deployment, failed] of [['primary', []], ['primary', []], ['second', [timedOut(1, 'primary')]]] as const) {
      const reservationId = uniqueId('sum');
      await ledger.reserve({ reservationId, organisationId, amountMicros: 1_000n, modelSlug: model });
      await ledger.settle({ reservationId, inputTokens: 10n, outputTokens: 10n, costMicros: 100n, providerCostMicros: 60n, modelSlug: model, deployment, failedAttempts: [...failed] });
    }
    const rows = (await ledger.summarizeDeployments({ fromMs, toMs: 0n })).rows.filter((row) => row.modelSlug === model);
    expect(rows).toEqual([
      { modelSlug: model, deployment: 'primary', requests: 2n, costMicros: 200n, providerCostMicros: 120n, failedAttempts: 1n, failedAttemptProviderCostMicros: 200n },
      { modelSlug: model, deployment: 'second', requests: 1n, costMicros: 100n, providerCostMicros: 60n, failedAttempts: 0n, failedAttemptProviderCostMicros: 0n },
    ]);
  });
});
