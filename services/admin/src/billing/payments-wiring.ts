import type { Database } from '@gateway/db';
import { toGatewayError, toHttpError } from '@gateway/errors';
import type { Logger } from '@gateway/logger';
import type { AdminMetrics } from '@gateway/telemetry';
import type { AdminConfig } from '../config.ts';
import type { AdminService } from '../admin-service.ts';
import type { PaymentProvider } from './domain/payment-provider.ts';
import type { TopUpCause } from './domain/topup-state.ts';
import type { UnmatchedSource } from './domain/unmatched-payments.ts';
import { createRazorpayClient } from './transport/razorpay-client.ts';
import { startPeriodicJob } from '../wiring/periodic-job.ts';

/** The payment provider PAYMENT_PROVIDER names (undefined when unset: no top-ups). */
export function createPaymentProvider(config: AdminConfig): PaymentProvider | undefined {
  const kind = config.PAYMENT_PROVIDER;
  if (kind === undefined) return undefined;
  const keyId = config.RAZORPAY_KEY_ID;
  const keySecret = config.RAZORPAY_KEY_SECRET;
  const webhookSecret = config.RAZORPAY_WEBHOOK_SECRET;
  // The config schema already requires these with a provider; this keeps the types honest.
  if (keyId === undefined || keySecret === undefined || webhookSecret === undefined) {
    throw new Error(`PAYMENT_PROVIDER=${kind} needs RAZORPAY_KEY_ID, RAZORPAY_KEY_SECRET and RAZORPAY_WEBHOOK_SECRET`);
  }
  const baseUrl = kind === 'local' ? config.LOCAL_PAYMENTS_URL : config.RAZORPAY_API_URL;
  if (baseUrl === undefined) throw new Error('PAYMENT_PROVIDER=local needs LOCAL_PAYMENTS_URL');
  const previousSecret = config.RAZORPAY_WEBHOOK_SECRET_PREVIOUS;
  const previousUntil = config.RAZORPAY_WEBHOOK_SECRET_PREVIOUS_UNTIL;
  const previousWebhookSecret = previousSecret !== undefined && previousUntil !== undefined ? { secret: previousSecret, until: previousUntil } : undefined;
  return createRazorpayClient({ kind, baseUrl, keyId, keySecret, webhookSecret, previousWebhookSecret });
}

/** The metric payment events are counted in. */
export type PaymentMetrics = Pick<AdminMetrics, 'adminPaymentEvents'>;

/** The `kind` label of the signal that brought a payment: webhook, reconciliation or checkout (the browser's callback). */
function paymentEventKind(cause: TopUpCause): string {
  if (cause.startsWith('webhook:')) return 'webhook';
  if (cause === 'checkout_callback') return 'checkout';
  if (cause === 'payment_sweep') return 'sweep';
  return cause === 'reconciliation' ? 'reconciliation' : 'other';
}

/** Every `kind` paymentEventKind answers. */
const paymentEventKinds = ['webhook', 'checkout', 'reconciliation', 'sweep', 'other'] as const;

/**
 * Counts a captured payment newly recorded as not matching its order (`outcome=mismatch`), by the
 * signal that brought it. Each kind's series starts at 0 at once: Prometheus' increase() (the
 * GatewayPaymentMismatch alert) cannot see the first increment of a series that appears with it.
 */
export function countPaymentMismatch(metrics: PaymentMetrics): (cause: TopUpCause) => void {
  for (const kind of paymentEventKinds) metrics.adminPaymentEvents.inc({ kind, outcome: 'mismatch' }, 0);
  return (cause) => { metrics.adminPaymentEvents.inc({ kind: paymentEventKind(cause), outcome: 'mismatch' }); };
}

/**
 * Counts a payment newly recorded as matching nothing the gateway sold (`outcome=unmatched`) by the
 * sweep or reconciliation; a webhook's is its own answer's outcome (countPaymentWebhooks), so it is
 * not counted twice. Each series starts at 0 at once, as countPaymentMismatch's.
 */
export function countUnmatchedPayment(metrics: PaymentMetrics): (source: UnmatchedSource) => void {
  for (const kind of ['webhook', 'sweep', 'reconciliation'] as const) metrics.adminPaymentEvents.inc({ kind, outcome: 'unmatched' }, 0);
  return (source) => {
    if (source !== 'webhook') metrics.adminPaymentEvents.inc({ kind: source, outcome: 'unmatched' });
  };
}

/** The callbacks that count refund outcomes platform admins act on (createAdminService and startRefundJobs take them). */
export interface RefundOutcomeCounters {
  onRefundFailed: () => void;
  onPaymentShortfall: () => void;
}

/**
 * Counts a refund that became failed (`outcome=failed`) and a payment reversal recorded with a
 * shortfall (`outcome=shortfall`), each once, by the path that committed it. Both series start at
 * 0 at once, as countPaymentMismatch's, for the GatewayRefundFailed and GatewayPaymentShortfall alerts.
 */
export function countRefundOutcomes(metrics: Pick<AdminMetrics, 'adminRefundOutcomes'>): RefundOutcomeCounters {
  for (const outcome of ['failed', 'shortfall'] as const) metrics.adminRefundOutcomes.inc({ outcome }, 0);
  return {
    onRefundFailed: () => { metrics.adminRefundOutcomes.inc({ outcome: 'failed' }); },
    onPaymentShortfall: () => { metrics.adminRefundOutcomes.inc({ outcome: 'shortfall' }); },
  };
}

/** The webhook answers as metric outcomes. */
const webhookOutcomes = { processed: 'processed', repeated: 'duplicate', ignored: 'ignored', unmatched: 'unmatched' } as const;

