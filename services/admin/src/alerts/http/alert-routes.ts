import type { Delivery } from '../domain/alert-store.ts';
import type { WebhookView } from '../domain/alerts-service.ts';
import {
  alertJson, alertListQuery, alertListResponse, alertSettingsResponse, defaultAlertPageSize, deliveryListResponse, putAlertSettingsBody, putWebhookBody,
  webhookDeletedResponse, webhookGetResponse, webhookPutResponse, webhookTestResponse,
} from './alert-schemas.ts';
import { defineRoute, routeErrors, type AdminRoute } from '../../common/http/route-definition.ts';

function webhookJson(webhook: WebhookView) {
  return {
    url: webhook.url, format: webhook.format, secret_hint: webhook.secretHint,
    created_at: webhook.createdAt.toISOString(), updated_at: webhook.updatedAt.toISOString(),
  };
}

function deliveryJson(delivery: Delivery) {
  return {
    id: delivery.id,
    alert_id: delivery.alertId,
    alert_kind: delivery.alertKind,
    channel: delivery.channel,
    state: delivery.state,
    next_attempt_at: delivery.nextAttemptAt?.toISOString() ?? null,
    created_at: delivery.createdAt.toISOString(),
    attempts: delivery.attempts.map((attempt) => ({
      attempt: attempt.attempt,
      attempted_at: attempt.attemptedAt.toISOString(),
      duration_ms: attempt.durationMs,
      status_code: attempt.statusCode,
      error: attempt.errorClass,
      next_attempt_at: attempt.nextAttemptAt?.toISOString() ?? null,
    })),
  };
}

const orgRoute = { tag: 'alerts', authenticated: true, access: 'organisation', scope: 'organisation' } as const;

