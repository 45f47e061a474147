import type { Database, Queryable } from '@gateway/db';
import { GatewayError } from '@gateway/errors';
import type { Logger } from '@gateway/logger';
import { personIdOf, requirePlatformAdmin, systemActor, tokenIdOf, type Actor } from '../../common/domain/actor.ts';
import { raiseAlert } from '../../alerts/domain/alert-store.ts';
import { recordAuditEvent } from '../../common/domain/audit-log.ts';
import { refundDebitMicros } from './refund-debit-micros.ts';
import { newId } from '../../common/domain/ids.ts';
import type { LedgerPort } from '../../common/domain/ledger-port.ts';
import type { InvoicingSettings } from '../../invoicing/domain/invoicing-settings.ts';
import type { BillingSettings } from './billing-settings.ts';
import type { PaymentProvider } from './payment-provider.ts';
import { notFound, type ResourceAccess } from '../../common/domain/resource-access.ts';
import { issueCreditNote } from '../../invoicing/domain/tax-documents.ts';
import { canMove, moveTopUp } from './topup-state.ts';
import { findTopUp, type TopUp } from './topup-store.ts';
import {
  claimDueRefunds, creditNotedPaiseOf, recordFailure, recordProviderRefusal, recordWait, refundColumns, toRefund,
  type Refund, type RefundRow, type RefundState,
} from './refund-store.ts';

/** What the refunds aggregate is built from. */
export interface RefundsServiceDeps {
  db: Database;
  ledger: LedgerPort;
  access: ResourceAccess;
  settings: Pick<BillingSettings, 'reconcileIntervalMs'>;
  /** The settings a refund's credit note is issued under. */
  invoicing: InvoicingSettings;
  provider: PaymentProvider | undefined;
  /** Called once per refund that became failed, after the commit that made it so (the platform admins' metric); none: not counted. */
  onRefundFailed?: (() => void) | undefined;
}

/** What carrying refunds forward needs (the refund job has no actor, so no access checks). */
type RefundStepsDeps = Omit<RefundsServiceDeps, 'access'>;

/** What creating a refund answered: the refund, and whether it was a replay of the same Idempotency-Key. */
export interface RefundOutcome {
  refund: Refund;
  replayed: boolean;
}

/** The ledger credit a top-up was credited with (one per top-up): the credit its refunds return money of. */
function topUpCreditId(topUpId: string): string {
  return `topup:${topUpId}`;
}

/** The top-up states a new refund may start from: its money was credited and its invoice issued. */
const refundableStates: ReadonlySet<string> = new Set(['invoiced']);

/**
 * The refund job's pace, ms (the reconcile interval): it looks for due refunds this often,
 * waits this long (doubling, at most an hour) before trying a failed step again, and leaves a
 * refund that a request or another replica is working on alone for this long.
 */
function jobIntervalMs(settings: Pick<BillingSettings, 'reconcileIntervalMs'>): number {
  return settings.reconcileIntervalMs;
}

/** A failure's message as stored on the refund: the catalogue's public message (never a secret), else the error's name. */
function failureText(error: unknown): string {
  if (error instanceof GatewayError) return `${error.code}: ${error.publicMessage}`.slice(0, 500);
  return error instanceof Error ? error.name : 'unknown failure';
}

/** The ledger's key for giving a refund's money back (ReverseRefund): one per refund, never the refund's own. */
export function refundReversalId(refundId: string): string {
  return `reversal:${refundId}`;
}

/**
 * Whether a provider error is a permanent refusal of the refund: its 4xx answers other than
 * 401/403/409/429 (the adapter's `invalid_request`: the payment older than six months, the
 * merchant balance short, already refunded, an amount beyond the payment). Everything else
 * (5xx, timeouts, refused credentials, 409 "in progress") is transient and retried.
 */
function isPermanentRefusal(error: unknown): error is GatewayError {
  return error instanceof GatewayError && error.code === 'invalid_request';
}

