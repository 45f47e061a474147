import { GatewayError } from '@gateway/errors';
import { requirePlatformAdmin, type Actor } from '../../common/domain/actor.ts';
import type { ProviderPayment } from './payment-provider.ts';
import { canMove, moveTopUp } from './topup-state.ts';
import { claimTopUpsToReconcile, findTopUp } from './topup-store.ts';
import { requireProvider, type TopUpsDeps } from './topups-deps.ts';
import { captureAuthorizedPayment, finishSettlement, recordFailedPayment, settleCapturedPayment } from './settlement.ts';
import { listUnmatchedPayments, type UnmatchedPayment } from './unmatched-payments.ts';

/** Top-ups reconciled per pass at most (the next pass takes the next ones). */
const reconcileBatch = 50;

/** Payments per page of the sweep's list (Razorpay's maximum). */
const sweepPageSize = 100;

/** Pages one sweep reads at most (10,000 payments), so a pass ends; the next pass starts again from the newest. */
const sweepMaxPages = 100;

/**
 * An order's payments as the provider has them; undefined when the provider does not know the
 * order (it answers 400: the local provider after a restart, or an order made with other keys).
 * No payment can have been captured on an order the provider does not know, so such a top-up
 * simply expires at its deadline instead of failing every reconciliation pass forever.
 */
async function fetchPaymentsOfOrder(deps: TopUpsDeps, orderId: string): Promise<ProviderPayment[] | undefined> {
  try {
    return await requireProvider(deps).fetchOrderPayments(orderId);
  } catch (error) {
    if (error instanceof GatewayError && error.code === 'invalid_request') return undefined;
    throw error;
  }
}

/** Settles one claimed top-up from the provider's answer (or expires it); see reconcileTopUps. */
async function reconcileTopUp(deps: TopUpsDeps, topUpId: string): Promise<void> {
  const { db } = deps;
  const topUp = await findTopUp(db, topUpId);
  if (!topUp) return;
  if (topUp.state === 'paid' || topUp.state === 'credited') {
    await finishSettlement(deps, topUpId, 'reconciliation');
    return;
  }
  const expired = topUp.expiresAt.getTime() <= Date.now();
  let providerForgotOrder = false;
  // Every top-up whose order can still be paid: a capture after a failure or after the expiry is
  // money received, credited whenever it comes.
  if (topUp.providerOrderId !== null && (topUp.state === 'pending_payment' || topUp.state === 'failed' || topUp.state === 'expired')) {
    const payments = await fetchPaymentsOfOrder(deps, topUp.providerOrderId);
    providerForgotOrder = payments === undefined;
    const captured = (payments ?? []).filter((payment) => payment.status === 'captured');
    for (const payment of captured) await settleCapturedPayment(deps, payment, 'reconciliation');
    if (captured.length > 0) return;
    const authorized = (payments ?? []).filter((payment) => payment.status === 'authorized');
    for (const payment of authorized) await captureAuthorizedPayment(deps, payment, 'reconciliation');
    if (authorized.length > 0) return;
    const failed = (payments ?? []).filter((payment) => payment.status === 'failed');
    if (!expired && failed.length > 0) await recordFailedPayment(deps, failed.at(-1)!, 'reconciliation');
  }
  if (!expired) return;
  // Unpaid past expires_at (the provider was asked first, so no capture is missed).
  await db.transaction(async (tx) => {
    const locked = await findTopUp(tx, topUpId, { forUpdate: true });
    if (locked && (locked.state === 'created' || locked.state === 'pending_payment') && canMove(locked.state, 'expired')) {
      await moveTopUp(tx, {
        topUpId, from: locked.state, to: 'expired', cause: 'expiry',
        details: { expires_at: locked.expiresAt.toISOString(), ...(providerForgotOrder ? { provider_order: 'unknown to the provider' } : {}) },
      });
    }
  });
}

