import type { Database, Queryable } from '@gateway/db';
import { GatewayError } from '@gateway/errors';
import type { Logger } from '@gateway/logger';
import { requirePlatformAdmin, type Actor } from '../../common/domain/actor.ts';
import { raiseAlert } from '../../alerts/domain/alert-store.ts';
import { newId } from '../../common/domain/ids.ts';
import type { LedgerPort } from '../../common/domain/ledger-port.ts';
import type { BillingSettings } from './billing-settings.ts';
import { refundDebitMicros } from './refund-debit-micros.ts';
import { markProviderRefundFailed, markProviderRefundProcessed } from './refund-store.ts';
import { refundReversalId } from './refunds-service.ts';
import { recordWebhookEvent } from './topup-store.ts';

/** A dispute (chargeback) as the provider's webhook reports it; amounts in paise. */
interface ProviderDispute {
  id: string;
  paymentId: string;
  amountPaise: bigint;
  /** What the provider took from the merchant: 0 unless the dispute was lost. */
  amountDeductedPaise: bigint;
  /** open, under_review, won, lost or closed. */
  status: string;
}

/** The provider's refund and dispute events, as the admin reads them (after the signature is verified). Amounts in paise. */
export type RefundWebhookEvent =
  | { type: 'refund.processed' | 'refund.failed'; refundId: string; paymentId: string; receipt: string | null; amountPaise: bigint; reason: string | null }
  | { type: 'payment.dispute.created' | 'payment.dispute.won' | 'payment.dispute.lost' | 'payment.dispute.closed'; dispute: ProviderDispute };

/** The event names RefundWebhookEvent covers. */
export const refundWebhookEventNames: ReadonlySet<string> = new Set([
  'refund.processed', 'refund.failed', 'payment.dispute.created', 'payment.dispute.won', 'payment.dispute.lost', 'payment.dispute.closed',
]);

/** What applying refund and dispute events needs. */
export interface RefundEventDeps {
  db: Database;
  ledger: LedgerPort;
  /** The refund job's interval is the first retry wait of a failed step. */
  settings: Pick<BillingSettings, 'reconcileIntervalMs'>;
  logger?: Logger | undefined;
  /** Called once per reversal recorded with a shortfall, after the commit that recorded it (the platform admins' metric); none: not counted. */
  onPaymentShortfall?: (() => void) | undefined;
}

/** to_debit → debited → (dispute won) to_return → returned; closed: a dispute won before anything was taken (migration 0011). */
type ReversalState = 'to_debit' | 'debited' | 'to_return' | 'returned' | 'closed';

/** Money a payer got back outside the gateway (a dashboard refund or a dispute), and what the balance gave of it. */
export interface PaymentReversal {
  id: string;
  organisationId: string;
  topUpId: string;
  kind: 'refund' | 'dispute';
  /** The provider's refund or dispute id. */
  providerRef: string;
  providerPaymentId: string;
  /** What the payer got back or disputes, paise. */
  amountPaise: bigint;
  /** Its share of the top-up's credit, µ₹. */
  debitMicros: bigint;
  /** What the ledger took (null until debited). */
  takenMicros: bigint | null;
  /** What the balance could not cover (null until debited): the organisation is flagged while it is above zero. */
  shortfallMicros: bigint | null;
  state: ReversalState;
  disputeStatus: string | null;
  lastError: string | null;
  createdAt: Date;
  updatedAt: Date;
}

interface ReversalRow {
  id: string; organisation_id: string; topup_id: string; kind: 'refund' | 'dispute'; provider_ref: string; provider_payment_id: string;
  amount_paise: bigint; debit_micros: bigint; taken_micros: bigint | null; shortfall_micros: bigint | null; state: ReversalState;
  dispute_status: string | null; last_error: string | null; created_at: Date; updated_at: Date;
}

const reversalColumns = `id, organisation_id, topup_id, kind, provider_ref, provider_payment_id, amount_paise, debit_micros, taken_micros,
  shortfall_micros, state, dispute_status, last_error, created_at, updated_at`;

function toReversal(row: ReversalRow): PaymentReversal {
  return {
    id: row.id, organisationId: row.organisation_id, topUpId: row.topup_id, kind: row.kind, providerRef: row.provider_ref,
    providerPaymentId: row.provider_payment_id, amountPaise: row.amount_paise, debitMicros: row.debit_micros, takenMicros: row.taken_micros,
    shortfallMicros: row.shortfall_micros, state: row.state, disputeStatus: row.dispute_status, lastError: row.last_error,
    createdAt: row.created_at, updatedAt: row.updated_at,
  };
}

