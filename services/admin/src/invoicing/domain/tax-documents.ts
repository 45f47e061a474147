import type { Queryable } from '@gateway/db';
import { GatewayError } from '@gateway/errors';
import { isIntraState, splitInclusiveTotal, supplierStateCode } from './gst.ts';
import { newId } from '../../common/domain/ids.ts';
import type { DocumentSeries } from './invoice-serial.ts';
import type { InvoicingSettings } from './invoicing-settings.ts';
import { allocateSerial } from './invoice-serial-store.ts';
import type { DocumentRecipient, DocumentSupplier, NewDocument, TaxDocument, TaxDocumentKind } from './tax-document-records.ts';
import {
  creditedPaiseAgainst, insertTaxDocumentRow, selectTaxDocuments,
} from './tax-document-store.ts';
import { refundDebitMicros } from '../../billing/domain/refund-debit-micros.ts';
import { billingSnapshotOf } from '../../billing/domain/billing-profile.ts';
import { findBillingProfile } from '../../billing/domain/billing-profile-store.ts';
import { lockTopUpForDocument } from '../../billing/domain/topup-store.ts';
import { foreignCountryStateCode } from '../../../shared/gst-states.ts';

/** The settings a tax document is issued under (supplier, SAC, rate, mode, serial prefix). */
export type TaxDocumentSettings = InvoicingSettings;

/** An export of services, as a document records it in details.export: how it is taxed, the LUT (when under one), the country. */
export interface ExportTerms {
  mode: 'igst' | 'lut';
  /** The Letter of Undertaking's reference (mode lut). */
  lut_reference?: string;
  country: string;
}

/** When a document is issued; tests pin the moment (the financial-year boundary). Default: now. */
export interface IssueOptions {
  issuedAt?: Date;
}

/** The series each kind is numbered in. */
const seriesOfKind: Record<TaxDocumentKind, DocumentSeries> = { tax_invoice: 'T', receipt_voucher: 'R', credit_note: 'C' };

/** The supplier as the settings name it now (its state from its GSTIN when it has one). */
function supplierOf(settings: TaxDocumentSettings): DocumentSupplier {
  return {
    name: settings.supplierName,
    address: settings.supplierAddress,
    gstin: settings.supplierGstin ?? null,
    state_code: supplierStateCode(settings),
  };
}

/** A billing snapshot (jsonb) as a recipient; a snapshot missing a field is a broken top-up. */
function recipientOf(snapshot: unknown): DocumentRecipient {
  const value = (snapshot ?? {}) as Record<string, unknown>;
  const text = (key: string): string => {
    const field = value[key];
    if (typeof field !== 'string' || field === '') throw new Error(`billing snapshot has no ${key}`);
    return field;
  };
  const gstin = value['gstin'];
  const country = value['country'];
  return {
    legal_name: text('legal_name'),
    address: text('address'),
    gstin: typeof gstin === 'string' && gstin !== '' ? gstin : null,
    state_code: text('state_code'),
    ...(typeof country === 'string' && country !== '' ? { country } : {}),
  };
}

/** How a supply to a recipient is taxed: the rate, whether it is intra-state, and the export terms when the recipient is abroad. */
interface SupplyTerms {
  rateBasisPoints: number;
  intraState: boolean;
  exportTerms: ExportTerms | undefined;
}

/**
 * The tax terms of a supply from the configured supplier to a recipient. A recipient outside
 * India (state code 96) receives an export of services: zero-rated under a Letter of Undertaking
 * (export mode lut: rate 0, the whole price is the taxable value) or with payment of IGST
 * (igst: inter-state at the configured rate). Otherwise CGST + SGST in the supplier's state, IGST
 * elsewhere.
 */
function supplyTermsOf(settings: TaxDocumentSettings, supplier: DocumentSupplier, recipient: DocumentRecipient): SupplyTerms {
  if (recipient.state_code === foreignCountryStateCode) {
    if (recipient.country === undefined) throw new Error('a recipient outside India has no country in its billing snapshot');
    if (settings.exportMode === 'lut') {
      if (settings.lutReference === undefined) throw new Error('export mode lut without a LUT reference (the config refuses this at start)');
      return { rateBasisPoints: 0, intraState: false, exportTerms: { mode: 'lut', lut_reference: settings.lutReference, country: recipient.country } };
    }
    return { rateBasisPoints: settings.gstRateBasisPoints, intraState: false, exportTerms: { mode: 'igst', country: recipient.country } };
  }
  return { rateBasisPoints: settings.gstRateBasisPoints, intraState: isIntraState(supplier.state_code, recipient.state_code), exportTerms: undefined };
}

