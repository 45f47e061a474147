import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import PDFDocument from 'pdfkit';
import { amountInWords } from './amount-in-words.ts';
import { formatRate, placeOfSupplyText } from './gst.ts';
import { formatInr } from './inr-text.ts';
import { istDate } from './invoice-serial.ts';
import type { AdvanceAdjustment, ExportTerms } from './tax-documents.ts';
import type { TaxDocument, TaxDocumentKind } from './tax-document-records.ts';

const require = createRequire(import.meta.url);

/** DejaVu Sans (regular and bold), embedded so the ₹ sign and any Latin name render and extract as text. */
let fonts: { regular: Buffer; bold: Buffer } | undefined;
function documentFonts(): { regular: Buffer; bold: Buffer } {
  fonts ??= {
    regular: readFileSync(require.resolve('dejavu-fonts-ttf/ttf/DejaVuSans.ttf')),
    bold: readFileSync(require.resolve('dejavu-fonts-ttf/ttf/DejaVuSans-Bold.ttf')),
  };
  return fonts;
}

/** The title printed on each kind (Rule 46 "Tax Invoice", Rule 50 "Receipt Voucher", section 34 "Credit Note"). */
const titles: Record<TaxDocumentKind, string> = { tax_invoice: 'Tax Invoice', receipt_voucher: 'Receipt Voucher', credit_note: 'Credit Note' };

/** What the serial is called on each kind. */
const serialLabels: Record<TaxDocumentKind, string> = { tax_invoice: 'Invoice No.', receipt_voucher: 'Voucher No.', credit_note: 'Credit Note No.' };

/** An amount of paise as the document writes it: ₹ and Indian grouping ("₹1,18,000.50"). */
function rupees(paise: bigint): string {
  return formatInr(paise * 10_000n);
}

/** The document a credit note corrects, as printed on the note. */
export interface ReferencedDocument {
  kind: TaxDocumentKind;
  serial: string;
  issuedAt: Date;
}

const pageMargin = 50;
const contentWidth = 595.28 - 2 * pageMargin; // A4 width in points less margins

/**
 * Renders a tax document as an A4 PDF with every field Rule 46 (tax invoice), Rule 50 (receipt
 * voucher) or section 34 (credit note) asks for, as extractable text: supplier, serial, date of
 * issue (IST), recipient, place of supply, SAC and description, taxable value, each tax's rate
 * and amount, total in figures and words, reverse charge, and the authorised signatory line.
 */
