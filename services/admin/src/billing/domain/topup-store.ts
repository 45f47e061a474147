import type { Queryable } from '@gateway/db';
import { GatewayError } from '@gateway/errors';
import type { BillingSnapshot } from './billing-profile.ts';
import type { TopUpState } from './topup-state.ts';

/** A top-up package platform admins sell: a price in paise (GST included) for a credit in µ₹. */
export interface TopUpPackage {
  id: string;
  name: string;
  /** What the buyer pays, integer paise, GST included. */
  pricePaise: bigint;
  /** What the balance is credited with, µ₹. */
  creditMicros: bigint;
  active: boolean;
  /** Display order, smallest first. */
  sortOrder: number;
  createdAt: Date;
  updatedAt: Date;
}

/** One purchase of a package, with the terms and billing profile as they were when bought. */
export interface TopUp {
  id: string;
  organisationId: string;
  packageId: string;
  packageName: string;
  /** Paise, GST included (the package's price when bought). */
  pricePaise: bigint;
  /** µ₹ (the package's credit when bought). */
  creditMicros: bigint;
  state: TopUpState;
  provider: 'razorpay' | 'local';
  providerOrderId: string | null;
  providerPaymentId: string | null;
  billingSnapshot: BillingSnapshot;
  createdAt: Date;
  paidAt: Date | null;
  creditedAt: Date | null;
  expiresAt: Date;
}

/** One recorded transition of a top-up. */
export interface TopUpTransition {
  fromState: TopUpState | null;
  toState: TopUpState;
  cause: string;
  details: Record<string, string | null>;
  occurredAt: Date;
}

/** A tax document issued for a top-up (its invoice or receipt voucher, credit notes). */
export interface TopUpDocumentRef {
  id: string;
  kind: string;
  serial: string;
}

interface PackageRow {
  id: string;
  name: string;
  price_paise: bigint;
  credit_micros: bigint;
  active: boolean;
  sort_order: number;
  created_at: Date;
  updated_at: Date;
}

const packageColumns = 'id, name, price_paise, credit_micros, active, sort_order, created_at, updated_at';

function toPackage(row: PackageRow): TopUpPackage {
  return {
    id: row.id, name: row.name, pricePaise: row.price_paise, creditMicros: row.credit_micros, active: row.active, sortOrder: row.sort_order,
    createdAt: row.created_at, updatedAt: row.updated_at,
  };
}

/** Inserts a package; the stored package. */
export async function insertPackage(tx: Queryable, input: Omit<TopUpPackage, 'createdAt' | 'updatedAt'>): Promise<TopUpPackage> {
  const { rows } = await tx.query<PackageRow>(
    `INSERT INTO topup_packages (id, name, price_paise, credit_micros, active, sort_order) VALUES ($1, $2, $3, $4, $5, $6) RETURNING ${packageColumns}`,
    [input.id, input.name, input.pricePaise.toString(), input.creditMicros.toString(), input.active, input.sortOrder],
  );
  return toPackage(rows[0]!);
}

/** Changes the given fields of a package; the stored package. */
export async function updatePackage(
  tx: Queryable,
  id: string,
  changes: Partial<Pick<TopUpPackage, 'name' | 'pricePaise' | 'creditMicros' | 'active' | 'sortOrder'>>,
): Promise<TopUpPackage> {
  const { rows } = await tx.query<PackageRow>(
    `UPDATE topup_packages SET name = COALESCE($2, name), price_paise = COALESCE($3, price_paise), credit_micros = COALESCE($4, credit_micros),
       active = COALESCE($5, active), sort_order = COALESCE($6, sort_order), updated_at = clock_timestamp()
     WHERE id = $1 RETURNING ${packageColumns}`,
    [id, changes.name ?? null, changes.pricePaise?.toString() ?? null, changes.creditMicros?.toString() ?? null, changes.active ?? null, changes.sortOrder ?? null],
  );
  return toPackage(rows[0]!);
}

/** The package with this id, or undefined. `forUpdate` locks it for the transaction. */
export async function findPackage(db: Queryable, id: string, options: { forUpdate?: boolean } = {}): Promise<TopUpPackage | undefined> {
  const { rows } = await db.query<PackageRow>(`SELECT ${packageColumns} FROM topup_packages WHERE id = $1${options.forUpdate ? ' FOR UPDATE' : ''}`, [id]);
  return rows[0] ? toPackage(rows[0]) : undefined;
}

/** Packages in display order (sort_order, then oldest first); only active ones unless `includeInactive`. */
export async function listPackages(db: Queryable, options: { includeInactive: boolean }): Promise<TopUpPackage[]> {
  const { rows } = await db.query<PackageRow>(
    `SELECT ${packageColumns} FROM topup_packages WHERE $1 OR active ORDER BY sort_order, created_at, id`,
    [options.includeInactive],
  );
  return rows.map(toPackage);
}

