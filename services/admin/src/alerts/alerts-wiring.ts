import type { HostResolver } from '@gateway/address-policy';
import type { AdminMetrics } from '@gateway/telemetry';
import { checkLowBalances, deliverDueAlerts, pollLedgerBudgetAlerts, type AlertJobsDeps } from './domain/alert-jobs.ts';
import { createWebhookSender } from './transport/webhook-sender.ts';
import { startPeriodicJob } from '../wiring/periodic-job.ts';
import type { LiveEvents } from '../common/domain/live-events.ts';
import { alertJson } from './http/alert-schemas.ts';

/** What the alert workers need: the jobs' deps except the webhook sender and the announcement, which they make. */
export interface AlertWorkersDeps extends Omit<AlertJobsDeps, 'sender' | 'announce'> {
  /** Where raised alerts are told to the dashboard's live connections. */
  liveEvents: LiveEvents;
  /** Resolves webhook host names for the connect-time SSRF check; default the system resolver. */
  resolveHost?: HostResolver | undefined;
  /** Where each delivery attempt is counted, by channel and outcome (delivered, failed, undeliverable); none: not counted. */
  metrics?: Pick<AdminMetrics, 'adminAlertDeliveries'> | undefined;
}

/**
 * The background work of alerts: reading the ledger's budget alerts (every settings.pollMs),
 * low-balance checks (every settings.lowBalancePollMs), and webhook and email deliveries (due ones
 * claimed every settings.pollMs). close() stops the timers and waits for attempts in flight.
 */
export function startAlertWorkers(deps: AlertWorkersDeps): { close(): Promise<void> } {
  const { settings, logger } = deps;
  const sender = createWebhookSender({
    timeoutMs: settings.webhookTimeoutMs, allowPrivate: settings.allowPrivateWebhooks, resolve: deps.resolveHost,
  });
  const { metrics } = deps;
  // Every series the alert rules watch exists from the start at 0: increase() cannot see the
  // first increment of a series that appears with it (GatewayAlertEmailFailing).
  for (const channel of ['email', 'webhook'] as const) {
    for (const outcome of ['delivered', 'failed', 'undeliverable'] as const) metrics?.adminAlertDeliveries.inc({ channel, outcome }, 0);
  }
  const jobs: AlertJobsDeps = {
    ...deps, sender,
    announce: (alert) => deps.liveEvents.publish(alert.organisationId, { type: 'alert', alert: alertJson(alert) }),
    onDeliveryAttempt: metrics && ((channel, outcome) => { metrics.adminAlertDeliveries.inc({ channel, outcome }); }),
  };
  const failureMessage = 'alert worker pass failed; retried at the next interval';
  const worker = (name: string, intervalMs: number, run: () => Promise<unknown>) =>
    startPeriodicJob({ name, firstDelayMs: intervalMs, intervalMs, run, failureMessage, logger });
  const workers = [
    worker('ledger budget alerts', settings.pollMs, () => pollLedgerBudgetAlerts(jobs)),
    worker('low balance', settings.lowBalancePollMs, () => checkLowBalances(jobs)),
    worker('deliveries', settings.pollMs, () => deliverDueAlerts(jobs)),
  ];
  let closed: Promise<void> | undefined;
  return {
    close() {
      closed ??= Promise.all(workers.map((each) => each.close())).then(() => sender.close());
      return closed;
    },
  };
}
