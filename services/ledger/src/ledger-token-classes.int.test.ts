import { ledgerV1 } from '@gateway/contracts';
import { testPostgresUrl } from '@gateway/testkit';
import { describe, expect, it } from 'vitest';
import { applyLedgerOperations, type LedgerOperation } from './domain/apply-ledger-operations.ts';
import { expireDueReservations } from './domain/expire-due-reservations.ts';
import { findBalanceDifferences } from './domain/find-balance-differences.ts';
import { settle, type SettleInput } from './domain/settle.ts';
import { balancesOf, fundedOrganisation, uniqueId } from './testing/start-test-ledger.ts';
import { useTestLedger } from './testing/ledger-test-setup.ts';

const { SettleResult } = ledgerV1;
const serverUrl = testPostgresUrl();

/** A usage priced by class: 100 input tokens of which 60 cached and 10 written for an hour; 30 output of which 20 reasoning. */
const classes = [
  { tokenClass: 'input', tokens: 30n, costMicros: 90n, providerCostMicros: 60n },
  { tokenClass: 'cached_input', tokens: 60n, costMicros: 18n, providerCostMicros: 12n },
  { tokenClass: 'cache_write_1h', tokens: 10n, costMicros: 60n, providerCostMicros: 40n },
  { tokenClass: 'output', tokens: 10n, costMicros: 150n, providerCostMicros: 100n },
  { tokenClass: 'reasoning', tokens: 20n, costMicros: 300n, providerCostMicros: 200n },
];

/**
 * Token classes on usage records: a Settle's usage by class is validated against its
 * totals (CONSERVATION: the classes' costs sum to cost_micros), kept on the record, listed by
 * ListUsage, and part of the settle's idempotency payload; the wallet pays cost_micros as before.
 */
