// The provider's books: orders, payments, refunds and disputes in memory, changed the way Razorpay
// changes them, each change announced through the webhook outbox.
import { randomInt } from 'node:crypto';
import { ApiError } from './http-io.ts';
import type {
  LocalCaptureOverride, LocalCheckoutFields, LocalDispute, LocalOrder, LocalPayAction, LocalPayment, LocalPayOptions, LocalPayOutcome, LocalRefund,
} from './types.ts';
import type { WebhookOutbox } from './webhooks.ts';
import { hexHmac, newId, toWireJson, unixSeconds } from './wire.ts';

/** Why a pay-page action was refused (shown on the page). */
export class PayRefused extends Error {
  readonly status: number;
  constructor(status: number, message: string) {
    super(message);
    this.status = status;
  }
}

const maxAmountPaise = BigInt(Number.MAX_SAFE_INTEGER);

/** The provider's state (a restart forgets it) and the operations of its API, pay page and test controls. */
export class PaymentsBook {
  readonly orders = new Map<string, LocalOrder>();
  readonly payments = new Map<string, LocalPayment>();
  readonly refunds = new Map<string, LocalRefund>();
  private readonly refundsByIdempotencyKey = new Map<string, { fingerprint: string; refundId: string }>();
  readonly disputes = new Map<string, LocalDispute>();
  /** The descriptions the next refund calls are refused with, oldest first (refuseRefunds). */
  readonly refundRefusals: string[] = [];
  /** Whether new refunds stay pending until settleRefund (holdRefunds). */
  holdingRefunds = false;
  private readonly outbox: WebhookOutbox;
  /** Signs Checkout's callback fields, as Razorpay does with the key secret. */
  private readonly keySecret: string;

  constructor(outbox: WebhookOutbox, keySecret: string) {
    this.outbox = outbox;
    this.keySecret = keySecret;
  }

  /** A new payment attempt on an order: failed, authorised, or captured (with the capture's webhooks). */
  private newPayment(order: LocalOrder, outcome: 'captured' | 'authorized' | 'failed', capture: LocalCaptureOverride = {}): LocalPayment {
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
    this.payments.set(payment.id, payment);
    order.attempts += 1;
    if (failed || outcome === 'authorized') {
      if (order.status === 'created') order.status = 'attempted';
      this.outbox.publish(failed ? 'payment.failed' : 'payment.authorized', { payment: { ...payment } });
      return payment;
    }
    this.markCaptured(order, payment);
    return payment;
  }

  /** Counts a captured payment against its order (paid once its amount is covered) and sends the capture's webhooks. */
  private markCaptured(order: LocalOrder | undefined, payment: LocalPayment): void {
    if (order === undefined) {
      this.outbox.publish('payment.captured', { payment: { ...payment } });
      return;
    }
    const wasPaid = order.status === 'paid';
    order.amount_paid += payment.amount;
    order.amount_due = order.amount_paid >= order.amount ? 0n : order.amount - order.amount_paid;
    // Razorpay pays an order once its amount is covered; a smaller capture leaves it attempted.
    order.status = order.amount_due === 0n ? 'paid' : 'attempted';
    this.outbox.publish('payment.captured', { payment: { ...payment } });
    if (!wasPaid && order.status === 'paid') this.outbox.publish('order.paid', { payment: { ...payment }, order: { ...order } });
  }

  /** A payment captured with no order (a payment link, a QR code): only payment.captured is sent. */
  captureWithoutOrder(input: { amountPaise: bigint; currency?: string }): LocalPayment {
    const payment: LocalPayment = {
      id: newId('pay_'), entity: 'payment', amount: input.amountPaise, currency: input.currency ?? 'INR', status: 'captured', order_id: null,
      invoice_id: null, international: false, method: 'upi', amount_refunded: 0n, refund_status: null, captured: true,
      description: 'QR code payment', card_id: null, bank: null, wallet: null, vpa: 'success@razorpay', email: 'void@razorpay.com',
      contact: '+919000090000', notes: {}, fee: 0n, tax: 0n, error_code: null, error_description: null, error_source: null,
      error_step: null, error_reason: null, acquirer_data: { rrn: String(randomInt(100_000_000_000, 1_000_000_000_000)) }, created_at: unixSeconds(),
    };
    this.payments.set(payment.id, payment);
    this.markCaptured(undefined, payment);
    return payment;
  }

