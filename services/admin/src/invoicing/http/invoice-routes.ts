import { amountInWords } from '../domain/amount-in-words.ts';
import { istDate } from '../domain/invoice-serial.ts';
import type { ExportTerms } from '../domain/tax-documents.ts';
import type { TaxDocument } from '../domain/tax-document-records.ts';
import { csvResponse } from '../../platform/http/analytics-schemas.ts';
import {
  defaultInvoicePageSize, invoiceExportQuery, invoiceListQuery, pdfResponse, platformInvoiceExportQuery, platformInvoiceListQuery,
  taxDocumentListResponse, taxDocumentResponse,
} from './invoice-schemas.ts';
import { defineRoute, routeErrors, type AdminRoute } from '../../common/http/route-definition.ts';

const csvContentType = 'text/csv; charset=utf-8';
const pdfContentType = 'application/pdf';

/** Headers that make a browser save the body as `fileName` (serials and ids only: nothing to escape). */
function downloadHeaders(fileName: string): Record<string, string> {
  return { 'content-disposition': `attachment; filename="${fileName}"`, 'cache-control': 'no-store' };
}

/** The JSON of a document (amounts as decimal strings of paise). */
function taxDocumentJson(document: TaxDocument, referencedSerial: string | null) {
  return {
    id: document.id,
    object: 'tax_document' as const,
    kind: document.kind,
    serial: document.serial,
    issued_at: document.issuedAt.toISOString(),
    issue_date_ist: istDate(document.issuedAt),
    financial_year: document.financialYear,
    organisation_id: document.organisationId,
    topup_id: document.topUpId,
    refund_id: document.refundId,
    usage_month: document.usageMonth,
    supplier: document.supplier,
    recipient: document.recipient,
    place_of_supply: document.placeOfSupply,
    sac: document.sac,
    description: document.description,
    rate_basis_points: document.rateBasisPoints,
    taxable_paise: document.taxablePaise.toString(),
    cgst_paise: document.cgstPaise.toString(),
    sgst_paise: document.sgstPaise.toString(),
    igst_paise: document.igstPaise.toString(),
    total_paise: document.totalPaise.toString(),
    total_in_words: amountInWords(document.totalPaise),
    references_document_id: document.referencesDocumentId,
    references_serial: referencedSerial,
    export: (document.details['export'] as ExportTerms | undefined) ?? null,
  };
}

/** A page of documents as the list answers it. */
function listJson(page: { documents: TaxDocument[]; nextCursor: string | null; referencedSerials: Map<string, string> }) {
  return {
    object: 'list' as const,
    data: page.documents.map((document) => taxDocumentJson(
      document,
      document.referencesDocumentId === null ? null : page.referencedSerials.get(document.referencesDocumentId) ?? null,
    )),
    next_cursor: page.nextCursor,
  };
}

const orgRoute = { tag: 'invoices', authenticated: true, access: 'organisation', scope: 'organisation', role: 'viewer' } as const;
const platformRoute = { tag: 'invoices', authenticated: true, access: 'platform' } as const;

const exportColumnsText = 'Columns: serial, kind, issue_date_ist, issued_at, financial_year, organisation_id, recipient_legal_name, recipient_gstin, '
  + 'recipient_state_code, place_of_supply, sac, rate_basis_points, taxable_paise, cgst_paise, sgst_paise, igst_paise, total_paise, '
  + 'references_serial, topup_id, usage_month, document_id; newest first; at most 100000 rows (a larger selection answers 400).';

