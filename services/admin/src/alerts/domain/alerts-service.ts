import { systemResolver, type HostResolver } from '@gateway/address-policy';
import type { Database } from '@gateway/db';
import { GatewayError } from '@gateway/errors';
import type { Actor } from '../../common/domain/actor.ts';
import { webhookSecretContext } from './alert-jobs.ts';
import type { AlertsSettings } from './alerts-settings.ts';
import {
  deleteWebhook, findLowBalanceThreshold, findWebhook, listAlerts, listDeliveries, raiseAlert, setLowBalanceThreshold, upsertWebhook,
  type Alert, type Delivery, type StoredWebhook,
} from './alert-store.ts';
import { recordAuditEvent } from '../../common/domain/audit-log.ts';
import type { CredentialCipher } from '../../common/domain/credential-cipher.ts';
import type { LedgerPort } from '../../common/domain/ledger-port.ts';
import type { ResourceAccess } from '../../common/domain/resource-access.ts';
import { newSigningSecret, signingSecretHint } from '../../billing/domain/webhook-signature.ts';
import { webhookHostProblem, webhookUrlProblem } from './webhook-url.ts';

/** What the alerts aggregate is built from. */
export interface AlertsServiceDeps {
  db: Database;
  ledger: LedgerPort;
  cipher: CredentialCipher;
  access: ResourceAccess;
  settings: AlertsSettings;
  /** Resolves webhook host names for the SSRF check; default the system resolver. */
  resolveHost?: HostResolver | undefined;
}

/** An organisation's webhook as the API shows it: never the secret, only its hint. */
export type WebhookView = Pick<StoredWebhook, 'url' | 'format' | 'secretHint' | 'createdAt' | 'updatedAt'>;

/** A page of a newest-first list: the items and the cursor of the next page (null on the last). */
export interface NewestFirstPage<Item> {
  items: Item[];
  nextCursor: string | null;
}

/** The cursor of newest-first lists: the seq of the last item shown, as a decimal. */
function beforeSeqOf(cursor: string | undefined): bigint | undefined {
  if (cursor === undefined) return undefined;
  if (!/^\d{1,19}$/.test(cursor)) throw new GatewayError('invalid_request', { publicMessage: 'cursor must be the next_cursor of a previous page.', param: 'cursor' });
  return BigInt(cursor);
}

function viewOf(webhook: StoredWebhook): WebhookView {
  return { url: webhook.url, format: webhook.format, secretHint: webhook.secretHint, createdAt: webhook.createdAt, updatedAt: webhook.updatedAt };
}

