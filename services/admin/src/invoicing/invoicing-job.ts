import type { Database } from '@gateway/db';
import type { Logger } from '@gateway/logger';
import type { AdminConfig } from '../config.ts';
import { istMonth, istMonthStart, nextIstMonth } from './domain/invoice-serial.ts';
import type { LedgerPort } from '../common/domain/ledger-port.ts';
import { issueMonthlyUsageInvoice } from './domain/tax-documents.ts';
import { startPeriodicJob } from '../wiring/periodic-job.ts';

/** How often the monthly usage invoicing pass runs, ms (it issues only for completed months, so hourly is prompt enough). */
const invoicingIntervalMs = 60 * 60_000;

/** Time after a month ends before its usage is invoiced, ms: usage settled just after midnight still lands in its month. */
const monthCloseGraceMs = 6 * 60 * 60_000;

/** What the invoicing jobs need. */
export interface InvoicingJobsDeps {
  db: Database;
  ledger: Pick<LedgerPort, 'summarizeUsage'>;
  config: AdminConfig;
  logger: Logger;
}

/**
 * One pass of receipt-voucher mode's monthly invoicing: for every organisation with a receipt
 * voucher, every completed IST month from its first voucher's month on (ended at least
 * monthCloseGraceMs before `now`) after its last usage invoice gets one for the usage the ledger
 * debited in it (summarizeUsage's debited_micros), adjusted against its vouchers. Months without
 * usage issue nothing. Safe to run on several replicas: issuing is idempotent per organisation and month.
 */
export async function invoiceCompletedUsageMonths(deps: InvoicingJobsDeps, now: Date = new Date()): Promise<{ issued: string[] }> {
  const { db, ledger, config } = deps;
  const { rows } = await db.query<{ organisation_id: string; first_issued_at: Date }>(
    `SELECT organisation_id, min(issued_at) AS first_issued_at FROM tax_documents WHERE kind = 'receipt_voucher' GROUP BY organisation_id ORDER BY organisation_id`);
  const invoiced = await db.query<{ organisation_id: string; last_month: string }>(
    'SELECT organisation_id, max(usage_month) AS last_month FROM tax_documents WHERE usage_month IS NOT NULL GROUP BY organisation_id');
  const lastInvoicedMonth = new Map(invoiced.rows.map((row) => [row.organisation_id, row.last_month]));
  const issued: string[] = [];
  for (const { organisation_id: organisationId, first_issued_at: firstIssuedAt } of rows) {
    // Months after the last one invoiced (a month without usage between two invoiced ones is not asked again).
    const lastMonth = lastInvoicedMonth.get(organisationId);
    const firstMonth = istMonth(new Date(firstIssuedAt));
    for (let month = lastMonth === undefined || lastMonth < firstMonth ? firstMonth : nextIstMonth(lastMonth); ; month = nextIstMonth(month)) {
      const end = istMonthStart(nextIstMonth(month));
      if (end.getTime() + monthCloseGraceMs > now.getTime()) break;
      const summary = await ledger.summarizeUsage({ organisationId, fromMs: istMonthStart(month).getTime(), toMs: end.getTime() });
      const usageDebitedMicros = summary.reduce((sum, row) => sum + row.debitedMicros, 0n);
      const invoice = await db.transaction((tx) => issueMonthlyUsageInvoice(tx, config, { organisationId, usageMonth: month, usageDebitedMicros }, { issuedAt: now }));
      if (invoice !== undefined) issued.push(invoice.serial);
    }
  }
  return { issued };
}

/**
 * The background work of invoicing: with GST_DOCUMENT_MODE=receipt_voucher, the monthly usage
 * invoice pass at start and then hourly (passes never overlap); nothing in tax_invoice mode,
 * where the top-up's tax invoice is the whole story. close() stops the timer and waits for a pass.
 */
export function startInvoicingJobs(deps: InvoicingJobsDeps): { close(): Promise<void> } {
  const { config, logger } = deps;
  if (config.GST_DOCUMENT_MODE !== 'receipt_voucher') return { close: async () => {} };
  return startPeriodicJob({
    name: 'monthly usage invoicing', firstDelayMs: 0, intervalMs: invoicingIntervalMs, logger,
    failureMessage: 'monthly usage invoicing failed; retried at the next interval',
    run: async () => {
      const { issued } = await invoiceCompletedUsageMonths(deps);
      if (issued.length > 0) logger.info({ serials: issued }, 'monthly usage invoices issued');
    },
  });
}
