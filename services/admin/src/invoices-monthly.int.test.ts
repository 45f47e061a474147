/**
 * Receipt-voucher mode (Rule 50) over real PostgreSQL and the fake ledger over real grpc-js: a
 * top-up issues a receipt voucher with the tax on the advance; after each completed IST month
 * the invoicing pass issues one tax invoice for the usage the ledger debited in it, adjusted
 * against the vouchers oldest first, once (a second pass issues nothing); the PDF names the
 * vouchers adjusted. The admin itself runs the pass with GST_DOCUMENT_MODE=receipt_voucher.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ledgerV1 } from '@gateway/contracts';
import type { Database } from '@gateway/db';
import { serviceTlsEnv, sharedTestPki, testPostgresUrl, testTransportSecurity } from '@gateway/testkit';
import { loadAdminConfig, type AdminConfig } from './config.ts';
import { renderTaxDocumentPdf } from './invoicing/domain/invoice-pdf.ts';
import { issueTopUpDocument } from './invoicing/domain/tax-documents.ts';
import { selectTaxDocuments } from './invoicing/domain/tax-document-store.ts';
import { invoicingSettingsFrom } from './invoicing/invoicing-settings.ts';
import { createGrpcLedger, type GrpcLedger } from './ledger/grpc-ledger.ts';
import type { AdminHarness } from './test-support/admin-harness.ts';
import { startPostgresAdmin, type PostgresAdmin } from './test-support/postgres-admin.ts';
import { hasPdftotext, insertPaidTopUp, maharashtraRecipient, pdfText } from './test-support/tax-document-fixtures.ts';
import { invoiceCompletedUsageMonths } from './invoicing/domain/monthly-invoicing.ts';

const serverUrl = testPostgresUrl();
const describePg = describe.skipIf(!serverUrl);

let postgres: PostgresAdmin | undefined;
let admin: AdminHarness;
let db: Database;
let ledger: GrpcLedger;
let config: AdminConfig;
let organisationId: string;

/** A usage record the fake ledger lists and sums, debited `debitedMicros` at `at`. */
function usage(id: string, at: string, debitedMicros: bigint): ledgerV1.UsageRecord {
  return ledgerV1.UsageRecord.fromPartial({
    id, reservationId: `res-${id}`, organisationId, projectId: 'proj_000000000000000000000001', modelSlug: 'chat', inputTokens: 10n, outputTokens: 5n,
    costMicros: debitedMicros, providerCostMicros: 1n, debitedMicros, billingMode: ledgerV1.BillingMode.BILLING_MODE_COMMERCIAL,
    usageSource: ledgerV1.UsageSource.USAGE_SOURCE_UPSTREAM, requestId: `req-${id}`, createdAtMs: BigInt(Date.parse(at)), overrunOutputTokens: 0n,
  });
}

beforeAll(async () => {
  if (!serverUrl) return;
  postgres = await startPostgresAdmin(serverUrl, { env: { GST_DOCUMENT_MODE: 'receipt_voucher' } });
  ({ admin, db } = postgres);
  const created = await admin.request('POST', '/admin/v1/organisations', { name: 'Monthly Usage Org' });
  expect(created.status, created.text).toBe(201);
  organisationId = created.json.id;
  const pki = await sharedTestPki();
  ledger = createGrpcLedger({ target: admin.ledger.target, callTimeoutMs: 5_000, security: testTransportSecurity(pki, 'admin') });
  config = loadAdminConfig({
    ...serviceTlsEnv(pki, 'admin'), LEDGER_GRPC_URL: admin.ledger.target, ADMIN_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
    GST_DOCUMENT_MODE: 'receipt_voucher', INVOICE_SUPPLIER_GSTIN: '29AAACG1234F1Z0',
  });
  await db.query(`INSERT INTO billing_profiles (organisation_id, legal_name, address, state_code, gstin) VALUES ($1, $2, $3, $4, $5)`,
    [organisationId, maharashtraRecipient.legal_name, maharashtraRecipient.address, maharashtraRecipient.state_code, maharashtraRecipient.gstin]);
});