/** Budget and low-balance alerts, the organisation's webhook and its delivery log (route tag "alerts"). */
export function createAlertsService(deps: AlertsServiceDeps) {
  const { db, cipher, access } = deps;
  const allowPrivate = deps.settings.allowPrivateWebhooks;
  const resolveHost = deps.resolveHost ?? systemResolver;

  /**
   * The organisation, if the actor sees it (404). The role each call needs is its route's, checked
   * once before the call (http/admin-http-app.ts authorizeRoute), not restated here.
   */
  async function organisationFor(actor: Actor, organisationId: string) {
    return access.requireOrganisation(actor, organisationId);
  }

  return {
    /** The organisation's alerts, newest first (webhook tests are not listed). */
    async listAlerts(actor: Actor, organisationId: string, page: { limit: number; cursor?: string | undefined }): Promise<NewestFirstPage<Alert>> {
      await organisationFor(actor, organisationId);
      const { items, hasMore } = await listAlerts(db, organisationId, { beforeSeq: beforeSeqOf(page.cursor), limit: page.limit });
      return { items, nextCursor: hasMore ? items.at(-1)!.seq.toString() : null };
    },

    /** The organisation's webhook (secret hint only), or null when it has none. */
    async getWebhook(actor: Actor, organisationId: string): Promise<WebhookView | null> {
      await organisationFor(actor, organisationId);
      const webhook = await findWebhook(db, organisationId);
      return webhook ? viewOf(webhook) : null;
    },

    /**
     * Sets the organisation's webhook URL and format. A signing secret is made when the webhook is
     * created or `rotateSecret` is true, and returned this once (sealed at rest, never shown again).
     */
    async putWebhook(
      actor: Actor,
      organisationId: string,
      input: { url: string; format: 'json' | 'slack'; rotateSecret: boolean },
    ): Promise<{ webhook: WebhookView; signingSecret: string | null }> {
      await organisationFor(actor, organisationId);
      const problem = webhookUrlProblem(input.url, allowPrivate) ?? await webhookHostProblem(input.url, allowPrivate, resolveHost);
      if (problem !== undefined) throw new GatewayError('invalid_request', { publicMessage: `url ${problem}.`, param: 'url' });
      return db.transaction(async (tx) => {
        await access.requireOrganisation(actor, organisationId, tx, { forUpdate: true });
        const before = await findWebhook(tx, organisationId);
        const secret = before === undefined || input.rotateSecret ? newSigningSecret() : undefined;
        await upsertWebhook(tx, {
          organisationId, url: input.url, format: input.format,
          secret: secret === undefined ? undefined : { sealed: cipher.encrypt(secret, webhookSecretContext(organisationId)), hint: signingSecretHint(secret) },
        });
        const after = (await findWebhook(tx, organisationId))!;
        const changes: Record<string, { before: string | boolean | null; after: string | boolean | null }> = {};
        if (before?.url !== after.url) changes.url = { before: before?.url ?? null, after: after.url };
        if (before?.format !== after.format) changes.format = { before: before?.format ?? null, after: after.format };
        if (secret !== undefined) changes.secret_hint = { before: before?.secretHint ?? null, after: after.secretHint };
        await recordAuditEvent(tx, {
          actor, organisationId, action: before === undefined ? 'webhook.create' : 'webhook.update', resourceType: 'webhook', resourceId: organisationId, changes,
        });
        return { webhook: viewOf(after), signingSecret: secret ?? null };
      });
    },

    /** Removes the organisation's webhook (404 when it has none) and returns it; its pending deliveries then fail. */
    async deleteWebhook(actor: Actor, organisationId: string): Promise<WebhookView> {
      await organisationFor(actor, organisationId);
      return db.transaction(async (tx) => {
        const before = await findWebhook(tx, organisationId);
        if (!before || !await deleteWebhook(tx, organisationId)) {
          throw new GatewayError('not_found', { publicMessage: 'This organisation has no webhook.' });
        }
        await recordAuditEvent(tx, {
          actor, organisationId, action: 'webhook.delete', resourceType: 'webhook', resourceId: organisationId,
          changes: { url: { before: before.url, after: null }, format: { before: before.format, after: null } },
        });
        return viewOf(before);
      });
    },

    /** Queues a `test` alert to the webhook through the same delivery path as real alerts; its delivery id. */
    async testWebhook(actor: Actor, organisationId: string): Promise<{ deliveryId: string }> {
      const organisation = await organisationFor(actor, organisationId);
      const result = await db.transaction(async (tx) => {
        if (!await findWebhook(tx, organisationId)) throw new GatewayError('not_found', { publicMessage: 'This organisation has no webhook to test.' });
        return raiseAlert(tx, {
          kind: 'test', organisationId, projectId: null, occurredAt: new Date(),
          message: `Test alert for "${organisation.name}": the webhook receives alerts.`, details: {},
        }, { webhook: true, email: false });
      });
      return { deliveryId: result!.deliveryIds[0]! };
    },

    /** The organisation's deliveries (webhook and email), newest first, each with its attempts. */
    async listWebhookDeliveries(actor: Actor, organisationId: string, page: { limit: number; cursor?: string | undefined }): Promise<NewestFirstPage<Delivery>> {
      await organisationFor(actor, organisationId);
      const { items, hasMore } = await listDeliveries(db, organisationId, { beforeSeq: beforeSeqOf(page.cursor), limit: page.limit });
      return { items, nextCursor: hasMore ? items.at(-1)!.seq.toString() : null };
    },

    /** The organisation's alert settings: its low-balance threshold in µ₹ (null: none). */
    async getAlertSettings(actor: Actor, organisationId: string): Promise<{ lowBalanceThresholdMicros: bigint | null }> {
      await organisationFor(actor, organisationId);
      return { lowBalanceThresholdMicros: await findLowBalanceThreshold(db, organisationId) };
    },

    /**
     * Sets (or clears with null) the low-balance threshold, µ₹. A new threshold is armed: if the
     * balance is already below it, one alert is raised at the next check (every AlertsSettings.lowBalancePollMs).
     */
    async putAlertSettings(actor: Actor, organisationId: string, input: { lowBalanceThresholdMicros: bigint | null }): Promise<{ lowBalanceThresholdMicros: bigint | null }> {
      await organisationFor(actor, organisationId);
      return db.transaction(async (tx) => {
        await access.requireOrganisation(actor, organisationId, tx, { forUpdate: true });
        const before = await findLowBalanceThreshold(tx, organisationId);
        await setLowBalanceThreshold(tx, organisationId, input.lowBalanceThresholdMicros);
        if (before !== input.lowBalanceThresholdMicros) {
          await recordAuditEvent(tx, {
            actor, organisationId, action: 'alert_settings.update', resourceType: 'organisation', resourceId: organisationId,
            changes: { low_balance_threshold_micros: { before: before?.toString() ?? null, after: input.lowBalanceThresholdMicros?.toString() ?? null } },
          });
        }
        return { lowBalanceThresholdMicros: input.lowBalanceThresholdMicros };
      });
    },
  };
}
