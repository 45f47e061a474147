/**
 * Refunds of a top-up's unspent balance, over real PostgreSQL, the fake ledger over real grpc-js
 * (its RefundCredit keeps the ledger's rules: available only, once per refund id) and the local
 * payment provider over HTTP (Razorpay's refund API, faults injectable): a refund within the
 * unspent balance debits the ledger once, refunds the payment once and issues one credit note
 * referencing the invoice; one beyond it is 409 and moves nothing; a replay answers the same; a
 * failed provider call is carried forward by the refund job, once.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Database } from '@gateway/db';
import { startLocalPayments, type LocalPayments } from '@gateway/local-payments';
import { testPostgresUrl } from '@gateway/testkit';
import { newId } from './common/domain/ids.ts';
import { markProviderRefundProcessed } from './billing/domain/refund-store.ts';
import { issueTopUpDocument, type TaxDocumentSettings } from './invoicing/domain/tax-documents.ts';
import { refundEnvelope, refundListResponse } from './billing/http/refund-schemas.ts';
import type { AdminHarness } from './test-support/admin-harness.ts';
import { startPostgresAdmin, type PostgresAdmin } from './test-support/postgres-admin.ts';
import { createRazorpayClient } from './billing/transport/razorpay-client.ts';

const serverUrl = testPostgresUrl();
const keyId = 'rzp_test_refundsKey01';
const keySecret = 'refunds-key-secret';
const webhookSecret = 'refunds-webhook-secret';

/** The invoice settings the admin runs with (its defaults), for issuing the top-ups' invoices in setup. */
const invoiceSettings: TaxDocumentSettings = {
  supplierName: 'Gateway Operator (set supplierName)', supplierAddress: 'Set supplierAddress',
  supplierGstin: undefined, supplierStateCode: '29', sac: '998315', gstRateBasisPoints: 1800,
  documentMode: 'tax_invoice', serialPrefix: 'GW', exportMode: 'igst', lutReference: undefined,
};

/** ₹1,180.00 paid (GST included) for ₹1,000 of balance. */
const pricePaise = 118_000n;
const creditMicros = 1_000_000_000n;

let postgres: PostgresAdmin | undefined;
let local: LocalPayments;
let admin: AdminHarness;
let db: Database;

/** What a test's top-up is: its organisation, id, paid payment and invoice. */
interface PaidTopUp {
  organisationId: string;
  topUpId: string;
  paymentId: string;
  invoiceId: string;
}

/**
 * An organisation with one invoiced top-up paid through the local provider and credited in the
 * ledger as `topup:<id>`, of which `spentMicros` is already spent (usage debited).
 */
async function invoicedTopUp(spentMicros: bigint): Promise<PaidTopUp> {
  const created = await admin.request('POST', '/admin/v1/organisations', { name: `Refunds ${newId('organisation').slice(-6)}` });
  expect(created.status).toBe(201);
  const organisationId = created.json.id as string;
  const packageId = newId('topUpPackage');
  const topUpId = newId('topUp');
  const provider = createRazorpayClient({ kind: 'local', baseUrl: local.url, keyId, keySecret, webhookSecret });
  const order = await provider.createOrder({ amountPaise: pricePaise, receipt: topUpId, notes: {} });
  const paid = local.pay(order.id, 'pay');
  const paymentId = paid.paymentIds.at(-1)!;
  const snapshot = { legal_name: 'Refunds Test Pvt Ltd', address: '1 MG Road, Bengaluru', state_code: '29', gstin: null };
  await db.query('INSERT INTO topup_packages (id, name, price_paise, credit_micros) VALUES ($1, $2, $3, $4)', [packageId, 'Starter', pricePaise, creditMicros]);
  await db.query(
    `INSERT INTO topups (id, organisation_id, package_id, price_paise, credit_micros, state, provider, provider_order_id, provider_payment_id,
       billing_snapshot, paid_at, credited_at, expires_at)
     VALUES ($1, $2, $3, $4, $5, 'credited', 'local', $6, $7, $8, now(), now(), now() + interval '1 day')`,
    [topUpId, organisationId, packageId, pricePaise, creditMicros, order.id, paymentId, JSON.stringify(snapshot)],
  );
  const invoice = await db.transaction((tx) => issueTopUpDocument(tx, invoiceSettings, topUpId));
  await db.query(`UPDATE topups SET state = 'invoiced' WHERE id = $1`, [topUpId]);
  // The top-up's one credit, as the top-ups service makes it, then usage spending part of it.
  admin.ledger.credits.set(`topup:${topUpId}`, { organisationId, amountMicros: creditMicros, reason: 'top-up', purchased: true });
  const account = admin.ledger.accounts.get(organisationId)!;
  Object.assign(account, { creditedMicros: creditMicros, availableMicros: creditMicros - spentMicros, heldMicros: 0n, debitedMicros: spentMicros });
  return { organisationId, topUpId, paymentId, invoiceId: invoice.documentId };
}