  /** Razorpay's capture of an authorised payment: the amount (and currency) must be the payment's. */
  capture(paymentId: string, body: unknown): LocalPayment {
    const payment = this.payments.get(paymentId);
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
    this.markCaptured(payment.order_id === null ? undefined : this.orders.get(payment.order_id), payment);
    return payment;
  }

  /** Razorpay's payments list: created between `from` and `to` (unix seconds, inclusive), newest first, `count` (≤ 100) after `skip`. */
  listPayments(query: URLSearchParams): { entity: 'collection'; count: number; items: LocalPayment[] } {
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
    const items = [...this.payments.values()].filter((payment) => payment.created_at >= from && payment.created_at <= to).reverse().slice(skip, skip + count);
    return { entity: 'collection', count: items.length, items };
  }

  /** What a pay-page button does to an order; a PayRefused when the order is unknown or already paid. */
  pay(orderId: string, action: LocalPayAction, payOptions: LocalPayOptions = {}): LocalPayOutcome {
    const order = this.orders.get(orderId);
    if (order === undefined) throw new PayRefused(404, `There is no order ${orderId}.`);
    if (order.status === 'paid' && payOptions.afterPaid !== true) throw new PayRefused(409, 'This order is already paid.');
    if (action === 'fail') return { outcome: 'failed', paymentIds: [this.newPayment(order, 'failed').id] };
    if (action === 'authorize') {
      // Checkout hands back an authorised payment's signed fields as it does a captured one's.
      const authorized = this.newPayment(order, 'authorized', payOptions.capture);
      return { outcome: 'authorized', paymentIds: [authorized.id], checkout: this.checkoutFields(order.id, authorized.id) };
    }
    const paymentIds: string[] = [];
    if (payOptions.scenario === 'fail_then_pay') paymentIds.push(this.newPayment(order, 'failed').id);
    const captured = this.newPayment(order, 'captured', payOptions.capture);
    paymentIds.push(captured.id);
    if (action === 'pay_twice') paymentIds.push(this.newPayment(order, 'captured', payOptions.capture).id);
    return {
      outcome: 'paid',
      paymentIds,
      checkout: this.checkoutFields(order.id, captured.id),
    };
  }

  /** The fields Checkout hands back, signed with the key secret as Razorpay signs them. */
  private checkoutFields(orderId: string, paymentId: string): LocalCheckoutFields {
    return { razorpay_payment_id: paymentId, razorpay_order_id: orderId, razorpay_signature: hexHmac(this.keySecret, `${orderId}|${paymentId}`) };
  }

  /** Razorpay's order creation: amount in paise (at least 100), INR only, optional receipt and notes. */
  createOrder(body: unknown): LocalOrder {
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
    this.orders.set(order.id, order);
    return order;
  }

  /**
   * Razorpay's X-Refund-Idempotency: the same key with the same body answers the refund it made;
   * with another body, 400.
   */
  idempotentRefund(paymentId: string, body: unknown, key: string | undefined): LocalRefund {
    if (key === undefined) return this.refund(paymentId, body);
    const fingerprint = `${paymentId}|${toWireJson(body)}`;
    const earlier = this.refundsByIdempotencyKey.get(key);
    if (earlier !== undefined) {
      if (earlier.fingerprint !== fingerprint) throw new ApiError(400, 'Different request with the same idempotency key has already been processed.');
      return { ...this.refunds.get(earlier.refundId)! };
    }
    const created = this.refund(paymentId, body);
    this.refundsByIdempotencyKey.set(key, { fingerprint, refundId: created.id });
    return created;
  }

