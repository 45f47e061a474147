import { assertOutsideTransaction } from '@gateway/db';
import { createHmac, timingSafeEqual } from 'node:crypto';
import { request } from 'undici';
import { z } from 'zod';
import { GatewayError } from '@gateway/errors';
import type { PaymentProvider, ProviderOrder, ProviderPayment, ProviderRefund } from '../domain/payment-provider.ts';

/** How the adapter reaches a provider that speaks Razorpay's REST API (Razorpay itself, or the local stand-in). */
export interface RazorpayClientOptions {
  /** Which provider this is ('local' also has a pay page). */
  kind: 'razorpay' | 'local';
  /** Base URL of the API (RAZORPAY_API_URL or LOCAL_PAYMENTS_URL); `/v1/...` is appended. */
  baseUrl: string;
  /** RAZORPAY_KEY_ID: basic-auth user and Checkout's key (public). */
  keyId: string;
  /** RAZORPAY_KEY_SECRET: basic-auth password and the Checkout signature's key. */
  keySecret: string;
  /** RAZORPAY_WEBHOOK_SECRET: the webhook signature's key. */
  webhookSecret: string;
  /** The webhook secret before a rotation, accepted until `until` (Razorpay retries events made before the rotation signed with it). */
  previousWebhookSecret?: { secret: string; until: Date } | undefined;
  /** Deadline of one API call, connecting included, ms (default 10 s). */
  timeoutMs?: number | undefined;
}

const defaultTimeoutMs = 10_000;
// Longest provider description passed on to a caller; the rest is cut.
const maxDescriptionLength = 200;
// Provider ids are word characters only (order_…, pay_…, rfnd_…); anything else never reaches a URL path.
const providerIdPattern = /^[A-Za-z0-9_]{1,64}$/;
const hexSignaturePattern = /^[0-9a-f]{64}$/i;

const orderSchema = z.object({
  id: z.string(),
  amount: z.bigint(),
  amount_paid: z.bigint(),
  currency: z.string(),
  receipt: z.string().nullable().optional(),
  status: z.enum(['created', 'attempted', 'paid']),
});

const paymentSchema = z.object({
  id: z.string(),
  order_id: z.string().nullable(),
  amount: z.bigint(),
  currency: z.string(),
  status: z.enum(['created', 'authorized', 'captured', 'refunded', 'failed']),
  method: z.string().nullable().optional(),
  error_description: z.string().nullable().optional(),
});

const paymentCollectionSchema = z.object({ items: z.array(paymentSchema) });

const refundSchema = z.object({
  id: z.string(),
  payment_id: z.string(),
  amount: z.bigint(),
  status: z.enum(['pending', 'processed', 'failed']),
});

const errorBodySchema = z.object({ error: z.object({ code: z.string().optional(), description: z.string().optional() }) });

// Razorpay's amount fields (integers of paise); read from the JSON text itself, so no value passes through a float.
const amountFields = new Set(['amount', 'amount_paid', 'amount_due', 'amount_refunded', 'amount_deducted']);

/**
 * Parses a provider answer with its integer amount fields as bigint, exactly: the reviver reads
 * each number's source text (JSON.parse source access), never the rounded double.
 */
export function parseProviderJson(text: string): unknown {
  return JSON.parse(text, (key: string, value: unknown, context?: { source?: string }) => {
    if (amountFields.has(key) && typeof value === 'number' && context?.source !== undefined && /^-?\d+$/.test(context.source)) {
      return BigInt(context.source);
    }
    return value;
  });
}

/**
 * The payment provider over Razorpay's REST API (Orders, Payments, Refunds) with undici: basic auth,
 * JSON, amounts as integer paise (bigint), a deadline per call, and errors in the catalogue
 * (`service_unavailable` for the provider's 5xx, timeouts, network failures and refused credentials;
 * `invalid_request` for its other 4xx, with its description cleaned of secrets). Signatures are
 * checked in constant time.
 */