/** The outcome a webhook's failure is counted as: rejected for a 4xx answer, error for a 5xx. */
function failureOutcome(error: unknown): 'rejected' | 'error' {
  return toHttpError(toGatewayError(error)).status < 500 ? 'rejected' : 'error';
}

/**
 * The billing area with its payment webhook counted: `kind=webhook` and outcome processed, duplicate,
 * ignored, rejected (a 4xx: bad signature) or error (a 5xx: no provider, a failure applying it).
 * The route checks the signature first and applies the delivery second, so each request is counted once.
 */
export function countPaymentWebhooks<Billing extends Pick<AdminService['billing'], 'receivePaymentWebhook' | 'verifyPaymentWebhookSignature'>>(
  billing: Billing, metrics: PaymentMetrics,
): Billing {
  const receive = billing.receivePaymentWebhook;
  const verify = billing.verifyPaymentWebhookSignature;
  return {
    ...billing,
    verifyPaymentWebhookSignature(...args: Parameters<AdminService['billing']['verifyPaymentWebhookSignature']>) {
      let genuine: boolean;
      try {
        genuine = verify(...args);
      } catch (error) {
        metrics.adminPaymentEvents.inc({ kind: 'webhook', outcome: failureOutcome(error) });
        throw error;
      }
      if (!genuine) metrics.adminPaymentEvents.inc({ kind: 'webhook', outcome: 'rejected' });
      return genuine;
    },
    async receivePaymentWebhook(...args: Parameters<AdminService['billing']['receivePaymentWebhook']>) {
      try {
        const status = await receive(...args);
        metrics.adminPaymentEvents.inc({ kind: 'webhook', outcome: webhookOutcomes[status] });
        return status;
      } catch (error) {
        metrics.adminPaymentEvents.inc({ kind: 'webhook', outcome: failureOutcome(error) });
        throw error;
      }
    },
  };
}

/** What the payment jobs need. */
export interface PaymentJobsDeps {
  db: Database;
  config: AdminConfig;
  logger: Logger;
  service: AdminService;
  provider: PaymentProvider | undefined;
  /** Where each reconciled top-up is counted (`kind=reconciliation`, outcome checked or error); none: not counted. */
  metrics?: PaymentMetrics;
}

/**
 * The background work of payments: every PAYMENT_RECONCILE_INTERVAL_MS, one reconciliation pass
 * (top-ups awaiting payment asked of the provider and settled from its answer, settlements cut
 * short finished, unpaid ones past expires_at expired; service.reconcileTopUps). Passes never
 * overlap (the next is timed from the end of the last); replicas share the work through row
 * claims. Every PAYMENT_SWEEP_INTERVAL_MS, one payments sweep (service.sweepPayments: the provider's
 * payments of the last PAYMENT_SWEEP_WINDOW_MS, each applied idempotently). Nothing runs without a
 * provider. close() stops the timers and waits for passes in flight.
 */
export function startPaymentJobs(deps: PaymentJobsDeps): { close(): Promise<void> } {
  const { config, logger, service } = deps;
  if (deps.provider === undefined) return { close: async () => {} };
  const reconciliation = startReconciliationJob(deps);
  const sweep = startPeriodicJob({
    name: 'payments sweep', firstDelayMs: config.PAYMENT_SWEEP_INTERVAL_MS, intervalMs: config.PAYMENT_SWEEP_INTERVAL_MS, logger,
    failureMessage: 'payments sweep failed; retried at the next interval',
    run: async () => {
      let swept: Awaited<ReturnType<AdminService['billing']['sweepPayments']>>;
      try {
        swept = await service.billing.sweepPayments();
      } catch (error) {
        deps.metrics?.adminPaymentEvents.inc({ kind: 'sweep', outcome: 'error' });
        throw error;
      }
      const { checked, failed } = swept;
      deps.metrics?.adminPaymentEvents.inc({ kind: 'sweep', outcome: 'checked' }, checked - failed.length);
      deps.metrics?.adminPaymentEvents.inc({ kind: 'sweep', outcome: 'error' }, failed.length);
      for (const { paymentId, error } of failed) logger.warn({ paymentId, err: error }, 'payments sweep: a payment was not applied; tried again at the next sweep');
      if (checked > 0) logger.debug({ checked, failed: failed.length }, 'payments swept');
    },
  });
  return {
    async close() {
      await Promise.all([reconciliation.close(), sweep.close()]);
    },
  };
}

/** The reconciliation job of startPaymentJobs. */
function startReconciliationJob(deps: PaymentJobsDeps): { close(): Promise<void> } {
  const { config, logger, service } = deps;
  return startPeriodicJob({
    name: 'top-up reconciliation', firstDelayMs: config.PAYMENT_RECONCILE_INTERVAL_MS, intervalMs: config.PAYMENT_RECONCILE_INTERVAL_MS, logger,
    failureMessage: 'top-up reconciliation pass failed; retried at the next interval',
    run: async () => {
      let reconciled: Awaited<ReturnType<AdminService['billing']['reconcileTopUps']>>;
      try {
        reconciled = await service.billing.reconcileTopUps();
      } catch (error) {
        deps.metrics?.adminPaymentEvents.inc({ kind: 'reconciliation', outcome: 'error' });
        throw error;
      }
      const { checked, failed } = reconciled;
      deps.metrics?.adminPaymentEvents.inc({ kind: 'reconciliation', outcome: 'checked' }, checked - failed.length);
      deps.metrics?.adminPaymentEvents.inc({ kind: 'reconciliation', outcome: 'error' }, failed.length);
      // Ids and error codes only: provider answers and billing details stay out of the log.
      for (const { topUpId, error } of failed) logger.warn({ topUpId, err: error }, 'top-up reconciliation failed; retried at a later pass');
      if (checked > 0) logger.debug({ checked, failed: failed.length }, 'top-ups reconciled');
    },
  });
}