  /** Razorpay's refund of a captured payment, whole or partial (at least 100 paise), unless refused by refuseRefunds. */
  private refund(paymentId: string, body: unknown): LocalRefund {
    const refusal = this.refundRefusals.shift();
    if (refusal !== undefined) throw new ApiError(400, refusal);
    const payment = this.payments.get(paymentId);
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
      created_at: unixSeconds(), batch_id: null, status: this.holdingRefunds ? 'pending' : 'processed', speed_processed: 'normal', speed_requested: speed,
    };
    return this.recordRefund(payment, created);
  }

  /** Takes a new refund off the payment and sends its webhooks (refund.created when held, refund.processed otherwise). */
  private recordRefund(payment: LocalPayment, created: LocalRefund): LocalRefund {
    this.refunds.set(created.id, created);
    payment.amount_refunded += created.amount;
    payment.refund_status = payment.amount_refunded === payment.amount ? 'full' : 'partial';
    if (payment.refund_status === 'full') payment.status = 'refunded';
    this.outbox.publish(created.status === 'pending' ? 'refund.created' : 'refund.processed', { refund: { ...created }, payment: { ...payment } });
    return created;
  }

  /** Ends a pending refund as processed or failed (a failed one gives the payment its refundable amount back). */
  settleRefund(refundId: string, outcome: 'processed' | 'failed', reason = 'The bank could not credit the refund.'): LocalRefund {
    const found = this.refunds.get(refundId);
    if (found === undefined) throw new Error(`There is no refund ${refundId}.`);
    if (found.status !== 'pending') throw new Error(`The refund ${refundId} is ${found.status}, not pending.`);
    const payment = this.payments.get(found.payment_id)!;
    found.status = outcome;
    if (outcome === 'failed') {
      // A failed refund gives the payment its refundable amount back.
      payment.amount_refunded -= found.amount;
      payment.refund_status = payment.amount_refunded === 0n ? null : 'partial';
      payment.status = 'captured';
      this.outbox.publish('refund.failed', { refund: { ...found, error_description: reason }, payment: { ...payment } });
    } else {
      this.outbox.publish('refund.processed', { refund: { ...found }, payment: { ...payment } });
    }
    return { ...found };
  }

  /** A refund made from the provider's dashboard: no receipt, no idempotency key, the same webhooks. */
  dashboardRefund(paymentId: string, amountPaise?: bigint): LocalRefund {
    const payment = this.payments.get(paymentId);
    if (payment === undefined || !payment.captured) throw new Error(`There is no captured payment ${paymentId}.`);
    const amount = amountPaise ?? payment.amount - payment.amount_refunded;
    if (amount < 100n || amount > payment.amount - payment.amount_refunded) throw new Error(`The payment ${paymentId} cannot be refunded ${amount} paise.`);
    return this.recordRefund(payment, {
      id: newId('rfnd_'), entity: 'refund', amount, currency: payment.currency, payment_id: payment.id, notes: { comment: 'refunded from the dashboard' },
      receipt: null, acquirer_data: { arn: null }, created_at: unixSeconds(), batch_id: null,
      status: this.holdingRefunds ? 'pending' : 'processed', speed_processed: 'normal', speed_requested: 'normal',
    });
  }

  /** Opens a chargeback on a captured payment, of the whole amount unless given (paise). */
  openDispute(paymentId: string, amountPaise?: bigint): LocalDispute {
    const payment = this.payments.get(paymentId);
    if (payment === undefined || !payment.captured) throw new Error(`There is no captured payment ${paymentId}.`);
    const dispute: LocalDispute = {
      id: newId('disp_'), entity: 'dispute', payment_id: payment.id, amount: amountPaise ?? payment.amount, currency: payment.currency,
      amount_deducted: 0n, reason_code: 'chargeback', respond_by: unixSeconds() + 7 * 86_400, status: 'open', phase: 'chargeback',
      created_at: unixSeconds(),
    };
    this.disputes.set(dispute.id, dispute);
    this.outbox.publish('payment.dispute.created', { payment: { ...payment }, dispute: { ...dispute } });
    return { ...dispute };
  }

  /** Ends a dispute as won or lost, then closed, with a webhook for each. */
  resolveDispute(disputeId: string, outcome: 'won' | 'lost'): LocalDispute {
    const dispute = this.disputes.get(disputeId);
    if (dispute === undefined) throw new Error(`There is no dispute ${disputeId}.`);
    if (dispute.status !== 'open' && dispute.status !== 'under_review') throw new Error(`The dispute ${disputeId} is ${dispute.status} already.`);
    const payment = this.payments.get(dispute.payment_id)!;
    dispute.status = outcome;
    dispute.amount_deducted = outcome === 'lost' ? dispute.amount : 0n;
    this.outbox.publish(`payment.dispute.${outcome}`, { payment: { ...payment }, dispute: { ...dispute } });
    this.outbox.publish('payment.dispute.closed', { payment: { ...payment }, dispute: { ...dispute } });
    return { ...dispute };
  }

  /** Forgets every order, payment, refund and dispute, as a restart does. */
  forgetEverything(): void {
    this.orders.clear();
    this.payments.clear();
    this.refunds.clear();
    this.disputes.clear();
  }
}

/** An optional text field of a request (null when absent); an ApiError past `maxLength` characters. */
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