/** Top-up states in which the money has been received (a document may be issued). */
const paidStates = new Set(['paid', 'credited', 'invoiced', 'refunded']);

/** Allocates the next serial of the document's series and inserts it (in the caller's transaction). */
async function insertTaxDocument(tx: Queryable, settings: TaxDocumentSettings, document: NewDocument, options: IssueOptions = {}): Promise<TaxDocument> {
  const issuedAt = options.issuedAt ?? new Date();
  const allocated = await allocateSerial(tx, { prefix: settings.serialPrefix, series: seriesOfKind[document.kind], issuedAt });
  return insertTaxDocumentRow(tx, { ...document, id: newId('taxDocument'), allocated, issuedAt });
}

/** The top-up's own document (tax invoice or receipt voucher), if issued. */
async function topUpDocument(tx: Queryable, topUpId: string): Promise<TaxDocument | undefined> {
  return (await selectTaxDocuments(tx, `topup_id = $1 AND kind <> 'credit_note'`, [topUpId]))[0];
}

/** The description of service on a top-up's document (what was supplied, in the document's words). */
function topUpDescription(kind: 'tax_invoice' | 'receipt_voucher', packageName: string): string {
  return kind === 'tax_invoice'
    ? `Prepaid credit for AI inference API services: ${packageName}`
    : `Advance received for AI inference API services: ${packageName}`;
}

/**
 * Issues the document for a paid top-up: a tax invoice (document mode tax_invoice, the default)
 * or a receipt voucher (receipt_voucher), for the price paid (GST inclusive), to the billing
 * snapshot taken at purchase (a recipient abroad: an export, supplyTermsOf). Idempotent per top-up: a second call returns the first document.
 * Locks the top-up row; does not change the top-up's state (the caller records credited →
 * invoiced in the same transaction).
 */
export async function issueTopUpDocument(tx: Queryable, settings: TaxDocumentSettings, topUpId: string, options: IssueOptions = {}): Promise<{ documentId: string; serial: string; kind: 'tax_invoice' | 'receipt_voucher' }> {
  const topUp = await lockTopUpForDocument(tx, topUpId);
  const existing = await topUpDocument(tx, topUpId);
  if (existing !== undefined) return { documentId: existing.id, serial: existing.serial, kind: existing.kind as 'tax_invoice' | 'receipt_voucher' };
  if (!paidStates.has(topUp.state)) throw new GatewayError('conflict', { publicMessage: 'The top-up has not been paid.' });

  const kind = settings.documentMode;
  const supplier = supplierOf(settings);
  const recipient = recipientOf(topUp.billing_snapshot);
  const terms = supplyTermsOf(settings, supplier, recipient);
  const split = splitInclusiveTotal({ totalPaise: BigInt(topUp.price_paise), rateBasisPoints: terms.rateBasisPoints, intraState: terms.intraState });
  const document = await insertTaxDocument(tx, settings, {
    kind,
    organisationId: topUp.organisation_id,
    topUpId,
    refundId: null,
    usageMonth: null,
    referencesDocumentId: null,
    supplier,
    recipient,
    placeOfSupply: recipient.state_code,
    sac: settings.sac,
    description: topUpDescription(kind, topUp.package_name),
    rateBasisPoints: terms.rateBasisPoints,
    split,
    details: {
      credit_micros: BigInt(topUp.credit_micros).toString(), package_name: topUp.package_name,
      ...(terms.exportTerms === undefined ? {} : { export: terms.exportTerms }),
    },
  }, options);
  return { documentId: document.id, serial: document.serial, kind };
}

/**
 * Issues the credit note for a refund of part or all of a top-up (amount GST inclusive, paise),
 * in its own series, referencing the top-up's document (serial and date on the note), at that
 * document's rate and place of supply. Idempotent per refund id. Refuses (conflict) when the
 * top-up has no document yet or the credit notes would exceed the document's total.
 */
