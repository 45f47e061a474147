import { useCallback, useEffect, useState } from 'preact/hooks';
import { api } from '../../api.ts';
import { Field, FormError } from '../../components/field.tsx';
import { Table } from '../../components/table.tsx';
import { formatIst } from '../../format.ts';
import { gstStateLabel } from '../../gst-states.ts';
import type { PageProps } from '../../page-props.ts';
import { documentKindText, documentPdfPath, type CursorPage, type TaxDocument, type TaxDocumentKind } from '../billing/billing-types.ts';
import { istDayOf, istWindowQuery } from '../common/ist-dates.ts';
import { formatPaise } from '../billing/paise.ts';

/** The filter form as typed: a kind ('' for every kind) and an IST day range ('' for open). */
interface InvoiceFilterForm {
  kind: '' | TaxDocumentKind;
  fromDay: string;
  toDay: string;
}

const emptyForm: InvoiceFilterForm = { kind: '', fromDay: '', toDay: '' };

/** Documents a page of the list shows. */
const pageSize = 50;

/**
 * The one query the list and the CSV export both send (so the export holds exactly what the list
 * shows): kind, and from/to as ms since the epoch (the "to" day included, so its bound is the next
 * IST day's start); or why the form cannot make one.
 */
function invoiceFilterQuery(form: InvoiceFilterForm): { ok: true; query: Record<string, string> } | { ok: false; problem: string } {
  const query: Record<string, string> = {};
  if (form.kind !== '') query.kind = form.kind;
  const window = istWindowQuery(form.fromDay, form.toDay);
  if (!window.ok) return window;
  return { ok: true, query: { ...query, ...window.query } };
}

/**
 * The organisation's GST documents (tax invoices, receipt vouchers, credit notes), immutable once
 * issued: filtered by kind and IST date range, each with its PDF, and a CSV export of exactly what
 * the filters select, for the organisation's accountant.
 */
export function InvoicesPage(props: PageProps) {
  const { organisationId } = props;
  const [form, setForm] = useState<InvoiceFilterForm>(emptyForm);
  const [applied, setApplied] = useState<Record<string, string>>({});
  const [formProblem, setFormProblem] = useState<string | undefined>(undefined);
  const [documents, setDocuments] = useState<TaxDocument[] | undefined>(undefined);
  const [nextCursor, setNextCursor] = useState<string | null>(null);
  const [error, setError] = useState<unknown>(undefined);
  const [exporting, setExporting] = useState(false);
  const base = `/admin/v1/organisations/${organisationId ?? ''}/invoices`;

  const load = useCallback(async (cursor?: string) => {
    if (organisationId === undefined) return;
    try {
      const page = await api.get<CursorPage<TaxDocument>>(base, { ...applied, limit: pageSize, cursor });
      setDocuments((current) => (cursor === undefined ? page.data : [...(current ?? []), ...page.data]));
      setNextCursor(page.next_cursor ?? null);
      setError(undefined);
    } catch (caught) {
      setError(caught);
    }
  }, [organisationId, base, applied]);

  useEffect(() => {
    void load();
  }, [load]);

  function apply(event: Event) {
    event.preventDefault();
    const result = invoiceFilterQuery(form);
    if (!result.ok) {
      setFormProblem(result.problem);
      return;
    }
    setFormProblem(undefined);
    setApplied(result.query);
  }

  async function exportCsv() {
    setExporting(true);
    try {
      await api.download(`${base}/export`, applied);
      setError(undefined);
    } catch (caught) {
      setError(caught);
    } finally {
      setExporting(false);
    }
  }

  if (organisationId === undefined) return <section><h1>Invoices</h1><p>Choose an organisation.</p></section>;
  const today = istDayOf(Date.now());
  const filtered = Object.keys(applied).length > 0;
  return (
    <section>
      <h1>Invoices</h1>
      <form class="card inline-form" onSubmit={apply} aria-labelledby="invoice-filters-title">
        <h2 id="invoice-filters-title">Filters</h2>
        <Field id="invoice-kind" label="Kind">
          <select id="invoice-kind" value={form.kind} onChange={(event) => setForm({ ...form, kind: event.currentTarget.value as InvoiceFilterForm['kind'] })}>
            <option value="">All documents</option>
            {(Object.keys(documentKindText) as TaxDocumentKind[]).map((kind) => <option key={kind} value={kind}>{documentKindText[kind]}s</option>)}
          </select>
        </Field>
        <Field id="invoice-from" label="From (IST day)">
          <input id="invoice-from" type="date" value={form.fromDay} max={today} onInput={(event) => setForm({ ...form, fromDay: event.currentTarget.value })} />
        </Field>
        <Field id="invoice-to" label="To (IST day, included)">
          <input id="invoice-to" type="date" value={form.toDay} max={today} onInput={(event) => setForm({ ...form, toDay: event.currentTarget.value })} />
        </Field>
        {formProblem === undefined ? null : <p class="form-error" role="alert">{formProblem}</p>}
        <div class="actions">
          <button type="button" class="secondary" onClick={() => { setForm(emptyForm); setFormProblem(undefined); setApplied({}); }}>Clear</button>
          <button type="submit" class="primary">Apply filters</button>
        </div>
      </form>

      <div class="actions">
        <button type="button" class="secondary" onClick={() => void exportCsv()} disabled={exporting} aria-busy={exporting}>
          {exporting ? 'Exporting…' : filtered ? 'Export filtered documents (CSV)' : 'Export all documents (CSV)'}
        </button>
      </div>
      <FormError error={error} />
      {documents === undefined ? (error === undefined ? <p role="status">Loading…</p> : null) : (
        <>
          <Table
            caption={filtered ? 'GST documents matching the filters, newest first' : 'GST documents, newest first'}
            rows={documents}
            rowKey={(document) => document.id}
            empty={filtered ? 'No documents match these filters — widen the dates or clear the filters.' : 'No documents yet — one is issued for every credited top-up: buy credit on the Billing page.'}
            columns={[
              { header: 'Serial', cell: (document) => <span class="mono">{document.serial}</span> },
              { header: 'Kind', cell: (document) => documentKindText[document.kind] },
              { header: 'Issued (IST)', cell: (document) => formatIst(document.issued_at) },
              { header: 'Recipient', cell: (document) => <>{document.recipient.legal_name}<div class="mono small">{document.recipient.gstin ?? 'unregistered'}</div></> },
              { header: 'Place of supply', cell: (document) => gstStateLabel(document.place_of_supply) },
              { header: 'Taxable value', numeric: true, cell: (document) => formatPaise(document.taxable_paise) },
              {
                header: 'GST', numeric: true, cell: (document) => (BigInt(document.igst_paise) > 0n
                  ? <>IGST {formatPaise(document.igst_paise)}</>
                  : <>CGST {formatPaise(document.cgst_paise)}<div>SGST {formatPaise(document.sgst_paise)}</div></>),
              },
              { header: 'Total', numeric: true, cell: (document) => formatPaise(document.total_paise) },
              {
                header: 'PDF', cell: (document) => (
                  <a href={documentPdfPath(organisationId, document.id)} download={`${document.serial}.pdf`}
                    aria-label={`Download ${documentKindText[document.kind].toLowerCase()} ${document.serial} (PDF)`}>Download</a>
                ),
              },
            ]}
          />
          {nextCursor === null ? null : (
            <div class="actions"><button type="button" class="secondary" onClick={() => void load(nextCursor)}>Show older documents</button></div>
          )}
        </>
      )}
    </section>
  );
}
