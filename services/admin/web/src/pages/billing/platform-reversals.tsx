import { useEffect, useState } from 'preact/hooks';
import { api } from '../../api.ts';
import { Field, FormError } from '../../components/field.tsx';
import { Table } from '../../components/table.tsx';
import { formatIst, formatRupees } from '../../format.ts';
import { formatPaise } from './paise.ts';

/** Money a payer got back outside the gateway (GET /admin/v1/payment-reversals); µ₹ and paise as decimal strings. */
export interface PaymentReversal {
  id: string;
  kind: 'refund' | 'dispute';
  organisation_id: string;
  topup_id: string;
  provider_ref: string;
  amount_paise: string;
  debit_micros: string;
  taken_micros: string | null;
  shortfall_micros: string | null;
  state: 'to_debit' | 'debited' | 'to_return' | 'returned' | 'closed';
  dispute_status: string | null;
  last_error: string | null;
  created_at: string;
}

/**
 * Refunds made from the payment provider's dashboard and disputes: what each took from the
 * balance and the shortfall the balance could not cover (an organisation with one is flagged).
 */
export function PlatformReversals() {
  const [shortfallOnly, setShortfallOnly] = useState(false);
  const [reversals, setReversals] = useState<PaymentReversal[] | undefined>(undefined);
  const [error, setError] = useState<unknown>(undefined);
  useEffect(() => {
    api.get<{ data: PaymentReversal[] }>('/admin/v1/payment-reversals', { shortfall_only: shortfallOnly ? 'true' : undefined })
      .then((answer) => { setReversals(answer.data); setError(undefined); }, setError);
  }, [shortfallOnly]);
  const flagged = new Set((reversals ?? []).filter((reversal) => BigInt(reversal.shortfall_micros ?? '0') > 0n).map((reversal) => reversal.organisation_id));
  return (
    <>
      <div class="card inline-form">
        <Field id="reversals-shortfall" label="Show">
          <select id="reversals-shortfall" value={shortfallOnly ? 'shortfall' : 'all'} onChange={(event) => setShortfallOnly(event.currentTarget.value === 'shortfall')}>
            <option value="all">All refunds and disputes made outside the gateway</option>
            <option value="shortfall">Only those the balance could not cover</option>
          </select>
        </Field>
      </div>
      <FormError error={error} />
      {flagged.size === 0 ? null : (
        <p role="alert">{flagged.size} organisation{flagged.size === 1 ? ' has' : 's have'} a shortfall: money the payer got back that the balance could not cover.</p>
      )}
      {reversals === undefined ? (error === undefined ? <p role="status">Loading…</p> : null) : (
        <Table
          caption="Payment reversals, newest first"
          rows={reversals}
          rowKey={(reversal) => reversal.id}
          empty="No refunds or disputes made outside the gateway."
          columns={[
            { header: 'Created (IST)', cell: (reversal) => formatIst(reversal.created_at) },
            { header: 'What', cell: (reversal) => <>{reversal.kind === 'refund' ? 'Dashboard refund' : `Dispute (${reversal.dispute_status ?? 'open'})`}<div class="mono small">{reversal.provider_ref}</div></> },
            { header: 'Organisation', cell: (reversal) => <span class="mono small">{reversal.organisation_id}</span> },
            { header: 'Amount (incl. GST)', numeric: true, cell: (reversal) => formatPaise(reversal.amount_paise) },
            { header: 'Taken from the balance', numeric: true, cell: (reversal) => (reversal.taken_micros === null ? '—' : formatRupees(reversal.taken_micros)) },
            {
              header: 'Shortfall', numeric: true, cell: (reversal) => (reversal.shortfall_micros !== null && BigInt(reversal.shortfall_micros) > 0n
                ? <strong>{formatRupees(reversal.shortfall_micros)}</strong> : '—'),
            },
            { header: 'State', cell: (reversal) => <>{reversal.state.replaceAll('_', ' ')}{reversal.last_error === null ? null : <div class="small">retrying: {reversal.last_error}</div>}</> },
          ]}
        />
      )}
    </>
  );
}
