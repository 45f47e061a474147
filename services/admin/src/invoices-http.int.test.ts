/**
 * The invoice routes over real HTTP and PostgreSQL: an organisation's documents listed with
 * filters and pages, the CSV export equal to the list, one document with the serial it
 * references, the platform list across organisations, another organisation's documents not
 * found, and the PDF, whose text (poppler's pdftotext) holds every field Rule 46 asks for.
 */
import { parse } from 'csv-parse/sync';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '@gateway/db';
import { testPostgresUrl } from '@gateway/testkit';
import { issueCreditNote, issueTopUpDocument, type TaxDocumentSettings } from './invoicing/domain/tax-documents.ts';
import { taxDocumentListResponse, taxDocumentResponse } from './invoicing/http/invoice-schemas.ts';
import type { AdminHarness } from './test-support/admin-harness.ts';
import { startPostgresAdmin, type PostgresAdmin } from './test-support/postgres-admin.ts';
import { hasPdftotext, insertPaidTopUp, karnatakaRecipient, maharashtraRecipient, pdfText, singaporeRecipient } from './test-support/tax-document-fixtures.ts';

const serverUrl = testPostgresUrl();
const describePg = describe.skipIf(!serverUrl);

const supplierEnv = {
  INVOICE_SUPPLIER_NAME: 'Gateway Operator Private Limited',
  INVOICE_SUPPLIER_ADDRESS: '1 MG Road, Bengaluru, Karnataka 560001',
  INVOICE_SUPPLIER_GSTIN: '29AAACG1234F1Z0',
  INVOICE_SUPPLIER_STATE_CODE: '29',
};
const settings: TaxDocumentSettings = {
  supplierName: supplierEnv.INVOICE_SUPPLIER_NAME, supplierAddress: supplierEnv.INVOICE_SUPPLIER_ADDRESS,
  supplierGstin: supplierEnv.INVOICE_SUPPLIER_GSTIN, supplierStateCode: supplierEnv.INVOICE_SUPPLIER_STATE_CODE,
  sac: '998315', gstRateBasisPoints: 1800, documentMode: 'tax_invoice', serialPrefix: 'GW',
  exportMode: 'igst', lutReference: undefined,
};
let postgres: PostgresAdmin | undefined;
let admin: AdminHarness;
let db: Database;
let mine: string;
let theirs: string;
let mineToken: string;
/** Documents of `mine`: an intra-state invoice (June 2026), an inter-state one (July 2026), a credit note on the first. */
const documents = { intra: '', inter: '', creditNote: '', theirs: '' };
const serials = { intra: '', inter: '', creditNote: '' };

async function createOrganisation(name: string): Promise<string> {
  const response = await admin.request('POST', '/admin/v1/organisations', { name });
  expect(response.status, response.text).toBe(201);
  return response.json.id;
}

/** GETs a binary answer (the harness reads text). */
async function getBytes(path: string, token = admin.token): Promise<{ status: number; headers: Headers; body: Buffer }> {
  const response = await fetch(`${admin.baseUrl}${path}`, { headers: { authorization: `Bearer ${token}` } });
  return { status: response.status, headers: response.headers, body: Buffer.from(await response.arrayBuffer()) };
}

beforeAll(async () => {
  if (!serverUrl) return;
  postgres = await startPostgresAdmin(serverUrl, { env: supplierEnv });
  ({ admin, db } = postgres);
  mine = await createOrganisation('Bengaluru Widgets');
  theirs = await createOrganisation('Someone Else');
  const issued = await admin.request('POST', `/admin/v1/organisations/${mine}/tokens`, { name: 'accountant' });
  expect(issued.status, issued.text).toBe(201);
  mineToken = issued.json.secret;

  const intraTopUp = await insertPaidTopUp(db, { organisationId: mine, pricePaise: 118_000n, recipient: karnatakaRecipient, packageName: 'Starter' });
  const interTopUp = await insertPaidTopUp(db, { organisationId: mine, pricePaise: 50_000n, recipient: maharashtraRecipient, packageName: 'Small' });
  const theirTopUp = await insertPaidTopUp(db, { organisationId: theirs, pricePaise: 11_800n, recipient: maharashtraRecipient });
  const intra = await db.transaction((tx) => issueTopUpDocument(tx, settings, intraTopUp, { issuedAt: new Date('2026-06-10T10:00:00+05:30') }));
  const inter = await db.transaction((tx) => issueTopUpDocument(tx, settings, interTopUp, { issuedAt: new Date('2026-07-01T00:30:00+05:30') }));
  const note = await db.transaction((tx) => issueCreditNote(tx, settings,
    { topUpId: intraTopUp, refundId: 'rfd_0000000000000000000000aa', amountPaise: 59_000n }, { issuedAt: new Date('2026-07-20T15:00:00+05:30') }));
  const their = await db.transaction((tx) => issueTopUpDocument(tx, settings, theirTopUp, { issuedAt: new Date('2026-06-11T10:00:00+05:30') }));
  Object.assign(documents, { intra: intra.documentId, inter: inter.documentId, creditNote: note.documentId, theirs: their.documentId });
  Object.assign(serials, { intra: intra.serial, inter: inter.serial, creditNote: note.serial });
});