describe.skipIf(!serverUrl)('token classes on usage records', () => {
  const ledger = useTestLedger('postgres', { serverUrl, sweepIntervalMs: 600_000, conservation: 'after-each' });

  it('stores and lists the classes, debits their sum, and treats different classes as an idempotency conflict', async () => {
    const organisationId = await fundedOrganisation(ledger, 1_000_000n);
    const reservationId = uniqueId('classes');
    await ledger.reserve({ reservationId, organisationId, amountMicros: 10_000n });
    const usage = {
      reservationId, inputTokens: 100n, outputTokens: 30n, costMicros: 618n, providerCostMicros: 412n, requestId: 'req-classes', tokenClasses: classes,
    };
    const settled = await ledger.settle(usage);
    expect(settled).toMatchObject({ result: SettleResult.SETTLE_RESULT_OK, debitedMicros: 618n, releasedMicros: 10_000n - 618n });
    expect(await balancesOf(ledger, organisationId)).toEqual({
      creditedMicros: 1_000_000n, availableMicros: 1_000_000n - 618n, heldMicros: 0n, debitedMicros: 618n,
    });
    const listed = await ledger.listUsage({ organisationId });
    expect(listed.records).toEqual([expect.objectContaining({ reservationId, costMicros: 618n, providerCostMicros: 412n, tokenClasses: classes })]);

    expect(await ledger.settle(usage)).toEqual(settled);
    const moved = [{ ...classes[0]!, tokens: 40n }, { ...classes[1]!, tokens: 50n }, ...classes.slice(2)];
    expect((await ledger.settle({ ...usage, tokenClasses: moved })).result).toBe(SettleResult.SETTLE_RESULT_IDEMPOTENCY_CONFLICT);
    expect((await ledger.settle({ ...usage, tokenClasses: [] })).result).toBe(SettleResult.SETTLE_RESULT_IDEMPOTENCY_CONFLICT);
  });

  it('keeps the classes of a carved Settle (a Reserve the proxy carved from a grant) on its record', async () => {
    const organisationId = await fundedOrganisation(ledger, 1_000_000n);
    const grantId = uniqueId('grant');
    await ledger.acquireGrant({ grantId, organisationId, minMicros: 1_000n, wantMicros: 50_000n });
    const reservationId = uniqueId('carve');
    const answer = await ledger.settle({
      reservationId, grantId, reservedMicros: 10_000n, inputTokens: 100n, outputTokens: 30n, costMicros: 618n, providerCostMicros: 412n, tokenClasses: classes,
    });
    expect(answer.result).toBe(SettleResult.SETTLE_RESULT_OK);
    const listed = await ledger.listUsage({ organisationId });
    expect(listed.records).toEqual([expect.objectContaining({ reservationId, costMicros: 618n, tokenClasses: classes })]);
  });

  it('lists a plain usage with no classes', async () => {
    const organisationId = await fundedOrganisation(ledger, 1_000_000n);
    const reservationId = uniqueId('plain');
    await ledger.reserve({ reservationId, organisationId, amountMicros: 1_000n });
    expect((await ledger.settle({ reservationId, inputTokens: 5n, outputTokens: 5n, costMicros: 10n })).result).toBe(SettleResult.SETTLE_RESULT_OK);
    expect((await ledger.listUsage({ organisationId })).records).toEqual([expect.objectContaining({ reservationId, tokenClasses: [] })]);
  });

  it('refuses classes that do not describe the usage as INVALID_ARGUMENT and writes nothing', async () => {
    const organisationId = await fundedOrganisation(ledger, 1_000_000n);
    const base = { inputTokens: 100n, outputTokens: 30n, costMicros: 618n, providerCostMicros: 412n };
    const cases: Array<[string, typeof classes]> = [
      ['costs sum to 617, not cost_micros 618', [{ ...classes[0]!, costMicros: 89n }, ...classes.slice(1)]],
      ['input-side tokens sum to 99, not input_tokens 100', [{ ...classes[0]!, tokens: 29n }, ...classes.slice(1)]],
      ['unknown token_class "web_search"', [...classes.slice(0, 4), { ...classes[4]!, tokenClass: 'web_search' }]],
      ['input is given twice', [...classes, { tokenClass: 'input', tokens: 0n, costMicros: 0n, providerCostMicros: 0n }]],
      ['provider costs sum to 413, more than provider_cost_micros 412', [{ ...classes[0]!, providerCostMicros: 61n }, ...classes.slice(1)]],
    ];
    for (const [problem, tokenClasses] of cases) {
      const reservationId = uniqueId('bad');
      await ledger.reserve({ reservationId, organisationId, amountMicros: 10_000n });
      const before = await ledger.countRows();
      const answer = await ledger.settle({ reservationId, ...base, tokenClasses });
      expect([answer.result, answer.detail]).toEqual([SettleResult.SETTLE_RESULT_INVALID_ARGUMENT, expect.stringContaining(problem)]);
      expect(await ledger.countRows()).toEqual(before);
      await ledger.release({ reservationId });
    }
  });

  it('sums the classes per daily row in SummarizeUsage, for whole days (roll-ups) and edge days (raw records), and counts the rest as unclassified', async () => {
    const organisationId = await fundedOrganisation(ledger, 1_000_000n);
    const classed = uniqueId('classed');
    await ledger.reserve({ reservationId: classed, organisationId, amountMicros: 10_000n });
    expect((await ledger.settle({ reservationId: classed, inputTokens: 100n, outputTokens: 30n, costMicros: 618n, providerCostMicros: 412n, tokenClasses: classes })).result)
      .toBe(SettleResult.SETTLE_RESULT_OK);
    const plain = uniqueId('plain');
    await ledger.reserve({ reservationId: plain, organisationId, amountMicros: 1_000n });
    expect((await ledger.settle({ reservationId: plain, inputTokens: 5n, outputTokens: 5n, costMicros: 10n, providerCostMicros: 7n })).result)
      .toBe(SettleResult.SETTLE_RESULT_OK);
    const grantId = uniqueId('grant');
    await ledger.acquireGrant({ grantId, organisationId, minMicros: 1_000n, wantMicros: 50_000n });
    expect((await ledger.settle({
      reservationId: uniqueId('carve'), grantId, reservedMicros: 10_000n, inputTokens: 100n, outputTokens: 30n, costMicros: 618n, providerCostMicros: 412n, tokenClasses: classes,
    })).result).toBe(SettleResult.SETTLE_RESULT_OK);
    // EXPIRY: a stream that checkpointed 1,000 µ₹ and never settled is charged that, with no classes.
    const stream = uniqueId('stream');
    await ledger.reserve({ reservationId: stream, organisationId, amountMicros: 50_000n });
    await ledger.checkpoint({ reservationId: stream, sequence: 1n, outputTokens: 10n, costMicros: 1_000n });
    await ledger.database.query("UPDATE reservations SET expires_at = now() - interval '1 second' WHERE id = $1", [stream]);
    await expireDueReservations(ledger.database, 500);
    const { rows: [charged] } = await ledger.database.query<{ cost: string }>(
      'SELECT cost_micros::text AS cost FROM usage_records WHERE reservation_id = $1', [stream]);
    expect(charged?.cost).toBe('1000');

    const { rows: [today] } = await ledger.database.query<{ from_ms: string; to_ms: string }>(
      `SELECT (extract(epoch FROM date_trunc('day', now() AT TIME ZONE 'Asia/Kolkata') AT TIME ZONE 'Asia/Kolkata') * 1000)::bigint::text AS from_ms,
         (extract(epoch FROM (date_trunc('day', now() AT TIME ZONE 'Asia/Kolkata') + interval '1 day') AT TIME ZONE 'Asia/Kolkata') * 1000)::bigint::text AS to_ms`);
    const dayFrom = BigInt(today!.from_ms);
    const dayTo = BigInt(today!.to_ms);
    const doubled = [...classes].sort((a, b) => a.tokenClass.localeCompare(b.tokenClass))
      .map((c) => ({ ...c, tokens: c.tokens * 2n, costMicros: c.costMicros * 2n, providerCostMicros: c.providerCostMicros * 2n }));
    // Whole day (roll-ups alone) and the same day as an edge (from 1 ms after midnight: raw records).
    for (const [fromMs, toMs] of [[dayFrom, dayTo], [dayFrom + 1n, dayTo]] as const) {
      const { rows } = await ledger.summarizeUsage({ organisationId, fromMs, toMs });
      expect(rows).toHaveLength(1);
      expect(rows[0]).toMatchObject({
        requests: 4n, costMicros: 618n + 10n + 618n + 1_000n, debitedMicros: 618n + 10n + 618n + 1_000n,
        unclassifiedRequests: 2n, tokenClasses: doubled,
      });
      // CONSERVATION: the classes' cost plus the unclassified records' cost is the row's cost.
      expect(rows[0]!.tokenClasses.reduce((sum, c) => sum + c.costMicros, 0n) + 10n + 1_000n).toBe(rows[0]!.costMicros);
    }
  });

  it('rolls up a set-based batch of classed, plain and carved Settles once per key and class (the row trigger skips its records)', async () => {
    const organisationId = await fundedOrganisation(ledger, 1_000_000n);
    const held = [uniqueId('batch'), uniqueId('batch'), uniqueId('batch'), uniqueId('batch')];
    for (const reservationId of held) await ledger.reserve({ reservationId, organisationId, amountMicros: 10_000n });
    const grantId = uniqueId('grant');
    await ledger.acquireGrant({ grantId, organisationId, minMicros: 1_000n, wantMicros: 50_000n });
    const base = { modelSlug: 'test-model', usageSource: 'upstream', requestId: 'req-batch', overrunOutputTokens: 0n } as const;
    const classed = { ...base, inputTokens: 100n, outputTokens: 30n, costMicros: 618n, providerCostMicros: 412n, tokenClasses: classes };
    const plain = { ...base, inputTokens: 5n, outputTokens: 5n, costMicros: 10n, providerCostMicros: 7n };
    const inputs: SettleInput[] = [
      { ...classed, reservationId: held[0]! }, { ...plain, reservationId: held[1]! }, { ...classed, reservationId: held[2]! },
      { ...plain, reservationId: held[3]! }, { ...classed, reservationId: uniqueId('carve'), grantId, reservedMicros: 10_000n },
    ];
    // The five Settles as one batch, the way the batcher sends them (operations collected, then one call).
    const collected: LedgerOperation[] = [];
    const runner = { run: (operation: LedgerOperation) => { collected.push(operation); return new Promise<never>(() => {}); } };
    for (const input of inputs) void settle(runner, input);
    const { rows: [before] } = await ledger.database.query<{ calls: string }>("SELECT count(*)::text AS calls FROM usage_records WHERE request_id = 'req-batch'");
    expect(before?.calls).toBe('0');
    const answers = await applyLedgerOperations(ledger.database, collected);
    expect(answers.map((answer) => answer.ok && answer.result)).toEqual(['ok', 'ok', 'ok', 'ok', 'ok']);

    const { rows } = await ledger.database.query<{ requests: string; unclassified: string; classes: string }>(
      `SELECT d.requests::text, d.unclassified_requests::text AS unclassified,
         (SELECT string_agg(c.token_class || ':' || c.tokens || ':' || c.cost_micros || ':' || c.provider_cost_micros, ',' ORDER BY c.token_class)
          FROM usage_daily_classes c WHERE c.organisation_id = d.organisation_id AND c.day = d.day) AS classes
       FROM usage_daily d WHERE d.organisation_id = $1`, [organisationId]);
    const tripled = [...classes].sort((a, b) => a.tokenClass.localeCompare(b.tokenClass))
      .map((c) => `${c.tokenClass}:${c.tokens * 3n}:${c.costMicros * 3n}:${c.providerCostMicros * 3n}`).join(',');
    expect(rows).toEqual([{ requests: '5', unclassified: '2', classes: tripled }]);
    expect(await findBalanceDifferences(ledger.database)).toEqual([]);
  });

  it('Verify reports a roll-up whose class figure is not its records\' sum (CONSERVATION by token class)', async () => {
    const organisationId = await fundedOrganisation(ledger, 1_000_000n);
    const reservationId = uniqueId('verified');
    await ledger.reserve({ reservationId, organisationId, amountMicros: 10_000n });
    await ledger.settle({ reservationId, inputTokens: 100n, outputTokens: 30n, costMicros: 618n, providerCostMicros: 412n, tokenClasses: classes });
    const corrupt = (delta: number) => ledger.database.query(
      "UPDATE usage_daily_classes SET cost_micros = cost_micros + $2 WHERE organisation_id = $1 AND token_class = 'reasoning'", [organisationId, delta]);
    await corrupt(1);
    const differences = await findBalanceDifferences(ledger.database);
    expect(differences.map((difference) => [difference.organisationId, difference.usageRollup?.column, difference.accountMicros, difference.recomputedMicros]))
      .toEqual([
        [organisationId, 'cost_micros_by_class', 618n, 619n],
        [organisationId, 'reasoning.cost_micros', 301n, 300n],
      ]);
    await corrupt(-1);
    expect(await findBalanceDifferences(ledger.database)).toEqual([]);
  });
});
