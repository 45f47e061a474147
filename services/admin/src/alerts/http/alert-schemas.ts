import { z } from 'zod';
import { moneyMicros, moneyShown as money, pageCursor, pageLimit, timestampShown as timestamp } from '../../common/http/wire-fields.ts';
import type { Alert } from '../domain/alert-store.ts';
import { maxWebhookUrlLength } from '../domain/webhook-url.ts';

/**
 * The request and response shapes of the alert routes (alerts list, webhook, delivery log,
 * alert settings). Responses document the API and tests parse real answers with them.
 */

/** The page size of the alert lists when none is given. */
export const defaultAlertPageSize = 20;

/** Query of the newest-first alert lists: page size and the previous page's next_cursor. */
export const alertListQuery = z.strictObject({
  limit: pageLimit(100, defaultAlertPageSize),
  cursor: pageCursor(/^\d{1,19}$/),
});

/** Body of PUT /admin/v1/organisations/{id}/webhook. */
export const putWebhookBody = z.strictObject({
  url: z.string({ error: (issue) => (issue.input === undefined ? 'is required' : 'must be a string') })
    .trim()
    .min(1, { error: 'must not be empty' })
    .max(maxWebhookUrlLength, { error: `must be at most ${maxWebhookUrlLength} characters` })
    .meta({ description: 'Where alerts are POSTed: https, a public host (http and private hosts only with ADMIN_ALLOW_PRIVATE_UPSTREAMS=true).' }),
  format: z.enum(['json', 'slack'], { error: 'must be "json" or "slack"' })
    .optional()
    .meta({ description: 'json (default): the signed alert envelope; slack: Slack\'s incoming-webhook shape ({ text, blocks }), signed too.' }),
  rotate_secret: z.boolean({ error: 'must be true or false' })
    .optional()
    .meta({ description: 'true: a new signing secret replaces the old one (shown once in this answer).' }),
});

/** Body of PUT /admin/v1/organisations/{id}/alert-settings. */
export const putAlertSettingsBody = z.strictObject({
  low_balance_threshold_micros: moneyMicros({ min: 1n, max: 1_000_000_000_000_000n }, 'Alert when the available balance falls below this; null: no low-balance alert.')
    .nullable(),
});

const id = (prefix: string, what: string) => z.string().regex(new RegExp(`^${prefix}_[0-9a-f]{24}$`))
  .meta({ description: `Id of the ${what}: "${prefix}_" and 24 lowercase hex characters.` });

/** One alert, as listed and as live updates send it. */
const alertResponse = z.strictObject({
  id: id('alrt', 'alert'),
  kind: z.enum(['budget_soft', 'low_balance', 'refund_failed', 'payment_shortfall']).meta({ description: 'budget_soft: a project reached its soft budget threshold this month; low_balance: the available balance fell below the organisation\'s threshold; refund_failed: the payment provider refused a refund and its money is back in the balance; payment_shortfall: a refund made outside the gateway or a dispute was more than the balance held, and the rest is recorded as a shortfall (GET /admin/v1/payment-reversals). Both are on the dashboard only (no webhook or email), for platform admins, who see every organisation\'s alerts.' }),
  organisation_id: id('org', 'organisation'),
  project_id: z.string().nullable().meta({ description: 'The project (budget alerts); null otherwise.' }),
  occurred_at: timestamp,
  message: z.string().meta({ description: 'One sentence for people, amounts in ₹ with Indian grouping.' }),
  details: z.record(z.string(), z.union([z.string(), z.number(), z.null()])).meta({
    description: 'budget_soft: ledger_alert_id, project_name, month, spent_micros, monthly_cap_micros, soft_alert_percent; low_balance: available_micros, threshold_micros; refund_failed: refund_id, topup_id, amount_paise, returned_micros, failure_reason; payment_shortfall: reversal_id, kind, provider_ref, topup_id, debit_micros, taken_micros, shortfall_micros. Money as decimal strings of µ₹ (paise where named).',
  }),
});

