import { beforeAll, describe, expect, it } from 'vitest';
import { credit } from './credit.ts';
import { findBalanceDifferences, recomputeBalances } from './find-balance-differences.ts';
import { openAccount } from './open-account.ts';
import { reserve } from './reserve.ts';
import { settle } from './settle.ts';
import { useLedgerDatabase } from '../testing/ledger-test-setup.ts';

/** The balance check must be able to fail: tampered rows are found, and the schema refuses the worst. */
describe('CONSERVATION: findBalanceDifferences over embedded PGlite', () => {
  const db = useLedgerDatabase('pglite');
  beforeAll(async () => {
    await openAccount(db, 'org-a');
    await credit(db, { creditId: 'c-1', organisationId: 'org-a', amountMicros: 5_000_000n, reason: '' });
    await reserve(db, {
      reservationId: 'r-1', organisationId: 'org-a', projectId: 'p', billingMode: 'commercial', amountMicros: 2_000_000n,
      ttlMs: 60_000n, modelSlug: 'm',
    });
    await reserve(db, {
      reservationId: 'r-2', organisationId: 'org-a', projectId: 'p', billingMode: 'commercial', amountMicros: 1_000_000n,
      ttlMs: 60_000n, modelSlug: 'm',
    });
    await settle(db, {
      reservationId: 'r-1', inputTokens: 1n, outputTokens: 1n, costMicros: 2_000_005n, providerCostMicros: 0n, modelSlug: 'm',
      usageSource: 'upstream', requestId: '', overrunOutputTokens: 0n,
    });
  });

  it('recomputes the balances from the movements and finds no difference in an honest ledger', async () => {
    expect(await recomputeBalances(db)).toEqual(new Map([['org-a', {
      creditedMicros: 5_000_000n, availableMicros: 1_999_995n, heldMicros: 1_000_000n, debitedMicros: 2_000_005n,
    }]]));
    expect(await findBalanceDifferences(db)).toEqual([]);
  });

  it('finds money that appeared in an account without a movement', async () => {
    await db.query("UPDATE accounts SET credited_micros = credited_micros + 7, available_micros = available_micros + 7 WHERE organisation_id = 'org-a'");
    try {
      expect(await findBalanceDifferences(db)).toEqual([
        { organisationId: 'org-a', check: 'movements', balance: 'credited', accountMicros: 5_000_007n, recomputedMicros: 5_000_000n },
        { organisationId: 'org-a', check: 'movements', balance: 'available', accountMicros: 2_000_002n, recomputedMicros: 1_999_995n },
        { organisationId: 'org-a', check: 'credits', balance: 'credited', accountMicros: 5_000_007n, recomputedMicros: 5_000_000n },
      ]);
    } finally {
      await db.query("UPDATE accounts SET credited_micros = credited_micros - 7, available_micros = available_micros - 7 WHERE organisation_id = 'org-a'");
    }
  });

  it('finds a hold that no held reservation explains', async () => {
    await db.query("UPDATE reservations SET status = 'released', resolved_at = now(), release_reason = 'x' WHERE id = 'r-2'");
    const differences = await findBalanceDifferences(db);
    expect(differences).toEqual([
      { organisationId: 'org-a', check: 'holds', balance: 'held', accountMicros: 1_000_000n, recomputedMicros: 0n },
    ]);
  });

  it('finds rows whose account, reservation or credit does not exist (the hot tables have no foreign keys)', async () => {
    // Written behind the ledger functions' back (append-only: they stay; no later test verifies).
    await db.query(`INSERT INTO reservations (id, organisation_id, project_id, billing_mode, amount_micros, model_slug, expires_at, request_fingerprint)
      VALUES ('r-ghost', 'org-ghost', 'p', 'internal', 3, 'm', now(), 'f')`);
    await db.query(`INSERT INTO movements (organisation_id, kind, amount_micros, credited_delta_micros, available_delta_micros, held_delta_micros, debited_delta_micros, reservation_id)
      VALUES ('org-a', 'release', 4, 0, 4, -4, 0, 'r-missing')`);
    await db.query(`INSERT INTO usage_records (reservation_id, organisation_id, project_id, model_slug, input_tokens, output_tokens, cost_micros,
        provider_cost_micros, debited_micros, billing_mode, usage_source, request_id)
      VALUES ('r-missing-too', 'org-a', 'p', 'm', 1, 1, 0, 0, 0, 'internal', 'upstream', '')`);
    const orphans = (await findBalanceDifferences(db)).filter((difference) => difference.check === 'orphans');
    expect(orphans.map((difference) => ({ ...difference.orphan, organisationId: difference.organisationId, micros: difference.recomputedMicros })))
      .toEqual([
        { table: 'reservations', rowId: 'r-ghost', missing: 'account', organisationId: 'org-ghost', micros: 3n },
        { table: 'movements', rowId: expect.any(String), missing: 'reservation', organisationId: 'org-a', micros: 4n },
        { table: 'usage_records', rowId: expect.any(String), missing: 'reservation', organisationId: 'org-a', micros: 0n },
      ]);
  });

  it('refuses, in the schema, an account row that breaks conservation and any change to history', async () => {
    await expect(db.query("UPDATE accounts SET available_micros = available_micros + 1 WHERE organisation_id = 'org-a'"))
      .rejects.toThrow(/accounts_conservation/);
    await expect(db.query('UPDATE movements SET amount_micros = amount_micros + 1')).rejects.toThrow(/append-only/);
    await expect(db.query('DELETE FROM usage_records')).rejects.toThrow(/append-only/);
    // Parents of rows that have no foreign keys any more (migration 0005) cannot vanish either.
    await expect(db.query("DELETE FROM accounts WHERE organisation_id = 'org-a'")).rejects.toThrow(/never deleted/);
    await expect(db.query("DELETE FROM reservations WHERE id = 'r-2'")).rejects.toThrow(/never deleted/);
    await expect(db.query('TRUNCATE reservations CASCADE')).rejects.toThrow(/never deleted/);
    await expect(db.query('DELETE FROM credits')).rejects.toThrow(/append-only/);
    // A movement whose deltas do not have its kind's shape is refused too.
    await expect(db.query(
      `INSERT INTO movements (organisation_id, kind, amount_micros, credited_delta_micros, available_delta_micros, held_delta_micros, debited_delta_micros, credit_id)
       VALUES ('org-a', 'credit', 5, 5, 4, 1, 0, 'c-1')`,
    )).rejects.toThrow(/movements_shape/);
  });
});
