/**
 * GST documents over real PostgreSQL: the tax split at issue (intra- vs inter-state), one
 * document per top-up whatever the concurrency, serials unique and consecutive per financial
 * year and series (the 31 March / 1 April IST boundary restarts them at 1; 50 parallel issues get
 * 1..50; a rolled-back issue leaves no gap), receipt vouchers in their own series, credit notes
 * referencing the invoice, and documents that refuse every UPDATE and DELETE.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '@gateway/db';
import { GatewayError } from '@gateway/errors';
import { testPostgresUrl } from '@gateway/testkit';
import { loadAdminConfig } from './config.ts';
import { issueCreditNote, issueTopUpDocument, type TaxDocumentSettings } from './invoicing/domain/tax-documents.ts';
import { selectTaxDocuments } from './invoicing/domain/tax-document-store.ts';
import { invoicingSettingsFrom } from './invoicing/invoicing-settings.ts';
import type { AdminHarness } from './test-support/admin-harness.ts';
import { startPostgresAdmin, type PostgresAdmin } from './test-support/postgres-admin.ts';
import { renderTaxDocumentPdf } from './invoicing/domain/invoice-pdf.ts';
import { hasPdftotext, insertPaidTopUp, karnatakaRecipient, maharashtraRecipient, pdfText, singaporeRecipient } from './test-support/tax-document-fixtures.ts';

const serverUrl = testPostgresUrl();
const describePg = describe.skipIf(!serverUrl);

const settings: TaxDocumentSettings = {
  supplierName: 'Gateway Operator Private Limited',
  supplierAddress: '1 MG Road, Bengaluru 560001',
  supplierGstin: '29AAACG1234F1Z0',
  supplierStateCode: '29',
  sac: '998315',
  gstRateBasisPoints: 1800,
  documentMode: 'tax_invoice',
  serialPrefix: 'GW',
  exportMode: 'igst',
  lutReference: undefined,
};
let postgres: PostgresAdmin | undefined;
let admin: AdminHarness;
let db: Database;
let organisationId: string;

beforeAll(async () => {
  if (!serverUrl) return;
  postgres = await startPostgresAdmin(serverUrl, { poolSize: 20 });
  ({ admin, db } = postgres);
  const created = await admin.request('POST', '/admin/v1/organisations', { name: 'Invoice Test Org' });
  expect(created.status).toBe(201);
  organisationId = created.json.id;
});

afterAll(async () => {
  await postgres?.close();
});

/** The sequence number at the end of a serial (GW2627T-000042 → 42). */
function numberOf(serial: string): number {
  return Number(serial.split('-').at(-1));
}

