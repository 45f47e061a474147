import { randomUUID } from 'node:crypto';
import type { Database, Queryable } from '@gateway/db';
import { newId } from '../../common/domain/ids.ts';

/**
 * What an alert is about: a project's soft budget threshold, an organisation's low balance, a
 * webhook test, or money platform admins must look at: a refund the payment provider refused (its
 * money is back in the balance), or money the payer got back that the balance could not cover.
 */
export type AlertKind = 'budget_soft' | 'low_balance' | 'test' | 'refund_failed' | 'payment_shortfall';

/** The channels an alert is delivered on besides the dashboard. */
type DeliveryChannel = 'webhook' | 'email';

/** Where a delivery stands: still being tried, done, or given up after the retry window. */
type DeliveryState = 'pending' | 'delivered' | 'failed';

/** A raised alert. `details` holds kind-specific facts, money as decimal strings of µ₹. */
export interface Alert {
  id: string;
  /** Increasing; the list's cursor. */
  seq: bigint;
  kind: AlertKind;
  organisationId: string;
  projectId: string | null;
  occurredAt: Date;
  message: string;
  details: Record<string, string | number | null>;
}

/** An organisation's webhook as stored: the signing secret sealed, never in the clear. */
export interface StoredWebhook {
  organisationId: string;
  url: string;
  format: 'json' | 'slack';
  secretSealed: string;
  secretHint: string;
  createdAt: Date;
  updatedAt: Date;
}

/** One attempt of a delivery, as the delivery log keeps it. */
interface DeliveryAttempt {
  attempt: number;
  attemptedAt: Date;
  durationMs: number;
  statusCode: number | null;
  errorClass: string | null;
  nextAttemptAt: Date | null;
}

/** One alert to one channel, with its attempts (oldest first). */
export interface Delivery {
  id: string;
  seq: bigint;
  alertId: string;
  alertKind: AlertKind;
  channel: DeliveryChannel;
  state: DeliveryState;
  nextAttemptAt: Date | null;
  createdAt: Date;
  attempts: DeliveryAttempt[];
}

interface AlertRow {
  id: string;
  seq: bigint;
  kind: AlertKind;
  organisation_id: string;
  project_id: string | null;
  occurred_at: Date;
  message: string;
  details: Record<string, string | number | null>;
}

const alertColumns = 'id, seq, kind, organisation_id, project_id, occurred_at, message, details';

function toAlert(row: AlertRow): Alert {
  return {
    id: row.id, seq: row.seq, kind: row.kind, organisationId: row.organisation_id, projectId: row.project_id,
    occurredAt: row.occurred_at, message: row.message, details: row.details,
  };
}

/** What raises an alert: its facts (the store gives the id and seq), and `sourceKey` when it must exist at most once (e.g. per ledger alert). */
export interface AlertInput extends Omit<Alert, 'id' | 'seq'> {
  sourceKey?: string | undefined;
}

/**
 * Records an alert and queues its deliveries (webhook when the organisation has one, email when
 * `channels` includes it), in the caller's transaction. Undefined when an alert with the same
 * source key exists already: nothing is queued twice.
 */
export async function raiseAlert(
  tx: Queryable,
  input: AlertInput,
  channels: { email: boolean; webhook: boolean },
): Promise<{ alert: Alert; deliveryIds: string[] } | undefined> {
  const { rows } = await tx.query<AlertRow>(
    `INSERT INTO alerts (id, organisation_id, project_id, kind, source_key, occurred_at, message, details)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
     ON CONFLICT (source_key) DO NOTHING
     RETURNING ${alertColumns}`,
    [newId('alert'), input.organisationId, input.projectId, input.kind, input.sourceKey ?? null, input.occurredAt, input.message, JSON.stringify(input.details)],
  );
  if (!rows[0]) return undefined;
  const alert = toAlert(rows[0]);
  const deliveryIds: string[] = [];
  const wanted: DeliveryChannel[] = [];
  if (channels.webhook && await findWebhook(tx, alert.organisationId)) wanted.push('webhook');
  if (channels.email) wanted.push('email');
  for (const channel of wanted) {
    const id = newId('webhookDelivery');
    await tx.query(
      `INSERT INTO alert_deliveries (id, alert_id, organisation_id, channel, next_attempt_at) VALUES ($1, $2, $3, $4, clock_timestamp())`,
      [id, alert.id, alert.organisationId, channel],
    );
    deliveryIds.push(id);
  }
  return { alert, deliveryIds };
}