interface TopUpRow {
  id: string;
  organisation_id: string;
  package_id: string;
  package_name: string;
  price_paise: bigint;
  credit_micros: bigint;
  state: TopUpState;
  provider: 'razorpay' | 'local';
  provider_order_id: string | null;
  provider_payment_id: string | null;
  billing_snapshot: BillingSnapshot;
  created_at: Date;
  paid_at: Date | null;
  credited_at: Date | null;
  expires_at: Date;
}

const selectTopUp = `
  SELECT t.id, t.organisation_id, t.package_id, p.name AS package_name, t.price_paise, t.credit_micros, t.state, t.provider,
         t.provider_order_id, t.provider_payment_id, t.billing_snapshot, t.created_at, t.paid_at, t.credited_at, t.expires_at
  FROM topups t JOIN topup_packages p ON p.id = t.package_id`;

function toTopUp(row: TopUpRow): TopUp {
  return {
    id: row.id, organisationId: row.organisation_id, packageId: row.package_id, packageName: row.package_name, pricePaise: row.price_paise,
    creditMicros: row.credit_micros, state: row.state, provider: row.provider, providerOrderId: row.provider_order_id,
    providerPaymentId: row.provider_payment_id, billingSnapshot: row.billing_snapshot, createdAt: row.created_at, paidAt: row.paid_at,
    creditedAt: row.credited_at, expiresAt: row.expires_at,
  };
}

/** Inserts a new top-up in state 'created'. */
export async function insertTopUp(tx: Queryable, input: {
  id: string; organisationId: string; packageId: string; pricePaise: bigint; creditMicros: bigint; provider: 'razorpay' | 'local';
  billingSnapshot: BillingSnapshot; createdByPersonId: string | null; expiresAt: Date;
}): Promise<void> {
  await tx.query(
    `INSERT INTO topups (id, organisation_id, package_id, price_paise, credit_micros, state, provider, billing_snapshot, created_by_person_id, expires_at)
     VALUES ($1, $2, $3, $4, $5, 'created', $6, $7, $8, $9)`,
    [input.id, input.organisationId, input.packageId, input.pricePaise.toString(), input.creditMicros.toString(), input.provider,
      JSON.stringify(input.billingSnapshot), input.createdByPersonId, input.expiresAt],
  );
}

/** Records the provider's order of a top-up that has none yet (state 'created'); false when it already had one. */
export async function attachProviderOrder(tx: Queryable, topUpId: string, orderId: string): Promise<boolean> {
  const { rowCount } = await tx.query(
    `UPDATE topups SET provider_order_id = $2, updated_at = clock_timestamp() WHERE id = $1 AND provider_order_id IS NULL`,
    [topUpId, orderId],
  );
  return rowCount === 1;
}

/** The top-up with this id, or undefined. `forUpdate` locks its row for the transaction. */
export async function findTopUp(db: Queryable, id: string, options: { forUpdate?: boolean } = {}): Promise<TopUp | undefined> {
  const { rows } = await db.query<TopUpRow>(`${selectTopUp} WHERE t.id = $1${options.forUpdate ? ' FOR UPDATE OF t' : ''}`, [id]);
  return rows[0] ? toTopUp(rows[0]) : undefined;
}

/** The top-up paid through this provider order, or undefined. `forUpdate` locks its row for the transaction. */
export async function findTopUpByOrder(db: Queryable, orderId: string, options: { forUpdate?: boolean } = {}): Promise<TopUp | undefined> {
  const { rows } = await db.query<TopUpRow>(`${selectTopUp} WHERE t.provider_order_id = $1${options.forUpdate ? ' FOR UPDATE OF t' : ''}`, [orderId]);
  return rows[0] ? toTopUp(rows[0]) : undefined;
}

/**
 * The organisation's top-ups, newest first, after the top-up `beforeId` (the previous page's last),
 * `limit` of them and whether more follow.
 */
export async function listTopUps(db: Queryable, organisationId: string, page: { beforeId: string | undefined; limit: number }): Promise<{ items: TopUp[]; hasMore: boolean }> {
  const { rows } = await db.query<TopUpRow>(
    `${selectTopUp}
     WHERE t.organisation_id = $1
       AND ($2::text IS NULL OR (t.created_at, t.id) < (SELECT c.created_at, c.id FROM topups c WHERE c.id = $2 AND c.organisation_id = $1))
     ORDER BY t.created_at DESC, t.id DESC
     LIMIT $3`,
    [organisationId, page.beforeId ?? null, page.limit + 1],
  );
  return { items: rows.slice(0, page.limit).map(toTopUp), hasMore: rows.length > page.limit };
}

