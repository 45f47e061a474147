/** Longest step between two attempts of one delivery, ms (one hour). */
const maxRetryStepMs = 60 * 60_000;

/** How a failed delivery is retried: the first delay (doubling each time) and how long it keeps trying. */
export interface RetrySchedule {
  /** Delay after the first failed attempt, ms (AlertsSettings.retryBaseMs); it doubles after each failure, capped at one hour. */
  baseMs: number;
  /** After this long from the first attempt no further attempt is made, ms (AlertsSettings.retryWindowMs). */
  windowMs: number;
}

/** The wait after `failedAttempts` failed attempts (1 = after the first), ms: base·2^(n−1), at most one hour. */
function retryDelayMs(failedAttempts: number, baseMs: number): number {
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

/** Sends a signed webhook body (the port transport/webhook-sender.ts implements). */
export interface WebhookSender {
  /** POSTs `body` to `url` with `headers`; never throws: every failure is an outcome. */
  send(url: string, body: string, headers: Record<string, string>): Promise<AttemptOutcome>;
  /** Closes idle connections. */
  close(): Promise<void>;
}