/**
 * Carries one refund forward from whatever state it is in, one idempotent step after another:
 * the ledger debit (RefundCredit, refund_id = the refund's id), the provider refund
 * (X-Refund-Idempotency = the refund's id), the credit note once the provider reports the refund
 * processed (idempotent per refund id), and the top-up's move to refunded once its refunds add up
 * to its price. A permanent refusal by the provider gives the money back (ReverseRefund, key
 * reversal:<refund id>), ends the refund as failed with the provider's reason, audits it, raises
 * the organisation's alert and counts it for platform admins (onRefundFailed). Each step's result
 * is stored before the next begins, under a guard on the state it starts from, so a request and
 * the job working on the same refund at once never do a step twice. A ledger refusal ends the refund as refused and throws `conflict`; any other
 * failure is recorded on the refund for the job to retry (with doubling waits) and thrown. A
 * refund the provider reports pending waits there; with `pollPending` (the job) the provider is
 * asked again.
 */
async function carryForward(deps: RefundStepsDeps, refundId: string, options: { pollPending?: boolean } = {}): Promise<Refund> {
  const { db, ledger, provider, settings } = deps;
  for (;;) {
    const { rows } = await db.query<RefundRow>(`SELECT ${refundColumns} FROM refunds WHERE id = $1`, [refundId]);
    const row = rows[0];
    if (!row) throw new Error(`refund ${refundId} vanished`);
    const refund = toRefund(row);
    try {
      switch (refund.state) {
        case 'credit_noted': case 'failed':
          return refund;
        case 'refused':
          throw new GatewayError('conflict', { publicMessage: refund.refusalReason ?? 'The refund was refused.' });
        case 'requested': {
          try {
            await ledger.refundCredit({
              refundId: refund.id, organisationId: refund.organisationId, creditId: topUpCreditId(refund.topUpId),
              amountMicros: refund.debitMicros, reason: `refund ${refund.id} of ${refund.topUpId}`,
            });
          } catch (error) {
            // The ledger refused (spent, held or unpurchased money, or nothing left of the credit): nothing moved, the refund ends here.
            if (error instanceof GatewayError && error.code === 'conflict') {
              await db.query(
                `UPDATE refunds SET state = 'refused', refusal_reason = $2, last_error = NULL, updated_at = clock_timestamp()
                 WHERE id = $1 AND state = 'requested'`,
                [refund.id, error.publicMessage],
              );
              continue;
            }
            throw error;
          }
          await db.query(
            `UPDATE refunds SET state = 'debited', debited_at = clock_timestamp(), attempts = 0, last_error = NULL, updated_at = clock_timestamp()
             WHERE id = $1 AND state = 'requested'`,
            [refund.id],
          );
          continue;
        }
        case 'debited': {
          if (!provider) throw new GatewayError('service_unavailable', { publicMessage: 'No payment provider is configured to refund through.' });
          const topUp = await findTopUp(db, refund.topUpId);
          if (!topUp?.providerPaymentId) throw new Error(`top-up ${refund.topUpId} has no captured payment to refund`);
          let providerRefund;
          try {
            providerRefund = await provider.refundPayment({
              paymentId: topUp.providerPaymentId, amountPaise: refund.amountPaise, receipt: refund.id,
              notes: { refund_id: refund.id, topup_id: refund.topUpId },
            });
          } catch (error) {
            if (!isPermanentRefusal(error)) throw error;
            await recordProviderRefusal(db, refund.id, ['debited'], error.publicMessage);
            continue;
          }
          if (providerRefund.status === 'failed') {
            await recordProviderRefusal(db, refund.id, ['debited'], 'The payment provider reports the refund failed.', providerRefund.id);
            continue;
          }
          const next = providerRefund.status === 'processed' ? 'provider_refunded' : 'provider_pending';
          await db.query(
            `UPDATE refunds SET state = $3, provider_refund_id = $2, provider_refunded_at = CASE WHEN $3 = 'provider_refunded' THEN clock_timestamp() END,
               attempts = 0, last_error = NULL, updated_at = clock_timestamp(),
               next_attempt_at = clock_timestamp() + $4::bigint * interval '1 millisecond'
             WHERE id = $1 AND state = 'debited'`,
            [refund.id, providerRefund.id, next, jobIntervalMs(settings)],
          );
          continue;
        }
        case 'provider_pending': {
          // Waiting for refund.processed or refund.failed; the job also asks, in case a webhook was lost.
          if (!options.pollPending || !provider || refund.providerRefundId === null) return refund;
          const topUp = await findTopUp(db, refund.topUpId);
          const current = await provider.fetchRefund(topUp!.providerPaymentId!, refund.providerRefundId);
          if (current.status === 'failed') {
            await recordProviderRefusal(db, refund.id, ['provider_pending'], 'The payment provider reports the refund failed.');
            continue;
          }
          if (current.status === 'pending') {
            await recordWait(db, refund.id, jobIntervalMs(settings));
            return refund;
          }
          await db.query(
            `UPDATE refunds SET state = 'provider_refunded', provider_refunded_at = clock_timestamp(), attempts = 0, last_error = NULL,
               updated_at = clock_timestamp() WHERE id = $1 AND state = 'provider_pending'`,
            [refund.id],
          );
          continue;
        }
        case 'provider_refused': {
          // The provider will not return the money: the balance gets it back, under its own key.
          const reversal = await ledger.reverseRefund({
            reversalId: refundReversalId(refund.id), organisationId: refund.organisationId, refundId: refund.id,
            reason: `refund ${refund.id} refused by the payment provider`,
          });
          const failedHere = await db.transaction(async (tx) => {
            const current = await tx.query<{ state: RefundState }>('SELECT state FROM refunds WHERE id = $1 FOR UPDATE', [refund.id]);
            if (current.rows[0]?.state !== 'provider_refused') return false;
            await tx.query(
              `UPDATE refunds SET state = 'failed', failed_at = clock_timestamp(), attempts = 0, last_error = NULL, updated_at = clock_timestamp()
               WHERE id = $1`,
              [refund.id],
            );
            await recordAuditEvent(tx, {
              actor: systemActor, organisationId: refund.organisationId, action: 'topup.refund_failed', resourceType: 'refund', resourceId: refund.id,
              changes: {
                state: { before: 'provider_refused', after: 'failed' },
                failure_reason: { before: null, after: refund.failureReason },
                returned_micros: { before: null, after: reversal.reversedMicros.toString() },
              },
            });
            await raiseAlert(tx, {
              kind: 'refund_failed', organisationId: refund.organisationId, projectId: null, occurredAt: new Date(),
              sourceKey: `refund_failed:${refund.id}`,
              message: `The refund ${refund.id} of top-up ${refund.topUpId} (${refund.amountPaise} paise) failed at the payment provider: ${refund.failureReason ?? 'no reason given'}. Its ${reversal.reversedMicros} µ₹ are back in the balance.`.slice(0, 1000),
              details: {
                refund_id: refund.id, topup_id: refund.topUpId, amount_paise: refund.amountPaise.toString(),
                returned_micros: reversal.reversedMicros.toString(), failure_reason: refund.failureReason,
              },
            }, { email: false, webhook: false });
            return true;
          });
          // Counted by whichever of a request and the job made the move, once it is committed, so a replay or a retry never counts it again.
          if (failedHere) deps.onRefundFailed?.();
          continue;
        }
        case 'provider_refunded': {
          await db.transaction(async (tx) => {
            const topUp = await findTopUp(tx, refund.topUpId, { forUpdate: true });
            const current = await tx.query<{ state: RefundState }>('SELECT state FROM refunds WHERE id = $1 FOR UPDATE', [refund.id]);
            if (!topUp || current.rows[0]?.state !== 'provider_refunded') return;
            const note = await issueCreditNote(tx, deps.invoicing, { topUpId: refund.topUpId, refundId: refund.id, amountPaise: refund.amountPaise });
            await tx.query(
              `UPDATE refunds SET state = 'credit_noted', credit_note_id = $2, credit_noted_at = clock_timestamp(),
                 attempts = 0, last_error = NULL, updated_at = clock_timestamp()
               WHERE id = $1`,
              [refund.id, note.documentId],
            );
            await moveTopUpIfFullyRefunded(tx, topUp, refund.id);
          });
          continue;
        }
      }
    } catch (error) {
      if (!(error instanceof GatewayError && error.code === 'conflict' && refund.state === 'refused')) {
        await recordFailure(db, refund.id, failureText(error), jobIntervalMs(settings));
      }
      throw error;
    }
  }
}

