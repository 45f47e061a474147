import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PaymentsBook } from './book.ts';
import { ApiError, sendError } from './http-io.ts';
import { ApiFaults, handleApi, handlePayPage } from './routes.ts';
import type { LocalPayments, LocalPaymentsOptions } from './types.ts';
import { WebhookOutbox } from './webhooks.ts';
import { newId } from './wire.ts';

/**
 * Starts the local payment provider: Razorpay's Orders, Payments and Refunds API (the subset the
 * admin uses, same JSON and error shapes, basic auth, automatic capture), a pay page with "Pay",
 * "Fail payment" and "Pay twice", and the same signed webhooks, retried while the receiver fails.
 * State lives in memory: a restart forgets every order.
 */
export async function startLocalPayments(options: LocalPaymentsOptions): Promise<LocalPayments> {
  const outbox = new WebhookOutbox({
    secret: options.webhookSecret,
    accountId: newId('acc_'),
    url: options.webhookUrl,
    logger: options.logger,
    retry: { attempts: 5, baseDelayMs: 200, timeoutMs: 5_000, ...options.webhookRetry },
  });
  const book = new PaymentsBook(outbox, options.keySecret);
  const faults = new ApiFaults();
  const expectedAuthorization = Buffer.from(`Basic ${Buffer.from(`${options.keyId}:${options.keySecret}`).toString('base64')}`);

  const server = createServer((request, response) => {
    const url = new URL(request.url ?? '/', 'http://local-payments');
    const handled = url.pathname.startsWith('/v1/')
      ? handleApi(book, faults, expectedAuthorization, request, response, url.pathname, url.searchParams)
      : url.pathname.startsWith('/pay/') && (request.method === 'GET' || request.method === 'POST')
        ? handlePayPage(book, request, response, url)
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
    orders: () => copies(book.orders.values()),
    payments: () => copies(book.payments.values()),
    refunds: () => copies(book.refunds.values()),
    forgetEverything: () => book.forgetEverything(),
    pay: (orderId, action, payOptions) => book.pay(orderId, action, payOptions),
    captureWithoutOrder: (input) => structuredClone(book.captureWithoutOrder(input)),
    injectApiFault(fault, count = 1) {
      for (let index = 0; index < count; index += 1) faults.queued.push(fault);
    },
    holdApiCalls(match = {}) {
      faults.holdMatch = match;
    },
    heldApiCalls: () => faults.held.length,
    releaseHeldCalls() {
      faults.holdMatch = undefined;
      for (const release of faults.held.splice(0)) release();
    },
    refuseRefunds(reason, count = 1) {
      for (let index = 0; index < count; index += 1) book.refundRefusals.push(reason);
    },
    holdRefunds() { book.holdingRefunds = true; },
    processRefundsAtOnce() { book.holdingRefunds = false; },
    settleRefund: (refundId, outcome, reason) => book.settleRefund(refundId, outcome, reason),
    dashboardRefund: (paymentId, amountPaise) => book.dashboardRefund(paymentId, amountPaise),
    openDispute: (paymentId, amountPaise) => book.openDispute(paymentId, amountPaise),
    resolveDispute: (disputeId, outcome) => book.resolveDispute(disputeId, outcome),
    disputes: () => copies(book.disputes.values()),
  };
}
