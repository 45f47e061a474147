import { randomInt, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { renderPayPage, renderProblemPage, withCheckoutFields } from './pay-page.ts';
import { WebhookOutbox, type LocalPaymentsLogger, type LocalWebhook, type LocalWebhookDelivery, type WebhookRetryPolicy } from './webhooks.ts';
import { hexHmac, newId, parseWireJson, toWireJson, unixSeconds } from './wire.ts';

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

/** A Razorpay error answer: `{ error: { code, description, source, step, reason, metadata, field? } }`. */
class ApiError extends Error {
  readonly status: number;
  readonly description: string;
  readonly field: string | undefined;
  constructor(status: number, description: string, field?: string) {
    super(description);
    this.status = status;
    this.description = description;
    this.field = field;
  }
}

/** Why a pay-page action was refused (shown on the page). */
class PayRefused extends Error {
  readonly status: number;
  constructor(status: number, message: string) {
    super(message);
    this.status = status;
  }
}

const maxBodyBytes = 64 * 1024;
const maxAmountPaise = BigInt(Number.MAX_SAFE_INTEGER);
const payActions: ReadonlySet<string> = new Set<LocalPayAction>(['pay', 'fail', 'pay_twice', 'authorize']);

/**
 * Starts the local payment provider: Razorpay's Orders, Payments and Refunds API (the subset the
 * admin uses, same JSON and error shapes, basic auth, automatic capture), a pay page with "Pay",
 * "Fail payment" and "Pay twice", and the same signed webhooks, retried while the receiver fails.
 * State lives in memory: a restart forgets every order.
 */
export async function startLocalPayments(options: LocalPaymentsOptions): Promise<LocalPayments> {
  const orders = new Map<string, LocalOrder>();
  const payments = new Map<string, LocalPayment>();
  const refunds = new Map<string, LocalRefund>();
  const refundsByIdempotencyKey = new Map<string, { fingerprint: string; refundId: string }>();
  const disputes = new Map<string, LocalDispute>();
  const faults: LocalApiFault[] = [];
  let holdMatch: LocalApiCallMatch | undefined;
  const held: Array<() => void> = [];
  const refundRefusals: string[] = [];
  let holdingRefunds = false;
  const expectedAuthorization = Buffer.from(`Basic ${Buffer.from(`${options.keyId}:${options.keySecret}`).toString('base64')}`);
  const outbox = new WebhookOutbox({
    secret: options.webhookSecret,
    accountId: newId('acc_'),
    url: options.webhookUrl,
    logger: options.logger,
    retry: { attempts: 5, baseDelayMs: 200, timeoutMs: 5_000, ...options.webhookRetry },
  });

  function authenticated(request: IncomingMessage): boolean {
    const given = Buffer.from(request.headers.authorization ?? '');
    return given.length === expectedAuthorization.length && timingSafeEqual(given, expectedAuthorization);
  }

  function newPayment(order: LocalOrder, outcome: 'captured' | 'authorized' | 'failed', capture: LocalCaptureOverride = {}): LocalPayment {
    const failed = outcome === 'failed';
    const payment: LocalPayment = {
      id: newId('pay_'), entity: 'payment', amount: capture.amountPaise ?? order.amount, currency: capture.currency ?? order.currency, status: outcome,
      order_id: order.id, invoice_id: null, international: false, method: 'upi', amount_refunded: 0n, refund_status: null,
      captured: outcome === 'captured', description: null, card_id: null, bank: null, wallet: null,
      vpa: failed ? 'failure@razorpay' : 'success@razorpay', email: 'void@razorpay.com', contact: '+919000090000', notes: {},
      fee: failed ? null : 0n, tax: failed ? null : 0n,
      error_code: failed ? 'BAD_REQUEST_ERROR' : null,
      error_description: failed ? 'The UPI payment was declined (the local provider\'s "Fail payment").' : null,
      error_source: failed ? 'customer' : null,
      error_step: failed ? 'payment_authentication' : null,
      error_reason: failed ? 'payment_failed' : null,
      acquirer_data: { rrn: failed ? null : String(randomInt(100_000_000_000, 1_000_000_000_000)) },
      created_at: unixSeconds(),
    };
    payments.set(payment.id, payment);
    order.attempts += 1;
    if (failed || outcome === 'authorized') {
      if (order.status === 'created') order.status = 'attempted';
      outbox.publish(failed ? 'payment.failed' : 'payment.authorized', { payment: { ...payment } });
      return payment;
    }
    markCaptured(order, payment);
    return payment;
  }

  /** Counts a captured payment against its order (paid once its amount is covered) and sends the capture's webhooks. */
  function markCaptured(order: LocalOrder | undefined, payment: LocalPayment): void {
    if (order === undefined) {
      outbox.publish('payment.captured', { payment: { ...payment } });
      return;
    }
    const wasPaid = order.status === 'paid';
    order.amount_paid += payment.amount;
    order.amount_due = order.amount_paid >= order.amount ? 0n : order.amount - order.amount_paid;
    // Razorpay pays an order once its amount is covered; a smaller capture leaves it attempted.
    order.status = order.amount_due === 0n ? 'paid' : 'attempted';
    outbox.publish('payment.captured', { payment: { ...payment } });
    if (!wasPaid && order.status === 'paid') outbox.publish('order.paid', { payment: { ...payment }, order: { ...order } });
  }

  function captureWithoutOrder(input: { amountPaise: bigint; currency?: string }): LocalPayment {
    const payment: LocalPayment = {
      id: newId('pay_'), entity: 'payment', amount: input.amountPaise, currency: input.currency ?? 'INR', status: 'captured', order_id: null,
      invoice_id: null, international: false, method: 'upi', amount_refunded: 0n, refund_status: null, captured: true,
      description: 'QR code payment', card_id: null, bank: null, wallet: null, vpa: 'success@razorpay', email: 'void@razorpay.com',
      contact: '+919000090000', notes: {}, fee: 0n, tax: 0n, error_code: null, error_description: null, error_source: null,
      error_step: null, error_reason: null, acquirer_data: { rrn: String(randomInt(100_000_000_000, 1_000_000_000_000)) }, created_at: unixSeconds(),
    };
    payments.set(payment.id, payment);
    markCaptured(undefined, payment);
    return payment;
  }

  /** Razorpay's capture of an authorised payment: the amount (and currency) must be the payment's. */
  function capture(paymentId: string, body: unknown): LocalPayment {
    const payment = payments.get(paymentId);
    if (payment === undefined) throw new ApiError(400, 'The id provided does not exist', 'id');
    if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new ApiError(400, 'The request body must be a JSON object.');
    const input = body as Record<string, unknown>;
    if (payment.status !== 'authorized') throw new ApiError(400, 'This payment has already been captured', 'id');
    if (typeof input.amount !== 'bigint') throw new ApiError(400, 'The amount must be an integer.', 'amount');
    if (input.amount !== payment.amount) throw new ApiError(400, 'Capture amount must be equal to the amount authorized', 'amount');
    if (input.currency !== undefined && input.currency !== payment.currency) throw new ApiError(400, 'The currency should be the payment\'s currency.', 'currency');
    payment.status = 'captured';
    payment.captured = true;
    payment.fee = 0n;
    payment.tax = 0n;
    markCaptured(payment.order_id === null ? undefined : orders.get(payment.order_id), payment);
    return payment;
  }

  /** Razorpay's payments list: created between `from` and `to` (unix seconds, inclusive), newest first, `count` (≤ 100) after `skip`. */
  function listPayments(query: URLSearchParams): { entity: 'collection'; count: number; items: LocalPayment[] } {
    const whole = (name: string, fallback: number, max: number): number => {
      const text = query.get(name);
      if (text === null) return fallback;
      if (!/^\d+$/.test(text) || Number(text) > max) throw new ApiError(400, `The ${name} must be an integer of at most ${max}.`, name);
      return Number(text);
    };
    const from = whole('from', 0, 4_765_046_400);
    const to = whole('to', 4_765_046_400, 4_765_046_400);
    const count = whole('count', 10, 100);
    const skip = whole('skip', 0, Number.MAX_SAFE_INTEGER);
    const items = [...payments.values()].filter((payment) => payment.created_at >= from && payment.created_at <= to).reverse().slice(skip, skip + count);
    return { entity: 'collection', count: items.length, items };
  }

  function pay(orderId: string, action: LocalPayAction, payOptions: LocalPayOptions = {}): LocalPayOutcome {
    const order = orders.get(orderId);
    if (order === undefined) throw new PayRefused(404, `There is no order ${orderId}.`);
    if (order.status === 'paid' && payOptions.afterPaid !== true) throw new PayRefused(409, 'This order is already paid.');
    if (action === 'fail') return { outcome: 'failed', paymentIds: [newPayment(order, 'failed').id] };
    if (action === 'authorize') {
      // Checkout hands back an authorised payment's signed fields as it does a captured one's.
      const authorized = newPayment(order, 'authorized', payOptions.capture);
      return { outcome: 'authorized', paymentIds: [authorized.id], checkout: checkoutFields(order.id, authorized.id) };
    }
    const paymentIds: string[] = [];
    if (payOptions.scenario === 'fail_then_pay') paymentIds.push(newPayment(order, 'failed').id);
    const captured = newPayment(order, 'captured', payOptions.capture);
    paymentIds.push(captured.id);
    if (action === 'pay_twice') paymentIds.push(newPayment(order, 'captured', payOptions.capture).id);
    return {
      outcome: 'paid',
      paymentIds,
      checkout: checkoutFields(order.id, captured.id),
    };
  }

  function checkoutFields(orderId: string, paymentId: string): LocalCheckoutFields {
    return { razorpay_payment_id: paymentId, razorpay_order_id: orderId, razorpay_signature: hexHmac(options.keySecret, `${orderId}|${paymentId}`) };
  }

  function createOrder(body: unknown): LocalOrder {
    if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new ApiError(400, 'The request body must be a JSON object.');
    const input = body as Record<string, unknown>;
    const amount = input.amount;
    if (typeof amount !== 'bigint') throw new ApiError(400, 'The amount must be an integer.', 'amount');
    if (amount < 100n) throw new ApiError(400, 'The amount must be at least INR 1.00.', 'amount');
    if (amount > maxAmountPaise) throw new ApiError(400, 'The amount exceeds the maximum amount allowed.', 'amount');
    if (input.currency !== 'INR') throw new ApiError(400, 'The currency must be INR.', 'currency');
    const receipt = optionalText(input.receipt, 'receipt', 40);
    const order: LocalOrder = {
      id: newId('order_'), entity: 'order', amount, amount_paid: 0n, amount_due: amount, currency: 'INR', receipt,
      offer_id: null, status: 'created', attempts: 0, notes: notesOf(input.notes), created_at: unixSeconds(),
    };
    orders.set(order.id, order);
    return order;
  }

  /**
   * Razorpay's X-Refund-Idempotency: the same key with the same body answers the refund it made;
   * with another body, 400.
   */
  function idempotentRefund(paymentId: string, body: unknown, key: string | undefined): LocalRefund {
    if (key === undefined) return refund(paymentId, body);
    const fingerprint = `${paymentId}|${toWireJson(body)}`;
    const earlier = refundsByIdempotencyKey.get(key);
    if (earlier !== undefined) {
      if (earlier.fingerprint !== fingerprint) throw new ApiError(400, 'Different request with the same idempotency key has already been processed.');
      return { ...refunds.get(earlier.refundId)! };
    }
    const created = refund(paymentId, body);
    refundsByIdempotencyKey.set(key, { fingerprint, refundId: created.id });
    return created;
  }

  function refund(paymentId: string, body: unknown): LocalRefund {
    const refusal = refundRefusals.shift();
    if (refusal !== undefined) throw new ApiError(400, refusal);
    const payment = payments.get(paymentId);
    if (payment === undefined) throw new ApiError(400, 'The id provided does not exist', 'id');
    if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new ApiError(400, 'The request body must be a JSON object.');
    const input = body as Record<string, unknown>;
    if (!payment.captured) throw new ApiError(400, 'The payment has not been captured, so it cannot be refunded.');
    const refundable = payment.amount - payment.amount_refunded;
    if (refundable === 0n) throw new ApiError(400, 'The payment has been fully refunded already.');
    const amount = input.amount === undefined ? refundable : input.amount;
    if (typeof amount !== 'bigint' || amount < 100n) throw new ApiError(400, 'The refund amount must be an integer of at least 100 paise.', 'amount');
    if (amount > refundable) throw new ApiError(400, 'The refund amount provided is greater than the unrefunded amount of the payment.', 'amount');
    const speed = input.speed === undefined ? 'normal' : input.speed;
    if (speed !== 'normal' && speed !== 'optimum') throw new ApiError(400, 'The speed must be normal or optimum.', 'speed');
    const created: LocalRefund = {
      id: newId('rfnd_'), entity: 'refund', amount, currency: payment.currency, payment_id: payment.id,
      notes: notesOf(input.notes), receipt: optionalText(input.receipt, 'receipt', 40), acquirer_data: { arn: null },
      created_at: unixSeconds(), batch_id: null, status: holdingRefunds ? 'pending' : 'processed', speed_processed: 'normal', speed_requested: speed,
    };
    return recordRefund(payment, created);
  }

  /** Takes a new refund off the payment and sends its webhooks (refund.created when held, refund.processed otherwise). */
  function recordRefund(payment: LocalPayment, created: LocalRefund): LocalRefund {
    refunds.set(created.id, created);
    payment.amount_refunded += created.amount;
    payment.refund_status = payment.amount_refunded === payment.amount ? 'full' : 'partial';
    if (payment.refund_status === 'full') payment.status = 'refunded';
    outbox.publish(created.status === 'pending' ? 'refund.created' : 'refund.processed', { refund: { ...created }, payment: { ...payment } });
    return created;
  }

  function settleRefund(refundId: string, outcome: 'processed' | 'failed', reason = 'The bank could not credit the refund.'): LocalRefund {
    const found = refunds.get(refundId);
    if (found === undefined) throw new Error(`There is no refund ${refundId}.`);
    if (found.status !== 'pending') throw new Error(`The refund ${refundId} is ${found.status}, not pending.`);
    const payment = payments.get(found.payment_id)!;
    found.status = outcome;
    if (outcome === 'failed') {
      // A failed refund gives the payment its refundable amount back.
      payment.amount_refunded -= found.amount;
      payment.refund_status = payment.amount_refunded === 0n ? null : 'partial';
      payment.status = 'captured';
      outbox.publish('refund.failed', { refund: { ...found, error_description: reason }, payment: { ...payment } });
    } else {
      outbox.publish('refund.processed', { refund: { ...found }, payment: { ...payment } });
    }
    return { ...found };
  }

  function dashboardRefund(paymentId: string, amountPaise?: bigint): LocalRefund {
    const payment = payments.get(paymentId);
    if (payment === undefined || !payment.captured) throw new Error(`There is no captured payment ${paymentId}.`);
    const amount = amountPaise ?? payment.amount - payment.amount_refunded;
    if (amount < 100n || amount > payment.amount - payment.amount_refunded) throw new Error(`The payment ${paymentId} cannot be refunded ${amount} paise.`);
    return recordRefund(payment, {
      id: newId('rfnd_'), entity: 'refund', amount, currency: payment.currency, payment_id: payment.id, notes: { comment: 'refunded from the dashboard' },
      receipt: null, acquirer_data: { arn: null }, created_at: unixSeconds(), batch_id: null,
      status: holdingRefunds ? 'pending' : 'processed', speed_processed: 'normal', speed_requested: 'normal',
    });
  }

  function openDispute(paymentId: string, amountPaise?: bigint): LocalDispute {
    const payment = payments.get(paymentId);
    if (payment === undefined || !payment.captured) throw new Error(`There is no captured payment ${paymentId}.`);
    const dispute: LocalDispute = {
      id: newId('disp_'), entity: 'dispute', payment_id: payment.id, amount: amountPaise ?? payment.amount, currency: payment.currency,
      amount_deducted: 0n, reason_code: 'chargeback', respond_by: unixSeconds() + 7 * 86_400, status: 'open', phase: 'chargeback',
      created_at: unixSeconds(),
    };
    disputes.set(dispute.id, dispute);
    outbox.publish('payment.dispute.created', { payment: { ...payment }, dispute: { ...dispute } });
    return { ...dispute };
  }

  function resolveDispute(disputeId: string, outcome: 'won' | 'lost'): LocalDispute {
    const dispute = disputes.get(disputeId);
    if (dispute === undefined) throw new Error(`There is no dispute ${disputeId}.`);
    if (dispute.status !== 'open' && dispute.status !== 'under_review') throw new Error(`The dispute ${disputeId} is ${dispute.status} already.`);
    const payment = payments.get(dispute.payment_id)!;
    dispute.status = outcome;
    dispute.amount_deducted = outcome === 'lost' ? dispute.amount : 0n;
    outbox.publish(`payment.dispute.${outcome}`, { payment: { ...payment }, dispute: { ...dispute } });
    outbox.publish('payment.dispute.closed', { payment: { ...payment }, dispute: { ...dispute } });
    return { ...dispute };
  }

  function api(method: string, path: string, query: URLSearchParams, body: unknown, refundIdempotencyKey?: string): unknown {
    const segments = path.split('/').slice(2);
    const [collection, id, sub] = segments;
    if (collection === 'orders' && segments.length === 1 && method === 'POST') return createOrder(body);
    if (collection === 'orders' && id !== undefined && method === 'GET') {
      const order = orders.get(id);
      if (order === undefined) throw new ApiError(400, 'The id provided does not exist', 'id');
      if (segments.length === 2) return order;
      if (segments.length === 3 && sub === 'payments') {
        const items = [...payments.values()].filter((payment) => payment.order_id === id);
        return { entity: 'collection', count: items.length, items };
      }
    }
    if (collection === 'payments' && segments.length === 1 && method === 'GET') return listPayments(query);
    if (collection === 'payments' && id !== undefined) {
      if (segments.length === 3 && sub === 'capture' && method === 'POST') return capture(id, body);
      if (segments.length === 2 && method === 'GET') {
        const payment = payments.get(id);
        if (payment === undefined) throw new ApiError(400, 'The id provided does not exist', 'id');
        return payment;
      }
      if (segments.length === 3 && sub === 'refund' && method === 'POST') return idempotentRefund(id, body, refundIdempotencyKey);
      if (segments.length === 4 && sub === 'refunds' && method === 'GET') {
        const found = refunds.get(segments[3]!);
        if (found?.payment_id !== id) throw new ApiError(400, 'The id provided does not exist', 'id');
        return found;
      }
    }
    throw new ApiError(404, 'The requested URL was not found on the server.');
  }

  async function handleApi(request: IncomingMessage, response: ServerResponse, path: string, query: URLSearchParams): Promise<void> {
    const fault = faults.shift();
    if (fault === 'stall') return; // no answer: the caller's deadline decides (close() ends the socket)
    if (holdMatch !== undefined && (holdMatch.method === undefined || holdMatch.method === request.method) && (holdMatch.path?.test(path) ?? true)) {
      await new Promise<void>((resolve) => held.push(resolve));
    }
    if (fault !== undefined) {
      sendError(response, fault.status, fault.status >= 500 ? 'SERVER_ERROR' : 'BAD_REQUEST_ERROR',
        fault.status >= 500 ? 'The server encountered an error. The incident has been reported to admins.' : 'The request was refused (injected fault).');
      return;
    }
    if (!authenticated(request)) {
      sendError(response, 401, 'BAD_REQUEST_ERROR', 'Authentication failed');
      return;
    }
    let body: unknown;
    if (request.method === 'POST') {
      const text = await readBody(request);
      try {
        body = text === '' ? {} : parseWireJson(text);
      } catch {
        throw new ApiError(400, 'The request body is not valid JSON.');
      }
    }
    const refundIdempotencyKey = request.headers['x-refund-idempotency'];
    sendJson(response, 200, api(request.method ?? 'GET', path, query, body, typeof refundIdempotencyKey === 'string' ? refundIdempotencyKey : undefined));
  }

  async function handlePayPage(request: IncomingMessage, response: ServerResponse, url: URL): Promise<void> {
    const orderId = decodeURIComponent(url.pathname.slice('/pay/'.length));
    const order = orders.get(orderId);
    if (order === undefined) {
      sendHtml(response, 404, renderProblemPage('Unknown order', `The local payment provider has no order ${orderId}.`));
      return;
    }
    const form = request.method === 'POST' ? new URLSearchParams(await readBody(request)) : url.searchParams;
    const returnUrl = form.get('return_url');
    if (returnUrl === null || !isHttpUrl(returnUrl)) {
      sendHtml(response, 400, renderProblemPage('No return address', 'The pay page needs return_url: the http(s) address to come back to.'));
      return;
    }
    const scenario = form.get('scenario');
    const view = { orderId, amountPaise: order.amount, status: order.status, receipt: order.receipt, returnUrl, scenario, notice: null };
    if (request.method !== 'POST') {
      sendHtml(response, 200, renderPayPage(view));
      return;
    }
    const action = form.get('action') ?? '';
    if (!payActions.has(action)) {
      sendHtml(response, 400, renderPayPage({ ...view, notice: 'Choose one of the buttons.' }));
      return;
    }
    let outcome: LocalPayOutcome;
    try {
      outcome = pay(orderId, action as LocalPayAction, { scenario: scenario === 'fail_then_pay' ? scenario : undefined });
    } catch (error) {
      if (!(error instanceof PayRefused)) throw error;
      sendHtml(response, error.status, renderPayPage({ ...view, status: order.status, notice: error.message }));
      return;
    }
    const back = outcome.outcome !== 'failed'
      ? withCheckoutFields(returnUrl, { ...outcome.checkout })
      : withCheckoutFields(returnUrl, { error: 'payment_failed' });
    response.writeHead(303, { location: back, 'cache-control': 'no-store' }).end();
  }

  const server = createServer((request, response) => {
    const url = new URL(request.url ?? '/', 'http://local-payments');
    const handled = url.pathname.startsWith('/v1/')
      ? handleApi(request, response, url.pathname, url.searchParams)
      : url.pathname.startsWith('/pay/') && (request.method === 'GET' || request.method === 'POST')
        ? handlePayPage(request, response, url)
        : Promise.reject(new ApiError(404, 'The requested URL was not found on the server.'));
    handled.catch((error: unknown) => {
      if (response.headersSent) return;
      if (error instanceof ApiError) sendError(response, error.status, error.status >= 500 ? 'SERVER_ERROR' : 'BAD_REQUEST_ERROR', error.description, error.field);
      else {
        options.logger?.warn({ err: error instanceof Error ? error.message : String(error) }, 'local payments: request failed');
        sendError(response, 500, 'SERVER_ERROR', 'The server encountered an error.');
      }
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  const baseUrl = `http://${host}:${address.port}`;
  options.logger?.info({ url: baseUrl }, 'local payments: listening');

  const copies = <T>(values: Iterable<T>): T[] => [...values].map((value) => structuredClone(value));
  return {
    url: baseUrl,
    async close() {
      await outbox.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
    setWebhookUrl: (url) => outbox.setUrl(url),
    pauseWebhooks: () => outbox.pause(),
    resumeWebhooks: () => outbox.resume(),
    pendingWebhooks: () => outbox.pending(),
    deliverPending: (deliverOptions) => outbox.deliverPending(deliverOptions),
    webhookDeliveries: () => outbox.deliveries(),
    webhooksIdle: () => outbox.idle(),
    orders: () => copies(orders.values()),
    payments: () => copies(payments.values()),
    refunds: () => copies(refunds.values()),
    forgetEverything() {
      orders.clear();
      payments.clear();
      refunds.clear();
      disputes.clear();
    },
    pay: (orderId, action, payOptions) => pay(orderId, action, payOptions),
    captureWithoutOrder: (input) => structuredClone(captureWithoutOrder(input)),
    injectApiFault(fault, count = 1) {
      for (let index = 0; index < count; index += 1) faults.push(fault);
    },
    holdApiCalls(match = {}) {
      holdMatch = match;
    },
    heldApiCalls: () => held.length,
    releaseHeldCalls() {
      holdMatch = undefined;
      for (const release of held.splice(0)) release();
    },
    refuseRefunds(reason, count = 1) {
      for (let index = 0; index < count; index += 1) refundRefusals.push(reason);
    },
    holdRefunds() { holdingRefunds = true; },
    processRefundsAtOnce() { holdingRefunds = false; },
    settleRefund: (refundId, outcome, reason) => settleRefund(refundId, outcome, reason),
    dashboardRefund: (paymentId, amountPaise) => dashboardRefund(paymentId, amountPaise),
    openDispute: (paymentId, amountPaise) => openDispute(paymentId, amountPaise),
    resolveDispute: (disputeId, outcome) => resolveDispute(disputeId, outcome),
    disputes: () => copies(disputes.values()),
  };
}

function optionalText(value: unknown, field: string, maxLength: number): string | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'string' || value.length > maxLength) throw new ApiError(400, `The ${field} must be a string of at most ${maxLength} characters.`, field);
  return value;
}

/** Razorpay's notes: at most 15 pairs, values up to 256 characters. */
function notesOf(value: unknown): Record<string, string> {
  if (value === undefined || value === null) return {};
  if (typeof value !== 'object' || Array.isArray(value)) throw new ApiError(400, 'The notes must be an object of key-value pairs.', 'notes');
  const entries = Object.entries(value as Record<string, unknown>);
  if (entries.length > 15) throw new ApiError(400, 'The notes may have at most 15 key-value pairs.', 'notes');
  const notes: Record<string, string> = {};
  for (const [key, note] of entries) {
    if (typeof note !== 'string' || note.length > 256) throw new ApiError(400, 'Each note must be a string of at most 256 characters.', 'notes');
    notes[key] = note;
  }
  return notes;
}

function isHttpUrl(value: string): boolean {
  if (!URL.canParse(value)) return false;
  const protocol = new URL(value).protocol;
  return protocol === 'http:' || protocol === 'https:';
}

async function readBody(request: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request) {
    size += (chunk as Buffer).length;
    if (size > maxBodyBytes) throw new ApiError(400, 'The request body is too large.');
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function sendJson(response: ServerResponse, status: number, value: unknown): void {
  const body = toWireJson(value);
  response.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body) }).end(body);
}

function sendError(response: ServerResponse, status: number, code: string, description: string, field?: string): void {
  sendJson(response, status, {
    error: { code, description, source: 'NA', step: 'NA', reason: 'NA', metadata: {}, ...(field === undefined ? {} : { field }) },
  });
}

function sendHtml(response: ServerResponse, status: number, html: string): void {
  response.writeHead(status, {
    'content-type': 'text/html; charset=utf-8',
    'cache-control': 'no-store',
    // The page has no scripts and loads nothing: say so, so a browser enforces it. (No form-action:
    // the form's answer redirects to the return URL, which browsers check against form-action too.)
    'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; frame-ancestors 'none'",
  }).end(html);
}
