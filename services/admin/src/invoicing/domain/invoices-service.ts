import type { Database } from '@gateway/db';
import { GatewayError } from '@gateway/errors';
import { isPlatformActor, type Actor } from '../../common/domain/actor.ts';
import { toCsv, type CsvCell } from '../../common/domain/csv.ts';
import { isId } from '../../common/domain/ids.ts';
import { renderTaxDocumentPdf, type ReferencedDocument } from './invoice-pdf.ts';
import { istDate } from './invoice-serial.ts';
import { notFound, type ResourceAccess } from '../../common/domain/resource-access.ts';
import { selectTaxDocuments } from './tax-document-store.ts';
import type { TaxDocument, TaxDocumentKind } from './tax-document-records.ts';

/** What the invoices aggregate is built from. */
export interface InvoicesServiceDeps {
  db: Database;
  access: ResourceAccess;
}

/** Filters of the invoice list and its export: issue window (ms since the epoch, [from, to)) and kind. */
export interface InvoiceFilters {
  fromMs?: number | undefined;
  toMs?: number | undefined;
  kind?: TaxDocumentKind | undefined;
  /** Platform list only: one organisation. */
  organisationId?: string | undefined;
}

/** A page of the list: how many, and the cursor a previous page answered (opaque). */
export interface InvoicePageRequest {
  limit: number;
  cursor?: string | undefined;
}

/** Where a page ends: the last document's issue time and id, as an opaque cursor. */
function encodeCursor(document: TaxDocument): string {
  return Buffer.from(`${document.issuedAt.toISOString()}|${document.id}`).toString('base64url');
}

/** The position a cursor names; a cursor we did not make is a 400. */
function decodeCursor(cursor: string): { issuedAt: Date; id: string } {
  const [issuedAt, id, ...rest] = Buffer.from(cursor, 'base64url').toString('utf8').split('|');
  const at = new Date(issuedAt ?? '');
  if (rest.length > 0 || id === undefined || !isId('taxDocument', id) || Number.isNaN(at.getTime())) {
    throw new GatewayError('invalid_request', { publicMessage: 'cursor is not one this list answered.', param: 'cursor' });
  }
  return { issuedAt: at, id };
}

/** The most documents one export holds; a larger selection asks for narrower filters. */
const maxInvoiceExportRows = 100_000;

/** The columns of the invoice CSV export (amounts in integer paise). */
const invoiceExportColumns = [
  'serial', 'kind', 'issue_date_ist', 'issued_at', 'financial_year', 'organisation_id', 'recipient_legal_name', 'recipient_gstin',
  'recipient_state_code', 'place_of_supply', 'sac', 'rate_basis_points', 'taxable_paise', 'cgst_paise', 'sgst_paise', 'igst_paise',
  'total_paise', 'references_serial', 'topup_id', 'usage_month', 'document_id',
] as const;

/** One document as a CSV row (the serial of the document it references, when any). */
function exportCells(document: TaxDocument, serialsById: Map<string, string>): CsvCell[] {
  return [
    document.serial, document.kind, istDate(document.issuedAt), document.issuedAt.toISOString(), document.financialYear,
    document.organisationId, document.recipient.legal_name, document.recipient.gstin, document.recipient.state_code,
    document.placeOfSupply, document.sac, document.rateBasisPoints, document.taxablePaise, document.cgstPaise, document.sgstPaise,
    document.igstPaise, document.totalPaise,
    document.referencesDocumentId === null ? null : serialsById.get(document.referencesDocumentId) ?? null,
    document.topUpId, document.usageMonth, document.id,
  ];
}

/** The WHERE clause and parameters of a filtered selection (newest first). */
function filterClause(filters: InvoiceFilters, before?: { issuedAt: Date; id: string }): { where: string; params: unknown[] } {
  const conditions: string[] = [];
  const params: unknown[] = [];
  const add = (condition: string, value: unknown) => {
    params.push(value);
    conditions.push(condition.replace('?', `$${params.length}`));
  };
  if (filters.organisationId !== undefined) add('organisation_id = ?', filters.organisationId);
  if (filters.kind !== undefined) add('kind = ?', filters.kind);
  if (filters.fromMs !== undefined) add('issued_at >= ?', new Date(filters.fromMs));
  if (filters.toMs !== undefined) add('issued_at < ?', new Date(filters.toMs));
  if (before !== undefined) {
    params.push(before.issuedAt, before.id);
    conditions.push(`(issued_at, id) < ($${params.length - 1}, $${params.length})`);
  }
  return { where: conditions.length === 0 ? 'true' : conditions.join(' AND '), params };
}