/** The organisation's alerts, newest first. */
export const alertListResponse = z.strictObject({
  object: z.literal('list'),
  data: z.array(alertResponse),
  next_cursor: z.string().nullable().meta({ description: 'Pass as `cursor` for the next page; null on the last page.' }),
});

/** An organisation's webhook: never the signing secret, only its hint. */
const webhookResponse = z.strictObject({
  url: z.string(),
  format: z.enum(['json', 'slack']),
  secret_hint: z.string().meta({ description: 'Prefix and last four characters of the signing secret, e.g. "whsec_…x7Qa".' }),
  created_at: timestamp,
  updated_at: timestamp,
});

/** GET: the webhook, or null when none is configured. */
export const webhookGetResponse = z.strictObject({ webhook: webhookResponse.nullable() });

/** DELETE: the webhook that was removed. */
export const webhookDeletedResponse = z.strictObject({ webhook: webhookResponse });

/** PUT: the webhook and, when one was made, its signing secret (shown this once). */
export const webhookPutResponse = z.strictObject({
  webhook: webhookResponse,
  signing_secret: z.string().regex(/^whsec_/).nullable().meta({
    description: 'The signing secret, shown once: when the webhook is created or rotate_secret is true; null otherwise. Only a sealed copy is stored.',
  }),
});

/** POST .../webhook/test: the queued delivery. */
export const webhookTestResponse = z.strictObject({ delivery_id: id('whd', 'delivery') });

/** One attempt of a delivery, from the delivery log. */
const deliveryAttemptResponse = z.strictObject({
  attempt: z.int().meta({ description: '1 for the first attempt.' }),
  attempted_at: timestamp,
  duration_ms: z.int(),
  status_code: z.int().nullable().meta({ description: 'The receiver\'s HTTP status; null when no answer came (timeout, connection error) or for email.' }),
  error: z.string().nullable().meta({
    description: 'null when delivered; else the class of failure: http_status, timeout, address_refused, dns_error, connection_refused, tls_error, connection_error, webhook_removed, email_error, no_recipients.',
  }),
  next_attempt_at: timestamp.nullable().meta({ description: 'When the next attempt was scheduled; null when this attempt ended the delivery.' }),
});

/** One alert's delivery to one channel, with its attempts (oldest first). */
const deliveryResponse = z.strictObject({
  id: id('whd', 'delivery'),
  alert_id: id('alrt', 'alert').meta({ description: 'Sent as X-Gateway-Alert-Id on every attempt: receivers deduplicate with it.' }),
  alert_kind: z.enum(['budget_soft', 'low_balance', 'test']),
  channel: z.enum(['webhook', 'email']),
  state: z.enum(['pending', 'delivered', 'failed']).meta({ description: 'failed: no attempt succeeded within ALERT_RETRY_WINDOW_MS of the first (or nothing left to retry).' }),
  next_attempt_at: timestamp.nullable().meta({ description: 'While pending: when the next attempt is due.' }),
  created_at: timestamp,
  attempts: z.array(deliveryAttemptResponse),
});

/** The organisation's deliveries, newest first. */
export const deliveryListResponse = z.strictObject({
  object: z.literal('list'),
  data: z.array(deliveryResponse),
  next_cursor: z.string().nullable().meta({ description: 'Pass as `cursor` for the next page; null on the last page.' }),
});

/** The organisation's alert settings. */
export const alertSettingsResponse = z.strictObject({
  low_balance_threshold_micros: money('The low-balance threshold; null when there is none.').nullable(),
});

/** The alert as the API lists it and live updates send it (snake_case JSON). */
export function alertJson(alert: Alert) {
  return {
    id: alert.id,
    kind: alert.kind,
    organisation_id: alert.organisationId,
    project_id: alert.projectId,
    occurred_at: alert.occurredAt.toISOString(),
    message: alert.message,
    details: alert.details,
  };
}
