// The JSON shapes of the admin's billing answers the dashboard reads (services/admin/openapi.json
// is the reference): packages, billing profiles, top-ups, tax documents and refunds. Fields ending
// _paise are decimal strings of paise (what is paid and invoiced); _micros are µ₹ (what is credited).

/** A top-up package: what a buyer pays (GST included) and the credit it gives. */
export interface TopUpPackage {
  id: string;
  name: string;
  price_paise: string;
  credit_micros: string;
  active: boolean;
  sort_order: number;
  created_at: string;
}

/** An organisation's billing profile: the recipient and place of supply on its invoices. */
export interface BillingProfile {
  legal_name: string;
  address: string;
  /** Two-digit GST state code of the place of supply. */
  state_code: string;
  gstin: string | null;
  /** The recipient's country when outside India (state code 96); null otherwise. */
  country: string | null;
  email: string | null;
}

/** Where a top-up is in its life. */
export type TopUpState = 'created' | 'pending_payment' | 'paid' | 'credited' | 'invoiced' | 'failed' | 'expired' | 'refunded';

/** A purchase of a package, with its documents and every transition. */
export interface TopUp {
  id: string;
  package_id: string;
  package_name: string;
  price_paise: string;
  credit_micros: string;
  state: TopUpState;
  provider: 'razorpay' | 'local';
  provider_order_id: string | null;
  provider_payment_id: string | null;
  created_at: string;
  paid_at: string | null;
  credited_at: string | null;
  expires_at: string | null;
  documents: Array<{ id: string; kind: TaxDocumentKind; serial: string }>;
  transitions: Array<{ from_state: string | null; to_state: string; cause: string; occurred_at: string }>;
}

/** How the browser pays a new top-up's order: Razorpay Checkout, or the local provider's pay page. */
export interface CheckoutDetails {
  provider: 'razorpay' | 'local';
  key_id: string;
  order_id: string;
  amount_paise: string;
  currency: 'INR';
  name: string;
  description: string;
  pay_page_url: string | null;
}

/** The kinds of GST document the admin issues. */
export type TaxDocumentKind = 'tax_invoice' | 'receipt_voucher' | 'credit_note';

/** An issued GST document (immutable), as the invoice list shows it. */
export interface TaxDocument {
  id: string;
  kind: TaxDocumentKind;
  serial: string;
  issued_at: string;
  financial_year: string;
  topup_id: string | null;
  recipient: { legal_name: string; gstin: string | null; state_code: string };
  place_of_supply: string;
  taxable_paise: string;
  cgst_paise: string;
  sgst_paise: string;
  igst_paise: string;
  total_paise: string;
  references_document_id: string | null;
}

/** A refund of (part of) a top-up's payment, of balance not yet spent. */
export interface Refund {
  id: string;
  topup_id: string;
  amount_paise: string;
  debit_micros: string;
  state: 'requested' | 'debited' | 'provider_pending' | 'provider_refunded' | 'credit_noted' | 'refused' | 'provider_refused' | 'failed';
  provider_refund_id: string | null;
  credit_note_id: string | null;
  /** The payment provider's reason for refusing it (provider_refused, failed). */
  failure_reason: string | null;
  /** The last transient failure the refund job is retrying. */
  last_error: string | null;
  attempts: number;
  next_attempt_at: string | null;
  created_at: string;
}

/** A refund's state in words: where the money is. */
export function refundStateText(refund: Refund): string {
  switch (refund.state) {
    case 'requested': return 'Requested';
    case 'debited': return refund.last_error === null ? 'Taken from the balance; refunding' : `Taken from the balance; retrying (${refund.last_error})`;
    case 'provider_pending': return 'Pending at the payment provider';
    case 'provider_refunded': return 'Refunded; credit note being issued';
    case 'credit_noted': return 'Refunded, credit note issued';
    case 'refused': return 'Refused: not enough unspent purchased balance';
    case 'provider_refused': return `Refused by the payment provider (${refund.failure_reason ?? 'no reason given'}); returning the money to the balance`;
    case 'failed': return `Failed: ${refund.failure_reason ?? 'refused by the payment provider'}. The money is back in the balance.`;
  }
}

/** A page of a newest-first list (top-ups, documents): pass `next_cursor` as `cursor` for the next. */
export interface CursorPage<Item> {
  object: 'list';
  data: Item[];
  next_cursor: string | null;
}

/** A GST document's kind in words. */
export const documentKindText: Record<TaxDocumentKind, string> = {
  tax_invoice: 'Tax invoice',
  receipt_voucher: 'Receipt voucher',
  credit_note: 'Credit note',
};

/** The path of a document's PDF (a same-origin GET the session cookie authorises, so a plain link downloads it). */
export function documentPdfPath(organisationId: string, documentId: string): string {
  return `/admin/v1/organisations/${organisationId}/invoices/${documentId}/pdf`;
}
