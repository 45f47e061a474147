/**
 * Money a payer got back outside the gateway, over real PostgreSQL, the fake ledger over real
 * grpc-js and the local payment provider sending its signed webhooks to the admin: a refund made
 * from the provider's dashboard debits what the payer got back (never below zero: the rest is a
 * recorded shortfall, the organisation flagged to platform admins); a dispute holds its amount,
 * gives it back when won and keeps it out when lost.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Database } from '@gateway/db';
import { startLocalPayments, type LocalPayments } from '@gateway/local-payments';
import { scrapeMetrics, sumSamples, testPostgresUrl } from '@gateway/testkit';
import { newId } from './common/domain/ids.ts';
import { issueTopUpDocument, type TaxDocumentSettings } from './invoicing/domain/tax-documents.ts';
import type { AdminHarness } from './test-support/admin-harness.ts';
import { startPostgresAdmin, type PostgresAdmin } from './test-support/postgres-admin.ts';
import { postWebhook } from './test-support/topups-harness.ts';
import { createRazorpayClient } from './billing/transport/razorpay-client.ts';

const serverUrl = testPostgresUrl();
const keyId = 'rzp_test_reversalsKey1';
const keySecret = 'reversals-key-secret';
const webhookSecret = 'reversals-webhook-secret';

const invoiceSettings: TaxDocumentSettings = {
  supplierName: 'Gateway Operator', supplierAddress: 'Bengaluru', supplierGstin: undefined,
  supplierStateCode: '29', sac: '998315', gstRateBasisPoints: 1800, documentMode: 'tax_invoice', serialPrefix: 'GW',
  exportMode: 'igst', lutReference: undefined,
};

/** ₹1,180.00 paid (GST included) for ₹1,000 of balance. */
const pricePaise = 118_000n;
const creditMicros = 1_000_000_000n;

let postgres: PostgresAdmin | undefined;
let local: LocalPayments;
let admin: AdminHarness;
let db: Database;

/** An organisation with one invoiced top-up paid through the local provider and credited (purchased), `spentMicros` of it spent. */
async function invoicedTopUp(spentMicros: bigint): Promise<{ organisationId: string; topUpId: string; paymentId: string }> {
  const created = await admin.request('POST', '/admin/v1/organisations', { name: `Reversals ${newId('organisation').slice(-6)}` });
  expect(created.status).toBe(201);
  const organisationId = created.json.id as string;
  const packageId = newId('topUpPackage');
  const topUpId = newId('topUp');
  const provider = createRazorpayClient({ kind: 'local', baseUrl: local.url, keyId, keySecret, webhookSecret });
  const order = await provider.createOrder({ amountPaise: pricePaise, receipt: topUpId, notes: {} });
  local.pauseWebhooks();
  const paymentId = local.pay(order.id, 'pay').paymentIds.at(-1)!;
  const snapshot = { legal_name: 'Reversals Pvt Ltd', address: '1 MG Road, Bengaluru', state_code: '29', gstin: null };
  await db.query('INSERT INTO topup_packages (id, name, price_paise, credit_micros) VALUES ($1, $2, $3, $4)', [packageId, 'Starter', pricePaise, creditMicros]);
  await db.query(
    `INSERT INTO topups (id, organisation_id, package_id, price_paise, credit_micros, state, provider, provider_order_id, provider_payment_id,
       billing_snapshot, paid_at, credited_at, expires_at)
     VALUES ($1, $2, $3, $4, $5, 'credited', 'local', $6, $7, $8, now(), now(), now() + interval '1 day')`,
    [topUpId, organisationId, packageId, pricePaise, creditMicros, order.id, paymentId, JSON.stringify(snapshot)],
  );
  await db.transaction((tx) => issueTopUpDocument(tx, invoiceSettings, topUpId));
  await db.query(`UPDATE topups SET state = 'invoiced' WHERE id = $1`, [topUpId]);
  admin.ledger.credits.set(`topup:${topUpId}`, { organisationId, amountMicros: creditMicros, reason: 'top-up', purchased: true });
  Object.assign(admin.ledger.accounts.get(organisationId)!, {
    creditedMicros: creditMicros, availableMicros: creditMicros - spentMicros, heldMicros: 0n, debitedMicros: spentMicros,
  });
  // The capture's webhooks are not this test's subject: dropped, then webhooks flow again.
  await local.deliverPending();
  local.resumeWebhooks();
  return { organisationId, topUpId, paymentId };
}

function available(organisationId: string): bigint {
  return admin.ledger.accounts.get(organisationId)!.availableMicros;
}

/** The admin's gateway_admin_refund_outcomes_total for `outcome` now (the series platform admins are alerted on). */
async function refundOutcomes(outcome: 'failed' | 'shortfall'): Promise<number> {
  const samples = await scrapeMetrics(`http://127.0.0.1:${admin.app.ports.metrics}/metrics`);
  return sumSamples(samples, 'gateway_admin_refund_outcomes_total', { outcome });
}

