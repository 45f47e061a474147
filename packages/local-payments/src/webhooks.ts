import { setTimeout as sleep } from 'node:timers/promises';
import { hexHmac, newId, toWireJson, unixSeconds } from './wire.ts';

/** The log lines the local provider writes (a pino logger fits). */
export interface LocalPaymentsLogger {
  info(details: object, message: string): void;
  warn(details: object, message: string): void;
}

/** One signed webhook as the local provider sends it (and re-sends, byte for byte, on a retry). */
export interface LocalWebhook {
  /** The `x-razorpay-event-id` header: the same on every attempt. */
  eventId: string;
  /** e.g. `payment.captured`. */
  event: string;
  /** The exact bytes sent (and signed). */
  body: string;
  /** The `X-Razorpay-Signature` header: hex HMAC-SHA256 of `body` with the webhook secret. */
  signature: string;
}

/** What became of one webhook. */
export interface LocalWebhookDelivery {
  eventId: string;
  event: string;
  /** Whether a 2xx answer arrived within the attempts. */
  delivered: boolean;
  /** How many POSTs were made. */
  attempts: number;
  /** The last answer's status; null when the last attempt got no answer. */
  lastStatus: number | null;
}

/** How webhooks are retried. */
export interface WebhookRetryPolicy {
  /** POSTs per webhook before it is given up (default 5). */
  attempts: number;
  /** Wait before the first retry, ms; it doubles with every retry (default 200). */
  baseDelayMs: number;
  /** Deadline of one POST, ms (default 5 s). */
  timeoutMs: number;
}

/** The entities a webhook carries, each wrapped as Razorpay does (`payload.payment.entity`). */
export type WebhookEntities = Partial<Record<'payment' | 'order' | 'refund' | 'dispute', unknown>>;

/**
 * The local provider's webhook outbox: signed events queued in the order they happen, delivered
 * one at a time (so the receiver sees them in that order unless a test reorders them), each
 * retried with a doubling wait while the receiver fails. Held while paused or while no URL is set.
 */
export class WebhookOutbox {
  readonly #secret: string;
  readonly #accountId: string;
  readonly #retry: WebhookRetryPolicy;
  readonly #logger: LocalPaymentsLogger | undefined;
  readonly #closing = new AbortController();
  #url: string | undefined;
  #paused = false;
  #queue: LocalWebhook[] = [];
  #deliveries: LocalWebhookDelivery[] = [];
  #draining: Promise<void> | undefined;

  constructor(options: { secret: string; accountId: string; url: string | undefined; retry: WebhookRetryPolicy; logger: LocalPaymentsLogger | undefined }) {
    this.#secret = options.secret;
    this.#accountId = options.accountId;
    this.#url = options.url;
    this.#retry = options.retry;
    this.#logger = options.logger;
  }

  /** Signs and queues an event; it is sent at once unless webhooks are paused or have no URL. */
  publish(event: string, entities: WebhookEntities): LocalWebhook {
    const payload: Record<string, { entity: unknown }> = {};
    for (const [name, entity] of Object.entries(entities)) payload[name] = { entity };
    const body = toWireJson({
      entity: 'event', account_id: this.#accountId, event, contains: Object.keys(payload), payload, created_at: unixSeconds(),
    });
    const webhook: LocalWebhook = { eventId: newId(''), event, body, signature: hexHmac(this.#secret, body) };
    this.#queue.push(webhook);
    this.#kick();
    return webhook;
  }

  /** Where webhooks go from now on; held ones are sent (unless paused). */
  setUrl(url: string): void {
    this.#url = url;
    this.#kick();
  }

  /** Holds new and queued webhooks until resume() or deliverPending() (a webhook outage). */
  pause(): void {
    this.#paused = true;
  }

  /** Sends held webhooks in the order they happened, and new ones as they come. */
  resume(): void {
    this.#paused = false;
    this.#kick();
  }

  /** The webhooks waiting to be sent, oldest first. */
  pending(): LocalWebhook[] {
    return [...this.#queue];
  }

  /** Every webhook sent so far (delivered or given up), in the order they finished. */
  deliveries(): LocalWebhookDelivery[] {
    return [...this.#deliveries];
  }

  /**
   * Sends every held webhook now, as they happened or in reverse order (an out-of-order receiver
   * test), each with its retries; webhooks stay paused if they were. Resolves with what became of them.
   */
  async deliverPending(options: { order?: 'as_sent' | 'reversed' } = {}): Promise<LocalWebhookDelivery[]> {
    await this.#draining;
    const url = this.#url;
    if (url === undefined) throw new Error('the local payment provider has no webhook URL: call setWebhookUrl first');
    const batch = this.#queue.splice(0);
    if (options.order === 'reversed') batch.reverse();
    const results: LocalWebhookDelivery[] = [];
    for (const webhook of batch) results.push(await this.#deliver(url, webhook));
    return results;
  }

  /** Resolves when nothing is being sent (held webhooks may remain). */
  async idle(): Promise<void> {
    while (this.#draining !== undefined) await this.#draining;
  }

  /** Stops sending: a retry wait or a POST in flight ends at once. */
  async close(): Promise<void> {
    this.#closing.abort();
    await this.#draining;
  }

  #kick(): void {
    if (this.#draining !== undefined || this.#paused || this.#url === undefined || this.#closing.signal.aborted || this.#queue.length === 0) return;
    this.#draining = this.#drain();
  }

  async #drain(): Promise<void> {
    // Yield first, so `#draining` holds this promise before the `finally` below can clear it.
    await Promise.resolve();
    try {
      while (!this.#paused && this.#url !== undefined && !this.#closing.signal.aborted) {
        const webhook = this.#queue.shift();
        if (webhook === undefined) break;
        await this.#deliver(this.#url, webhook);
      }
    } finally {
      this.#draining = undefined;
    }
  }

  async #deliver(url: string, webhook: LocalWebhook): Promise<LocalWebhookDelivery> {
    let lastStatus: number | null = null;
    let attempts = 0;
    let delivered = false;
    while (attempts < this.#retry.attempts && !this.#closing.signal.aborted) {
      if (attempts > 0) {
        const wait = this.#retry.baseDelayMs * 2 ** (attempts - 1);
        try {
          await sleep(wait, undefined, { signal: this.#closing.signal });
        } catch {
          break;
        }
      }
      attempts += 1;
      lastStatus = await this.#post(url, webhook);
      if (lastStatus !== null && lastStatus >= 200 && lastStatus < 300) {
        delivered = true;
        break;
      }
      this.#logger?.warn({ event: webhook.event, eventId: webhook.eventId, attempt: attempts, status: lastStatus }, 'local payments: webhook not accepted');
    }
    const record: LocalWebhookDelivery = { eventId: webhook.eventId, event: webhook.event, delivered, attempts, lastStatus };
    this.#deliveries.push(record);
    if (delivered) this.#logger?.info({ event: webhook.event, eventId: webhook.eventId, attempts }, 'local payments: webhook delivered');
    return record;
  }

  /** One POST; the answer's status, or null when none came (refused, timed out). */
  async #post(url: string, webhook: LocalWebhook): Promise<number | null> {
    try {
      const answer = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-razorpay-signature': webhook.signature, 'x-razorpay-event-id': webhook.eventId },
        body: webhook.body,
        redirect: 'manual',
        signal: AbortSignal.any([AbortSignal.timeout(this.#retry.timeoutMs), this.#closing.signal]),
      });
      await answer.body?.cancel();
      return answer.status;
    } catch {
      return null;
    }
  }
}