/** Moves the top-up to refunded once the credit-noted refunds add up to its whole price (in the caller's transaction, top-up locked). */
async function moveTopUpIfFullyRefunded(tx: Queryable, topUp: TopUp, refundId: string): Promise<void> {
  if (await creditNotedPaiseOf(tx, topUp.id) < topUp.pricePaise || !canMove(topUp.state, 'refunded')) return;
  await moveTopUp(tx, { topUpId: topUp.id, from: topUp.state, to: 'refunded', cause: 'refund', details: { refund_id: refundId } });
}

/**
 * Carries forward refunds the job finds due (not final, next_attempt_at passed), at most `limit`
 * per pass. Each is claimed by pushing its next attempt out first (SKIP LOCKED), so admin replicas
 * never work on the same refund at once; a step that fails is recorded and retried later.
 * Returns how many refunds it worked on.
 */
export async function advanceDueRefunds(deps: RefundStepsDeps & { logger: Logger }, limit = 20): Promise<number> {
  const claimed = await deps.db.transaction((tx) => claimDueRefunds(tx, limit, jobIntervalMs(deps.settings)));
  for (const id of claimed) {
    try {
      const refund = await carryForward(deps, id, { pollPending: true });
      deps.logger.info({ refundId: id, state: refund.state }, 'refund carried forward');
    } catch (error) {
      if (error instanceof GatewayError && error.code === 'conflict') {
        deps.logger.info({ refundId: id, state: 'refused' }, 'refund refused by the ledger');
      } else {
        deps.logger.warn({ refundId: id, err: failureText(error) }, 'refund step failed; retried later');
      }
    }
  }
  return claimed.length;
}