afterAll(async () => {
  await postgres?.close();
});

describePg('invoice routes', () => {
  it('lists the organisation\'s documents newest first, filtered by kind and issue window, in pages', async () => {
    const all = taxDocumentListResponse.parse((await admin.request('GET', `/admin/v1/organisations/${mine}/invoices`, undefined, { authorization: `Bearer ${mineToken}` })).json);
    expect(all.data.map((document) => document.id)).toEqual([documents.creditNote, documents.inter, documents.intra]);
    expect(all.data[2]).toMatchObject({
      kind: 'tax_invoice', serial: serials.intra, financial_year: '2026-27', issue_date_ist: '2026-06-10', place_of_supply: '29',
      taxable_paise: '100000', cgst_paise: '9000', sgst_paise: '9000', igst_paise: '0', total_paise: '118000',
      total_in_words: 'Rupees One Thousand One Hundred Eighty Only', recipient: karnatakaRecipient, references_document_id: null,
    });
    expect(all.data[0]).toMatchObject({ kind: 'credit_note', references_document_id: documents.intra, references_serial: serials.intra, total_paise: '59000' });

    const notes = taxDocumentListResponse.parse((await admin.request('GET', `/admin/v1/organisations/${mine}/invoices?kind=credit_note`)).json);
    expect(notes.data.map((document) => document.id)).toEqual([documents.creditNote]);
    // 1 July 00:30 IST is 30 June in UTC: the window is in instants, the date printed is IST
    const july = taxDocumentListResponse.parse((await admin.request('GET',
      `/admin/v1/organisations/${mine}/invoices?from=${encodeURIComponent('2026-07-01T00:00:00+05:30')}&to=${encodeURIComponent('2026-07-10T00:00:00+05:30')}`)).json);
    expect(july.data.map((document) => [document.id, document.issue_date_ist])).toEqual([[documents.inter, '2026-07-01']]);

    const first = taxDocumentListResponse.parse((await admin.request('GET', `/admin/v1/organisations/${mine}/invoices?limit=2`)).json);
    expect(first.data.map((document) => document.id)).toEqual([documents.creditNote, documents.inter]);
    const second = taxDocumentListResponse.parse((await admin.request('GET', `/admin/v1/organisations/${mine}/invoices?limit=2&cursor=${first.next_cursor}`)).json);
    expect(second.data.map((document) => document.id)).toEqual([documents.intra]);
    expect(second.next_cursor).toBeNull();
  });

  it('takes a billing profile outside India (96) only with its country, and keeps the country', async () => {
    const path = `/admin/v1/organisations/${theirs}/billing-profile`;
    const abroad = { legal_name: 'Lion City Analytics Pte Ltd', address: '1 Raffles Place, #20-01', state_code: '96' };
    const noCountry = await admin.request('PUT', path, abroad);
    expect(noCountry.status).toBe(400);
    expect(noCountry.json.error).toMatchObject({ param: 'country', message: expect.stringMatching(/country is required with state_code 96/) });
    const indianWithCountry = await admin.request('PUT', path, { ...abroad, state_code: '27', country: 'Singapore' });
    expect(indianWithCountry.status).toBe(400);
    expect(indianWithCountry.json.error.param).toBe('country');
    const saved = await admin.request('PUT', path, { ...abroad, country: 'Singapore' });
    expect(saved.status, saved.text).toBe(200);
    expect(saved.json.billing_profile).toMatchObject({ state_code: '96', country: 'Singapore', gstin: null });
    expect((await admin.request('GET', path)).json.billing_profile).toMatchObject({ state_code: '96', country: 'Singapore' });
    const home = await admin.request('PUT', path, { ...abroad, state_code: '27', address: 'Pune' });
    expect(home.json.billing_profile).toMatchObject({ state_code: '27', country: null });
  });

  it('refuses bad filters with a 400 naming the field', async () => {
    const badKind = await admin.request('GET', `/admin/v1/organisations/${mine}/invoices?kind=bill`);
    expect(badKind.status).toBe(400);
    expect(badKind.json.error.param).toBe('kind');
    const badWindow = await admin.request('GET', `/admin/v1/organisations/${mine}/invoices?from=2026-07-02T00:00:00Z&to=2026-07-01T00:00:00Z`);
    expect(badWindow.status).toBe(400);
    expect(badWindow.json.error.param).toBe('to');
    const badCursor = await admin.request('GET', `/admin/v1/organisations/${mine}/invoices?cursor=bm90LWEtY3Vyc29y`);
    expect(badCursor.status).toBe(400);
    expect(badCursor.json.error.param).toBe('cursor');
  });

  it('exports exactly the list\'s documents as CSV', async () => {
    const response = await admin.request('GET', `/admin/v1/organisations/${mine}/invoices/export?kind=tax_invoice`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/csv/);
    expect(response.headers.get('content-disposition')).toMatch(new RegExp(`^attachment; filename="invoices-${mine}-\\d{4}-\\d{2}-\\d{2}\\.csv"$`));
    const rows = parse(response.text, { columns: true }) as Array<Record<string, string>>;
    expect(rows.map((row) => row['serial'])).toEqual([serials.inter, serials.intra]);
    expect(rows[1]).toMatchObject({
      kind: 'tax_invoice', issue_date_ist: '2026-06-10', financial_year: '2026-27', recipient_legal_name: karnatakaRecipient.legal_name,
      recipient_gstin: karnatakaRecipient.gstin, place_of_supply: '29', sac: '998315', rate_basis_points: '1800',
      taxable_paise: '100000', cgst_paise: '9000', sgst_paise: '9000', igst_paise: '0', total_paise: '118000', document_id: documents.intra,
    });
    const withNotes = parse((await admin.request('GET', `/admin/v1/organisations/${mine}/invoices/export`)).text, { columns: true }) as Array<Record<string, string>>;
    expect(withNotes[0]).toMatchObject({ serial: serials.creditNote, references_serial: serials.intra, recipient_gstin: karnatakaRecipient.gstin });
    expect(withNotes.find((row) => row['serial'] === serials.inter)).toMatchObject({ recipient_gstin: '', igst_paise: '7627' });
  });

  it('answers one document, and not_found for another organisation\'s or an unknown id', async () => {
    const one = await admin.request('GET', `/admin/v1/organisations/${mine}/invoices/${documents.creditNote}`);
    expect(one.status).toBe(200);
    expect(taxDocumentResponse.parse(one.json)).toMatchObject({ serial: serials.creditNote, references_serial: serials.intra, refund_id: 'rfd_0000000000000000000000aa' });
    expect((await admin.request('GET', `/admin/v1/organisations/${mine}/invoices/${documents.theirs}`)).status).toBe(404);
    expect((await admin.request('GET', `/admin/v1/organisations/${mine}/invoices/doc_000000000000000000000000`)).status).toBe(404);
    expect((await admin.request('GET', `/admin/v1/organisations/${mine}/invoices/not-an-id`)).status).toBe(404);
    expect((await getBytes(`/admin/v1/organisations/${mine}/invoices/${documents.theirs}/pdf`)).status).toBe(404);
    // an organisation's token sees nothing of another organisation
    const foreign = await admin.request('GET', `/admin/v1/organisations/${theirs}/invoices`, undefined, { authorization: `Bearer ${mineToken}` });
    expect(foreign.status).toBe(404);
  });

  it('lists every organisation\'s documents for platform admins only', async () => {
    const all = taxDocumentListResponse.parse((await admin.request('GET', '/admin/v1/invoices')).json);
    expect(new Set(all.data.map((document) => document.organisation_id))).toEqual(new Set([mine, theirs]));
    const one = taxDocumentListResponse.parse((await admin.request('GET', `/admin/v1/invoices?organisation_id=${theirs}`)).json);
    expect(one.data.map((document) => document.id)).toEqual([documents.theirs]);
    const exported = await admin.request('GET', '/admin/v1/invoices/export');
    expect((parse(exported.text, { columns: true }) as unknown[]).length).toBe(all.data.length);
    expect((await admin.request('GET', '/admin/v1/invoices', undefined, { authorization: `Bearer ${mineToken}` })).status).toBe(403);
  });

  it('serves a PDF whose text holds every required field: intra-state invoice, inter-state invoice, credit note', async (context) => {
    if (!hasPdftotext()) {
      if (process.env['CI'] === 'true') throw new Error('pdftotext (poppler-utils) is required under CI');
      context.skip();
    }
    const intra = await getBytes(`/admin/v1/organisations/${mine}/invoices/${documents.intra}/pdf`, mineToken);
    expect(intra.status).toBe(200);
    expect(intra.headers.get('content-type')).toBe('application/pdf');
    expect(intra.headers.get('content-disposition')).toBe(`attachment; filename="${serials.intra}.pdf"`);
    expect(intra.body.subarray(0, 5).toString()).toBe('%PDF-');
    const intraText = await pdfText(intra.body);
    for (const field of [
      'TAX INVOICE', supplierEnv.INVOICE_SUPPLIER_NAME, supplierEnv.INVOICE_SUPPLIER_ADDRESS, `GSTIN: ${supplierEnv.INVOICE_SUPPLIER_GSTIN}`,
      `Invoice No.: ${serials.intra}`, 'Date of issue: 2026-06-10',
      karnatakaRecipient.legal_name, karnatakaRecipient.address, `GSTIN: ${karnatakaRecipient.gstin}`, 'Place of supply: Karnataka (29)',
      'SAC: 998315', 'Description of service: Prepaid credit for AI inference API services: Starter',
      'Taxable value: ₹1,000.00', 'CGST @ 9%: ₹90.00', 'SGST @ 9%: ₹90.00', 'Total: ₹1,180.00',
      'Total in words: Rupees One Thousand One Hundred Eighty Only', 'Tax payable on reverse charge: No', 'Authorised signatory',
    ]) expect(intraText).toContain(field);
    expect(intraText).not.toContain('IGST');

    const interText = await pdfText((await getBytes(`/admin/v1/organisations/${mine}/invoices/${documents.inter}/pdf`)).body);
    for (const field of [
      `Invoice No.: ${serials.inter}`, 'Date of issue: 2026-07-01', maharashtraRecipient.legal_name, maharashtraRecipient.address,
      'GSTIN: Unregistered', 'Place of supply: Maharashtra (27)', 'Taxable value: ₹423.73', 'IGST @ 18%: ₹76.27', 'Total: ₹500.00',
      'Total in words: Rupees Five Hundred Only',
    ]) expect(interText).toContain(field);
    expect(interText).not.toContain('CGST');

    const noteText = await pdfText((await getBytes(`/admin/v1/organisations/${mine}/invoices/${documents.creditNote}/pdf`)).body);
    for (const field of [
      'CREDIT NOTE', `Credit Note No.: ${serials.creditNote}`, 'Date of issue: 2026-07-20', `Against Tax Invoice: ${serials.intra} dated 2026-06-10`,
      'Taxable value: ₹500.00', 'CGST @ 9%: ₹45.00', 'SGST @ 9%: ₹45.00', 'Total: ₹590.00', 'Rupees Five Hundred Ninety Only',
    ]) expect(noteText).toContain(field);
  });
});

// After the lists above, which count every organisation's documents.
describePg('export invoices', () => {
  it('answers an export invoice with its terms and the recipient\'s country; other documents have none', async () => {
    const exporter = await createOrganisation('Export Customer');
    const topUpId = await insertPaidTopUp(db, { organisationId: exporter, pricePaise: 118_000n, recipient: singaporeRecipient });
    const lut = { ...settings, exportMode: 'lut' as const, lutReference: 'AD290326012345X' };
    const issued = await db.transaction((tx) => issueTopUpDocument(tx, lut, topUpId));
    const answer = taxDocumentResponse.parse((await admin.request('GET', `/admin/v1/organisations/${exporter}/invoices/${issued.documentId}`)).json);
    expect(answer).toMatchObject({
      place_of_supply: '96', rate_basis_points: 0, igst_paise: '0', taxable_paise: '118000',
      recipient: { country: 'Singapore', gstin: null, state_code: '96' },
      export: { mode: 'lut', lut_reference: 'AD290326012345X', country: 'Singapore' },
    });
    expect(taxDocumentResponse.parse((await admin.request('GET', `/admin/v1/organisations/${mine}/invoices/${documents.intra}`)).json).export).toBeNull();
  });
});
