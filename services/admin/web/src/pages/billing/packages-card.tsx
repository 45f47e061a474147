import { useEffect, useState } from 'preact/hooks';
import { api } from '../../api.ts';
import { FormError } from '../../components/field.tsx';
import { Table } from '../../components/table.tsx';
import { useAction } from '../../components/use-action.ts';
import { formatRupees } from '../../format.ts';
import type { CheckoutDetails, TopUp, TopUpPackage } from './billing-types.ts';
import { loadRazorpayCheckout } from './checkout.ts';
import { formatPaise } from './paise.ts';

/** The packages on sale (price includes GST) with Buy for owners; Buy opens Checkout or the local pay page. */
export function PackagesCard(props: { organisationId: string; canBuy: boolean; hasProfile: boolean; onPaidHere(topUpId: string): void }) {
  const [packages, setPackages] = useState<TopUpPackage[] | undefined>(undefined);
  const [buying, setBuying] = useState<string | undefined>(undefined);
  const { error, setError, run } = useAction();

  useEffect(() => {
    api.get<{ data: TopUpPackage[] }>('/admin/v1/topup-packages').then((answer) => setPackages(answer.data), setError);
  }, [setError]);

  async function buy(pack: TopUpPackage) {
    setBuying(pack.id);
    await run(async () => {
      const base = `/admin/v1/organisations/${props.organisationId}/topups`;
      const { topup, checkout } = await api.send<{ topup: TopUp; checkout: CheckoutDetails }>('POST', base, { package_id: pack.id });
      if (checkout.provider === 'local') {
        if (checkout.pay_page_url === null) throw new Error('The payment provider gave no pay page.');
        window.location.assign(checkout.pay_page_url);
        return;
      }
      const Razorpay = await loadRazorpayCheckout();
      await new Promise<void>((resolve, reject) => {
        const checkoutWindow = new Razorpay({
          key: checkout.key_id, order_id: checkout.order_id, amount: checkout.amount_paise, currency: checkout.currency,
          name: checkout.name, description: checkout.description,
          handler: (result) => {
            api.send('POST', `${base}/${topup.id}/checkout-callback`, result).then(() => {
              props.onPaidHere(topup.id);
              resolve();
            }, reject);
          },
          modal: { ondismiss: () => resolve() },
        });
        checkoutWindow.on('payment.failed', (response) => {
          reject(new Error(`The payment failed${response.error.description === undefined ? '' : `: ${response.error.description}`}. You can try again.`));
        });
        checkoutWindow.open();
      });
    });
    setBuying(undefined);
  }

  return (
    <div class="card">
      <h2>Buy credit</h2>
      <p class="hint">Prices include GST. The credit is added to the organisation's prepaid balance once the payment is confirmed; it cannot be cashed out or moved to another organisation.</p>
      {props.canBuy && !props.hasProfile ? <p class="warning">Fill in the billing profile above before buying: invoices are made out to it.</p> : null}
      <FormError error={error} />
      {packages === undefined ? (error === undefined ? <p role="status">Loading…</p> : null) : (
        <Table
          caption="Top-up packages"
          rows={packages.filter((pack) => pack.active)}
          rowKey={(pack) => pack.id}
          empty="No packages are on sale."
          columns={[
            { header: 'Package', cell: (pack) => pack.name },
            { header: 'Price (incl. GST)', numeric: true, cell: (pack) => <>{formatPaise(pack.price_paise)} <span class="small">incl. GST</span></> },
            { header: 'Credit', numeric: true, cell: (pack) => formatRupees(pack.credit_micros) },
            ...(props.canBuy ? [{
              header: 'Actions', cell: (pack: TopUpPackage) => (
                <button type="button" class="primary" disabled={buying !== undefined || !props.hasProfile} aria-busy={buying === pack.id}
                  aria-label={`Buy ${pack.name}`} onClick={() => void buy(pack)}>Buy</button>
              ),
            }] : []),
          ]}
        />
      )}
    </div>
  );
}