export async function issueCreditNote(tx: Queryable, settings: TaxDocumentSettings, input: { topUpId: string; refundId: string; amountPaise: bigint }, options: IssueOptions = {}): Promise<{ documentId: string; serial: string }> {
  await lockTopUpForDocument(tx, input.topUpId);
  const [existing] = await selectTaxDocuments(tx, `refund_id = $1`, [input.refundId]);
  if (existing !== undefined) {
    if (existing.topUpId !== input.topUpId || existing.totalPaise !== input.amountPaise) {
      throw new GatewayError('conflict', { publicMessage: 'A credit note for this refund already exists with other terms.' });
    }
    return { documentId: existing.id, serial: existing.serial };
  }
  if (input.amountPaise <= 0n) throw new GatewayError('invalid_request', { publicMessage: 'A credit note is for a positive amount.', param: 'amount_paise' });
  const original = await topUpDocument(tx, input.topUpId);
  if (original === undefined) throw new GatewayError('conflict', { publicMessage: 'The top-up has no invoice to credit.' });
  const alreadyCredited = await creditedPaiseAgainst(tx, original.id);
  if (alreadyCredited + input.amountPaise > original.totalPaise) {
    throw new GatewayError('conflict', { publicMessage: 'The credit notes would exceed the invoice total.', param: 'amount_paise' });
  }

  const split = splitInclusiveTotal({
    totalPaise: input.amountPaise,
    rateBasisPoints: original.rateBasisPoints,
    intraState: isIntraState(original.supplier.state_code, original.placeOfSupply),
  });
  const document = await insertTaxDocument(tx, settings, {
    kind: 'credit_note',
    organisationId: original.organisationId,
    topUpId: input.topUpId,
    refundId: input.refundId,
    usageMonth: null,
    referencesDocumentId: original.id,
    // The note is between the same parties as the document it corrects.
    supplier: original.supplier,
    recipient: original.recipient,
    placeOfSupply: original.placeOfSupply,
    sac: original.sac,
    description: `Refund of unspent prepaid balance against ${original.serial}`,
    rateBasisPoints: original.rateBasisPoints,
    split,
    details: {
      references_serial: original.serial, references_issued_at: original.issuedAt.toISOString(), references_kind: original.kind,
      // An export's note is an export's too: the same legend and country.
      ...(original.details['export'] === undefined ? {} : { export: original.details['export'] }),
    },
  }, options);
  return { documentId: document.id, serial: document.serial };
}

/**
 * A receipt voucher's advance consumed by a monthly usage invoice (Rule 50: the invoice is adjusted
 * against it): the credit consumed, µ₹, and what it was paid for, paise.
 */
export interface AdvanceAdjustment {
  document_id: string;
  serial: string;
  amount_paise: string;
  /** Absent on invoices issued before consumed credit was valued at its price (then it was amount_paise × 10,000). */
  credit_micros?: string;
}

/** µ₹ to paise, rounded half up (usage is debited in µ₹; documents are in paise). */
function microsToPaise(micros: bigint): bigint {
  return (micros + 5_000n) / 10_000n;
}

/** What is left of one receipt voucher's advance: its credit not yet consumed (µ₹) and the part of its price that credit was bought with (paise). */
interface UnadjustedAdvance {
  document: TaxDocument;
  creditMicros: bigint;
  paise: bigint;
}

/**
 * How much of each receipt voucher's advance is still unadjusted, oldest voucher first: its price
 * and credit (details.credit_micros), less the credit notes against it and the adjustments earlier
 * monthly invoices recorded. A credit note for a refund of `amount` paise takes back
 * refundDebitMicros of the voucher's credit, as the refund debits the wallet.
 */
async function unadjustedAdvances(tx: Queryable, organisationId: string): Promise<UnadjustedAdvance[]> {
  const documents = await selectTaxDocuments(tx, 'organisation_id = $1', [organisationId]);
  const vouchers = new Map(documents.filter((document) => document.kind === 'receipt_voucher').map((document) => {
    const creditMicros = BigInt(String(document.details['credit_micros'] ?? document.totalPaise * 10_000n));
    return [document.id, { document, creditMicros, paise: document.totalPaise, boughtCreditMicros: creditMicros }];
  }));
  for (const document of documents) {
    if (document.kind === 'credit_note' && document.referencesDocumentId !== null) {
      const voucher = vouchers.get(document.referencesDocumentId);
      if (voucher !== undefined) {
        voucher.paise -= document.totalPaise;
        voucher.creditMicros -= refundDebitMicros({ creditMicros: voucher.boughtCreditMicros, pricePaise: voucher.document.totalPaise }, document.totalPaise);
      }
    }
    if (document.usageMonth !== null) {
      for (const adjustment of (document.details['adjusted_against'] ?? []) as AdvanceAdjustment[]) {
        const voucher = vouchers.get(adjustment.document_id);
        if (voucher === undefined) continue;
        voucher.paise -= BigInt(adjustment.amount_paise);
        voucher.creditMicros -= adjustment.credit_micros === undefined ? BigInt(adjustment.amount_paise) * 10_000n : BigInt(adjustment.credit_micros);
      }
    }
  }
  return [...vouchers.values()]
    .filter((voucher) => voucher.creditMicros > 0n && voucher.paise > 0n)
    .map(({ document, creditMicros, paise }) => ({ document, creditMicros, paise }));
}

