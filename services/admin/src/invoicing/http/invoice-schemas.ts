import { z } from 'zod';
import { pageCursor, pageLimit, timestampShown as timestamp, paiseShown } from '../../common/http/wire-fields.ts';
import { instantMs, windowInOrder } from '../../common/http/request-schemas.ts';

/**
 * The request and response shapes of the invoice routes (GST tax invoices, receipt vouchers,
 * credit notes). Responses document the API and tests parse real answers with them.
 */

const documentKind = z.enum(['tax_invoice', 'receipt_voucher', 'credit_note'], { error: 'must be "tax_invoice", "receipt_voucher" or "credit_note"' });

/** Filters shared by the list and its export: issue window and kind. */
const invoiceFilterShape = {
  from: instantMs('Only documents issued at or after this instant (inclusive): ms since the epoch or ISO-8601.'),
  to: instantMs('Only documents issued before this instant (exclusive): ms since the epoch or ISO-8601.'),
  kind: documentKind.optional().meta({ description: 'Only this kind: tax_invoice, receipt_voucher or credit_note.' }),
};

/** The page size of the invoice lists when none is given. */
export const defaultInvoicePageSize = 100;

/** Paging of the invoice lists: page size and the previous page's next_cursor. */
const invoicePageShape = {
  limit: pageLimit(500, defaultInvoicePageSize),
  cursor: pageCursor(/^[A-Za-z0-9_-]{1,200}$/),
};

const organisationFilter = z.string({ error: 'must be given once' }).regex(/^org_[0-9a-f]{24}$/, { error: 'must be an organisation id (org_…)' }).optional()
  .meta({ description: 'Only this organisation\'s documents.' });

/** Query of GET /admin/v1/organisations/{id}/invoices. */
export const invoiceListQuery = z.strictObject({ ...invoiceFilterShape, ...invoicePageShape }).superRefine(windowInOrder);

/** Query of GET /admin/v1/organisations/{id}/invoices/export: exactly the list's filters, without paging. */
export const invoiceExportQuery = z.strictObject(invoiceFilterShape).superRefine(windowInOrder);

/** Query of GET /admin/v1/invoices (platform): the list's filters and one organisation. */
export const platformInvoiceListQuery = z.strictObject({ ...invoiceFilterShape, ...invoicePageShape, organisation_id: organisationFilter })
  .superRefine(windowInOrder);

/** Query of GET /admin/v1/invoices/export (platform). */
export const platformInvoiceExportQuery = z.strictObject({ ...invoiceFilterShape, organisation_id: organisationFilter }).superRefine(windowInOrder);


/** One issued document. */
export const taxDocumentResponse = z.strictObject({
  id: z.string().meta({ description: 'doc_…' }),
  object: z.literal('tax_document'),
  kind: documentKind,
  serial: z.string().max(16).meta({ description: 'Unique and consecutive within the financial year and series, e.g. GW2627T-000001 (docs/invoices.md).' }),
  issued_at: timestamp,
  issue_date_ist: z.string().meta({ description: 'The date of issue in IST (YYYY-MM-DD), as printed.' }),
  financial_year: z.string().meta({ description: 'Indian financial year (April-March, IST), e.g. 2026-27.' }),
  organisation_id: z.string(),
  topup_id: z.string().nullable().meta({ description: 'The top-up it is for; null for a monthly usage invoice.' }),
  refund_id: z.string().nullable().meta({ description: 'A credit note\'s refund.' }),
  usage_month: z.string().nullable().meta({ description: 'A monthly usage invoice\'s month (YYYY-MM, IST) in receipt-voucher mode.' }),
  supplier: z.strictObject({ name: z.string(), address: z.string(), gstin: z.string().nullable(), state_code: z.string() }),
  recipient: z.strictObject({
    legal_name: z.string(), address: z.string(), gstin: z.string().nullable(), state_code: z.string(),
    country: z.string().optional().meta({ description: 'A recipient outside India\'s country (state_code 96: an export of services).' }),
  }),
  place_of_supply: z.string().meta({ description: 'Two-digit GST state code of the place of supply.' }),
  sac: z.string(),
  description: z.string(),
  rate_basis_points: z.int().meta({ description: 'GST rate, basis points (1800 = 18%).' }),
  taxable_paise: paiseShown('Taxable value.'),
  cgst_paise: paiseShown('Central tax (intra-state).'),
  sgst_paise: paiseShown('State tax (intra-state).'),
  igst_paise: paiseShown('Integrated tax (inter-state).'),
  total_paise: paiseShown('taxable + CGST + SGST + IGST: what was paid (or, on a credit note, credited).'),
  total_in_words: z.string().meta({ description: 'The total in words on the Indian system, as printed.' }),
  references_document_id: z.string().nullable().meta({ description: 'The document a credit note refers to.' }),
  references_serial: z.string().nullable().meta({ description: 'Its serial.' }),
  export: z.strictObject({
    mode: z.enum(['igst', 'lut']).meta({ description: 'igst: with payment of IGST; lut: zero-rated under a Letter of Undertaking.' }),
    lut_reference: z.string().optional().meta({ description: 'The LUT\'s reference (mode lut).' }),
    country: z.string().meta({ description: 'The recipient\'s country.' }),
  }).nullable().meta({ description: 'An export of services (recipient outside India, place of supply 96): its terms, as printed; null otherwise.' }),
});

/** A page of documents, newest first. */
export const taxDocumentListResponse = z.strictObject({
  object: z.literal('list'),
  data: z.array(taxDocumentResponse),
  next_cursor: z.string().nullable().meta({ description: 'Pass as cursor for the next page; null on the last.' }),
});

/** A PDF download. */
export const pdfResponse = z.string().meta({ description: 'The document as a PDF (A4), every field as text.', format: 'binary' });
