/** The invoicing area's settings: who supplies, what is supplied, at which GST rate, in which documents. */
export interface InvoicingSettings {
  /** The supplier's legal name on every document (and the seller's name Checkout shows). */
  supplierName: string;
  /** The supplier's address on every document. */
  supplierAddress: string;
  /** The supplier's GSTIN; undefined on a development machine (documents say they are not valid for GST). */
  supplierGstin: string | undefined;
  /** The supplier's two-digit GST state code when it has no GSTIN; undefined: the GSTIN's state, else 29. */
  supplierStateCode: string | undefined;
  /** The six-digit SAC of the service supplied. */
  sac: string;
  /** The GST rate, basis points (1800 = 18%). */
  gstRateBasisPoints: number;
  /** What a top-up is documented by: a tax invoice at once, or a receipt voucher and a monthly usage invoice. */
  documentMode: 'tax_invoice' | 'receipt_voucher';
  /** How an export of services is taxed: IGST at the rate, or zero-rated under a Letter of Undertaking. */
  exportMode: 'igst' | 'lut';
  /** The Letter of Undertaking's reference (ARN) printed on export documents; required with exportMode lut. */
  lutReference: string | undefined;
  /** The 1..4 capital letters every document serial starts with. */
  serialPrefix: string;
}