/** A top-up's transitions, oldest first. */
export async function listTransitions(db: Queryable, topUpId: string): Promise<TopUpTransition[]> {
  const { rows } = await db.query<{ from_state: TopUpState | null; to_state: TopUpState; cause: string; details: Record<string, string | null>; occurred_at: Date }>(
    'SELECT from_state, to_state, cause, details, occurred_at FROM topup_transitions WHERE topup_id = $1 ORDER BY id',
    [topUpId],
  );
  return rows.map((row) => ({ fromState: row.from_state, toState: row.to_state, cause: row.cause, details: row.details, occurredAt: row.occurred_at }));
}

/** Whether a transition with this cause already names this payment (e.g. a duplicate payment already refunded). */
export async function hasTransitionForPayment(db: Queryable, topUpId: string, cause: string, paymentId: string): Promise<boolean> {
  const { rows } = await db.query(
    `SELECT 1 FROM topup_transitions WHERE topup_id = $1 AND cause = $2 AND details->>'payment_id' = $3 LIMIT 1`,
    [topUpId, cause, paymentId],
  );
  return rows.length > 0;
}

/** The tax documents issued for a top-up, in issue order. */
export async function listTopUpDocuments(db: Queryable, topUpId: string): Promise<TopUpDocumentRef[]> {
  const { rows } = await db.query<TopUpDocumentRef>('SELECT id, kind, serial FROM tax_documents WHERE topup_id = $1 ORDER BY issued_at, id', [topUpId]);
  return rows;
}

/**
 * Records a provider webhook event as processed, in the transaction of its effect; false when it
 * was already (a repeated delivery: its effect is not applied again).
 */
export async function recordWebhookEvent(tx: Queryable, eventId: string, eventType: string): Promise<boolean> {
  const { rowCount } = await tx.query(
    'INSERT INTO payment_webhook_events (event_id, event_type) VALUES ($1, $2) ON CONFLICT (event_id) DO NOTHING',
    [eventId, eventType],
  );
  return rowCount === 1;
}

/**
 * Claims top-ups for one reconciliation pass, at most `limit`, and returns their ids. Untouched for
 * `quietMs`: paid or credited ones (a settlement cut short: credit and invoice to finish), those
 * awaiting payment (settled from the provider's answer, or expired), failed ones until they expire
 * (a capture may still follow) and created ones (an order never attached: expired in time).
 * Untouched for `lateQuietMs`: failed or expired ones with an order, for `lateWindowMs` after their
 * expiry — the order can still be paid (a late authorisation, a buyer paying from an old tab), and
 * money received is credited whenever it comes. Rows another replica holds are skipped (FOR UPDATE
 * SKIP LOCKED) and the claimed ones touched (updated_at), so replicas do not work on the same
 * top-up and the next pass starts with others.
 */
export async function claimTopUpsToReconcile(tx: Queryable, options: { quietMs: number; lateQuietMs: number; lateWindowMs: number; limit: number }): Promise<string[]> {
  const { rows } = await tx.query<{ id: string }>(
    `UPDATE topups SET updated_at = clock_timestamp()
     WHERE id IN (
       SELECT id FROM topups
       WHERE (updated_at <= clock_timestamp() - make_interval(secs => $1::double precision / 1000)
              AND (state IN ('created', 'pending_payment', 'paid', 'credited') OR (state = 'failed' AND expires_at > clock_timestamp())))
          OR (updated_at <= clock_timestamp() - make_interval(secs => $3::double precision / 1000)
              AND state IN ('failed', 'expired') AND provider_order_id IS NOT NULL
              AND expires_at <= clock_timestamp() AND expires_at > clock_timestamp() - make_interval(secs => $4::double precision / 1000))
       ORDER BY updated_at
       LIMIT $2
       FOR UPDATE SKIP LOCKED)
     RETURNING id`,
    [options.quietMs, options.limit, options.lateQuietMs, options.lateWindowMs],
  );
  return rows.map((row) => row.id);
}

/** The top-up a document is issued for, locked for this transaction. */
export interface TopUpForDocument {
  id: string;
  organisation_id: string;
  price_paise: bigint;
  credit_micros: bigint;
  state: string;
  billing_snapshot: unknown;
  package_name: string;
}

/** Reads and locks (FOR UPDATE) the top-up a document is issued for, with its package's name; not_found when there is none. */
export async function lockTopUpForDocument(tx: Queryable, topUpId: string): Promise<TopUpForDocument> {
  const { rows } = await tx.query<TopUpForDocument>(
    `SELECT t.id, t.organisation_id, t.price_paise, t.credit_micros, t.state, t.billing_snapshot, p.name AS package_name
     FROM topups t JOIN topup_packages p ON p.id = t.package_id WHERE t.id = $1 FOR UPDATE OF t`,
    [topUpId],
  );
  const topUp = rows[0];
  if (topUp === undefined) throw new GatewayError('not_found', { publicMessage: 'No such top-up.' });
  return topUp;
}
