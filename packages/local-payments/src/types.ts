// The local provider's public shapes: its options, Razorpay's JSON entities (amounts in paise) and
// the handle tests and \`pnpm start\` steer it with.
import type { LocalPaymentsLogger, LocalWebhook, LocalWebhookDelivery, WebhookRetryPolicy } from './webhooks.ts';

/** Options of startLocalPayments. */
export interface LocalPaymentsOptions {
  /** Interface to listen on; default 127.0.0.1. */
  host?: string;
  /** Port; default 0 (any free port). */
  port?: number;
  /** The key id API calls must authenticate with (basic-auth user), e.g. `rzp_test_…`. */
  keyId: string;
  /** The key secret (basic-auth password); also signs Checkout callbacks. */
  keySecret: string;
  /** Signs webhooks (X-Razorpay-Signature). */
  webhookSecret: string;
  /** Where webhooks are POSTed; without one they are held until setWebhookUrl. */
  webhookUrl?: string;
  logger?: LocalPaymentsLogger;
  /** How failed webhook deliveries are retried (attempts, first wait in ms doubling, per-POST deadline in ms). */
  webhookRetry?: Partial<WebhookRetryPolicy>;
}

/** An order, in Razorpay's JSON shape (amounts in paise). */
export interface LocalOrder {
  id: string;
  entity: 'order';
  amount: bigint;
  amount_paid: bigint;
  amount_due: bigint;
  currency: string;
  receipt: string | null;
  offer_id: null;
  status: 'created' | 'attempted' | 'paid';
  attempts: number;
  notes: Record<string, string>;
  created_at: number;
}

/** A payment attempt, in Razorpay's JSON shape (amounts in paise). */
export interface LocalPayment {
  id: string;
  entity: 'payment';
  amount: bigint;
  currency: string;
  status: 'authorized' | 'captured' | 'refunded' | 'failed';
  /** null: a payment made without an order (a payment link, a QR code, another integration on the account). */
  order_id: string | null;
  invoice_id: null;
  international: false;
  method: 'upi';
  amount_refunded: bigint;
  refund_status: 'partial' | 'full' | null;
  captured: boolean;
  description: string | null;
  card_id: null;
  bank: null;
  wallet: null;
  vpa: string;
  email: string;
  contact: string;
  notes: Record<string, string>;
  fee: bigint | null;
  tax: bigint | null;
  error_code: string | null;
  error_description: string | null;
  error_source: string | null;
  error_step: string | null;
  error_reason: string | null;
  acquirer_data: { rrn: string | null };
  created_at: number;
}

/** A refund, in Razorpay's JSON shape (amount in paise). */
export interface LocalRefund {
  id: string;
  entity: 'refund';
  amount: bigint;
  currency: string;
  payment_id: string;
  notes: Record<string, string>;
  receipt: string | null;
  acquirer_data: { arn: null };
  created_at: number;
  batch_id: null;
  /** processed at once, unless holdRefunds() made new refunds pending (settled with settleRefund). */
  status: 'pending' | 'processed' | 'failed';
  speed_processed: 'normal';
  speed_requested: 'normal' | 'optimum';
}

/** A dispute (chargeback), in Razorpay's JSON shape (amounts in paise). */
export interface LocalDispute {
  id: string;
  entity: 'dispute';
  payment_id: string;
  amount: bigint;
  currency: string;
  /** What the merchant loses: 0 unless the dispute is lost. */
  amount_deducted: bigint;
  reason_code: string;
  respond_by: number;
  status: 'open' | 'under_review' | 'won' | 'lost' | 'closed';
  phase: 'chargeback';
  created_at: number;
}

/**
 * What the pay page's buttons do: `authorize` leaves the payment authorised, not captured (what an
 * account on manual capture sees, or a late authorisation), until the admin captures it.
 */
export type LocalPayAction = 'pay' | 'fail' | 'pay_twice' | 'authorize';

/** The fields Checkout hands back after a successful payment (the pay page appends them to the return URL). */
export interface LocalCheckoutFields {
  razorpay_payment_id: string;
  razorpay_order_id: string;
  razorpay_signature: string;
}

/** What one pay-page action did. */
export type LocalPayOutcome =
  | { outcome: 'paid' | 'authorized'; paymentIds: string[]; checkout: LocalCheckoutFields }
  | { outcome: 'failed'; paymentIds: string[] };

/** What a test makes a capture carry instead of its order's amount (paise) and currency. */
export interface LocalCaptureOverride {
  amountPaise?: bigint;
  currency?: string;
}

/** How a pay-page action is carried out (tests and the pay page's extra buttons). */
export interface LocalPayOptions {
  /** One failed attempt before the capture. */
  scenario?: 'fail_then_pay' | undefined;
  /** The captured payments carry another amount (paise) or currency than the order's. */
  capture?: LocalCaptureOverride | undefined;
  /** Capture even though the order is already paid: a slow attempt of the same order completing late (a second capture). */
  afterPaid?: boolean | undefined;
}

