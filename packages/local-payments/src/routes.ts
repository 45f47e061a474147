// The provider's two surfaces over HTTP: Razorpay's API under /v1 (with the faults and holds tests
// put on it) and the pay page under /pay/ORDER.
import { timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { PayRefused, type PaymentsBook } from './book.ts';
import { ApiError, isHttpUrl, readBody, sendError, sendHtml, sendJson } from './http-io.ts';
import { renderPayPage, renderProblemPage, withCheckoutFields } from './pay-page.ts';
import type { LocalApiCallMatch, LocalApiFault, LocalPayAction, LocalPayOutcome } from './types.ts';
import { parseWireJson } from './wire.ts';

const payActions: ReadonlySet<string> = new Set<LocalPayAction>(['pay', 'fail', 'pay_twice', 'authorize']);

/** The faults and holds tests put on API calls (injectApiFault, holdApiCalls). */
export class ApiFaults {
  /** The faults the next API calls answer with, oldest first. */
  readonly queued: LocalApiFault[] = [];
  /** Which API calls are held now; undefined when none are. */
  holdMatch: LocalApiCallMatch | undefined;
  /** Releases of the API calls held now, oldest first. */
  readonly held: Array<() => void> = [];
}

/** Whether a request carries the basic-auth key id and secret (compared in constant time). */
function authenticated(request: IncomingMessage, expectedAuthorization: Buffer): boolean {
  const given = Buffer.from(request.headers.authorization ?? '');
  return given.length === expectedAuthorization.length && timingSafeEqual(given, expectedAuthorization);
}

/** Razorpay's API routes (orders, payments, captures, refunds) over the book: the answer's JSON value, or an ApiError. */
function api(book: PaymentsBook, method: string, path: string, query: URLSearchParams, body: unknown, refundIdempotencyKey?: string): unknown {
  const segments = path.split('/').slice(2);
  const [collection, id, sub] = segments;
  if (collection === 'orders' && segments.length === 1 && method === 'POST') return book.createOrder(body);
  if (collection === 'orders' && id !== undefined && method === 'GET') {
    const order = book.orders.get(id);
    if (order === undefined) throw new ApiError(400, 'The id provided does not exist', 'id');
    if (segments.length === 2) return order;
    if (segments.length === 3 && sub === 'payments') {
      const items = [...book.payments.values()].filter((payment) => payment.order_id === id);
      return { entity: 'collection', count: items.length, items };
    }
  }
  if (collection === 'payments' && segments.length === 1 && method === 'GET') return book.listPayments(query);
  if (collection === 'payments' && id !== undefined) {
    if (segments.length === 3 && sub === 'capture' && method === 'POST') return book.capture(id, body);
    if (segments.length === 2 && method === 'GET') {
      const payment = book.payments.get(id);
      if (payment === undefined) throw new ApiError(400, 'The id provided does not exist', 'id');
      return payment;
    }
    if (segments.length === 3 && sub === 'refund' && method === 'POST') return book.idempotentRefund(id, body, refundIdempotencyKey);
    if (segments.length === 4 && sub === 'refunds' && method === 'GET') {
      const found = book.refunds.get(segments[3]!);
      if (found?.payment_id !== id) throw new ApiError(400, 'The id provided does not exist', 'id');
      return found;
    }
  }
  throw new ApiError(404, 'The requested URL was not found on the server.');
}

/** Serves one API call under /v1: an injected fault or hold first, then basic auth (`expectedAuthorization`, the whole header), then the route. */
export async function handleApi(
  book: PaymentsBook, faults: ApiFaults, expectedAuthorization: Buffer, request: IncomingMessage, response: ServerResponse, path: string, query: URLSearchParams,
): Promise<void> {
  const fault = faults.queued.shift();
  if (fault === 'stall') return; // no answer: the caller's deadline decides (close() ends the socket)
  const hold = faults.holdMatch;
  if (hold !== undefined && (hold.method === undefined || hold.method === request.method) && (hold.path?.test(path) ?? true)) {
    await new Promise<void>((resolve) => faults.held.push(resolve));
  }
  if (fault !== undefined) {
    sendError(response, fault.status, fault.status >= 500 ? 'SERVER_ERROR' : 'BAD_REQUEST_ERROR',
      fault.status >= 500 ? 'The server encountered an error. The incident has been reported to admins.' : 'The request was refused (injected fault).');
    return;
  }
  if (!authenticated(request, expectedAuthorization)) {
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
  sendJson(response, 200, api(book, request.method ?? 'GET', path, query, body, typeof refundIdempotencyKey === 'string' ? refundIdempotencyKey : undefined));
}

/** Serves one order's pay page: GET shows it, POST does what its button says and redirects to the return URL. */
export async function handlePayPage(book: PaymentsBook, request: IncomingMessage, response: ServerResponse, url: URL): Promise<void> {
  const orderId = decodeURIComponent(url.pathname.slice('/pay/'.length));
  const order = book.orders.get(orderId);
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
    outcome = book.pay(orderId, action as LocalPayAction, { scenario: scenario === 'fail_then_pay' ? scenario : undefined });
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