export function createRazorpayClient(options: RazorpayClientOptions): PaymentProvider {
  const base = options.baseUrl.endsWith('/') ? options.baseUrl : `${options.baseUrl}/`;
  const timeoutMs = options.timeoutMs ?? defaultTimeoutMs;
  const authorization = `Basic ${Buffer.from(`${options.keyId}:${options.keySecret}`).toString('base64')}`;
  const secrets = [options.keySecret, options.webhookSecret, ...(options.previousWebhookSecret ? [options.previousWebhookSecret.secret] : [])];

  async function call<T>(method: 'GET' | 'POST', path: string, schema: z.ZodType<T>, body?: unknown, headers: Record<string, string> = {}): Promise<T> {
    const url = new URL(path, base);
    assertOutsideTransaction(`payment provider ${method} ${url.pathname}`);
    let statusCode: number;
    let text: string;
    try {
      const answer = await request(url, {
        method,
        headers: {
          authorization,
          accept: 'application/json',
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
          ...headers,
        },
        body: body === undefined ? null : JSON.stringify(body),
        signal: AbortSignal.timeout(timeoutMs),
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
      });
      statusCode = answer.statusCode;
      text = await answer.body.text();
    } catch (error) {
      throw unavailable(`payment provider ${method} ${url.pathname} failed: ${failureClass(error)}`, error);
    }
    // 409: an idempotent refund with this key is still being processed (Razorpay: retry later).
    if (statusCode >= 500 || statusCode === 401 || statusCode === 403 || statusCode === 409 || statusCode === 429) {
      throw unavailable(`payment provider ${method} ${url.pathname} answered ${statusCode}`);
    }
    let parsed: unknown;
    try {
      parsed = parseProviderJson(text);
    } catch (error) {
      throw unavailable(`payment provider ${method} ${url.pathname} answered ${statusCode} with a body that is not JSON`, error);
    }
    if (statusCode >= 400) {
      const description = errorBodySchema.safeParse(parsed).data?.error.description;
      const cleaned = description === undefined ? '' : sanitiseDescription(description, secrets);
      throw new GatewayError('invalid_request', {
        publicMessage: cleaned === '' ? 'The payment provider refused the request.' : `The payment provider refused the request: ${cleaned}`,
        internalMessage: `payment provider ${method} ${url.pathname} answered ${statusCode}`,
      });
    }
    if (statusCode < 200 || statusCode >= 300) throw unavailable(`payment provider ${method} ${url.pathname} answered ${statusCode}`);
    const result = schema.safeParse(parsed);
    if (!result.success) {
      throw unavailable(`payment provider ${method} ${url.pathname} answered in an unexpected shape: ${result.error.issues.map((issue) => issue.path.join('.')).join(', ')}`);
    }
    return result.data;
  }

  function hmacMatches(key: string, message: string | Buffer, signature: string | undefined): boolean {
    if (signature === undefined || !hexSignaturePattern.test(signature)) return false;
    const expected = createHmac('sha256', key).update(message).digest();
    const given = Buffer.from(signature, 'hex');
    return given.length === expected.length && timingSafeEqual(given, expected);
  }

  const client: PaymentProvider = {
    kind: options.kind,
    keyId: options.keyId,
    async createOrder(input) {
      const order = await call('POST', 'v1/orders', orderSchema, {
        amount: wireAmount(input.amountPaise), currency: 'INR', receipt: input.receipt, notes: input.notes, payment_capture: true,
      });
      return toOrder(order);
    },
    async fetchOrder(orderId) {
      return toOrder(await call('GET', `v1/orders/${checkedId(orderId, 'order')}`, orderSchema));
    },
    async fetchOrderPayments(orderId) {
      const collection = await call('GET', `v1/orders/${checkedId(orderId, 'order')}/payments`, paymentCollectionSchema);
      return collection.items.map(toPayment);
    },
    async fetchPayment(paymentId) {
      return toPayment(await call('GET', `v1/payments/${checkedId(paymentId, 'payment')}`, paymentSchema));
    },
    async listPayments(input) {
      const query = new URLSearchParams({
        from: String(input.fromUnixSeconds), to: String(input.toUnixSeconds), count: String(input.count), skip: String(input.skip),
      });
      const collection = await call('GET', `v1/payments?${query.toString()}`, paymentCollectionSchema);
      return collection.items.map(toPayment);
    },
    async capturePayment(input) {
      return toPayment(await call('POST', `v1/payments/${checkedId(input.paymentId, 'payment')}/capture`, paymentSchema, {
        amount: wireAmount(input.amountPaise), currency: input.currency,
      }));
    },
    async refundPayment(input) {
      const refund = await call('POST', `v1/payments/${checkedId(input.paymentId, 'payment')}/refund`, refundSchema, {
        amount: wireAmount(input.amountPaise), receipt: input.receipt, notes: input.notes, speed: 'normal',
      // Razorpay's refund idempotency: a retry after a lost answer returns the first refund, never a second.
      }, { 'x-refund-idempotency': input.receipt });
      return toRefund(refund);
    },
    async fetchRefund(paymentId, refundId) {
      return toRefund(await call('GET', `v1/payments/${checkedId(paymentId, 'payment')}/refunds/${checkedId(refundId, 'refund')}`, refundSchema));
    },
    verifyCheckoutSignature(input) {
      return hmacMatches(options.keySecret, `${input.orderId}|${input.paymentId}`, input.signature);
    },
    verifyWebhookSignature(rawBody, signature) {
      if (hmacMatches(options.webhookSecret, rawBody, signature)) return true;
      const previous = options.previousWebhookSecret;
      return previous !== undefined && Date.now() < previous.until.getTime() && hmacMatches(previous.secret, rawBody, signature);
    },
  };
  if (options.kind === 'local') {
    client.payPageUrl = (orderId, returnUrl) => {
      const url = new URL(`pay/${encodeURIComponent(orderId)}`, base);
      url.searchParams.set('return_url', returnUrl);
      return url.toString();
    };
  }
  return client;
}