/** A fault the next API calls answer with instead of their result: an HTTP status, or no answer at all. */
export type LocalApiFault = { status: number } | 'stall';

/** Which API calls a hold applies to: an HTTP method and a pattern of the path (e.g. `/refund$/`); either omitted matches all. */
export interface LocalApiCallMatch {
  method?: string;
  path?: RegExp;
}

/** A running local payment provider. */
export interface LocalPayments {
  /** Base URL, e.g. `http://127.0.0.1:8790` (API under `/v1`, pay page under `/pay`). */
  url: string;
  close(): Promise<void>;
  /** Where webhooks go from now on; held ones are sent (unless paused). */
  setWebhookUrl(url: string): void;
  /** Holds webhooks (a webhook outage) until resumeWebhooks() or deliverPending(). */
  pauseWebhooks(): void;
  /** Sends held webhooks in the order they happened, and new ones as they come. */
  resumeWebhooks(): void;
  /** The webhooks waiting to be sent, oldest first. */
  pendingWebhooks(): LocalWebhook[];
  /** Sends held webhooks now, as they happened or reversed, each with its retries; resolves with what became of them. */
  deliverPending(options?: { order?: 'as_sent' | 'reversed' }): Promise<LocalWebhookDelivery[]>;
  /** Every webhook sent so far (delivered or given up). */
  webhookDeliveries(): LocalWebhookDelivery[];
  /** Resolves when no webhook is being sent. */
  webhooksIdle(): Promise<void>;
  /** The orders, oldest first (copies). */
  orders(): LocalOrder[];
  /** The payment attempts, oldest first (copies). */
  payments(): LocalPayment[];
  /** The refunds, oldest first (copies). */
  refunds(): LocalRefund[];
  /** Forgets every order, payment and refund, as a restart of this in-memory provider does (tests of the admin's recovery). */
  forgetEverything(): void;
  /**
   * Does what a pay-page button does, without a browser: `pay` (with `fail_then_pay`, one failed
   * attempt first), `fail`, or `pay_twice`. Throws when the order is unknown or already paid.
   * `capture` (tests only) makes the captured payments carry another amount (paise) or currency
   * than the order's; the order is paid only once its amount is covered.
   */
  pay(orderId: string, action: LocalPayAction, options?: LocalPayOptions): LocalPayOutcome;
  /**
   * A payment captured without any order, as a payment link, a QR code or another integration on
   * the same account makes: its payment.captured webhook carries no order_id. Amount in paise.
   */
  captureWithoutOrder(input: { amountPaise: bigint; currency?: string }): LocalPayment;
  /** The next `count` API calls (under /v1) answer with this fault (a 5xx, a 4xx, or never). */
  injectApiFault(fault: LocalApiFault, count?: number): void;
  /**
   * A stalled provider: from now on, API calls matching `match` get no answer until
   * releaseHeldCalls(), which answers them as usual (the caller's deadline may end them first).
   */
  holdApiCalls(match?: LocalApiCallMatch): void;
  /** How many API calls are being held now. */
  heldApiCalls(): number;
  /** Stops holding API calls and answers the ones held. */
  releaseHeldCalls(): void;
  /**
   * The next `count` refund calls are refused as Razorpay refuses a refund for good: 400
   * BAD_REQUEST_ERROR with `reason` as the description (e.g. "The payment is older than 6
   * months"); nothing is refunded.
   */
  refuseRefunds(reason: string, count?: number): void;
  /** New refunds (the API's and the dashboard's) stay `pending` until settleRefund; refund.created is sent for each. */
  holdRefunds(): void;
  /** New refunds are processed at once again (the default). */
  processRefundsAtOnce(): void;
  /** Ends a pending refund: `processed` (refund.processed) or `failed` with `reason` (refund.failed; the payment's refunded amount is restored). */
  settleRefund(refundId: string, outcome: 'processed' | 'failed', reason?: string): LocalRefund;
  /**
   * A refund made from the provider's dashboard, not through the API: no receipt, no idempotency
   * key, the same webhooks (refund.created, then refund.processed unless refunds are held).
   */
  dashboardRefund(paymentId: string, amountPaise?: bigint): LocalRefund;
  /** Opens a dispute (chargeback) on a captured payment, of the whole amount unless given: payment.dispute.created. */
  openDispute(paymentId: string, amountPaise?: bigint): LocalDispute;
  /**
   * Ends a dispute: `won` (payment.dispute.won, nothing deducted), `lost` (payment.dispute.lost,
   * the amount deducted), then payment.dispute.closed.
   */
  resolveDispute(disputeId: string, outcome: 'won' | 'lost'): LocalDispute;
  /** The disputes, oldest first (copies). */
  disputes(): LocalDispute[];
}