afterAll(async () => {
  ledger?.close();
  await postgres?.close();
});

describePg('receipt-voucher mode', () => {
  it('invoices each completed month\'s debited usage once, adjusted against the receipt vouchers oldest first', async () => {
    // two advances in May 2030: ₹1,180 and ₹118
    const first = await insertPaidTopUp(db, { organisationId, pricePaise: 118_000n, recipient: maharashtraRecipient });
    const second = await insertPaidTopUp(db, { organisationId, pricePaise: 11_800n, recipient: maharashtraRecipient });
    const firstVoucher = await db.transaction((tx) => issueTopUpDocument(tx, invoicingSettingsFrom(config), first, { issuedAt: new Date('2030-05-02T10:00:00+05:30') }));
    const secondVoucher = await db.transaction((tx) => issueTopUpDocument(tx, invoicingSettingsFrom(config), second, { issuedAt: new Date('2030-05-03T10:00:00+05:30') }));
    expect([firstVoucher.kind, firstVoucher.serial, secondVoucher.serial]).toEqual(['receipt_voucher', 'GW3031R-000001', 'GW3031R-000002']);

    admin.ledger.usage.push(
      usage('u1', '2030-05-20T10:00:00+05:30', 300_000_000n), // ₹300
      usage('u2', '2030-05-31T23:59:59+05:30', 4_999n), // rounds to 0 paise alone, but sums: ₹300.004999 → 30000 paise
      usage('u3', '2030-06-01T00:00:00+05:30', 950_000_000n), // ₹950 in June (00:00 IST on the 1st is June's)
      usage('u4', '2030-08-15T12:00:00+05:30', 200_000_000n), // ₹200 in August: beyond the advances
    );

    // 1 July 03:00 IST: June ended less than 6 hours ago, so only May is invoiced
    const early = await invoiceCompletedUsageMonths({ db, ledger, settings: invoicingSettingsFrom(config) }, new Date('2030-07-01T03:00:00+05:30'));
    expect(early.issued).toEqual(['GW3031T-000001']);
    const later = await invoiceCompletedUsageMonths({ db, ledger, settings: invoicingSettingsFrom(config) }, new Date('2030-09-02T00:00:00+05:30'));
    // June and August (July had no usage: nothing issued)
    expect(later.issued).toEqual(['GW3031T-000002', 'GW3031T-000003']);
    const again = await invoiceCompletedUsageMonths({ db, ledger, settings: invoicingSettingsFrom(config) }, new Date('2030-09-03T00:00:00+05:30'));
    expect(again.issued).toEqual([]);

    const invoices = await selectTaxDocuments(db, 'organisation_id = $1 AND usage_month IS NOT NULL', [organisationId], 'ORDER BY usage_month');
    expect(invoices.map((invoice) => [invoice.usageMonth, invoice.kind, invoice.totalPaise, invoice.placeOfSupply])).toEqual([
      ['2030-05', 'tax_invoice', 30_000n, '27'], ['2030-06', 'tax_invoice', 95_000n, '27'], ['2030-08', 'tax_invoice', 20_000n, '27'],
    ]);
    // May: ₹300 from the first advance; June: the first's ₹880 left, then ₹70 of the second; August: the second's ₹48, ₹152 uncovered
    expect(invoices.map((invoice) => invoice.details)).toEqual([
      { usage_debited_micros: '300004999', adjusted_against: [{ document_id: firstVoucher.documentId, serial: 'GW3031R-000001', amount_paise: '30000', credit_micros: '300004999' }], not_covered_by_advance_paise: '0' },
      { usage_debited_micros: '950000000', adjusted_against: [
        { document_id: firstVoucher.documentId, serial: 'GW3031R-000001', amount_paise: '88000', credit_micros: '879995001' },
        { document_id: secondVoucher.documentId, serial: 'GW3031R-000002', amount_paise: '7000', credit_micros: '70004999' },
      ], not_covered_by_advance_paise: '0' },
      { usage_debited_micros: '200000000', adjusted_against: [{ document_id: secondVoucher.documentId, serial: 'GW3031R-000002', amount_paise: '4800', credit_micros: '47995001' }], not_covered_by_advance_paise: '15200' },
    ]);
    // inter-state: IGST on the usage value, taxable + IGST = total
    expect(invoices[1]).toMatchObject({ taxablePaise: 80_508n, igstPaise: 14_492n, cgstPaise: 0n, sgstPaise: 0n, recipient: maharashtraRecipient });

    if (!hasPdftotext()) {
      if (process.env['CI'] === 'true') throw new Error('pdftotext (poppler-utils) is required under CI');
      return;
    }
    const text = await pdfText(await renderTaxDocumentPdf(invoices[1]!));
    for (const field of ['TAX INVOICE', 'Services supplied in 2030-06 (IST)', 'Invoice No.: GW3031T-000002', 'Place of supply: Maharashtra (27)',
      'IGST @ 18%: ₹144.92', 'Total: ₹950.00', 'Adjusted against receipt vouchers: GW3031R-000001 (₹880.00), GW3031R-000002 (₹70.00)']) {
      expect(text).toContain(field);
    }
  });

  it('values consumed credit at what was paid for it, oldest voucher first: the README package (₹1,180 for ₹1,000 of credit) spent in full invoices ₹1,180', async () => {
    const created = await admin.request('POST', '/admin/v1/organisations', { name: 'README Package Org' });
    expect(created.status, created.text).toBe(201);
    const buyer = created.json.id as string;
    await db.query(`INSERT INTO billing_profiles (organisation_id, legal_name, address, state_code, gstin) VALUES ($1, $2, $3, $4, $5)`,
      [buyer, maharashtraRecipient.legal_name, maharashtraRecipient.address, maharashtraRecipient.state_code, maharashtraRecipient.gstin]);
    const topUp = await insertPaidTopUp(db, { organisationId: buyer, pricePaise: 118_000n, creditMicros: 1_000_000_000n, recipient: maharashtraRecipient });
    const voucher = await db.transaction((tx) => issueTopUpDocument(tx, invoicingSettingsFrom(config), topUp, { issuedAt: new Date('2031-05-02T10:00:00+05:30') }));
    const [voucherDocument] = await selectTaxDocuments(db, 'id = $1', [voucher.documentId]);
    expect(voucherDocument).toMatchObject({ kind: 'receipt_voucher', totalPaise: 118_000n, taxablePaise: 100_000n, igstPaise: 18_000n });

    const spend = (id: string, at: string, debitedMicros: bigint) => ({ ...usage(id, at, debitedMicros), organisationId: buyer });
    admin.ledger.usage.push(
      spend('r1', '2031-05-20T10:00:00+05:30', 333_333_333n), // a third of the credit in May
      spend('r2', '2031-06-10T10:00:00+05:30', 666_666_667n), // the rest in June: the credit is spent
    );
    await invoiceCompletedUsageMonths({ db, ledger, settings: invoicingSettingsFrom(config) }, new Date('2031-07-02T00:00:00+05:30'));
    const invoices = await selectTaxDocuments(db, 'organisation_id = $1 AND usage_month IS NOT NULL', [buyer], 'ORDER BY usage_month');
    // May: ₹333.333333 of credit bought at ₹1.18 a rupee → ₹393.33; June: the voucher's rest, ₹786.67
    expect(invoices.map((invoice) => [invoice.usageMonth, invoice.totalPaise])).toEqual([['2031-05', 39_333n], ['2031-06', 78_667n]]);
    expect(invoices.reduce((sum, invoice) => sum + invoice.totalPaise, 0n)).toBe(voucherDocument!.totalPaise);
    expect(invoices.reduce((sum, invoice) => sum + invoice.taxablePaise, 0n)).toBe(voucherDocument!.taxablePaise);
    expect(invoices.map((invoice) => invoice.details['adjusted_against'])).toEqual([
      [{ document_id: voucher.documentId, serial: voucher.serial, amount_paise: '39333', credit_micros: '333333333' }],
      [{ document_id: voucher.documentId, serial: voucher.serial, amount_paise: '78667', credit_micros: '666666667' }],
    ]);
  });
});
