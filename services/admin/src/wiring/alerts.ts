import type { HostResolver } from '@gateway/address-policy';
import type { Logger } from '@gateway/logger';
import { checkLowBalances, deliverDueAlerts, pollLedgerBudgetAlerts, type AlertJobsDeps } from '../domain/alert-jobs.ts';
import { createMailer } from '../domain/mailer.ts';
import { createWebhookSender } from '../transport/webhook-sender.ts';

/** What the alert workers need: the jobs' deps except the webhook sender and mailer, which they make from the config. */
export interface AlertWorkersDeps extends Omit<AlertJobsDeps, 'sender' | 'mailer'> {
  /** Resolves webhook host names for the connect-time SSRF check; default the system resolver. */
  resolveHost?: HostResolver | undefined;
}

/**
 * Runs `job` every `intervalMs` (the next run is timed from the end of the previous one, so runs
 * never overlap); `stop` clears the timer and resolves once a run in progress has finished.
 */
function repeat(name: string, intervalMs: number, logger: Logger, job: () => Promise<unknown>): { stop(): Promise<void> } {
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  const run = () => {
    running = job()
      .then(() => undefined, (error: unknown) => logger.warn({ err: error, worker: name }, 'alert worker pass failed; retried at the next interval'))
      .finally(() => {
        running = undefined;
        if (!stopped) timer = setTimeout(run, intervalMs);
      });
  };
  timer = setTimeout(run, intervalMs);
  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}

/**
 * The background work of alerts: reading the ledger's budget alerts (every ALERT_POLL_MS),
 * low-balance checks (every LOW_BALANCE_POLL_MS), and webhook and email deliveries (due ones
 * claimed every ALERT_POLL_MS). close() stops the timers and waits for attempts in flight.
 */
export function startAlertWorkers(deps: AlertWorkersDeps): { close(): Promise<void> } {
  const { config, logger } = deps;
  const sender = createWebhookSender({
    timeoutMs: config.ALERT_WEBHOOK_TIMEOUT_MS, allowPrivate: config.ADMIN_ALLOW_PRIVATE_UPSTREAMS, resolve: deps.resolveHost,
  });
  const jobs: AlertJobsDeps = { ...deps, sender, mailer: createMailer(config) };
  const workers = [
    repeat('ledger budget alerts', config.ALERT_POLL_MS, logger, () => pollLedgerBudgetAlerts(jobs)),
    repeat('low balance', config.LOW_BALANCE_POLL_MS, logger, () => checkLowBalances(jobs)),
    repeat('deliveries', config.ALERT_POLL_MS, logger, () => deliverDueAlerts(jobs)),
  ];
  let closed: Promise<void> | undefined;
  return {
    close() {
      closed ??= Promise.all(workers.map((worker) => worker.stop())).then(() => sender.close());
      return closed;
    },
  };
}