/** The longest wait of the job before it tries a failed step again, ms. */
const longestRetryMs = 3_600_000;

/**
 * Whether a dispute's outcome is in the merchant's favour, against it, or not yet known: lost when
 * the provider deducted money (or says lost), won when it ended (won, or closed) with nothing
 * deducted.
 */
function disputeOutcome(dispute: ProviderDispute): 'won' | 'lost' | 'open' {
  if (dispute.amountDeductedPaise > 0n || dispute.status === 'lost') return 'lost';
  if (dispute.status === 'won' || dispute.status === 'closed') return 'won';
  return 'open';
}

/** The top-up whose captured payment this is (only those carry money in a balance), locked. */
async function topUpOfPayment(tx: Queryable, paymentId: string): Promise<{ id: string; organisationId: string; creditMicros: bigint; pricePaise: bigint } | undefined> {
  const { rows } = await tx.query<{ id: string; organisation_id: string; credit_micros: bigint; price_paise: bigint }>(
    `SELECT id, organisation_id, credit_micros, price_paise FROM topups WHERE provider_payment_id = $1 FOR UPDATE`, [paymentId]);
  const row = rows[0];
  return row ? { id: row.id, organisationId: row.organisation_id, creditMicros: row.credit_micros, pricePaise: row.price_paise } : undefined;
}

/** Records money a payer got back outside the gateway, once per provider refund or dispute id; returns its id (undefined: not a top-up's payment). */
async function recordReversal(tx: Queryable, input: { kind: 'refund' | 'dispute'; providerRef: string; paymentId: string; amountPaise: bigint; disputeStatus: string | null }): Promise<string | undefined> {
  const topUp = await topUpOfPayment(tx, input.paymentId);
  if (!topUp || input.amountPaise <= 0n) return undefined;
  const debitMicros = refundDebitMicros(topUp, input.amountPaise < topUp.pricePaise ? input.amountPaise : topUp.pricePaise);
  const { rows } = await tx.query<{ id: string }>(
    `INSERT INTO payment_reversals (id, organisation_id, topup_id, kind, provider_ref, provider_payment_id, amount_paise, debit_micros, state, dispute_status)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'to_debit', $9)
     ON CONFLICT (provider_ref) DO UPDATE SET updated_at = payment_reversals.updated_at RETURNING id`,
    [newId('paymentReversal'), topUp.organisationId, topUp.id, input.kind, input.providerRef, input.paymentId, input.amountPaise, debitMicros, input.disputeStatus],
  );
  return rows[0]!.id;
}

/**
 * Applies a dispute's new status: won before anything was taken closes it; won after the hold
 * gives the hold back (to_return); lost keeps what was taken out (and a dispute first heard of as
 * lost is debited). Returns the reversal to carry forward.
 */
async function recordDisputeStatus(tx: Queryable, dispute: ProviderDispute): Promise<string | undefined> {
  const outcome = disputeOutcome(dispute);
  let id = (await tx.query<{ id: string }>('SELECT id FROM payment_reversals WHERE provider_ref = $1 FOR UPDATE', [dispute.id])).rows[0]?.id;
  if (id === undefined) {
    // Never heard of it while open: money deducted is debited now; one won or still open holds nothing yet.
    if (outcome === 'won') return undefined;
    id = await recordReversal(tx, { kind: 'dispute', providerRef: dispute.id, paymentId: dispute.paymentId, amountPaise: dispute.amountPaise, disputeStatus: dispute.status });
    return id;
  }
  await tx.query(
    `UPDATE payment_reversals SET dispute_status = $2, updated_at = clock_timestamp(), next_attempt_at = clock_timestamp(),
       state = CASE WHEN $3 = 'won' AND state = 'to_debit' THEN 'closed'
                    WHEN $3 = 'won' AND state = 'debited' THEN 'to_return' ELSE state END
     WHERE id = $1`,
    [id, dispute.status, outcome],
  );
  return id;
}

/**
 * Applies one refund or dispute event, once per event id (recorded in the same transaction):
 * refund.processed moves a refund of ours on (its credit note follows) or, for a top-up payment
 * the gateway never refunded (a refund from the provider's dashboard), records what the payer got
 * back; refund.failed refuses a refund of ours for good (its money goes back); dispute events hold,
 * give back or keep the disputed amount. The ledger is called after the commit (never inside a
 * transaction); a failure there is left to the refund job. Returns whether the event was new.
 */
