import { advanceDueRefunds } from '../domain/refunds-service.ts';

/**
 * The refund job: every PAYMENT_RECONCILE_INTERVAL_MS it carries forward refunds left part-way
 * (a ledger that did not answer, a failed provider refund, a credit note not yet issued), each
 * step idempotent on the refund id, so nothing is debited or refunded twice. The next pass is
 * timed from the end of the previous one; close() stops the timer and waits for a pass in progress.
 */
export function startRefundJobs(deps: Parameters<typeof advanceDueRefunds>[0]): { close(): Promise<void> } {
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  const pass = () => {
    running = advanceDueRefunds(deps)
      .then(() => undefined, (error: unknown) => deps.logger.warn({ err: error, worker: 'refunds' }, 'refund pass failed; retried at the next interval'))
      .finally(() => {
        running = undefined;
        if (!stopped) timer = setTimeout(pass, deps.config.PAYMENT_RECONCILE_INTERVAL_MS);
      });
  };
  timer = setTimeout(pass, deps.config.PAYMENT_RECONCILE_INTERVAL_MS);
  return {
    async close() {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}