/** Runs `act` with webhooks held and delivers what it sent; answers those webhooks (for the test to send again). */
async function withWebhooksCaptured(act: () => void | Promise<void>): Promise<ReturnType<LocalPayments['pendingWebhooks']>> {
  local.pauseWebhooks();
  try {
    await act();
    const sent = local.pendingWebhooks();
    await local.deliverPending();
    return sent;
  } finally {
    local.resumeWebhooks();
  }
}

describe.skipIf(!serverUrl)('refunds and disputes made outside the gateway', () => {
  beforeAll(async () => {
    local = await startLocalPayments({ keyId, keySecret, webhookSecret, webhookRetry: { attempts: 3, baseDelayMs: 50 } });
    postgres = await startPostgresAdmin(serverUrl!, {
      env: {
        PAYMENT_PROVIDER: 'local', PAYMENT_DEVELOPMENT_MODE: 'true', INVOICE_DEVELOPMENT_MODE: 'true', LOCAL_PAYMENTS_URL: local.url, RAZORPAY_KEY_ID: keyId, RAZORPAY_KEY_SECRET: keySecret,
        RAZORPAY_WEBHOOK_SECRET: webhookSecret, PAYMENT_RECONCILE_INTERVAL_MS: '100',
      },
    });
    ({ admin, db } = postgres);
    local.setWebhookUrl(`${admin.baseUrl}/webhooks/razorpay`);
  });

  afterAll(async () => {
    await postgres?.close();
    await local?.close();
  });

  it('a refund from the provider\'s dashboard debits what the payer got back, once', async () => {
    const topUp = await invoicedTopUp(0n);
    local.dashboardRefund(topUp.paymentId, 59_000n);
    await local.webhooksIdle();
    // Half the price back: half the credit leaves the balance.
    await vi.waitFor(() => { expect(available(topUp.organisationId)).toBe(500_000_000n); }, { timeout: 10_000, interval: 50 });
    const listed = await admin.request('GET', `/admin/v1/payment-reversals?organisation_id=${topUp.organisationId}`);
    expect(listed.status).toBe(200);
    expect(listed.json.data).toEqual([expect.objectContaining({
      kind: 'refund', organisation_id: topUp.organisationId, topup_id: topUp.topUpId, amount_paise: '59000',
      debit_micros: '500000000', taken_micros: '500000000', shortfall_micros: '0', state: 'debited',
    })]);
    // The same webhook again (the provider retries) changes nothing.
    const delivered = local.webhookDeliveries().filter((delivery) => delivery.event === 'refund.processed').at(-1)!;
    expect(delivered).toBeDefined();
    expect(available(topUp.organisationId)).toBe(500_000_000n);
  });

  it('what the balance cannot cover is never taken below zero: the shortfall is recorded, the organisation flagged and alerted', async () => {
    const topUp = await invoicedTopUp(900_000_000n);
    local.dashboardRefund(topUp.paymentId);
    await vi.waitFor(async () => {
      const listed = await admin.request('GET', '/admin/v1/payment-reversals?shortfall_only=true');
      expect(listed.json.data).toContainEqual(expect.objectContaining({
        organisation_id: topUp.organisationId, kind: 'refund', debit_micros: '1000000000', taken_micros: '100000000', shortfall_micros: '900000000',
      }));
    }, { timeout: 10_000, interval: 50 });
    expect(available(topUp.organisationId)).toBe(0n);
    const alerts = await db.query<{ kind: string }>('SELECT kind FROM alerts WHERE organisation_id = $1', [topUp.organisationId]);
    expect(alerts.rows.map((row) => row.kind)).toEqual(['payment_shortfall']);
  });

  it('a dispute holds its amount; won, the amount comes back; lost, it stays out', async () => {
    const topUp = await invoicedTopUp(0n);
    const dispute = local.openDispute(topUp.paymentId, 59_000n);
    await vi.waitFor(() => { expect(available(topUp.organisationId)).toBe(500_000_000n); }, { timeout: 10_000, interval: 50 });
    local.resolveDispute(dispute.id, 'won');
    await vi.waitFor(() => { expect(available(topUp.organisationId)).toBe(1_000_000_000n); }, { timeout: 10_000, interval: 50 });

    const lost = local.openDispute(topUp.paymentId, 59_000n);
    await vi.waitFor(() => { expect(available(topUp.organisationId)).toBe(500_000_000n); }, { timeout: 10_000, interval: 50 });
    local.resolveDispute(lost.id, 'lost');
    await local.webhooksIdle();
    await vi.waitFor(async () => {
      const listed = await admin.request('GET', `/admin/v1/payment-reversals?organisation_id=${topUp.organisationId}`);
      expect(listed.json.data.map((entry: { provider_ref: string; state: string; dispute_status: string }) => [entry.provider_ref, entry.state, entry.dispute_status]))
        .toEqual([[lost.id, 'debited', 'lost'], [dispute.id, 'returned', 'won']]);
    }, { timeout: 10_000, interval: 50 });
    expect(available(topUp.organisationId)).toBe(500_000_000n);
  });

  it('refund.failed for a pending refund of the gateway\'s ends it failed with the provider\'s reason and gives its money back', async () => {
    const topUp = await invoicedTopUp(0n);
    local.holdRefunds();
    try {
      const created = await admin.request('POST', `/admin/v1/organisations/${topUp.organisationId}/topups/${topUp.topUpId}/refunds`,
        { amount_paise: '59000' }, { 'idempotency-key': 'held' });
      expect(created.json.refund.state).toBe('provider_pending');
      expect(available(topUp.organisationId)).toBe(500_000_000n);
      local.settleRefund(created.json.refund.provider_refund_id as string, 'failed', 'The beneficiary account is closed.');
      await vi.waitFor(async () => {
        const listed = await admin.request('GET', `/admin/v1/organisations/${topUp.organisationId}/topups/${topUp.topUpId}/refunds`);
        expect(listed.json.data[0]).toMatchObject({
          state: 'failed', failure_reason: 'The payment provider reports the refund failed: The beneficiary account is closed.',
        });
      }, { timeout: 10_000, interval: 50 });
      expect(available(topUp.organisationId)).toBe(1_000_000_000n);
      // Not a reversal: the refund was the gateway's own.
      const reversals = await admin.request('GET', `/admin/v1/payment-reversals?organisation_id=${topUp.organisationId}`);
      expect(reversals.json.data).toEqual([]);
    } finally {
      local.processRefundsAtOnce();
    }
  });
  it('counts a shortfall and a refund failed for platform admins once each, never again on a webhook replay or a job pass', async () => {
    const shortfallsBefore = await refundOutcomes('shortfall');
    const failedBefore = await refundOutcomes('failed');

    // A dashboard refund the balance cannot cover, then its webhook again.
    const short = await invoicedTopUp(900_000_000n);
    const refundHooks = await withWebhooksCaptured(() => { local.dashboardRefund(short.paymentId); });
    const processed = refundHooks.find((hook) => hook.event === 'refund.processed')!;
    expect(processed).toBeDefined();
    await vi.waitFor(async () => { expect(await refundOutcomes('shortfall')).toBe(shortfallsBefore + 1); }, { timeout: 10_000, interval: 50 });
    const replayed = await postWebhook(admin, processed.body, { signature: processed.signature, eventId: processed.eventId });
    expect(replayed.status).toBe(200);
    // A dispute the balance cannot cover (all of it spent) is one more.
    const spent = await invoicedTopUp(1_000_000_000n);
    local.openDispute(spent.paymentId, 59_000n);
    await vi.waitFor(async () => { expect(await refundOutcomes('shortfall')).toBe(shortfallsBefore + 2); }, { timeout: 10_000, interval: 50 });

    // A refund the provider refuses at once, then the same request again (its Idempotency-Key replayed).
    const refused = await invoicedTopUp(0n);
    const refundsPath = `/admin/v1/organisations/${refused.organisationId}/topups/${refused.topUpId}/refunds`;
    local.refuseRefunds('The payment is older than 6 months and cannot be refunded.', 1);
    const first = await admin.request('POST', refundsPath, { amount_paise: '59000' }, { 'idempotency-key': 'refused-counted' });
    expect(first.json.refund.state).toBe('failed');
    expect(await refundOutcomes('failed')).toBe(failedBefore + 1);
    const again = await admin.request('POST', refundsPath, { amount_paise: '59000' }, { 'idempotency-key': 'refused-counted' });
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.json.refund.state).toBe('failed');

    // A pending refund the provider then fails: refund.failed, the job gives the money back; then the webhook again.
    local.holdRefunds();
    try {
      const pending = await admin.request('POST', refundsPath, { amount_paise: '59000' }, { 'idempotency-key': 'failed-later' });
      expect(pending.json.refund.state).toBe('provider_pending');
      const failedHooks = await withWebhooksCaptured(() => {
        local.settleRefund(pending.json.refund.provider_refund_id as string, 'failed', 'The beneficiary account is closed.');
      });
      const failedHook = failedHooks.find((hook) => hook.event === 'refund.failed')!;
      expect(failedHook).toBeDefined();
      await vi.waitFor(async () => { expect(await refundOutcomes('failed')).toBe(failedBefore + 2); }, { timeout: 10_000, interval: 50 });
      const failedReplay = await postWebhook(admin, failedHook.body, { signature: failedHook.signature, eventId: failedHook.eventId });
      expect(failedReplay.status).toBe(200);
    } finally {
      local.processRefundsAtOnce();
    }

    // Once nothing is left for the refund job to carry forward, the replays and its passes have counted nothing more.
    await local.webhooksIdle();
    await vi.waitFor(async () => {
      const { rows } = await db.query<{ due: number }>(
        `SELECT (SELECT count(*) FROM refunds WHERE state IN ('requested', 'debited', 'provider_pending', 'provider_refunded', 'provider_refused'))
           + (SELECT count(*) FROM payment_reversals WHERE state IN ('to_debit', 'to_return')) AS due`);
      expect(Number(rows[0]!.due)).toBe(0);
    }, { timeout: 10_000, interval: 50 });
    expect(await refundOutcomes('failed')).toBe(failedBefore + 2);
    expect(await refundOutcomes('shortfall')).toBe(shortfallsBefore + 2);
  });
});