/**
 * Values `usageMicros` of consumed credit at what was paid for it, oldest voucher first: credit
 * taken from a voucher is worth its share of the voucher's unadjusted price (rounded half up to
 * paise), and the piece that spends a voucher's last credit takes the rest of its price, so once
 * a voucher's credit is spent the invoices adjusted against it add up to its total exactly. Usage
 * beyond every voucher (credit not bought through one, e.g. a manual credit) is valued at face
 * value, µ₹ to paise.
 */
function valueConsumedCredit(advances: readonly UnadjustedAdvance[], usageMicros: bigint): { adjustments: AdvanceAdjustment[]; uncoveredPaise: bigint } {
  const adjustments: AdvanceAdjustment[] = [];
  let uncoveredMicros = usageMicros;
  for (const advance of advances) {
    if (uncoveredMicros === 0n) break;
    const takenMicros = advance.creditMicros < uncoveredMicros ? advance.creditMicros : uncoveredMicros;
    const proportional = (2n * takenMicros * advance.paise + advance.creditMicros) / (2n * advance.creditMicros);
    const amountPaise = takenMicros === advance.creditMicros ? advance.paise : proportional;
    adjustments.push({ document_id: advance.document.id, serial: advance.document.serial, amount_paise: amountPaise.toString(), credit_micros: takenMicros.toString() });
    uncoveredMicros -= takenMicros;
  }
  return { adjustments, uncoveredPaise: microsToPaise(uncoveredMicros) };
}

/**
 * Receipt-voucher mode (Rule 50): the tax invoice for an organisation's usage in one IST month
 * (usage debited, µ₹, valued at what its credit was paid for: valueConsumedCredit; GST inclusive
 * like that price), to its billing profile, adjusted against its receipt vouchers' unadjusted
 * advances oldest first (recorded in details.adjusted_against; usage beyond them, at face value, in
 * details.not_covered_by_advance_paise).
 * Idempotent per organisation and month; undefined when there is nothing to invoice (no usage)
 * or the organisation has no billing profile.
 */
export async function issueMonthlyUsageInvoice(tx: Queryable, settings: TaxDocumentSettings, input: {
  organisationId: string; usageMonth: string; usageDebitedMicros: bigint;
}, options: IssueOptions = {}): Promise<{ documentId: string; serial: string } | undefined> {
  const profile = await findBillingProfile(tx, input.organisationId, { forUpdate: true });
  const [existing] = await selectTaxDocuments(tx, 'organisation_id = $1 AND usage_month = $2', [input.organisationId, input.usageMonth]);
  if (existing !== undefined) return { documentId: existing.id, serial: existing.serial };
  if (input.usageDebitedMicros <= 0n || profile === undefined) return undefined;
  const recipient = recipientOf(billingSnapshotOf(profile));

  const { adjustments, uncoveredPaise } = valueConsumedCredit(await unadjustedAdvances(tx, input.organisationId), input.usageDebitedMicros);
  const totalPaise = adjustments.reduce((sum, adjustment) => sum + BigInt(adjustment.amount_paise), uncoveredPaise);
  if (totalPaise <= 0n) return undefined;
  const supplier = supplierOf(settings);
  const terms = supplyTermsOf(settings, supplier, recipient);
  const document = await insertTaxDocument(tx, settings, {
    kind: 'tax_invoice',
    organisationId: input.organisationId,
    topUpId: null,
    refundId: null,
    usageMonth: input.usageMonth,
    referencesDocumentId: adjustments[0]?.document_id ?? null,
    supplier,
    recipient,
    placeOfSupply: recipient.state_code,
    sac: settings.sac,
    description: `AI inference API services supplied in ${input.usageMonth} (usage)`,
    rateBasisPoints: terms.rateBasisPoints,
    split: splitInclusiveTotal({ totalPaise, rateBasisPoints: terms.rateBasisPoints, intraState: terms.intraState }),
    details: {
      ...(terms.exportTerms === undefined ? {} : { export: terms.exportTerms }),
      usage_debited_micros: input.usageDebitedMicros.toString(),
      adjusted_against: adjustments,
      not_covered_by_advance_paise: uncoveredPaise.toString(),
    },
  }, options);
  return { documentId: document.id, serial: document.serial };
}