/** The alert with this id (any kind), or undefined. */
export async function findAlert(db: Queryable, id: string): Promise<Alert | undefined> {
  const { rows } = await db.query<AlertRow>(`SELECT ${alertColumns} FROM alerts WHERE id = $1`, [id]);
  return rows[0] ? toAlert(rows[0]) : undefined;
}

/** An organisation's alerts newest first, before `beforeSeq` (exclusive); test alerts are not listed. */
export async function listAlerts(
  db: Queryable,
  organisationId: string,
  page: { beforeSeq?: bigint | undefined; limit: number },
): Promise<{ items: Alert[]; hasMore: boolean }> {
  const { rows } = await db.query<AlertRow>(
    `SELECT ${alertColumns} FROM alerts
     WHERE organisation_id = $1 AND kind <> 'test' AND ($2::bigint IS NULL OR seq < $2)
     ORDER BY seq DESC LIMIT $3`,
    [organisationId, page.beforeSeq ?? null, page.limit + 1],
  );
  return { items: rows.slice(0, page.limit).map(toAlert), hasMore: rows.length > page.limit };
}

interface WebhookRow {
  organisation_id: string;
  url: string;
  format: 'json' | 'slack';
  secret_sealed: string;
  secret_hint: string;
  created_at: Date;
  updated_at: Date;
}

/** The organisation's webhook, or undefined when it has none. */
export async function findWebhook(db: Queryable, organisationId: string): Promise<StoredWebhook | undefined> {
  const { rows } = await db.query<WebhookRow>(
    'SELECT organisation_id, url, format, secret_sealed, secret_hint, created_at, updated_at FROM alert_webhooks WHERE organisation_id = $1',
    [organisationId],
  );
  const row = rows[0];
  return row && {
    organisationId: row.organisation_id, url: row.url, format: row.format, secretSealed: row.secret_sealed,
    secretHint: row.secret_hint, createdAt: row.created_at, updatedAt: row.updated_at,
  };
}

/** Creates or replaces the organisation's webhook; a new sealed secret only when `secret` is given. */
export async function upsertWebhook(
  tx: Queryable,
  webhook: { organisationId: string; url: string; format: 'json' | 'slack'; secret?: { sealed: string; hint: string } | undefined },
): Promise<void> {
  if (webhook.secret) {
    await tx.query(
      `INSERT INTO alert_webhooks (organisation_id, url, format, secret_sealed, secret_hint) VALUES ($1, $2, $3, $4, $5)
       ON CONFLICT (organisation_id) DO UPDATE SET url = $2, format = $3, secret_sealed = $4, secret_hint = $5, updated_at = clock_timestamp()`,
      [webhook.organisationId, webhook.url, webhook.format, webhook.secret.sealed, webhook.secret.hint],
    );
  } else {
    await tx.query(
      'UPDATE alert_webhooks SET url = $2, format = $3, updated_at = clock_timestamp() WHERE organisation_id = $1',
      [webhook.organisationId, webhook.url, webhook.format],
    );
  }
}

/** Removes the organisation's webhook; whether it had one. Pending webhook deliveries then fail at their next attempt. */
export async function deleteWebhook(tx: Queryable, organisationId: string): Promise<boolean> {
  const { rows } = await tx.query('DELETE FROM alert_webhooks WHERE organisation_id = $1 RETURNING organisation_id', [organisationId]);
  return rows.length > 0;
}

/** The organisation's low-balance threshold in µ₹ (null: none). */
export async function findLowBalanceThreshold(db: Queryable, organisationId: string): Promise<bigint | null> {
  const { rows } = await db.query<{ low_balance_threshold_micros: bigint | null }>(
    'SELECT low_balance_threshold_micros FROM alert_settings WHERE organisation_id = $1',
    [organisationId],
  );
  return rows[0]?.low_balance_threshold_micros ?? null;
}

/**
 * Sets the low-balance threshold (null clears it). A changed threshold is a new condition: its
 * alert is armed again, so a balance already below it raises one alert at the next check.
 */
export async function setLowBalanceThreshold(tx: Queryable, organisationId: string, thresholdMicros: bigint | null): Promise<void> {
  await tx.query(
    `INSERT INTO alert_settings (organisation_id, low_balance_threshold_micros) VALUES ($1, $2)
     ON CONFLICT (organisation_id) DO UPDATE SET
       low_balance_alerted = alert_settings.low_balance_alerted AND alert_settings.low_balance_threshold_micros IS NOT DISTINCT FROM $2,
       low_balance_threshold_micros = $2, updated_at = clock_timestamp()`,
    [organisationId, thresholdMicros],
  );
}