/**
 * An amount in paise as the wire's JSON integer: positive and a safe integer, so the number is
 * exactly the bigint (Razorpay's amounts are far below 2^53).
 */
function wireAmount(paise: bigint): number {
  if (paise <= 0n || paise > BigInt(Number.MAX_SAFE_INTEGER)) {
    throw new GatewayError('invalid_request', { publicMessage: 'The amount must be a positive whole number of paise.' });
  }
  return Number(paise);
}

/** A provider id fit for a URL path; anything else is refused before a request is made. */
function checkedId(id: string, what: string): string {
  if (!providerIdPattern.test(id)) throw new GatewayError('invalid_request', { publicMessage: `That is not a ${what} id of the payment provider.` });
  return id;
}

function unavailable(internalMessage: string, cause?: unknown): GatewayError {
  return new GatewayError('service_unavailable', {
    publicMessage: 'The payment provider is not available right now; try again shortly.',
    internalMessage,
    cause,
  });
}

/**
 * A provider's error description as we pass it on: secrets removed (should a provider ever echo
 * one), control characters dropped, at most 200 characters.
 */
export function sanitiseDescription(description: string, secrets: readonly string[]): string {
  let cleaned = description;
  for (const secret of secrets) {
    if (secret !== '') cleaned = cleaned.split(secret).join('[redacted]');
  }
  cleaned = cleaned.replace(/[\p{Cc}\p{Cf}]+/gu, ' ').replace(/\s+/g, ' ').trim();
  return cleaned.length > maxDescriptionLength ? `${cleaned.slice(0, maxDescriptionLength - 1)}…` : cleaned;
}

/** A network failure's class for the log: a fixed word, never the message. */
function failureClass(error: unknown): string {
  if (error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError')) return 'timeout';
  for (let current: unknown = error, depth = 0; current instanceof Error && depth < 4; current = current.cause, depth += 1) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string') return code.includes('TIMEOUT') ? 'timeout' : code;
  }
  return 'connection_error';
}

function toOrder(order: z.infer<typeof orderSchema>): ProviderOrder {
  return {
    id: order.id,
    amountPaise: order.amount,
    amountPaidPaise: order.amount_paid,
    currency: order.currency,
    receipt: order.receipt ?? '',
    status: order.status,
  };
}

function toPayment(payment: z.infer<typeof paymentSchema>): ProviderPayment {
  return {
    id: payment.id,
    orderId: payment.order_id ?? null,
    amountPaise: payment.amount,
    currency: payment.currency,
    status: payment.status,
    method: payment.method ?? 'unknown',
    errorDescription: payment.error_description ?? null,
  };
}

function toRefund(refund: z.infer<typeof refundSchema>): ProviderRefund {
  return { id: refund.id, paymentId: refund.payment_id, amountPaise: refund.amount, status: refund.status };
}
