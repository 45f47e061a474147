import type { Database } from '@gateway/db';
import type { Logger } from '@gateway/logger';
import type { LedgerBudgetAlert } from '../../common/domain/admin-records.ts';
import { nextAttemptAt, type AttemptOutcome, type WebhookSender } from './alert-delivery.ts';
import {
  advanceLedgerAlertCursor, claimDueDeliveries, findAlert, findWebhook, flipLowBalanceAlerted, listLowBalanceWatches,
  ownerEmails, raiseAlert, readLedgerAlertCursor, recordAttempt, type Alert, type ClaimedDelivery,
} from './alert-store.ts';
import type { CredentialCipher } from '../../common/domain/credential-cipher.ts';
import { formatInrExact } from '../../invoicing/domain/inr-text.ts';
import type { LedgerPort } from '../../common/domain/ledger-port.ts';
import type { Mailer } from '../../people/domain/mailer.ts';
import type { AlertsSettings } from './alerts-settings.ts';
import { findOrganisation } from '../../tenancy/domain/organisation-store.ts';
import { findProject } from '../../tenancy/domain/project-store.ts';
import { alertTitles, slackMessage } from './slack-format.ts';
import { signatureHeader } from '../../billing/domain/webhook-signature.ts';
import { webhookUrlProblem } from './webhook-url.ts';

/** What the alert jobs work with. */
export interface AlertJobsDeps {
  db: Database;
  ledger: LedgerPort;
  cipher: CredentialCipher;
  settings: AlertsSettings;
  logger: Logger;
  /** Tells the dashboard's live connections of an alert just raised (in their wire shape: the wiring knows it). */
  announce(alert: Alert): void;
  sender: WebhookSender;
  /** Undefined when no mail server is set up: alerts are then not emailed. */
  mailer: Mailer | undefined;
  /** Told of each delivery attempt once recorded: its channel and outcome (the admin's alert metrics). */
  onDeliveryAttempt?: ((channel: ClaimedDelivery['channel'], outcome: DeliveryAttemptOutcome) => void) | undefined;
}

/**
 * What one delivery attempt came to: delivered; failed, when the send itself failed (the mail
 * relay refused or was unreachable, the webhook endpoint errored or timed out); or undeliverable,
 * when there was nothing to send to and no send was made (no owner email, email off, the alert or
 * webhook gone, a refused address). Only `failed` says the sending path is broken.
 */
type DeliveryAttemptOutcome = 'delivered' | 'failed' | 'undeliverable';

/** The context a webhook's signing secret is sealed with: a sealed value copied to another organisation does not open. */
export function webhookSecretContext(organisationId: string): string {
  return `alert_webhook:${organisationId}`;
}

/** The JSON body a webhook in format 'json' receives: the same on every retry of one alert. */
function webhookEnvelope(alert: Alert) {
  return {
    id: alert.id,
    type: alert.kind,
    created_at: alert.occurredAt.toISOString(),
    organisation_id: alert.organisationId,
    data: { project_id: alert.projectId, message: alert.message, ...alert.details },
  };
}

// Ledger alerts read per call; a full page is followed by another at once.
const ledgerPageSize = 100;
// Deliveries attempted at once by one worker pass.
const deliveriesPerPass = 20;

/** The message and details of a soft budget alert. */
async function budgetAlertInput(db: Database, ledgerAlert: LedgerBudgetAlert) {
  const project = await findProject(db, ledgerAlert.projectId);
  const projectName = project?.name ?? ledgerAlert.projectId;
  return {
    kind: 'budget_soft' as const,
    organisationId: ledgerAlert.organisationId,
    projectId: ledgerAlert.projectId,
    occurredAt: ledgerAlert.raisedAt,
    message: `Project "${projectName}" has spent ${formatInrExact(ledgerAlert.spentMicros)} of its ${formatInrExact(ledgerAlert.monthlyCapMicros)} `
      + `monthly budget for ${ledgerAlert.month} (soft alert at ${ledgerAlert.softAlertPercent}%).`,
    details: {
      ledger_alert_id: ledgerAlert.id,
      project_name: projectName,
      month: ledgerAlert.month,
      spent_micros: ledgerAlert.spentMicros.toString(),
      monthly_cap_micros: ledgerAlert.monthlyCapMicros.toString(),
      soft_alert_percent: ledgerAlert.softAlertPercent,
    },
    sourceKey: `ledger_budget_alert:${ledgerAlert.id}`,
  };
}

