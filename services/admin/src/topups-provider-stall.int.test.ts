/**
 * A stalled payment provider must not hold the database: over real PostgreSQL and the local
 * provider, an order paid twice whose duplicate-payment refund the provider leaves unanswered
 * holds no lock on the top-up and no transaction while it waits, so other signals and reads go on;
 * once the provider answers, the second payment is refunded once and the first credited once.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { openDatabase, type Database } from '@gateway/db';
import { testPostgresUrl } from '@gateway/testkit';
import {
  expectStatus, organisationReadyToBuy, purchase, readTopUp, startTopUpsHarness, topUpCredits, waitForState, type TopUpsHarness,
} from './test-support/topups-harness.ts';

const serverUrl = testPostgresUrl();
const describePg = describe.skipIf(!serverUrl);

let harness: TopUpsHarness;
let database: Database;

beforeAll(async () => {
  if (!serverUrl) return;
  // Reconciliation effectively off: the webhooks alone drive these top-ups.
  harness = await startTopUpsHarness(serverUrl, { PAYMENT_RECONCILE_INTERVAL_MS: '3600000' });
  database = await openDatabase({ url: harness.databaseUrl, schema: 'admin', poolSize: 2 });
});

afterAll(async () => {
  harness?.payments.releaseHeldCalls();
  await database?.close();
  await harness?.close();
});

/** Whether the top-up's row can be locked at once from another connection (nobody holds it). */
async function rowIsFree(topUpId: string): Promise<boolean> {
  try {
    await database.transaction(async (tx) => { await tx.query('SELECT id FROM topups WHERE id = $1 FOR UPDATE NOWAIT', [topUpId]); }, { retries: 0 });
    return true;
  } catch (error) {
    if ((error as { code?: string }).code === '55P03') return false;
    throw error;
  }
}

describePg('a stalled provider', () => {
  it('a duplicate payment\'s refund waiting on the provider holds no lock or transaction; it is refunded once when the provider answers', async () => {
    const { admin, payments } = harness;
    const { organisationId, packageId, creditMicros } = await organisationReadyToBuy(admin, 'Stalled');
    const { topUp, checkout } = await purchase(admin, organisationId, packageId);
    // Every call about a payment (reading it, refunding it) waits until released.
    payments.holdApiCalls({ path: /^\/v1\/payments\// });
    const outcome = payments.pay(checkout.order_id, 'pay_twice');
    if (outcome.outcome !== 'paid') throw new Error('the local provider did not capture');
    const [firstPayment, secondPayment] = outcome.paymentIds;
    await waitForState(admin, organisationId, topUp.id, 'invoiced');
    await vi.waitFor(() => { expect(payments.heldApiCalls()).toBe(1); }, { timeout: 10_000, interval: 25 });

    // While the provider keeps the admin waiting: the top-up's row is free, and no admin
    // connection sits in an open transaction.
    expect(await rowIsFree(topUp.id)).toBe(true);
    const idleInTransaction = await database.query<{ count: bigint }>(
      `SELECT count(*)::bigint AS count FROM pg_stat_activity WHERE datname = current_database() AND state LIKE 'idle in transaction%' AND pid <> pg_backend_pid()`);
    expect(idleInTransaction.rows[0]!.count).toBe(0n);
    expectStatus(await admin.request('GET', `/admin/v1/organisations/${organisationId}/billing-profile`), 200);

    payments.releaseHeldCalls();
    const duplicates = await vi.waitFor(async () => {
      const current = await readTopUp(admin, organisationId, topUp.id);
      const found = current.transitions.filter((transition: { cause: string }) => transition.cause === 'duplicate_payment_refunded');
      expect(found).toHaveLength(1);
      return found;
    }, { timeout: 15_000, interval: 25 });
    expect(duplicates[0]).toMatchObject({ from_state: 'invoiced', to_state: 'invoiced' });
    await payments.webhooksIdle();
    expect(payments.refunds().map((refund) => [refund.payment_id, refund.amount])).toEqual([[secondPayment, 59000n]]);
    const final = await readTopUp(admin, organisationId, topUp.id);
    expect(final.provider_payment_id).toBe(firstPayment);
    expect(topUpCredits(admin, organisationId)).toEqual({ credits: new Map([[`topup:${topUp.id}`, BigInt(creditMicros)]]), creditedMicros: BigInt(creditMicros) });
  });
});