/** Every organisation with a low-balance threshold: the threshold and whether its alert has fired for this crossing. */
export async function listLowBalanceWatches(db: Queryable): Promise<Array<{ organisationId: string; thresholdMicros: bigint; alerted: boolean }>> {
  const { rows } = await db.query<{ organisation_id: string; low_balance_threshold_micros: bigint; low_balance_alerted: boolean }>(
    `SELECT organisation_id, low_balance_threshold_micros, low_balance_alerted FROM alert_settings
     WHERE low_balance_threshold_micros IS NOT NULL ORDER BY organisation_id`,
  );
  return rows.map((row) => ({ organisationId: row.organisation_id, thresholdMicros: row.low_balance_threshold_micros, alerted: row.low_balance_alerted }));
}

/**
 * Flips the low-balance alert of an organisation to `alerted`, if it still has this threshold and
 * the other state: whether this caller made the flip (of two replicas, exactly one does).
 */
export async function flipLowBalanceAlerted(tx: Queryable, organisationId: string, thresholdMicros: bigint, alerted: boolean): Promise<boolean> {
  const { rows } = await tx.query(
    `UPDATE alert_settings SET low_balance_alerted = $3
     WHERE organisation_id = $1 AND low_balance_threshold_micros = $2 AND low_balance_alerted = NOT $3
     RETURNING organisation_id`,
    [organisationId, thresholdMicros, alerted],
  );
  return rows.length > 0;
}

/** Where the ledger budget-alert poller stands: the last ledger alert id taken ('' before the first). */
export async function readLedgerAlertCursor(db: Queryable): Promise<string> {
  const { rows } = await db.query<{ position: string }>(`SELECT position FROM alert_cursors WHERE name = 'ledger_budget_alerts'`);
  return rows[0]?.position ?? '';
}

/** Moves the ledger budget-alert cursor forward to `position` (never back: another replica may be ahead). */
export async function advanceLedgerAlertCursor(tx: Queryable, position: string): Promise<void> {
  await tx.query(
    `UPDATE alert_cursors SET position = $1, updated_at = clock_timestamp()
     WHERE name = 'ledger_budget_alerts' AND (position = '' OR position::numeric < $1::numeric)`,
    [position],
  );
}

/** A delivery a worker holds the lease of: it alone makes this attempt. */
export interface ClaimedDelivery {
  id: string;
  alertId: string;
  organisationId: string;
  channel: DeliveryChannel;
  /** The number of this attempt (1 for the first). */
  attempt: number;
  firstAttemptAt: Date;
  /** The database's time when the lease was taken: the attempt's time. */
  claimedAt: Date;
  leaseToken: string;
}

/**
 * Takes up to `limit` due deliveries for this worker: FOR UPDATE SKIP LOCKED (another replica's
 * claim in progress is skipped, not waited for), then leased for `leaseMs` by moving their due
 * time, so a second replica does not see them due until the attempt is recorded or the lease
 * runs out (a worker that died mid-attempt: the delivery is tried again).
 */
export async function claimDueDeliveries(db: Queryable, limit: number, leaseMs: number): Promise<ClaimedDelivery[]> {
  const leaseToken = randomUUID();
  const { rows } = await db.query<{
    id: string; alert_id: string; organisation_id: string; channel: DeliveryChannel; attempts: number; first_attempt_at: Date; claimed_at: Date;
  }>(
    `WITH due AS (
       SELECT id FROM alert_deliveries
       WHERE state = 'pending' AND next_attempt_at <= clock_timestamp()
       ORDER BY next_attempt_at
       LIMIT $1
       FOR UPDATE SKIP LOCKED
     )
     UPDATE alert_deliveries d
     SET attempts = d.attempts + 1,
         lease_token = $2,
         next_attempt_at = clock_timestamp() + make_interval(secs => $3::double precision / 1000),
         first_attempt_at = COALESCE(d.first_attempt_at, clock_timestamp())
     FROM due WHERE d.id = due.id
     RETURNING d.id, d.alert_id, d.organisation_id, d.channel, d.attempts, d.first_attempt_at, clock_timestamp() AS claimed_at`,
    [limit, leaseToken, leaseMs],
  );
  return rows.map((row) => ({
    id: row.id, alertId: row.alert_id, organisationId: row.organisation_id, channel: row.channel, attempt: row.attempts,
    firstAttemptAt: row.first_attempt_at, claimedAt: row.claimed_at, leaseToken,
  }));
}