/** The alert routes of the admin API. */
export function alertRoutes(): AdminRoute[] {
  return [
    defineRoute({
      ...orgRoute, role: 'viewer', method: 'get', path: '/admin/v1/organisations/{id}/alerts', operationId: 'listAlerts',
      summary: 'The organisation\'s alerts (soft budget, low balance), newest first (cursor paging).',
      query: alertListQuery,
      success: { status: 200, description: 'A page of alerts.', schema: alertListResponse },
      errors: routeErrors.read,
      async handle({ service }, { actor, params, query }) {
        const page = await service.alerts.listAlerts(actor, params.id!, { limit: query.limit ?? defaultAlertPageSize, cursor: query.cursor });
        return { status: 200, body: { object: 'list', data: page.items.map(alertJson), next_cursor: page.nextCursor } };
      },
    }),
    defineRoute({
      ...orgRoute, role: 'owner', method: 'get', path: '/admin/v1/organisations/{id}/webhook', operationId: 'getWebhook',
      summary: 'The organisation\'s alert webhook (the signing secret\'s hint only), or null.',
      description: 'Owners only: a webhook URL may itself be a credential (a Slack incoming-webhook URL is one).',
      success: { status: 200, description: 'The webhook or null.', schema: webhookGetResponse },
      errors: ['unauthenticated', 'not_found'],
      async handle({ service }, { actor, params }) {
        const webhook = await service.alerts.getWebhook(actor, params.id!);
        return { status: 200, body: { webhook: webhook && webhookJson(webhook) } };
      },
    }),
    defineRoute({
      ...orgRoute, role: 'owner', method: 'put', path: '/admin/v1/organisations/{id}/webhook', operationId: 'putWebhook',
      summary: 'Set the organisation\'s alert webhook: URL and format (json or slack).',
      description: 'Alerts are POSTed with `X-Gateway-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>` and `X-Gateway-Alert-Id` (the same on every retry), retried with exponential backoff until ALERT_RETRY_WINDOW_MS after the first attempt (docs/alerts.md). The signing secret is made when the webhook is created or with `rotate_secret: true`, and shown in that answer only.',
      body: putWebhookBody,
      success: { status: 200, description: 'The webhook and, when one was made, its signing secret.', schema: webhookPutResponse },
      errors: [...routeErrors.write, 'not_found'],
      async handle({ service }, { actor, params, body }) {
        const { webhook, signingSecret } = await service.alerts.putWebhook(actor, params.id!, {
          url: body.url, format: body.format ?? 'json', rotateSecret: body.rotate_secret ?? false,
        });
        return { status: 200, body: { webhook: webhookJson(webhook), signing_secret: signingSecret } };
      },
    }),
    defineRoute({
      ...orgRoute, role: 'owner', method: 'delete', path: '/admin/v1/organisations/{id}/webhook', operationId: 'deleteWebhook',
      summary: 'Remove the organisation\'s alert webhook; its pending deliveries fail (webhook_removed).',
      success: { status: 200, description: 'The webhook that was removed.', schema: webhookDeletedResponse },
      errors: ['unauthenticated', 'not_found', 'permission_denied'],
      async handle({ service }, { actor, params }) {
        return { status: 200, body: { webhook: webhookJson(await service.alerts.deleteWebhook(actor, params.id!)) } };
      },
    }),
    defineRoute({
      ...orgRoute, role: 'owner', method: 'post', path: '/admin/v1/organisations/{id}/webhook/test', operationId: 'testWebhook',
      summary: 'Send a test alert to the webhook, through the same signed, retried delivery as real alerts.',
      success: { status: 202, description: 'The delivery, queued; follow it in the delivery log.', schema: webhookTestResponse },
      errors: ['unauthenticated', 'not_found', 'permission_denied'],
      async handle({ service }, { actor, params }) {
        const { deliveryId } = await service.alerts.testWebhook(actor, params.id!);
        return { status: 202, body: { delivery_id: deliveryId } };
      },
    }),
    defineRoute({
      ...orgRoute, role: 'owner', method: 'get', path: '/admin/v1/organisations/{id}/webhook/deliveries', operationId: 'listWebhookDeliveries',
      summary: 'The delivery log: the organisation\'s alert deliveries (webhook and email), newest first, each with its attempts.',
      query: alertListQuery,
      success: { status: 200, description: 'A page of deliveries.', schema: deliveryListResponse },
      errors: [...routeErrors.read, 'permission_denied'],
      async handle({ service }, { actor, params, query }) {
        const page = await service.alerts.listWebhookDeliveries(actor, params.id!, { limit: query.limit ?? defaultAlertPageSize, cursor: query.cursor });
        return { status: 200, body: { object: 'list', data: page.items.map(deliveryJson), next_cursor: page.nextCursor } };
      },
    }),
    defineRoute({
      ...orgRoute, role: 'viewer', method: 'get', path: '/admin/v1/organisations/{id}/alert-settings', operationId: 'getAlertSettings',
      summary: 'The organisation\'s alert settings: the low-balance threshold.',
      success: { status: 200, description: 'The settings.', schema: alertSettingsResponse },
      errors: ['unauthenticated', 'not_found'],
      async handle({ service }, { actor, params }) {
        const settings = await service.alerts.getAlertSettings(actor, params.id!);
        return { status: 200, body: { low_balance_threshold_micros: settings.lowBalanceThresholdMicros?.toString() ?? null } };
      },
    }),
    defineRoute({
      ...orgRoute, role: 'owner', method: 'put', path: '/admin/v1/organisations/{id}/alert-settings', operationId: 'putAlertSettings',
      summary: 'Set the low-balance threshold (µ₹), or clear it with null.',
      description: 'One alert per crossing: when the available balance is below the threshold (checked every LOW_BALANCE_POLL_MS), once, until it is back at or above it. A new threshold is armed at once, so a balance already below it raises an alert at the next check.',
      body: putAlertSettingsBody,
      success: { status: 200, description: 'The settings after the change.', schema: alertSettingsResponse },
      errors: [...routeErrors.write, 'not_found'],
      async handle({ service }, { actor, params, body }) {
        const settings = await service.alerts.putAlertSettings(actor, params.id!, { lowBalanceThresholdMicros: body.low_balance_threshold_micros });
        return { status: 200, body: { low_balance_threshold_micros: settings.lowBalanceThresholdMicros?.toString() ?? null } };
      },
    }),
  ];
}
