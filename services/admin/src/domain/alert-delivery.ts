import { isIP } from 'node:net';
import { Agent, buildConnector, request } from 'undici';
import {
  AddressRefusedError, addressRefusedCode, checkedLookup, disallowedAddressReason, systemResolver, type HostResolver,
} from '@gateway/address-policy';

/** Longest step between two attempts of one delivery, ms (one hour). */
const maxRetryStepMs = 60 * 60_000;

/** How a failed delivery is retried: the first delay (doubling each time) and how long it keeps trying. */
export interface RetrySchedule {
  /** Delay after the first failed attempt, ms (ALERT_RETRY_BASE_MS); it doubles after each failure, capped at one hour. */
  baseMs: number;
  /** After this long from the first attempt no further attempt is made, ms (ALERT_RETRY_WINDOW_MS). */
  windowMs: number;
}

/** The wait after `failedAttempts` failed attempts (1 = after the first), ms: base·2^(n−1), at most one hour. */
export function retryDelayMs(failedAttempts: number, baseMs: number): number {
  let delay = baseMs;
  for (let step = 1; step < failedAttempts && delay < maxRetryStepMs; step += 1) delay *= 2;
  return Math.min(delay, maxRetryStepMs);
}

/**
 * When the next attempt is due after `failedAttempts` failures, the last one ending at
 * `lastAttemptAt`; undefined when that time falls after the retry window (counted from the
 * first attempt): the delivery has then failed.
 */
export function nextAttemptAt(schedule: RetrySchedule, firstAttemptAt: Date, lastAttemptAt: Date, failedAttempts: number): Date | undefined {
  const due = lastAttemptAt.getTime() + retryDelayMs(failedAttempts, schedule.baseMs);
  return due > firstAttemptAt.getTime() + schedule.windowMs ? undefined : new Date(due);
}

/** What one attempt came to: delivered or not, the receiver's status if any, and why it failed (never the URL or a secret). */
export interface AttemptOutcome {
  delivered: boolean;
  /** HTTP status of the receiver's answer; null when there was none. */
  statusCode: number | null;
  /**
   * null when delivered; else one of: http_status (a non-2xx answer), timeout, address_refused
   * (the SSRF policy), dns_error, connection_refused, tls_error, connection_error, and for
   * other channels their own (email_error, no_recipients, webhook_removed).
   */
  errorClass: string | null;
  durationMs: number;
}

/** Sends a signed webhook body; one Agent (connection pool) for every delivery. */
export interface WebhookSender {
  /** POSTs `body` to `url` with `headers`; never throws: every failure is an outcome. */
  send(url: string, body: string, headers: Record<string, string>): Promise<AttemptOutcome>;
  /** Closes idle connections. */
  close(): Promise<void>;
}

/** How webhook receivers are reached. */
export interface WebhookSenderOptions {
  /** Deadline of one attempt, connecting included, ms (ALERT_WEBHOOK_TIMEOUT_MS). */
  timeoutMs: number;
  /** ADMIN_ALLOW_PRIVATE_UPSTREAMS: private and loopback receivers allowed (development, tests). */
  allowPrivate: boolean;
  /** How host names are resolved; default the system resolver. */
  resolve?: HostResolver | undefined;
}

// The largest answer body read from a receiver; the rest is dropped (it is never stored).
const maxAnswerBytes = 64 * 1024;

/**
 * The webhook sender: undici with the SSRF policy at connect time (the check the proxy makes for
 * upstreams: every resolved address, after DNS, so rebinding is caught; literal addresses are
 * judged before any socket), no redirects followed (a 3xx is not delivered), and a deadline.
 */
export function createWebhookSender(options: WebhookSenderOptions): WebhookSender {
  const resolve = options.resolve ?? systemResolver;
  const connect = buildConnector({ timeout: options.timeoutMs, lookup: checkedLookup(resolve, options.allowPrivate) });
  const guarded: buildConnector.connector = options.allowPrivate ? connect : (connectOptions, callback) => {
    const host = connectOptions.hostname.replace(/^\[|\]$/g, '');
    const reason = isIP(host) === 0 ? undefined : disallowedAddressReason(host);
    if (reason !== undefined) {
      callback(new AddressRefusedError(`${host} is ${reason}: refused before connecting (SSRF guard)`), null);
      return;
    }
    connect(connectOptions, callback);
  };
  const agent = new Agent({ connect: guarded, headersTimeout: options.timeoutMs, bodyTimeout: options.timeoutMs });

  return {
    async send(url, body, headers) {
      const started = performance.now();
      const elapsed = () => Math.max(0, Math.round(performance.now() - started));
      try {
        const answer = await request(url, {
          method: 'POST', body, headers, dispatcher: agent, signal: AbortSignal.timeout(options.timeoutMs),
        });
        let read = 0;
        // The answer's body is read only to free the connection; its content is not kept.
        for await (const chunk of answer.body) {
          read += (chunk as Buffer).length;
          if (read > maxAnswerBytes) {
            answer.body.destroy();
            break;
          }
        }
        const delivered = answer.statusCode >= 200 && answer.statusCode < 300;
        return { delivered, statusCode: answer.statusCode, errorClass: delivered ? null : 'http_status', durationMs: elapsed() };
      } catch (error) {
        return { delivered: false, statusCode: null, errorClass: errorClassOf(error), durationMs: elapsed() };
      }
    },
    close: () => agent.close(),
  };
}

/** The first `code` in an error's cause chain. */
function errorCodeOf(error: unknown): string | undefined {
  for (let current: unknown = error, depth = 0; current instanceof Error && depth < 4; current = current.cause, depth += 1) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string') return code;
  }
  return undefined;
}

/** A failure's class for the delivery log: a fixed word, never the message (which may hold the URL). */
function errorClassOf(error: unknown): string {
  if (error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError')) return 'timeout';
  const code = errorCodeOf(error);
  if (code === undefined) return 'connection_error';
  if (code === addressRefusedCode) return 'address_refused';
  if (code === 'UND_ERR_CONNECT_TIMEOUT' || code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT' || code === 'ETIMEDOUT') return 'timeout';
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return 'dns_error';
  if (code === 'ECONNREFUSED') return 'connection_refused';
  if (code.startsWith('ERR_TLS') || code.startsWith('ERR_SSL') || code.includes('CERT')) return 'tls_error';
  return 'connection_error';
}