/** The invoice routes of the admin API. */
export function invoiceRoutes(): AdminRoute[] {
  return [
    defineRoute({
      ...orgRoute, method: 'get', path: '/admin/v1/organisations/{id}/invoices', operationId: 'listInvoices',
      summary: 'The organisation\'s GST documents (tax invoices, receipt vouchers, credit notes), newest first, with filters.',
      query: invoiceListQuery,
      success: { status: 200, description: 'A page of documents.', schema: taxDocumentListResponse },
      errors: routeErrors.read,
      async handle({ service }, { actor, params, query }) {
        const page = await service.invoicing.listInvoices(actor, params.id!, { fromMs: query.from, toMs: query.to, kind: query.kind },
          { limit: query.limit ?? defaultInvoicePageSize, cursor: query.cursor });
        return { status: 200, body: listJson(page) };
      },
    }),
    defineRoute({
      ...orgRoute, method: 'get', path: '/admin/v1/organisations/{id}/invoices/export', operationId: 'exportInvoices',
      summary: 'Download the documents the list selects with the same filters (every page) as CSV, for the accountant.',
      description: exportColumnsText,
      query: invoiceExportQuery,
      success: { status: 200, description: 'The CSV, as an attachment named invoices-<organisation id>-<day>.csv.', schema: csvResponse, contentType: csvContentType },
      errors: routeErrors.read,
      async handle({ service }, { actor, params, query }) {
        const { csv, fileName } = await service.invoicing.exportInvoices(actor, params.id!, { fromMs: query.from, toMs: query.to, kind: query.kind });
        return { status: 200, body: csv, contentType: csvContentType, headers: downloadHeaders(fileName) };
      },
    }),
    defineRoute({
      ...orgRoute, method: 'get', path: '/admin/v1/organisations/{id}/invoices/{document_id}', operationId: 'getInvoice',
      summary: 'One GST document of the organisation.',
      success: { status: 200, description: 'The document.', schema: taxDocumentResponse },
      errors: ['unauthenticated', 'not_found'],
      async handle({ service }, { actor, params }) {
        const { document, referencedSerial } = await service.invoicing.getInvoice(actor, params.id!, params.document_id!);
        return { status: 200, body: taxDocumentJson(document, referencedSerial) };
      },
    }),
    defineRoute({
      ...orgRoute, method: 'get', path: '/admin/v1/organisations/{id}/invoices/{document_id}/pdf', operationId: 'getInvoicePdf',
      summary: 'The GST document as a PDF (every Rule 46 / Rule 50 field as text).',
      success: { status: 200, description: 'The PDF, as an attachment named <serial>.pdf.', schema: pdfResponse, contentType: pdfContentType },
      errors: ['unauthenticated', 'not_found'],
      async handle({ service }, { actor, params }) {
        const { pdf, fileName } = await service.invoicing.invoicePdf(actor, params.id!, params.document_id!);
        return { status: 200, body: pdf, contentType: pdfContentType, headers: downloadHeaders(fileName) };
      },
    }),
    defineRoute({
      ...platformRoute, method: 'get', path: '/admin/v1/invoices', operationId: 'listAllInvoices',
      summary: 'Every organisation\'s GST documents, newest first, with filters (platform admins).',
      query: platformInvoiceListQuery,
      success: { status: 200, description: 'A page of documents.', schema: taxDocumentListResponse },
      errors: [...routeErrors.read, ...routeErrors.platform],
      async handle({ service }, { actor, query }) {
        const page = await service.invoicing.listInvoices(actor, undefined,
          { fromMs: query.from, toMs: query.to, kind: query.kind, organisationId: query.organisation_id },
          { limit: query.limit ?? defaultInvoicePageSize, cursor: query.cursor });
        return { status: 200, body: listJson(page) };
      },
    }),
    defineRoute({
      ...platformRoute, method: 'get', path: '/admin/v1/invoices/export', operationId: 'exportAllInvoices',
      summary: 'Download every organisation\'s documents the platform list selects as CSV (platform admins).',
      description: exportColumnsText,
      query: platformInvoiceExportQuery,
      success: { status: 200, description: 'The CSV, as an attachment named invoices-all-<day>.csv (or invoices-<organisation id>-<day>.csv).', schema: csvResponse, contentType: csvContentType },
      errors: [...routeErrors.read, ...routeErrors.platform],
      async handle({ service }, { actor, query }) {
        const { csv, fileName } = await service.invoicing.exportInvoices(actor, undefined,
          { fromMs: query.from, toMs: query.to, kind: query.kind, organisationId: query.organisation_id });
        return { status: 200, body: csv, contentType: csvContentType, headers: downloadHeaders(fileName) };
      },
    }),
  ];
}
