import type { Queryable } from '@gateway/db';
import type { AllocatedSerial } from './invoice-serial-store.ts';
import type { DocumentRecipient, DocumentSupplier, NewDocument, TaxDocument, TaxDocumentKind } from './tax-document-records.ts';

/** A stored row of tax_documents. */
interface TaxDocumentRow {
  id: string;
  kind: TaxDocumentKind;
  serial: string;
  financial_year: string;
  issued_at: Date;
  organisation_id: string;
  topup_id: string | null;
  refund_id: string | null;
  usage_month: string | null;
  references_document_id: string | null;
  supplier: DocumentSupplier;
  recipient: DocumentRecipient;
  place_of_supply: string;
  sac: string;
  description: string;
  rate_basis_points: number;
  taxable_paise: bigint;
  cgst_paise: bigint;
  sgst_paise: bigint;
  igst_paise: bigint;
  total_paise: bigint;
  details: Record<string, unknown>;
}

/** The columns a document is read with (shared by every query over tax_documents). */
const taxDocumentColumns = `id, kind, serial, financial_year, issued_at, organisation_id, topup_id, refund_id, usage_month,
  references_document_id, supplier, recipient, place_of_supply, sac, description, rate_basis_points,
  taxable_paise, cgst_paise, sgst_paise, igst_paise, total_paise, details`;

/** A stored row as the domain record. */
function toTaxDocument(row: TaxDocumentRow): TaxDocument {
  return {
    id: row.id,
    kind: row.kind,
    serial: row.serial,
    financialYear: row.financial_year,
    issuedAt: new Date(row.issued_at),
    organisationId: row.organisation_id,
    topUpId: row.topup_id,
    refundId: row.refund_id,
    usageMonth: row.usage_month,
    referencesDocumentId: row.references_document_id,
    supplier: row.supplier,
    recipient: row.recipient,
    placeOfSupply: row.place_of_supply,
    sac: row.sac,
    description: row.description,
    rateBasisPoints: Number(row.rate_basis_points),
    taxablePaise: BigInt(row.taxable_paise),
    cgstPaise: BigInt(row.cgst_paise),
    sgstPaise: BigInt(row.sgst_paise),
    igstPaise: BigInt(row.igst_paise),
    totalPaise: BigInt(row.total_paise),
    details: row.details,
  };
}

/** Reads documents with a WHERE clause over tax_documents (params numbered from $1). */
export async function selectTaxDocuments(db: Queryable, where: string, params: readonly unknown[], tail = 'ORDER BY issued_at, id'): Promise<TaxDocument[]> {
  const { rows } = await db.query<TaxDocumentRow>(`SELECT ${taxDocumentColumns} FROM tax_documents WHERE ${where} ${tail}`, params);
  return rows.map(toTaxDocument);
}

/** A new document's row: what it holds, its id, its allocated serial and its issue time. */
export interface TaxDocumentInsert extends NewDocument {
  id: string;
  allocated: AllocatedSerial;
  issuedAt: Date;
}

/** Inserts one document row (its serial already allocated, in the caller's transaction) and returns it as stored. */
export async function insertTaxDocumentRow(tx: Queryable, document: TaxDocumentInsert): Promise<TaxDocument> {
  const { allocated } = document;
  const { rows } = await tx.query<TaxDocumentRow>(
    `INSERT INTO tax_documents (id, kind, serial, financial_year, series, sequence_number, issued_at, organisation_id, topup_id,
       refund_id, usage_month, references_document_id, supplier, recipient, place_of_supply, sac, description,
       rate_basis_points, taxable_paise, cgst_paise, sgst_paise, igst_paise, total_paise, details)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24)
     RETURNING ${taxDocumentColumns}`,
    [document.id, document.kind, allocated.serial, allocated.financialYear, allocated.series, allocated.sequenceNumber.toString(),
      document.issuedAt, document.organisationId, document.topUpId, document.refundId, document.usageMonth, document.referencesDocumentId,
      JSON.stringify(document.supplier), JSON.stringify(document.recipient), document.placeOfSupply, document.sac, document.description,
      document.rateBasisPoints, document.split.taxablePaise.toString(), document.split.cgstPaise.toString(),
      document.split.sgstPaise.toString(), document.split.igstPaise.toString(), document.split.totalPaise.toString(),
      JSON.stringify(document.details)],
  );
  return toTaxDocument(rows[0]!);
}

/** What the credit notes against a document add up to, paise (0 with none). */
export async function creditedPaiseAgainst(tx: Queryable, documentId: string): Promise<bigint> {
  const { rows } = await tx.query<{ sum: bigint | null }>(
    `SELECT sum(total_paise)::bigint AS sum FROM tax_documents WHERE kind = 'credit_note' AND references_document_id = $1`, [documentId]);
  return BigInt(rows[0]?.sum ?? 0n);
}

/** Each organisation with a receipt voucher and when its first was issued, by organisation id. */
export async function receiptVoucherOrganisations(db: Queryable): Promise<Array<{ organisationId: string; firstIssuedAt: Date }>> {
  const { rows } = await db.query<{ organisation_id: string; first_issued_at: Date }>(
    `SELECT organisation_id, min(issued_at) AS first_issued_at FROM tax_documents WHERE kind = 'receipt_voucher' GROUP BY organisation_id ORDER BY organisation_id`);
  return rows.map((row) => ({ organisationId: row.organisation_id, firstIssuedAt: new Date(row.first_issued_at) }));
}

/** The last IST month (YYYY-MM) each organisation has a usage invoice for, by organisation id. */
export async function lastUsageInvoiceMonths(db: Queryable): Promise<Map<string, string>> {
  const { rows } = await db.query<{ organisation_id: string; last_month: string }>(
    'SELECT organisation_id, max(usage_month) AS last_month FROM tax_documents WHERE usage_month IS NOT NULL GROUP BY organisation_id');
  return new Map(rows.map((row) => [row.organisation_id, row.last_month]));
}
