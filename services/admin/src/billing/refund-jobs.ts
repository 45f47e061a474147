import { advanceDueReversals, type RefundEventDeps } from './domain/refund-events.ts';
import { advanceDueRefunds } from './domain/refunds-service.ts';
import { startPeriodicJob } from '../wiring/periodic-job.ts';

/**
 * The refund job: every PAYMENT_RECONCILE_INTERVAL_MS it carries forward refunds left part-way
 * (a ledger that did not answer, a failed provider refund, a credit note not yet issued, a
 * refund the provider holds pending, the money of a refused one to give back) and payment
 * reversals (a dashboard refund or a dispute to debit, a won dispute's hold to give back), each
 * step idempotent on the refund id, so nothing is debited or refunded twice. The next pass is
 * timed from the end of the previous one; close() stops the timer and waits for a pass in progress.
 */
export function startRefundJobs(deps: Parameters<typeof advanceDueRefunds>[0] & RefundEventDeps): { close(): Promise<void> } {
  const intervalMs = deps.settings.reconcileIntervalMs;
  return startPeriodicJob({
    name: 'refunds', firstDelayMs: intervalMs, intervalMs, logger: deps.logger,
    failureMessage: 'refund pass failed; retried at the next interval',
    run: async () => await advanceDueRefunds(deps) + await advanceDueReversals(deps),
  });
}