/**
 * Takes the ledger's new soft budget alerts from the stored cursor on: each becomes one alert
 * (idempotent on the ledger id) with its deliveries queued, and the cursor moves in the same
 * transaction, so a restart neither repeats nor skips one. Returns how many alerts were raised.
 */
export async function pollLedgerBudgetAlerts(deps: AlertJobsDeps): Promise<number> {
  let raised = 0;
  for (;;) {
    const cursor = await readLedgerAlertCursor(deps.db);
    const page = await deps.ledger.listBudgetAlerts({ afterId: cursor, limit: ledgerPageSize });
    for (const ledgerAlert of page) {
      const known = await findOrganisation(deps.db, ledgerAlert.organisationId);
      const input = known ? await budgetAlertInput(deps.db, ledgerAlert) : undefined;
      const result = await deps.db.transaction(async (tx) => {
        const made = input && await raiseAlert(tx, input, { webhook: true, email: deps.mailer !== undefined });
        await advanceLedgerAlertCursor(tx, ledgerAlert.id);
        return made;
      });
      if (!known) deps.logger.warn({ ledgerAlertId: ledgerAlert.id, organisationId: ledgerAlert.organisationId }, 'budget alert of an unknown organisation skipped');
      if (result) {
        raised += 1;
        deps.announce(result.alert);
        deps.logger.info({ alertId: result.alert.id, organisationId: result.alert.organisationId, kind: 'budget_soft', deliveries: result.deliveryIds.length }, 'alert raised');
      }
    }
    if (page.length < ledgerPageSize) return raised;
  }
}

/**
 * Reads the balance of every organisation with a low-balance threshold: one alert when the
 * available balance is below it and the alert is armed (first check after the threshold was set,
 * or the balance was at or above it since the last alert); the alert re-arms once the balance is
 * back at or above the threshold. A ledger error skips that organisation until the next pass.
 */
export async function checkLowBalances(deps: AlertJobsDeps): Promise<number> {
  let raised = 0;
  for (const watch of await listLowBalanceWatches(deps.db)) {
    let availableMicros: bigint;
    try {
      availableMicros = (await deps.ledger.getBalance(watch.organisationId)).availableMicros;
    } catch (error) {
      deps.logger.warn({ organisationId: watch.organisationId, err: error }, 'low-balance check: balance not read');
      continue;
    }
    const below = availableMicros < watch.thresholdMicros;
    if (below === watch.alerted) continue;
    if (!below) {
      await flipLowBalanceAlerted(deps.db, watch.organisationId, watch.thresholdMicros, false);
      continue;
    }
    const organisation = await findOrganisation(deps.db, watch.organisationId);
    const result = await deps.db.transaction(async (tx) => {
      // Of two replicas checking at once, only the one that flips the flag raises the alert.
      if (!await flipLowBalanceAlerted(tx, watch.organisationId, watch.thresholdMicros, true)) return undefined;
      return raiseAlert(tx, {
        kind: 'low_balance',
        organisationId: watch.organisationId,
        projectId: null,
        occurredAt: new Date(),
        message: `The available balance of "${organisation?.name ?? watch.organisationId}", ${formatInrExact(availableMicros)}, `
          + `is below its low-balance threshold of ${formatInrExact(watch.thresholdMicros)}.`,
        details: { available_micros: availableMicros.toString(), threshold_micros: watch.thresholdMicros.toString() },
      }, { webhook: true, email: deps.mailer !== undefined });
    });
    if (result) {
      raised += 1;
      deps.announce(result.alert);
      deps.logger.info({ alertId: result.alert.id, organisationId: result.alert.organisationId, kind: 'low_balance', deliveries: result.deliveryIds.length }, 'alert raised');
    }
  }
  return raised;
}

/** An outcome that ends the delivery without a retry (nothing to retry against). */
function finalFailure(errorClass: string): AttemptOutcome & { final: true } {
  return { delivered: false, statusCode: null, errorClass, durationMs: 0, final: true };
}

/** Makes one webhook attempt: signed JSON or Slack body, the same alert id on every retry. */
async function attemptWebhook(deps: AlertJobsDeps, claimed: ClaimedDelivery, alert: Alert): Promise<AttemptOutcome & { final?: true }> {
  const webhook = await findWebhook(deps.db, claimed.organisationId);
  if (!webhook) return finalFailure('webhook_removed');
  let secret: string;
  try {
    secret = deps.cipher.decrypt(webhook.secretSealed, webhookSecretContext(claimed.organisationId));
  } catch {
    return finalFailure('secret_unreadable');
  }
  // The policy may have tightened since the URL was stored (private addresses no longer allowed).
  if (webhookUrlProblem(webhook.url, deps.settings.allowPrivateWebhooks) !== undefined) return finalFailure('address_refused');
  const body = JSON.stringify(webhook.format === 'slack' ? slackMessage(alert) : webhookEnvelope(alert));
  return deps.sender.send(webhook.url, body, {
    'content-type': 'application/json',
    'user-agent': 'gateway-alerts/1',
    'x-gateway-signature': signatureHeader(secret, body, Math.floor(Date.now() / 1000)),
    'x-gateway-alert-id': alert.id,
    'x-gateway-delivery-id': claimed.id,
    'x-gateway-delivery-attempt': String(claimed.attempt),
  });
}