/**
 * One reconciliation pass (the payment jobs run it every reconcile interval): claims top-ups
 * untouched for the reconcile-after time whose outcome may still change, asks the provider for
 * each order's payments and settles from its answer (a missed webhook), finishes settlements cut
 * short (credit, document), and expires the unpaid past expires_at. A top-up whose provider call
 * fails is retried at a later pass. Returns how many were looked at and the ids that failed.
 */
export async function reconcileTopUps(deps: TopUpsDeps): Promise<{ checked: number; failed: Array<{ topUpId: string; error: unknown }> }> {
  if (deps.provider === undefined) return { checked: 0, failed: [] };
  const { settings } = deps;
  const ids = await deps.db.transaction((tx) => claimTopUpsToReconcile(tx, {
    quietMs: settings.reconcileAfterMs, lateQuietMs: settings.sweepIntervalMs, lateWindowMs: settings.sweepWindowMs, limit: reconcileBatch,
  }));
  const failed: Array<{ topUpId: string; error: unknown }> = [];
  for (const topUpId of ids) {
    try {
      await reconcileTopUp(deps, topUpId);
    } catch (error) {
      failed.push({ topUpId, error });
    }
  }
  return { checked: ids.length, failed };
}

/**
 * Applies one payment the sweep found: a capture is settled like any signal (credited once, a
 * second payment of a paid order refunded, one no top-up has recorded as unmatched); an
 * authorised one is captured or recorded (captureAuthorizedPayment); others change nothing.
 */
async function applySweptPayment(deps: TopUpsDeps, payment: ProviderPayment): Promise<void> {
  if (payment.status === 'captured') await settleCapturedPayment(deps, payment, 'payment_sweep');
  else if (payment.status === 'authorized') await captureAuthorizedPayment(deps, payment, 'payment_sweep');
}

/**
 * One payments sweep (the payment jobs run it every sweep interval): lists the provider's
 * payments created within the sweep window, page by page, and applies each (applySweptPayment) —
 * a capture whose webhook was lost and whose top-up reconciliation no longer asks about (already
 * invoiced: a second capture, refunded), a capture no order matches (recorded), an authorised
 * payment (captured or recorded). Idempotent: a payment already applied changes nothing. Returns
 * how many payments were read and the ones that failed (tried again at the next sweep).
 */
export async function sweepPayments(deps: TopUpsDeps): Promise<{ checked: number; failed: Array<{ paymentId: string; error: unknown }> }> {
  const { provider } = deps;
  if (provider === undefined) return { checked: 0, failed: [] };
  const toUnixSeconds = Math.floor(Date.now() / 1000);
  const fromUnixSeconds = toUnixSeconds - Math.ceil(deps.settings.sweepWindowMs / 1000);
  const failed: Array<{ paymentId: string; error: unknown }> = [];
  let checked = 0;
  for (let page = 0; page < sweepMaxPages; page += 1) {
    const payments = await provider.listPayments({ fromUnixSeconds, toUnixSeconds, count: sweepPageSize, skip: page * sweepPageSize });
    for (const payment of payments) {
      checked += 1;
      try {
        await applySweptPayment(deps, payment);
      } catch (error) {
        failed.push({ paymentId: payment.id, error });
      }
    }
    if (payments.length < sweepPageSize) break;
  }
  return { checked, failed };
}

/** Payments that matched nothing the gateway sold, newest first (platform admins; cursor: the previous page's last id). */
export async function listUnmatched(
  deps: Pick<TopUpsDeps, 'db'>, actor: Actor, page: { limit: number; cursor?: string | undefined },
): Promise<{ items: UnmatchedPayment[]; nextCursor: string | null }> {
  requirePlatformAdmin(actor);
  if (page.cursor !== undefined && !/^[1-9][0-9]{0,18}$/.test(page.cursor)) {
    throw new GatewayError('invalid_request', { publicMessage: 'Invalid request: cursor: not a cursor this list returned.', param: 'cursor' });
  }
  const { items, hasMore } = await listUnmatchedPayments(deps.db, { beforeId: page.cursor, limit: page.limit });
  return { items, nextCursor: hasMore ? items.at(-1)!.id : null };
}