function refundsPath(topUp: PaidTopUp): string {
  return `/admin/v1/organisations/${topUp.organisationId}/topups/${topUp.topUpId}/refunds`;
}

function refund(topUp: PaidTopUp, amountPaise: string, key: string) {
  return admin.request('POST', refundsPath(topUp), { amount_paise: amountPaise }, { 'idempotency-key': key });
}

/** The ledger's refunds of one top-up's credit. */
function ledgerRefundsOf(topUp: PaidTopUp) {
  return [...admin.ledger.refunds.entries()].filter(([, entry]) => entry.creditId === `topup:${topUp.topUpId}`);
}

/** The credit notes issued for a top-up. */
async function creditNotesOf(topUp: PaidTopUp) {
  const { rows } = await db.query<{ id: string; refund_id: string; references_document_id: string; total_paise: bigint; serial: string }>(
    `SELECT id, refund_id, references_document_id, total_paise, serial FROM tax_documents WHERE topup_id = $1 AND kind = 'credit_note'`,
    [topUp.topUpId]);
  return rows;
}

async function topUpState(topUpId: string): Promise<string> {
  return (await db.query<{ state: string }>('SELECT state FROM topups WHERE id = $1', [topUpId])).rows[0]!.state;
}

describe.skipIf(!serverUrl)('refunds of unspent balance', () => {
  beforeAll(async () => {
    // Webhooks are held (no URL): these tests are about the refund call, not refund.processed.
    local = await startLocalPayments({ keyId, keySecret, webhookSecret });
    postgres = await startPostgresAdmin(serverUrl!, {
      env: {
        PAYMENT_PROVIDER: 'local', PAYMENT_DEVELOPMENT_MODE: 'true', LOCAL_PAYMENTS_URL: local.url, RAZORPAY_KEY_ID: keyId, RAZORPAY_KEY_SECRET: keySecret,
        RAZORPAY_WEBHOOK_SECRET: webhookSecret, PAYMENT_RECONCILE_INTERVAL_MS: '100', INVOICE_DEVELOPMENT_MODE: 'true',
      },
    });
    ({ admin, db } = postgres);
  });

  afterAll(async () => {
    await postgres?.close();
    await local?.close();
  });

  it('a refund within the unspent balance debits the ledger once, refunds the payment once and issues one credit note referencing the invoice; a replay answers the same', async () => {
    const topUp = await invoicedTopUp(400_000_000n);
    const first = await refund(topUp, '59000', 'refund-half');
    expect(first.status).toBe(201);
    const body = refundEnvelope.parse(first.json);
    // Half the price returns half the credit: 1,000,000,000 × 59,000 / 118,000 µ₹.
    expect(body.refund).toMatchObject({ topup_id: topUp.topUpId, amount_paise: '59000', debit_micros: '500000000', state: 'credit_noted' });

    expect(ledgerRefundsOf(topUp)).toEqual([[body.refund.id, {
      organisationId: topUp.organisationId, creditId: `topup:${topUp.topUpId}`, amountMicros: 500_000_000n, reason: `refund ${body.refund.id} of ${topUp.topUpId}`,
    }]]);
    expect(admin.ledger.accounts.get(topUp.organisationId)).toMatchObject({ availableMicros: 100_000_000n, creditedMicros: 500_000_000n });
    const providerRefunds = local.refunds().filter((entry) => entry.payment_id === topUp.paymentId);
    expect(providerRefunds.map((entry) => ({ id: entry.id, amount: entry.amount, receipt: entry.receipt })))
      .toEqual([{ id: body.refund.provider_refund_id, amount: 59_000n, receipt: body.refund.id }]);
    const notes = await creditNotesOf(topUp);
    expect(notes).toEqual([expect.objectContaining({
      id: body.refund.credit_note_id, refund_id: body.refund.id, references_document_id: topUp.invoiceId, total_paise: 59_000n,
    })]);
    // Partly refunded: the top-up stays invoiced.
    expect(await topUpState(topUp.topUpId)).toBe('invoiced');

    const replay = await refund(topUp, '59000', 'refund-half');
    expect(replay.status).toBe(200);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.json).toEqual(first.json);
    const conflicting = await refund(topUp, '100', 'refund-half');
    expect(conflicting.status).toBe(409);
    expect(conflicting.json.error.code).toBe('idempotency_conflict');
    expect(ledgerRefundsOf(topUp)).toHaveLength(1);
    expect(local.refunds().filter((entry) => entry.payment_id === topUp.paymentId)).toHaveLength(1);
    expect(await creditNotesOf(topUp)).toHaveLength(1);

    const listed = await admin.request('GET', refundsPath(topUp));
    expect(listed.status).toBe(200);
    expect(refundListResponse.parse(listed.json).data).toEqual([body.refund]);
  });

  it('a refund larger than the unspent balance is 409 and changes nothing; its replay is the same 409', async () => {
    const topUp = await invoicedTopUp(900_000_000n);
    const accountBefore = { ...admin.ledger.accounts.get(topUp.organisationId)! };
    const providerRefundsBefore = local.refunds().length;
    // ₹590 of the price is 500,000,000 µ₹ of balance; only 100,000,000 µ₹ is unspent.
    const refused = await refund(topUp, '59000', 'too-much');
    expect(refused.status).toBe(409);
    expect(refused.json.error).toMatchObject({ code: 'conflict', message: 'The refund exceeds the unspent balance.' });
    expect(ledgerRefundsOf(topUp)).toEqual([]);
    expect(admin.ledger.accounts.get(topUp.organisationId)).toEqual(accountBefore);
    expect(local.refunds()).toHaveLength(providerRefundsBefore);
    expect(await creditNotesOf(topUp)).toEqual([]);
    expect(await topUpState(topUp.topUpId)).toBe('invoiced');

    const replay = await refund(topUp, '59000', 'too-much');
    expect(replay.status).toBe(409);
    expect(replay.json.error).toMatchObject({ code: 'conflict', message: 'The refund exceeds the unspent balance.' });
    // More than is left of the price is refused before the ledger is asked.
    const beyondPrice = await refund(topUp, '118001', 'beyond-price');
    expect(beyondPrice.status).toBe(409);
    expect(beyondPrice.json.error.message).toBe('The refund exceeds what is left of the top-up\'s price: at most 118000 paise can still be refunded.');
    expect(ledgerRefundsOf(topUp)).toEqual([]);
    // Exactly the unspent balance still goes through: the refused refund took nothing of the price.
    const within = await refund(topUp, '11800', 'within');
    expect(within.status).toBe(201);
    expect(within.json.refund).toMatchObject({ debit_micros: '100000000', state: 'credit_noted' });
    expect(admin.ledger.accounts.get(topUp.organisationId)!.availableMicros).toBe(0n);
  });

  it('refund.processed for a refund whose provider answer was lost records the provider refund, and the job issues the credit note without refunding again', async () => {
    const topUp = await invoicedTopUp(0n);
    const refundId = newId('refund');
    // Debited in the ledger, then the provider refunded but its answer never arrived: the refund is still `debited`.
    admin.ledger.refunds.set(refundId, { organisationId: topUp.organisationId, creditId: `topup:${topUp.topUpId}`, amountMicros: 500_000_000n, reason: 'r' });
    await db.query(
      `INSERT INTO refunds (id, organisation_id, topup_id, amount_paise, debit_micros, state, idempotency_key, debited_at, next_attempt_at)
       VALUES ($1, $2, $3, 59000, 500000000, 'debited', 'lost-answer', now(), now() + interval '1 hour')`,
      [refundId, topUp.organisationId, topUp.topUpId]);
    const provider = createRazorpayClient({ kind: 'local', baseUrl: local.url, keyId, keySecret, webhookSecret });
    const providerRefund = await provider.refundPayment({ paymentId: topUp.paymentId, amountPaise: 59_000n, receipt: refundId, notes: {} });

    expect(await db.transaction((tx) => markProviderRefundProcessed(tx, { providerRefundId: providerRefund.id, receipt: refundId }))).toBe(true);
    // Another payment's refund (e.g. a duplicate payment's) matches no refund.
    expect(await db.transaction((tx) => markProviderRefundProcessed(tx, { providerRefundId: 'rfnd_unrelated', receipt: 'top_other' }))).toBe(false);
    const done = await vi.waitFor(async () => {
      const listed = refundListResponse.parse((await admin.request('GET', refundsPath(topUp))).json).data;
      expect(listed[0]?.state).toBe('credit_noted');
      return listed;
    }, { timeout: 15_000, interval: 50 });
    expect(done[0]).toMatchObject({ id: refundId, provider_refund_id: providerRefund.id });
    expect(local.refunds().filter((entry) => entry.payment_id === topUp.paymentId)).toHaveLength(1);
    expect(await creditNotesOf(topUp)).toEqual([expect.objectContaining({ refund_id: refundId, references_document_id: topUp.invoiceId })]);
    const processed = await db.query<{ provider_processed_at: Date | null }>('SELECT provider_processed_at FROM refunds WHERE id = $1', [refundId]);
    expect(processed.rows[0]!.provider_processed_at).not.toBeNull();
  });

  it('a failed provider call leaves the refund debited, and the refund job completes it once; a full refund makes the top-up refunded', async () => {
    const topUp = await invoicedTopUp(0n);
    local.injectApiFault({ status: 500 }, 1);
    const accepted = await refund(topUp, '118000', 'refund-all');
    expect(accepted.status).toBe(201);
    expect(accepted.json.refund).toMatchObject({ state: 'debited', provider_refund_id: null, credit_note_id: null, debit_micros: '1000000000' });
    expect(ledgerRefundsOf(topUp)).toHaveLength(1);

    const done = await vi.waitFor(async () => {
      const listed = refundListResponse.parse((await admin.request('GET', refundsPath(topUp))).json).data;
      expect(listed[0]?.state).toBe('credit_noted');
      return listed;
    }, { timeout: 15_000, interval: 50 });
    expect(done).toHaveLength(1);
    expect(done[0]).toMatchObject({ id: accepted.json.refund.id, state: 'credit_noted' });
    expect(ledgerRefundsOf(topUp)).toHaveLength(1);
    expect(local.refunds().filter((entry) => entry.payment_id === topUp.paymentId).map((entry) => entry.amount)).toEqual([118_000n]);
    expect(await creditNotesOf(topUp)).toEqual([expect.objectContaining({ id: done[0]!.credit_note_id, references_document_id: topUp.invoiceId })]);
    expect(await topUpState(topUp.topUpId)).toBe('refunded');
    expect(admin.ledger.accounts.get(topUp.organisationId)).toMatchObject({ creditedMicros: 0n, availableMicros: 0n });
  });

  it('a refund the provider refuses (400) gives the money back under its own key, shows failed with the provider\'s reason, alerts, and is never tried again', async () => {
    const topUp = await invoicedTopUp(0n);
    local.injectApiFault({ status: 400 }, 1);
    const answered = await refund(topUp, '118000', 'refused-by-provider');
    expect(answered.status).toBe(201);
    expect(answered.json.refund).toMatchObject({
      state: 'failed', provider_refund_id: null, credit_note_id: null,
      failure_reason: 'The payment provider refused the request: The request was refused (injected fault).',
    });
    const refundId = answered.json.refund.id as string;
    // The debit and its reversal, each under its own key: the balance is whole again.
    expect(ledgerRefundsOf(topUp).map(([id]) => id)).toEqual([refundId]);
    expect([...admin.ledger.reversals.entries()].filter(([, reversal]) => reversal.refundId === refundId))
      .toEqual([[`reversal:${refundId}`, expect.objectContaining({ organisationId: topUp.organisationId, amountMicros: 1_000_000_000n })]]);
    expect(admin.ledger.accounts.get(topUp.organisationId)).toMatchObject({ creditedMicros: 1_000_000_000n, availableMicros: 1_000_000_000n });
    expect(await creditNotesOf(topUp)).toEqual([]);
    expect(await topUpState(topUp.topUpId)).toBe('invoiced');
    const alerts = await db.query<{ kind: string; message: string }>(`SELECT kind, message FROM alerts WHERE organisation_id = $1`, [topUp.organisationId]);
    expect(alerts.rows).toEqual([expect.objectContaining({ kind: 'refund_failed' })]);
    expect(alerts.rows[0]!.message).toContain('The request was refused (injected fault).');
    const audit = await db.query<{ action: string }>(`SELECT action FROM audit_events WHERE resource_id = $1 ORDER BY occurred_at`, [refundId]);
    expect(audit.rows.map((row) => row.action)).toEqual(['topup.refund', 'topup.refund_failed']);
    // Nothing is due any more: the job never calls the provider for it again, and the price is refundable again.
    const unfinished = await db.query(`SELECT 1 FROM refunds WHERE id = $1 AND state IN ('requested', 'debited', 'provider_pending', 'provider_refunded', 'provider_refused')`, [refundId]);
    expect(unfinished.rowCount).toBe(0);
    const listed = refundListResponse.parse((await admin.request('GET', refundsPath(topUp))).json).data;
    expect(listed[0]).toMatchObject({ id: refundId, state: 'failed' });
    const again = await refund(topUp, '118000', 'second-try');
    expect(again.status).toBe(201);
    expect(again.json.refund.state).toBe('credit_noted');
  });

  it('the local provider\'s refusal with a reason is shown as the refund\'s failure_reason; a pending refund is credit-noted only once processed, and one that then fails gives the money back', async () => {
    const refused = await invoicedTopUp(0n);
    local.refuseRefunds('The payment is older than 6 months and cannot be refunded.');
    const failed = await refund(refused, '59000', 'too-old');
    expect(failed.json.refund).toMatchObject({
      state: 'failed', failure_reason: 'The payment provider refused the request: The payment is older than 6 months and cannot be refunded.',
      next_attempt_at: null,
    });
    expect(admin.ledger.accounts.get(refused.organisationId)).toMatchObject({ availableMicros: 1_000_000_000n });

    local.holdRefunds();
    try {
      const topUp = await invoicedTopUp(0n);
      const pending = await refund(topUp, '59000', 'pending');
      expect(pending.json.refund).toMatchObject({ state: 'provider_pending', credit_note_id: null });
      expect(await creditNotesOf(topUp)).toEqual([]);
      local.settleRefund(pending.json.refund.provider_refund_id as string, 'processed');
      await vi.waitFor(async () => {
        expect((await creditNotesOf(topUp)).map((note) => note.refund_id)).toEqual([pending.json.refund.id]);
      }, { timeout: 15_000, interval: 50 });

      const second = await refund(topUp, '59000', 'pending-then-failed');
      expect(second.json.refund.state).toBe('provider_pending');
      expect(admin.ledger.accounts.get(topUp.organisationId)).toMatchObject({ availableMicros: 0n });
      local.settleRefund(second.json.refund.provider_refund_id as string, 'failed');
      const settled = await vi.waitFor(async () => {
        const listed = refundListResponse.parse((await admin.request('GET', refundsPath(topUp))).json).data;
        expect(listed.find((entry) => entry.id === second.json.refund.id)?.state).toBe('failed');
        return listed;
      }, { timeout: 15_000, interval: 50 });
      expect(settled.find((entry) => entry.id === second.json.refund.id)?.failure_reason).toBe('The payment provider reports the refund failed.');
      expect(admin.ledger.accounts.get(topUp.organisationId)).toMatchObject({ availableMicros: 500_000_000n });
      expect(await creditNotesOf(topUp)).toHaveLength(1);
    } finally {
      local.processRefundsAtOnce();
    }
  });

  it('only purchased, unspent credit is refundable: a manual credit in the balance does not make a spent top-up refundable', async () => {
    const topUp = await invoicedTopUp(900_000_000n);
    // ₹5,000 of manual credit: available is 5,100,000,000 µ₹, of which 100,000,000 µ₹ is purchased.
    admin.ledger.credits.set(`manual:${topUp.organisationId}:welcome`, { organisationId: topUp.organisationId, amountMicros: 5_000_000_000n, reason: 'welcome' });
    Object.assign(admin.ledger.accounts.get(topUp.organisationId)!, { creditedMicros: 6_000_000_000n, availableMicros: 5_100_000_000n });
    const refused = await refund(topUp, '59000', 'manual-money');
    expect(refused.status).toBe(409);
    expect(refused.json.error.message).toBe('The refund exceeds the unspent balance.');
    expect(admin.ledger.accounts.get(topUp.organisationId)!.availableMicros).toBe(5_100_000_000n);
    expect(local.refunds().filter((entry) => entry.payment_id === topUp.paymentId)).toEqual([]);
    const within = await refund(topUp, '11800', 'purchased-part');
    expect(within.json.refund).toMatchObject({ state: 'credit_noted', debit_micros: '100000000' });
  });
});