/** Makes one email attempt: the alert to the organisation's owners, in one message. */
async function attemptEmail(deps: AlertJobsDeps, claimed: ClaimedDelivery, alert: Alert): Promise<AttemptOutcome & { final?: true }> {
  if (!deps.mailer) return finalFailure('email_disabled');
  const recipients = await ownerEmails(deps.db, claimed.organisationId);
  if (recipients.length === 0) return finalFailure('no_recipients');
  const started = performance.now();
  const lines = [alert.message, '', `Organisation: ${alert.organisationId}`];
  if (alert.projectId !== null) lines.push(`Project: ${alert.projectId}`);
  lines.push(`Alert: ${alert.id}`, `Raised at: ${alert.occurredAt.toISOString()}`);
  if (deps.settings.dashboardUrl !== undefined) lines.push('', `Dashboard: ${deps.settings.dashboardUrl}`);
  try {
    await deps.mailer.send({ to: recipients.join(', '), subject: `[Gateway] ${alertTitles[alert.kind]}`, text: lines.join('\n') });
    return { delivered: true, statusCode: null, errorClass: null, durationMs: Math.round(performance.now() - started) };
  } catch {
    return { delivered: false, statusCode: null, errorClass: 'email_error', durationMs: Math.round(performance.now() - started) };
  }
}

/** How long a claimed attempt is leased: its own deadline plus a margin, ms. */
function leaseMs(settings: AlertsSettings): number {
  return Math.max(settings.webhookTimeoutMs, 30_000) + 60_000;
}

/** Attempts one claimed delivery and records the outcome and the next due time. */
async function attemptDelivery(deps: AlertJobsDeps, claimed: ClaimedDelivery): Promise<void> {
  const alert = await findAlert(deps.db, claimed.alertId);
  const outcome = !alert ? finalFailure('alert_missing')
    : claimed.channel === 'webhook' ? await attemptWebhook(deps, claimed, alert) : await attemptEmail(deps, claimed, alert);
  const finishedAt = new Date(claimed.claimedAt.getTime() + outcome.durationMs);
  const next = outcome.delivered || outcome.final ? undefined : nextAttemptAt(
    { baseMs: deps.settings.retryBaseMs, windowMs: deps.settings.retryWindowMs }, claimed.firstAttemptAt, finishedAt, claimed.attempt,
  );
  await recordAttempt(deps.db, claimed, outcome, next);
  // A final failure decided before any send (finalFailure) is undeliverable, not a failing relay or endpoint.
  deps.onDeliveryAttempt?.(claimed.channel, outcome.delivered ? 'delivered' : outcome.final ? 'undeliverable' : 'failed');
  const log = {
    deliveryId: claimed.id, alertId: claimed.alertId, organisationId: claimed.organisationId, channel: claimed.channel, attempt: claimed.attempt,
    statusCode: outcome.statusCode, errorClass: outcome.errorClass, durationMs: outcome.durationMs,
  };
  if (outcome.delivered) deps.logger.info(log, 'alert delivered');
  else if (next) deps.logger.info({ ...log, nextAttemptAt: next.toISOString() }, 'alert delivery failed; will retry');
  else deps.logger.warn(log, 'alert delivery failed for good');
}

/**
 * Claims the due deliveries (FOR UPDATE SKIP LOCKED: no other replica makes the same attempt)
 * and attempts them side by side; returns how many were attempted.
 */
export async function deliverDueAlerts(deps: AlertJobsDeps): Promise<number> {
  const claimed = await claimDueDeliveries(deps.db, deliveriesPerPass, leaseMs(deps.settings));
  await Promise.all(claimed.map((delivery) => attemptDelivery(deps, delivery).catch((error: unknown) => {
    // The lease runs out and the delivery is tried again.
    deps.logger.error({ deliveryId: delivery.id, err: error }, 'alert delivery attempt could not be recorded');
  })));
  return claimed.length;
}
