import type { GstSplit } from './gst.ts';

// The records of the tax_documents table, shared by its store (tax-document-store.ts) and the
// rules that issue documents (tax-documents.ts), so neither imports the other's types.

/** The three GST documents the admin issues. */
export type TaxDocumentKind = 'tax_invoice' | 'receipt_voucher' | 'credit_note';

/** Who supplies: the operator, as configured when the document was issued. */
export interface DocumentSupplier {
  name: string;
  address: string;
  gstin: string | null;
  state_code: string;
}

/** Who receives: the organisation's billing profile as snapshotted on the top-up. */
export interface DocumentRecipient {
  legal_name: string;
  address: string;
  gstin: string | null;
  state_code: string;
  /** A recipient outside India's country (state_code 96); absent on documents to Indian recipients. */
  country?: string;
}

/** An issued document as stored (amounts in paise, bigint). */
export interface TaxDocument {
  id: string;
  kind: TaxDocumentKind;
  serial: string;
  financialYear: string;
  issuedAt: Date;
  organisationId: string;
  topUpId: string | null;
  refundId: string | null;
  usageMonth: string | null;
  referencesDocumentId: string | null;
  supplier: DocumentSupplier;
  recipient: DocumentRecipient;
  /** Two-digit GST state code. */
  placeOfSupply: string;
  sac: string;
  description: string;
  rateBasisPoints: number;
  taxablePaise: bigint;
  cgstPaise: bigint;
  sgstPaise: bigint;
  igstPaise: bigint;
  totalPaise: bigint;
  details: Record<string, unknown>;
}

/** What a new document holds before its serial is allocated. */
export interface NewDocument {
  kind: TaxDocumentKind;
  organisationId: string;
  topUpId: string | null;
  refundId: string | null;
  usageMonth: string | null;
  referencesDocumentId: string | null;
  supplier: DocumentSupplier;
  recipient: DocumentRecipient;
  placeOfSupply: string;
  sac: string;
  description: string;
  rateBasisPoints: number;
  split: GstSplit;
  details: Record<string, unknown>;
}