export async function renderTaxDocumentPdf(document: TaxDocument, referenced?: ReferencedDocument): Promise<Buffer> {
  const { regular, bold } = documentFonts();
  const pdf = new PDFDocument({
    size: 'A4',
    margin: pageMargin,
    info: { Title: `${titles[document.kind]} ${document.serial}`, Author: document.supplier.name, Subject: document.description },
  });
  pdf.registerFont('Body', regular);
  pdf.registerFont('Bold', bold);
  const chunks: Buffer[] = [];
  pdf.on('data', (chunk: Buffer) => chunks.push(chunk));
  const finished = new Promise<Buffer>((resolve, reject) => {
    pdf.on('end', () => resolve(Buffer.concat(chunks)));
    pdf.on('error', reject);
  });

  const line = (text: string, options: { bold?: boolean; size?: number } = {}) => {
    pdf.font(options.bold ? 'Bold' : 'Body').fontSize(options.size ?? 10).text(text, { width: contentWidth });
  };
  const labelled = (label: string, value: string) => {
    pdf.font('Bold').fontSize(10).text(`${label}: `, { continued: true, width: contentWidth }).font('Body').text(value);
  };
  const gap = (lines = 0.6) => pdf.moveDown(lines);

  line(titles[document.kind].toUpperCase(), { bold: true, size: 18 });
  // Rule 46's proviso: an export invoice carries one of these two endorsements.
  const exportTerms = document.details['export'] as ExportTerms | undefined;
  if (exportTerms !== undefined) {
    line(exportTerms.mode === 'lut'
      ? 'SUPPLY MEANT FOR EXPORT UNDER LETTER OF UNDERTAKING WITHOUT PAYMENT OF INTEGRATED TAX'
      : 'SUPPLY MEANT FOR EXPORT ON PAYMENT OF INTEGRATED TAX', { bold: true });
    if (exportTerms.lut_reference !== undefined) labelled('LUT reference', exportTerms.lut_reference);
  }
  // Only a development machine issues these (the config refuses payments otherwise): say so on the document itself.
  if (document.supplier.gstin === null && document.taxablePaise !== document.totalPaise) {
    line('DEVELOPMENT DOCUMENT: issued without a supplier GSTIN (INVOICE_DEVELOPMENT_MODE); not valid for GST.', { bold: true });
  }
  if (document.kind === 'tax_invoice' && document.usageMonth !== null) line(`Services supplied in ${document.usageMonth} (IST)`);
  gap();

  line('Supplier', { bold: true, size: 11 });
  line(document.supplier.name);
  line(document.supplier.address);
  labelled('GSTIN', document.supplier.gstin ?? 'none (INVOICE_SUPPLIER_GSTIN is not set)');
  labelled('State', placeOfSupplyText(document.supplier.state_code));
  gap();

  labelled(serialLabels[document.kind], document.serial);
  labelled('Date of issue', istDate(document.issuedAt));
  if (referenced !== undefined) {
    labelled(`Against ${titles[referenced.kind]}`, `${referenced.serial} dated ${istDate(referenced.issuedAt)}`);
  }
  gap();

  line('Recipient', { bold: true, size: 11 });
  line(document.recipient.legal_name);
  line(document.recipient.address);
  if (document.recipient.country !== undefined) {
    labelled('Country', document.recipient.country);
  } else {
    labelled('GSTIN', document.recipient.gstin ?? 'Unregistered');
    labelled('State', placeOfSupplyText(document.recipient.state_code));
  }
  labelled('Place of supply', placeOfSupplyText(document.placeOfSupply));
  gap();

  labelled('Description of service', document.description);
  labelled('SAC', document.sac);
  const valueLabel = document.kind === 'receipt_voucher' ? 'Taxable value of the advance' : 'Taxable value';
  labelled(valueLabel, rupees(document.taxablePaise));
  if (document.igstPaise > 0n || (document.cgstPaise === 0n && document.sgstPaise === 0n && document.supplier.state_code !== document.placeOfSupply)) {
    labelled(`IGST @ ${formatRate(document.rateBasisPoints)}`, rupees(document.igstPaise));
  } else {
    const half = document.rateBasisPoints / 2;
    labelled(`CGST @ ${formatRate(half)}`, rupees(document.cgstPaise));
    labelled(`SGST @ ${formatRate(half)}`, rupees(document.sgstPaise));
  }
  labelled('Total', rupees(document.totalPaise));
  labelled('Total in words', amountInWords(document.totalPaise));
  labelled('Tax payable on reverse charge', 'No');
  gap();

  if (document.kind === 'receipt_voucher') {
    line('Advance received for services to be supplied; the tax invoice for the services follows monthly.');
  } else if (document.kind === 'credit_note') {
    line('Issued for the refund of unspent prepaid balance (the wallet is closed: no cash-out or transfer otherwise).');
  } else if (document.usageMonth !== null) {
    const adjustments = (document.details['adjusted_against'] ?? []) as AdvanceAdjustment[];
    const adjusted = adjustments.map((adjustment) => `${adjustment.serial} (${rupees(BigInt(adjustment.amount_paise))})`).join(', ');
    labelled('Adjusted against receipt vouchers', adjusted === '' ? 'none' : adjusted);
    line('Usage is valued at the price paid for the credit it consumed (oldest receipt voucher first). GST on the advances adjusted here was paid when they were received (receipt vouchers).');
  } else {
    line('Prepaid credit for the gateway; the price includes GST. The balance is not transferable or redeemable for cash.');
  }
  gap(2);

  line(`For ${document.supplier.name}`);
  gap(2);
  line('Authorised signatory', { bold: true });
  line('Computer-generated document; not digitally signed.', { size: 8 });

  pdf.end();
  return finished;
}