/**
 * Logs an attempt and moves its delivery on: delivered, failed (no next attempt), or pending
 * until `nextAttemptAt`. The delivery changes only while this worker still holds its lease.
 */
export async function recordAttempt(
  db: Database,
  claimed: ClaimedDelivery,
  outcome: { delivered: boolean; statusCode: number | null; errorClass: string | null; durationMs: number },
  nextAttemptAt: Date | undefined,
): Promise<void> {
  const state: DeliveryState = outcome.delivered ? 'delivered' : nextAttemptAt === undefined ? 'failed' : 'pending';
  const next = state === 'pending' ? nextAttemptAt! : null;
  await db.transaction(async (tx) => {
    await tx.query(
      `INSERT INTO alert_delivery_attempts (delivery_id, attempt, attempted_at, duration_ms, status_code, error_class, next_attempt_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (delivery_id, attempt) DO NOTHING`,
      [claimed.id, claimed.attempt, claimed.claimedAt, outcome.durationMs, outcome.statusCode, outcome.errorClass, next],
    );
    await tx.query(
      `UPDATE alert_deliveries SET state = $3, next_attempt_at = $4, lease_token = NULL,
         finished_at = CASE WHEN $3 = 'pending' THEN NULL ELSE clock_timestamp() END
       WHERE id = $1 AND lease_token = $2`,
      [claimed.id, claimed.leaseToken, state, next],
    );
  });
}

/** The owners' email addresses of an organisation (active people only): who alert emails go to. */
export async function ownerEmails(db: Queryable, organisationId: string): Promise<string[]> {
  const { rows } = await db.query<{ email: string }>(
    `SELECT p.email FROM memberships m JOIN people p ON p.id = m.person_id
     WHERE m.organisation_id = $1 AND m.role = 'owner' AND p.status = 'active' ORDER BY p.email`,
    [organisationId],
  );
  return rows.map((row) => row.email);
}

/** An organisation's deliveries newest first, before `beforeSeq` (exclusive), each with its attempts. */
export async function listDeliveries(
  db: Queryable,
  organisationId: string,
  page: { beforeSeq?: bigint | undefined; limit: number },
): Promise<{ items: Delivery[]; hasMore: boolean }> {
  const { rows } = await db.query<{
    id: string; seq: bigint; alert_id: string; kind: AlertKind; channel: DeliveryChannel; state: DeliveryState;
    next_attempt_at: Date | null; created_at: Date;
  }>(
    `SELECT d.id, d.seq, d.alert_id, a.kind, d.channel, d.state, d.next_attempt_at, d.created_at
     FROM alert_deliveries d JOIN alerts a ON a.id = d.alert_id
     WHERE d.organisation_id = $1 AND ($2::bigint IS NULL OR d.seq < $2)
     ORDER BY d.seq DESC LIMIT $3`,
    [organisationId, page.beforeSeq ?? null, page.limit + 1],
  );
  const pageRows = rows.slice(0, page.limit);
  const { rows: attemptRows } = await db.query<{
    delivery_id: string; attempt: number; attempted_at: Date; duration_ms: number; status_code: number | null; error_class: string | null;
    next_attempt_at: Date | null;
  }>(
    `SELECT delivery_id, attempt, attempted_at, duration_ms, status_code, error_class, next_attempt_at
     FROM alert_delivery_attempts WHERE delivery_id = ANY($1::text[]) ORDER BY delivery_id, attempt`,
    [pageRows.map((row) => row.id)],
  );
  const attemptsOf = new Map<string, DeliveryAttempt[]>();
  for (const row of attemptRows) {
    const list = attemptsOf.get(row.delivery_id) ?? [];
    list.push({
      attempt: row.attempt, attemptedAt: row.attempted_at, durationMs: row.duration_ms, statusCode: row.status_code,
      errorClass: row.error_class, nextAttemptAt: row.next_attempt_at,
    });
    attemptsOf.set(row.delivery_id, list);
  }
  return {
    items: pageRows.map((row) => ({
      id: row.id, seq: row.seq, alertId: row.alert_id, alertKind: row.kind, channel: row.channel, state: row.state,
      // While an attempt runs, next_attempt_at is its lease end: shown as it is (pending, due then at the latest).
      nextAttemptAt: row.state === 'pending' ? row.next_attempt_at : null, createdAt: row.created_at,
      attempts: attemptsOf.get(row.id) ?? [],
    })),
    hasMore: rows.length > page.limit,
  };
}