/** Refunds of a top-up's unspent balance, with their credit notes (route tag "billing"). */
export function createRefundsService(deps: RefundsServiceDeps) {
  const { db, access } = deps;

  /** The top-up of this organisation, or not_found (another organisation's looks the same). */
  async function requireTopUp(tx: Queryable, organisationId: string, topUpId: string, options: { forUpdate?: boolean } = {}): Promise<TopUp> {
    const topUp = await findTopUp(tx, topUpId, options);
    if (!topUp || topUp.organisationId !== organisationId) throw notFound('top-up', topUpId, 'topup_id');
    return topUp;
  }

  return {
    /**
     * Refunds `amountPaise` of a top-up (platform admins only), once per Idempotency-Key: records
     * the refund, then carries it forward (ledger debit, provider refund, credit note). A refund
     * beyond what is left of the price is refused before anything moves; one beyond the unspent
     * balance is refused by the ledger (conflict, "The refund exceeds the unspent balance"), and
     * stays refused on a replay. A permanent refusal by the provider (a 400) answers the refund
     * `failed`, with the provider's reason and its money back in the balance; one the provider
     * reports pending answers `provider_pending`. A transient provider failure leaves the refund `debited` for the refund
     * job; the answer then shows that state.
     */
    async createRefund(actor: Actor, organisationId: string, topUpId: string, input: { amountPaise: bigint; idempotencyKey: string }): Promise<RefundOutcome> {
      await access.requireOrganisation(actor, organisationId);
      requirePlatformAdmin(actor);
      const { refundId, replayed } = await db.transaction(async (tx) => {
        const topUp = await requireTopUp(tx, organisationId, topUpId, { forUpdate: true });
        const existing = await tx.query<RefundRow>(
          `SELECT ${refundColumns} FROM refunds WHERE topup_id = $1 AND idempotency_key = $2`, [topUpId, input.idempotencyKey]);
        const earlier = existing.rows[0];
        if (earlier) {
          if (earlier.amount_paise !== input.amountPaise) {
            throw new GatewayError('idempotency_conflict', {
              publicMessage: 'This Idempotency-Key was already used for a refund of this top-up with a different amount_paise.',
              param: 'Idempotency-Key',
            });
          }
          return { refundId: earlier.id, replayed: true };
        }
        if (!deps.provider) throw new GatewayError('service_unavailable', { publicMessage: 'No payment provider is configured, so nothing can be refunded.' });
        if (!refundableStates.has(topUp.state) || topUp.providerPaymentId === null) {
          throw new GatewayError('conflict', { publicMessage: `A top-up in state ${topUp.state} cannot be refunded; only an invoiced one can.` });
        }
        const taken = await tx.query<{ refunded: bigint }>(
          `SELECT coalesce(sum(amount_paise), 0)::bigint AS refunded FROM refunds WHERE topup_id = $1 AND state NOT IN ('refused', 'failed')`, [topUpId]);
        const left = topUp.pricePaise - taken.rows[0]!.refunded;
        if (input.amountPaise > left) {
          throw new GatewayError('conflict', {
            publicMessage: `The refund exceeds what is left of the top-up's price: at most ${left} paise can still be refunded.`,
            param: 'amount_paise',
          });
        }
        const debitMicros = refundDebitMicros(topUp, input.amountPaise);
        if (debitMicros <= 0n) {
          throw new GatewayError('invalid_request', { publicMessage: 'The refund is too small to return any balance.', param: 'amount_paise' });
        }
        const id = newId('refund');
        await tx.query(
          `INSERT INTO refunds (id, organisation_id, topup_id, amount_paise, debit_micros, state, idempotency_key,
             created_by_person_id, created_by_token_id, next_attempt_at)
           VALUES ($1, $2, $3, $4, $5, 'requested', $6, $7, $8, clock_timestamp() + $9::bigint * interval '1 millisecond')`,
          [id, organisationId, topUpId, input.amountPaise, debitMicros, input.idempotencyKey, personIdOf(actor), tokenIdOf(actor), jobIntervalMs(deps.settings)],
        );
        await recordAuditEvent(tx, {
          actor, organisationId, action: 'topup.refund', resourceType: 'refund', resourceId: id,
          changes: {
            topup_id: { before: null, after: topUpId },
            amount_paise: { before: null, after: input.amountPaise.toString() },
            debit_micros: { before: null, after: debitMicros.toString() },
          },
        });
        return { refundId: id, replayed: false };
      });
      try {
        return { refund: await carryForward(deps, refundId), replayed };
      } catch (error) {
        // A refusal is the answer (409); a ledger that did not answer is the caller's to retry
        // (the job retries too); any later failure was recorded and the job carries the refund
        // on, so the caller sees where it stands.
        const { rows } = await db.query<RefundRow>(`SELECT ${refundColumns} FROM refunds WHERE id = $1`, [refundId]);
        const refund = toRefund(rows[0]!);
        if (refund.state === 'refused' || refund.state === 'requested') throw error;
        return { refund, replayed };
      }
    },

    /** The refunds of a top-up, newest first (viewers of its organisation). */
    async listRefunds(actor: Actor, organisationId: string, topUpId: string): Promise<Refund[]> {
      await access.requireOrganisation(actor, organisationId);
      await requireTopUp(db, organisationId, topUpId);
      const { rows } = await db.query<RefundRow>(
        `SELECT ${refundColumns} FROM refunds WHERE topup_id = $1 ORDER BY created_at DESC, id DESC`, [topUpId]);
      return rows.map(toRefund);
    },
  };
}