/** Tax invoices, receipt vouchers and credit notes: listing, PDFs, CSV (route tag "invoices"). */
export function createInvoicesService(deps: InvoicesServiceDeps) {
  const { db, access } = deps;

  /** Every document a filter selects, newest first; more than `limit` is refused (invalid_request). */
  async function selectFiltered(filters: InvoiceFilters, limit: number): Promise<TaxDocument[]> {
    const { where, params } = filterClause(filters);
    const documents = await selectTaxDocuments(db, where, params, `ORDER BY issued_at DESC, id DESC LIMIT ${limit + 1}`);
    if (documents.length > limit) {
      throw new GatewayError('invalid_request', { publicMessage: `More than ${limit} documents match: narrow the window (from, to) or the kind.`, param: 'from' });
    }
    return documents;
  }

  /** The serials of the documents that these reference (credit notes name their invoice). */
  async function referencedSerials(documents: readonly TaxDocument[]): Promise<Map<string, string>> {
    const ids = [...new Set(documents.flatMap((document) => (document.referencesDocumentId === null ? [] : [document.referencesDocumentId])))];
    if (ids.length === 0) return new Map();
    const referenced = await selectTaxDocuments(db, 'id = ANY($1::text[])', [ids]);
    return new Map(referenced.map((document) => [document.id, document.serial]));
  }

  /** One document of an organisation the actor may see; not_found otherwise (foreign and unknown look the same). */
  async function requireDocument(actor: Actor, organisationId: string, documentId: string): Promise<TaxDocument> {
    await access.requireOrganisation(actor, organisationId);
    const [document] = isId('taxDocument', documentId)
      ? await selectTaxDocuments(db, 'id = $1 AND organisation_id = $2', [documentId, organisationId])
      : [];
    if (document === undefined) throw notFound('invoice', documentId, 'document_id');
    return document;
  }

  /** Lists across organisations are a platform admin's alone. */
  function requirePlatform(actor: Actor): void {
    if (!isPlatformActor(actor)) throw new GatewayError('permission_denied', { publicMessage: 'Only platform admins may list every organisation\'s invoices.' });
  }

  return {
    /** A page of an organisation's documents (or, with organisationId undefined, every organisation's: platform admins), newest first, with referenced serials. */
    async listInvoices(actor: Actor, organisationId: string | undefined, filters: InvoiceFilters, page: InvoicePageRequest): Promise<{ documents: TaxDocument[]; nextCursor: string | null; referencedSerials: Map<string, string> }> {
      if (organisationId === undefined) requirePlatform(actor);
      else await access.requireOrganisation(actor, organisationId);
      const before = page.cursor === undefined ? undefined : decodeCursor(page.cursor);
      const { where, params } = filterClause({ ...filters, ...(organisationId === undefined ? {} : { organisationId }) }, before);
      const rows = await selectTaxDocuments(db, where, params, `ORDER BY issued_at DESC, id DESC LIMIT ${page.limit + 1}`);
      const documents = rows.slice(0, page.limit);
      const nextCursor = rows.length > page.limit ? encodeCursor(documents.at(-1)!) : null;
      return { documents, nextCursor, referencedSerials: await referencedSerials(documents) };
    },

    /** The list's documents as an RFC 4180 CSV for the organisation's accountant (amounts in paise), with its file name. */
    async exportInvoices(actor: Actor, organisationId: string | undefined, filters: InvoiceFilters): Promise<{ csv: string; fileName: string }> {
      if (organisationId === undefined) requirePlatform(actor);
      else await access.requireOrganisation(actor, organisationId);
      const documents = await selectFiltered({ ...filters, ...(organisationId === undefined ? {} : { organisationId }) }, maxInvoiceExportRows);
      const serials = await referencedSerials(documents);
      return {
        csv: toCsv(invoiceExportColumns, documents.map((document) => exportCells(document, serials))),
        fileName: `invoices-${organisationId ?? filters.organisationId ?? 'all'}-${istDate(new Date())}.csv`,
      };
    },

    /** One document of the organisation, with the serial of the document it references (if any). */
    async getInvoice(actor: Actor, organisationId: string, documentId: string): Promise<{ document: TaxDocument; referencedSerial: string | null }> {
      const document = await requireDocument(actor, organisationId, documentId);
      const serials = await referencedSerials([document]);
      return { document, referencedSerial: document.referencesDocumentId === null ? null : serials.get(document.referencesDocumentId) ?? null };
    },

    /** The document as a PDF, with its download file name (the serial, '/' made '-'). */
    async invoicePdf(actor: Actor, organisationId: string, documentId: string): Promise<{ pdf: Buffer; fileName: string }> {
      const document = await requireDocument(actor, organisationId, documentId);
      let referenced: ReferencedDocument | undefined;
      if (document.referencesDocumentId !== null) {
        const [original] = await selectTaxDocuments(db, 'id = $1', [document.referencesDocumentId]);
        if (original !== undefined) referenced = { kind: original.kind, serial: original.serial, issuedAt: original.issuedAt };
      }
      return { pdf: await renderTaxDocumentPdf(document, referenced), fileName: `${document.serial.replaceAll('/', '-')}.pdf` };
    },
  };
}
