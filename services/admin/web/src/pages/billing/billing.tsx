import { useCallback, useEffect, useState } from 'preact/hooks';
import { api } from '../../api.ts';
import type { Balance } from '../../api-types.ts';
import { FormError } from '../../components/field.tsx';
import { formatRupees } from '../../format.ts';
import { useLive } from '../../live.ts';
import { allows, type PageProps } from '../../page-props.ts';
import { navigate } from '../../router.ts';
import type { BillingProfile } from './billing-types.ts';
import type { CheckoutResult } from './checkout.ts';
import { PackagesCard } from './packages-card.tsx';
import { ProfileCard } from './profile-card.tsx';
import { TopUpList, TopUpWatch } from './top-ups.tsx';

/**
 * Billing: the balance (live), the billing profile invoices are made out to, the packages on sale
 * with Buy (Razorpay Checkout, or the local provider's pay page), the organisation's top-ups with
 * their state and documents, and refunds for platform admins. The pay page comes back to
 * #/billing?topup=…&razorpay_…=… (posted as the Checkout callback) or with error=payment_failed.
 */
export function BillingPage(props: PageProps) {
  const { organisationId, params } = props;
  const [topUpsVersion, setTopUpsVersion] = useState(0);
  const [profile, setProfile] = useState<BillingProfile | null | undefined>(undefined);
  const [watched, setWatched] = useState<{ topUpId: string; failed: boolean } | undefined>(undefined);
  const refreshTopUps = useCallback(() => setTopUpsVersion((version) => version + 1), []);

  // Back from paying: the signed fields go to the callback once, then leave the address bar (and the history).
  const returnedTopUp = params.topup;
  useEffect(() => {
    if (organisationId === undefined || returnedTopUp === undefined) return;
    const failed = params.error === 'payment_failed';
    setWatched({ topUpId: returnedTopUp, failed });
    const signed = params.razorpay_payment_id !== undefined && params.razorpay_order_id !== undefined && params.razorpay_signature !== undefined;
    if (!signed && params.error === undefined) return;
    const kept = new URLSearchParams({ topup: returnedTopUp, ...(params.organisation === undefined ? {} : { organisation: params.organisation }) });
    if (signed) {
      const result: CheckoutResult = {
        razorpay_payment_id: params.razorpay_payment_id!, razorpay_order_id: params.razorpay_order_id!, razorpay_signature: params.razorpay_signature!,
      };
      void api.send('POST', `/admin/v1/organisations/${organisationId}/topups/${returnedTopUp}/checkout-callback`, result)
        .catch(() => undefined) // the watch below shows the top-up's state, which the webhook settles even if this failed
        .finally(() => {
          refreshTopUps();
          navigate(`/billing?${kept}`, { replace: true });
        });
    } else {
      navigate(`/billing?${kept}${failed ? '&error=payment_failed' : ''}`, { replace: true });
    }
  }, [organisationId, returnedTopUp, params.razorpay_payment_id, params.razorpay_order_id, params.razorpay_signature, params.error, params.organisation, refreshTopUps]);

  if (organisationId === undefined) return <section><h1>Billing</h1><p>Choose an organisation.</p></section>;
  return (
    <section>
      <h1>Billing</h1>
      <BalanceCard organisationId={organisationId} onBalance={refreshTopUps} />
      {watched === undefined ? null : (
        <TopUpWatch key={watched.topUpId} organisationId={organisationId} topUpId={watched.topUpId} failed={watched.failed} onSettled={refreshTopUps} />
      )}
      <ProfileCard organisationId={organisationId} canChange={allows(props.allowed, 'putBillingProfile')} profile={profile} onProfile={setProfile} />
      <PackagesCard organisationId={organisationId} canBuy={allows(props.allowed, 'purchaseTopUp')} hasProfile={profile != null}
        onPaidHere={(topUpId) => { setWatched({ topUpId, failed: false }); refreshTopUps(); }} />
      <TopUpList organisationId={organisationId} version={topUpsVersion} canRefund={allows(props.allowed, 'createRefund')} onChanged={refreshTopUps} />
    </section>
  );
}

/** The available balance, read once and then kept current by live updates (a credited top-up moves it). */
function BalanceCard(props: { organisationId: string; onBalance(): void }) {
  const [balance, setBalance] = useState<Balance | undefined>(undefined);
  const [error, setError] = useState<unknown>(undefined);
  useEffect(() => {
    api.get<Balance>(`/admin/v1/organisations/${props.organisationId}/balance`).then(setBalance, setError);
  }, [props.organisationId]);
  useLive(props.organisationId, (message) => {
    if (message.type !== 'balance') return;
    setBalance(message.balance);
    props.onBalance(); // a balance change is often a top-up being credited: its row changes too
  });
  return (
    <>
      <h2 class="visually-hidden">Balance</h2>
      <FormError error={error} />
      <dl class="stats" aria-live="polite">
        <div class="stat"><dt>Available balance</dt><dd>{balance === undefined ? '…' : formatRupees(balance.available_micros)}</dd></div>
      </dl>
    </>
  );
}