describePg('tax documents', () => {
  it('splits an intra-state price into CGST + SGST and an inter-state one into IGST, the parts adding up to the price', async () => {
    const intra = await insertPaidTopUp(db, { organisationId, pricePaise: 118_000n, recipient: karnatakaRecipient });
    const inter = await insertPaidTopUp(db, { organisationId, pricePaise: 50_000n, recipient: maharashtraRecipient });
    const intraIssued = await db.transaction((tx) => issueTopUpDocument(tx, settings, intra));
    const interIssued = await db.transaction((tx) => issueTopUpDocument(tx, settings, inter));
    expect(intraIssued.kind).toBe('tax_invoice');
    expect(intraIssued.serial).toMatch(/^GW\d{4}T-\d{6}$/);

    const [intraDocument] = await selectTaxDocuments(db, 'id = $1', [intraIssued.documentId]);
    expect(intraDocument).toMatchObject({
      kind: 'tax_invoice', organisationId, topUpId: intra, placeOfSupply: '29', sac: '998315', rateBasisPoints: 1800,
      taxablePaise: 100_000n, cgstPaise: 9_000n, sgstPaise: 9_000n, igstPaise: 0n, totalPaise: 118_000n,
      recipient: karnatakaRecipient,
      supplier: { name: settings.supplierName, address: settings.supplierAddress, gstin: '29AAACG1234F1Z0', state_code: '29' },
    });
    const [interDocument] = await selectTaxDocuments(db, 'id = $1', [interIssued.documentId]);
    // ₹500.00 inclusive of 18%: taxable round-half-up(42372.88…) = 42373, IGST the rest
    expect(interDocument).toMatchObject({ placeOfSupply: '27', taxablePaise: 42_373n, cgstPaise: 0n, sgstPaise: 0n, igstPaise: 7_627n, totalPaise: 50_000n });
    expect(numberOf(interIssued.serial)).toBe(numberOf(intraIssued.serial) + 1);
  });

  it('takes the supplier\'s state from its GSTIN: an operator in Maharashtra who sets only the GSTIN charges CGST + SGST in Maharashtra, IGST in Karnataka', async () => {
    const maharashtraSupplier = loadAdminConfig({
      GRPC_INSECURE: 'true', ADMIN_ENCRYPTION_KEY: Buffer.alloc(32, 7).toString('base64'),
      INVOICE_SUPPLIER_NAME: 'Pune Gateway LLP', INVOICE_SUPPLIER_ADDRESS: '3 FC Road, Pune 411004', INVOICE_SUPPLIER_GSTIN: '27AAPFU0939F1ZV',
    });
    const inMaharashtra = await insertPaidTopUp(db, { organisationId, pricePaise: 118_000n, recipient: maharashtraRecipient });
    const inKarnataka = await insertPaidTopUp(db, { organisationId, pricePaise: 118_000n, recipient: karnatakaRecipient });
    const [intra] = await selectTaxDocuments(db, 'id = $1', [(await db.transaction((tx) => issueTopUpDocument(tx, invoicingSettingsFrom(maharashtraSupplier), inMaharashtra))).documentId]);
    const [inter] = await selectTaxDocuments(db, 'id = $1', [(await db.transaction((tx) => issueTopUpDocument(tx, invoicingSettingsFrom(maharashtraSupplier), inKarnataka))).documentId]);
    expect(intra).toMatchObject({ supplier: { gstin: '27AAPFU0939F1ZV', state_code: '27' }, placeOfSupply: '27', cgstPaise: 9_000n, sgstPaise: 9_000n, igstPaise: 0n });
    expect(inter).toMatchObject({ supplier: { gstin: '27AAPFU0939F1ZV', state_code: '27' }, placeOfSupply: '29', cgstPaise: 0n, sgstPaise: 0n, igstPaise: 18_000n });
  });

  it('invoices a recipient outside India (96) as an export of services: zero-rated under LUT, or with IGST, as configured, with the export legend and country', async () => {
    const underLut = await insertPaidTopUp(db, { organisationId, pricePaise: 118_000n, recipient: singaporeRecipient });
    const withIgst = await insertPaidTopUp(db, { organisationId, pricePaise: 118_000n, recipient: singaporeRecipient });
    const lutSettings: TaxDocumentSettings = { ...settings, exportMode: 'lut', lutReference: 'AD290326012345X' };
    const [lut] = await selectTaxDocuments(db, 'id = $1', [(await db.transaction((tx) => issueTopUpDocument(tx, lutSettings, underLut))).documentId]);
    const [igst] = await selectTaxDocuments(db, 'id = $1', [(await db.transaction((tx) => issueTopUpDocument(tx, { ...settings, exportMode: 'igst' }, withIgst))).documentId]);
    // Zero-rated: the whole price is the taxable value, no tax is charged.
    expect(lut).toMatchObject({
      placeOfSupply: '96', rateBasisPoints: 0, taxablePaise: 118_000n, cgstPaise: 0n, sgstPaise: 0n, igstPaise: 0n, totalPaise: 118_000n,
      recipient: singaporeRecipient, details: { export: { mode: 'lut', lut_reference: 'AD290326012345X', country: 'Singapore' } },
    });
    // With payment of IGST: inter-state at the configured rate.
    expect(igst).toMatchObject({
      placeOfSupply: '96', rateBasisPoints: 1800, taxablePaise: 100_000n, cgstPaise: 0n, sgstPaise: 0n, igstPaise: 18_000n,
      details: { export: { mode: 'igst', country: 'Singapore' } },
    });
    // A refund's credit note follows its invoice: nothing to take back under LUT.
    const note = await db.transaction((tx) => issueCreditNote(tx, lutSettings, { topUpId: underLut, refundId: 'rfnd_export_lut_000000001', amountPaise: 11_800n }));
    const [noteDocument] = await selectTaxDocuments(db, 'id = $1', [note.documentId]);
    expect(noteDocument).toMatchObject({ placeOfSupply: '96', taxablePaise: 11_800n, igstPaise: 0n, details: { export: { mode: 'lut', lut_reference: 'AD290326012345X', country: 'Singapore' } } });

    if (!hasPdftotext()) {
      if (process.env['CI'] === 'true') throw new Error('pdftotext (poppler-utils) is required under CI');
      return;
    }
    const lutText = await pdfText(await renderTaxDocumentPdf(lut!));
    for (const field of ['SUPPLY MEANT FOR EXPORT UNDER LETTER OF UNDERTAKING WITHOUT PAYMENT OF INTEGRATED TAX', 'LUT reference: AD290326012345X',
      singaporeRecipient.legal_name, singaporeRecipient.address, 'Country: Singapore', 'Place of supply: Foreign Country (96)', 'IGST @ 0%: ₹0.00', 'Total: ₹1,180.00']) {
      expect(lutText).toContain(field);
    }
    const igstText = await pdfText(await renderTaxDocumentPdf(igst!));
    for (const field of ['SUPPLY MEANT FOR EXPORT ON PAYMENT OF INTEGRATED TAX', 'Country: Singapore', 'IGST @ 18%: ₹180.00']) expect(igstText).toContain(field);
    expect(igstText).not.toContain('LETTER OF UNDERTAKING');
  });

  it('marks a document issued without a supplier GSTIN (development mode) as not valid for GST', async () => {
    const topUpId = await insertPaidTopUp(db, { organisationId, pricePaise: 118_000n, recipient: karnatakaRecipient });
    const issued = await db.transaction((tx) => issueTopUpDocument(tx, { ...settings, supplierGstin: undefined }, topUpId));
    const [document] = await selectTaxDocuments(db, 'id = $1', [issued.documentId]);
    expect(document).toMatchObject({ supplier: { gstin: null, state_code: '29' }, cgstPaise: 9_000n, sgstPaise: 9_000n });
    if (!hasPdftotext()) {
      if (process.env['CI'] === 'true') throw new Error('pdftotext (poppler-utils) is required under CI');
      return;
    }
    const text = await pdfText(await renderTaxDocumentPdf(document!));
    expect(text).toContain('DEVELOPMENT DOCUMENT: issued without a supplier GSTIN (INVOICE_DEVELOPMENT_MODE); not valid for GST.');
    expect(text).toContain('GSTIN: none (INVOICE_SUPPLIER_GSTIN is not set)');
  });

  it('issues one document per top-up: a repeated call and 10 concurrent calls all answer the first', async () => {
    const topUpId = await insertPaidTopUp(db, { organisationId, pricePaise: 118_000n, recipient: karnatakaRecipient });
    const first = await db.transaction((tx) => issueTopUpDocument(tx, settings, topUpId));
    const again = await Promise.all(Array.from({ length: 10 }, () => db.transaction((tx) => issueTopUpDocument(tx, settings, topUpId))));
    for (const answer of again) expect(answer).toEqual(first);
    const stored = await selectTaxDocuments(db, 'topup_id = $1', [topUpId]);
    expect(stored).toHaveLength(1);

    const other = await insertPaidTopUp(db, { organisationId, pricePaise: 20_000n, recipient: karnatakaRecipient });
    const racing = await Promise.all(Array.from({ length: 10 }, () => db.transaction((tx) => issueTopUpDocument(tx, settings, other))));
    expect(new Set(racing.map((answer) => answer.documentId)).size).toBe(1);
    expect(await selectTaxDocuments(db, 'topup_id = $1', [other])).toHaveLength(1);
  });

  it('refuses a top-up that has not been paid, and an unknown one', async () => {
    const unpaid = await insertPaidTopUp(db, { organisationId, pricePaise: 118_000n, recipient: karnatakaRecipient, state: 'pending_payment' });
    await expect(db.transaction((tx) => issueTopUpDocument(tx, settings, unpaid))).rejects.toMatchObject({ code: 'conflict' });
    await expect(db.transaction((tx) => issueTopUpDocument(tx, settings, 'top_000000000000000000000000'))).rejects.toMatchObject({ code: 'not_found' });
    expect(await selectTaxDocuments(db, 'topup_id = $1', [unpaid])).toHaveLength(0);
  });

  it('restarts serials at 1 in a new financial year: 31 March 23:59:59 IST and 1 April 00:00 IST', async () => {
    const lastMarch = new Date('2031-03-31T23:59:59+05:30');
    const firstApril = new Date('2031-04-01T00:00:00+05:30');
    const serials: string[] = [];
    for (const issuedAt of [lastMarch, lastMarch, firstApril, firstApril]) {
      const topUpId = await insertPaidTopUp(db, { organisationId, pricePaise: 11_800n, recipient: maharashtraRecipient });
      serials.push((await db.transaction((tx) => issueTopUpDocument(tx, settings, topUpId, { issuedAt }))).serial);
    }
    expect(serials).toEqual(['GW3031T-000001', 'GW3031T-000002', 'GW3132T-000001', 'GW3132T-000002']);
    const stored = await selectTaxDocuments(db, 'serial = ANY($1::text[])', [serials]);
    expect(stored.map((document) => document.financialYear).sort()).toEqual(['2030-31', '2030-31', '2031-32', '2031-32']);
  });

  it('gives 50 parallel issues in one financial year the numbers 1..50, each once', async () => {
    const issuedAt = new Date('2041-01-15T12:00:00+05:30');
    const topUpIds = await Promise.all(Array.from({ length: 50 }, () => insertPaidTopUp(db, { organisationId, pricePaise: 11_800n, recipient: karnatakaRecipient })));
    const issued = await Promise.all(topUpIds.map((topUpId) => db.transaction((tx) => issueTopUpDocument(tx, settings, topUpId, { issuedAt }))));
    const serials = issued.map((answer) => answer.serial);
    expect(new Set(serials).size).toBe(50);
    expect(serials.every((serial) => serial.startsWith('GW4041T-') && serial.length <= 16)).toBe(true);
    expect(serials.map(numberOf).sort((a, b) => a - b)).toEqual(Array.from({ length: 50 }, (_, index) => index + 1));
  });

  it('leaves no gap when an issuing transaction rolls back: its number goes to the next document', async () => {
    const issuedAt = new Date('2045-07-01T10:00:00+05:30');
    const rolledBack = await insertPaidTopUp(db, { organisationId, pricePaise: 11_800n, recipient: karnatakaRecipient });
    await expect(db.transaction(async (tx) => {
      const issued = await issueTopUpDocument(tx, settings, rolledBack, { issuedAt });
      expect(issued.serial).toBe('GW4546T-000001');
      throw new Error('the crediting failed after the invoice');
    })).rejects.toThrow('the crediting failed');
    const next = await insertPaidTopUp(db, { organisationId, pricePaise: 11_800n, recipient: karnatakaRecipient });
    expect((await db.transaction((tx) => issueTopUpDocument(tx, settings, next, { issuedAt }))).serial).toBe('GW4546T-000001');
  });

  it('issues a receipt voucher in its own series in receipt-voucher mode, with the tax on the advance', async () => {
    const issuedAt = new Date('2046-05-05T10:00:00+05:30');
    const topUpId = await insertPaidTopUp(db, { organisationId, pricePaise: 118_000n, recipient: maharashtraRecipient });
    const voucher = await db.transaction((tx) => issueTopUpDocument(tx, { ...settings, documentMode: 'receipt_voucher' }, topUpId, { issuedAt }));
    expect(voucher).toMatchObject({ kind: 'receipt_voucher', serial: 'GW4647R-000001' });
    const [document] = await selectTaxDocuments(db, 'id = $1', [voucher.documentId]);
    expect(document).toMatchObject({ taxablePaise: 100_000n, igstPaise: 18_000n, totalPaise: 118_000n });
    expect(document!.description).toMatch(/^Advance received/);
    // the invoice series of the same year is untouched
    const invoiceTopUp = await insertPaidTopUp(db, { organisationId, pricePaise: 118_000n, recipient: maharashtraRecipient });
    expect((await db.transaction((tx) => issueTopUpDocument(tx, settings, invoiceTopUp, { issuedAt }))).serial).toBe('GW4647T-000001');
  });

  it('issues credit notes in their own series referencing the invoice, once per refund, never beyond the invoice total', async () => {
    const issuedAt = new Date('2047-08-08T10:00:00+05:30');
    const topUpId = await insertPaidTopUp(db, { organisationId, pricePaise: 118_000n, recipient: karnatakaRecipient });
    const invoice = await db.transaction((tx) => issueTopUpDocument(tx, settings, topUpId, { issuedAt }));
    const refundId = 'rfd_00000000000000000000aaaa';
    const note = await db.transaction((tx) => issueCreditNote(tx, settings, { topUpId, refundId, amountPaise: 59_000n }, { issuedAt }));
    expect(note.serial).toBe('GW4748C-000001');
    expect(await db.transaction((tx) => issueCreditNote(tx, settings, { topUpId, refundId, amountPaise: 59_000n }, { issuedAt }))).toEqual(note);
    const [stored] = await selectTaxDocuments(db, 'id = $1', [note.documentId]);
    expect(stored).toMatchObject({
      kind: 'credit_note', referencesDocumentId: invoice.documentId, refundId, topUpId,
      taxablePaise: 50_000n, cgstPaise: 4_500n, sgstPaise: 4_500n, igstPaise: 0n, totalPaise: 59_000n,
      details: { references_serial: invoice.serial, references_issued_at: issuedAt.toISOString() },
    });

    await expect(db.transaction((tx) => issueCreditNote(tx, settings, { topUpId, refundId: 'rfd_00000000000000000000bbbb', amountPaise: 59_001n })))
      .rejects.toMatchObject({ code: 'conflict' });
    const rest = await db.transaction((tx) => issueCreditNote(tx, settings, { topUpId, refundId: 'rfd_00000000000000000000cccc', amountPaise: 59_000n }, { issuedAt }));
    expect(rest.serial).toBe('GW4748C-000002');
    // the same refund id with other terms is a conflict, not a second note
    await expect(db.transaction((tx) => issueCreditNote(tx, settings, { topUpId, refundId, amountPaise: 1n }))).rejects.toBeInstanceOf(GatewayError);
  });

  it('refuses a credit note for a top-up without an invoice', async () => {
    const topUpId = await insertPaidTopUp(db, { organisationId, pricePaise: 118_000n, recipient: karnatakaRecipient });
    await expect(db.transaction((tx) => issueCreditNote(tx, settings, { topUpId, refundId: 'rfd_00000000000000000000dddd', amountPaise: 100n })))
      .rejects.toMatchObject({ code: 'conflict' });
  });

  it('refuses to change or delete an issued document', async () => {
    const topUpId = await insertPaidTopUp(db, { organisationId, pricePaise: 118_000n, recipient: karnatakaRecipient });
    const { documentId } = await db.transaction((tx) => issueTopUpDocument(tx, settings, topUpId));
    await expect(db.query(`UPDATE tax_documents SET total_paise = 1, taxable_paise = 1, cgst_paise = 0, sgst_paise = 0 WHERE id = $1`, [documentId]))
      .rejects.toThrow(/immutable/);
    await expect(db.query(`DELETE FROM tax_documents WHERE id = $1`, [documentId])).rejects.toThrow(/immutable/);
    const [document] = await selectTaxDocuments(db, 'id = $1', [documentId]);
    expect(document!.totalPaise).toBe(118_000n);
  });
});
