/**
 * The payment provider as the admin's top-ups see it: Razorpay's Orders, Payments and Refunds,
 * Checkout's callback signature and webhook signatures. Both providers the admin knows speak this
 * (the local one is a stand-in for Razorpay's API), so one adapter (`transport/razorpay-client.ts`)
 * implements it; amounts are integer paise.
 */
export interface PaymentProvider {
  /** Which provider this is: decides how the browser pays (Razorpay Checkout, or the local pay page). */
  kind: 'razorpay' | 'local';
  /** The key id the browser's Checkout is opened with (public). */
  keyId: string;
  /** Creates an order with automatic capture; `receipt` is our top-up id. */
  createOrder(input: { amountPaise: bigint; receipt: string; notes: Record<string, string> }): Promise<ProviderOrder>;
  /** The order as the provider has it now. */
  fetchOrder(orderId: string): Promise<ProviderOrder>;
  /** Every payment attempt of an order (reconciliation reads their states). */
  fetchOrderPayments(orderId: string): Promise<ProviderPayment[]>;
  /** One payment. */
  fetchPayment(paymentId: string): Promise<ProviderPayment>;
  /**
   * The account's payments created between two times (unix seconds, inclusive), newest first,
   * `count` (at most 100) after `skip`: the payments sweep reads every payment of the last days.
   */
  listPayments(input: { fromUnixSeconds: number; toUnixSeconds: number; count: number; skip: number }): Promise<ProviderPayment[]>;
  /** Captures an authorised payment (an account on manual capture); the amount in paise must be the payment's. */
  capturePayment(input: { paymentId: string; amountPaise: bigint; currency: string }): Promise<ProviderPayment>;
  /** Refunds part or all of a captured payment; `receipt` is our refund id (the provider's idempotency hint). */
  refundPayment(input: { paymentId: string; amountPaise: bigint; receipt: string; notes: Record<string, string> }): Promise<ProviderRefund>;
  /** One refund of a payment as the provider has it now (the refund job asks after a pending one). */
  fetchRefund(paymentId: string, refundId: string): Promise<ProviderRefund>;
  /** Whether a Checkout callback's signature is HMAC-SHA256(key secret, `order_id|payment_id`) (constant time). */
  verifyCheckoutSignature(input: { orderId: string; paymentId: string; signature: string }): boolean;
  /** Whether a webhook's X-Razorpay-Signature is HMAC-SHA256(webhook secret, raw body) (constant time), with the previous secret too within its window. */
  verifyWebhookSignature(rawBody: Buffer, signature: string | undefined): boolean;
  /** For the local provider: its pay page for an order, returning to `returnUrl` with the Checkout fields. */
  payPageUrl?(orderId: string, returnUrl: string): string;
}

/** An order as the provider reports it. */
export interface ProviderOrder {
  id: string;
  amountPaise: bigint;
  /** How much has been paid (captured) against it. */
  amountPaidPaise: bigint;
  currency: string;
  receipt: string;
  status: 'created' | 'attempted' | 'paid';
}

/** A payment attempt as the provider reports it. */
export interface ProviderPayment {
  id: string;
  /** null: a payment made without an order (a payment link, a QR code, another integration on the account). */
  orderId: string | null;
  amountPaise: bigint;
  currency: string;
  status: 'created' | 'authorized' | 'captured' | 'refunded' | 'failed';
  /** e.g. 'upi', 'card'. */
  method: string;
  /** The provider's reason when failed (safe to show). */
  errorDescription: string | null;
}

/** A refund as the provider reports it. */
export interface ProviderRefund {
  id: string;
  paymentId: string;
  amountPaise: bigint;
  status: 'pending' | 'processed' | 'failed';
}