export async function applyRefundWebhookEvent(deps: RefundEventDeps, event: RefundWebhookEvent, eventId: string): Promise<'processed' | 'repeated'> {
  const applied = await deps.db.transaction(async (tx): Promise<{ repeated: boolean; reversalId: string | undefined }> => {
    if (!await recordWebhookEvent(tx, eventId, event.type)) return { repeated: true, reversalId: undefined };
    switch (event.type) {
      case 'refund.processed': {
        if (await markProviderRefundProcessed(tx, { providerRefundId: event.refundId, receipt: event.receipt })) return { repeated: false, reversalId: undefined };
        // Not ours: a duplicate payment's refund (not a top-up's payment, so nothing matches) or one made from the dashboard.
        const reversalId = await recordReversal(tx, { kind: 'refund', providerRef: event.refundId, paymentId: event.paymentId, amountPaise: event.amountPaise, disputeStatus: null });
        return { repeated: false, reversalId };
      }
      case 'refund.failed':
        await markProviderRefundFailed(tx, {
          providerRefundId: event.refundId, receipt: event.receipt,
          reason: event.reason === null ? 'The payment provider reports the refund failed.' : `The payment provider reports the refund failed: ${event.reason}`,
        });
        return { repeated: false, reversalId: undefined };
      case 'payment.dispute.created':
        return { repeated: false, reversalId: await recordReversal(tx, {
          kind: 'dispute', providerRef: event.dispute.id, paymentId: event.dispute.paymentId, amountPaise: event.dispute.amountPaise, disputeStatus: event.dispute.status,
        }) };
      case 'payment.dispute.won': case 'payment.dispute.lost': case 'payment.dispute.closed':
        return { repeated: false, reversalId: await recordDisputeStatus(tx, event.dispute) };
    }
  });
  if (applied.reversalId !== undefined) {
    try {
      await carryReversalForward(deps, applied.reversalId);
    } catch (error) {
      deps.logger?.warn({ reversalId: applied.reversalId, err: error instanceof GatewayError ? error.code : 'internal_error' }, 'payment reversal step failed; retried by the refund job');
    }
  }
  return applied.repeated ? 'repeated' : 'processed';
}

/**
 * Carries one reversal forward: to_debit → the ledger's RefundCredit with up_to_available (refund
 * id = the reversal's id, so a retry takes nothing twice), recording what it took and the
 * shortfall (alerted and counted once: onPaymentShortfall); to_return → the ledger's
 * ReverseRefund (reversal:<id>) gives a won dispute's hold back. A failure is recorded for the job to retry with doubling waits, and thrown.
 */
async function carryReversalForward(deps: RefundEventDeps, reversalId: string): Promise<void> {
  const { db, ledger, settings } = deps;
  for (;;) {
    const row = (await db.query<ReversalRow>(`SELECT ${reversalColumns} FROM payment_reversals WHERE id = $1`, [reversalId])).rows[0];
    if (!row) return;
    const reversal = toReversal(row);
    try {
      if (reversal.state === 'to_debit') {
        const taken = reversal.debitMicros === 0n ? 0n : (await ledger.refundCredit({
          refundId: reversal.id, organisationId: reversal.organisationId, creditId: `topup:${reversal.topUpId}`, amountMicros: reversal.debitMicros,
          reason: `${reversal.kind} ${reversal.providerRef} made outside the gateway`, upToAvailable: true,
        })).refundedMicros;
        const shortfall = reversal.debitMicros - taken;
        const flagged = await db.transaction(async (tx) => {
          // A dispute won meanwhile goes straight on to give the hold back.
          const { rowCount } = await tx.query(
            `UPDATE payment_reversals SET taken_micros = $2, shortfall_micros = $3, attempts = 0, last_error = NULL, updated_at = clock_timestamp(),
               next_attempt_at = clock_timestamp(), state = CASE WHEN state = 'closed' THEN 'to_return' ELSE 'debited' END
             WHERE id = $1 AND state IN ('to_debit', 'closed') AND taken_micros IS NULL`,
            [reversal.id, taken, shortfall],
          );
          if (rowCount !== 1 || shortfall === 0n) return false;
          await raiseAlert(tx, {
            kind: 'payment_shortfall', organisationId: reversal.organisationId, projectId: null, occurredAt: new Date(),
            sourceKey: `payment_shortfall:${reversal.id}`,
            message: `The payer got ${reversal.amountPaise} paise back outside the gateway (${reversal.kind} ${reversal.providerRef} of top-up ${reversal.topUpId}), `
              + `${reversal.debitMicros} µ₹ of balance; only ${taken} µ₹ was available, so ${shortfall} µ₹ is a shortfall.`,
            details: {
              reversal_id: reversal.id, kind: reversal.kind, provider_ref: reversal.providerRef, topup_id: reversal.topUpId,
              debit_micros: reversal.debitMicros.toString(), taken_micros: taken.toString(), shortfall_micros: shortfall.toString(),
            },
          }, { email: false, webhook: false });
          return true;
        });
        // Counted by whichever of a webhook and the job recorded it, once committed: the guard on taken_micros lets only one do so.
        if (flagged) deps.onPaymentShortfall?.();
        continue;
      }
      if (reversal.state === 'to_return') {
        if ((reversal.takenMicros ?? 0n) > 0n) {
          await ledger.reverseRefund({
            reversalId: refundReversalId(reversal.id), organisationId: reversal.organisationId, refundId: reversal.id,
            reason: `dispute ${reversal.providerRef} won`,
          });
        }
        // Won: nothing is owed any more, so no shortfall remains either.
        await db.query(
          `UPDATE payment_reversals SET state = 'returned', shortfall_micros = 0, attempts = 0, last_error = NULL, updated_at = clock_timestamp()
           WHERE id = $1 AND state = 'to_return'`,
          [reversal.id],
        );
        continue;
      }
      return;
    } catch (error) {
      await db.query(
        `UPDATE payment_reversals SET last_error = $2, attempts = attempts + 1, updated_at = clock_timestamp(),
           next_attempt_at = clock_timestamp() + least($3::bigint * power(2, least(attempts, 20))::bigint, $4::bigint) * interval '1 millisecond'
         WHERE id = $1`,
        [reversal.id, error instanceof GatewayError ? `${error.code}: ${error.publicMessage}`.slice(0, 500) : 'internal_error', settings.reconcileIntervalMs, longestRetryMs],
      );
      throw error;
    }
  }
}

/** Carries forward reversals the job finds due, at most `limit` per pass (claimed with SKIP LOCKED); returns how many. */
export async function advanceDueReversals(deps: RefundEventDeps, limit = 20): Promise<number> {
  const claimed = await deps.db.transaction(async (tx) => {
    const { rows } = await tx.query<{ id: string }>(
      `SELECT id FROM payment_reversals WHERE state IN ('to_debit', 'to_return') AND next_attempt_at <= clock_timestamp()
       ORDER BY next_attempt_at LIMIT $1 FOR UPDATE SKIP LOCKED`, [limit]);
    const ids = rows.map((row) => row.id);
    if (ids.length > 0) {
      await tx.query(`UPDATE payment_reversals SET next_attempt_at = clock_timestamp() + $2::bigint * interval '1 millisecond' WHERE id = ANY($1)`,
        [ids, deps.settings.reconcileIntervalMs]);
    }
    return ids;
  });
  for (const id of claimed) {
    try {
      await carryReversalForward(deps, id);
    } catch (error) {
      deps.logger?.warn({ reversalId: id, err: error instanceof GatewayError ? error.code : 'internal_error' }, 'payment reversal step failed; retried later');
    }
  }
  return claimed.length;
}

/** Payment reversals across organisations (platform admins), newest first: one organisation's, or only those with a shortfall. */
export function createPaymentReversalsService(deps: { db: Database }) {
  return {
    /** Lists reversals, newest first (at most 500); `shortfallOnly`: the organisations flagged (money the balance could not cover). */
    async listPaymentReversals(actor: Actor, filter: { organisationId?: string | undefined; shortfallOnly: boolean }): Promise<PaymentReversal[]> {
      requirePlatformAdmin(actor);
      const { rows } = await deps.db.query<ReversalRow>(
        `SELECT ${reversalColumns} FROM payment_reversals
         WHERE ($1::text IS NULL OR organisation_id = $1) AND (NOT $2 OR shortfall_micros > 0)
         ORDER BY created_at DESC, id DESC LIMIT 500`,
        [filter.organisationId ?? null, filter.shortfallOnly],
      );
      return rows.map(toReversal);
    },
  };
}
