import type { Database } from '@gateway/db';
import type { LedgerPort } from '../../common/domain/ledger-port.ts';
import { istMonth, istMonthStart, nextIstMonth } from './invoice-serial.ts';
import type { InvoicingSettings } from './invoicing-settings.ts';
import { lastUsageInvoiceMonths, receiptVoucherOrganisations } from './tax-document-store.ts';
import { issueMonthlyUsageInvoice } from './tax-documents.ts';

/** Time after a month ends before its usage is invoiced, ms: usage settled just after midnight still lands in its month. */
const monthCloseGraceMs = 6 * 60 * 60_000;

/** What the monthly usage invoicing pass needs. */
export interface MonthlyInvoicingDeps {
  db: Database;
  ledger: Pick<LedgerPort, 'summarizeUsage'>;
  settings: InvoicingSettings;
}

/**
 * One pass of receipt-voucher mode's monthly invoicing: for every organisation with a receipt
 * voucher, every completed IST month from its first voucher's month on (ended at least
 * monthCloseGraceMs before `now`) after its last usage invoice gets one for the usage the ledger
 * debited in it (summarizeUsage's debited_micros), adjusted against its vouchers. Months without
 * usage issue nothing. Safe to run on several replicas: issuing is idempotent per organisation and month.
 */
export async function invoiceCompletedUsageMonths(deps: MonthlyInvoicingDeps, now: Date = new Date()): Promise<{ issued: string[] }> {
  const { db, ledger, settings } = deps;
  const organisations = await receiptVoucherOrganisations(db);
  const lastInvoicedMonth = await lastUsageInvoiceMonths(db);
  const issued: string[] = [];
  for (const { organisationId, firstIssuedAt } of organisations) {
    // Months after the last one invoiced (a month without usage between two invoiced ones is not asked again).
    const lastMonth = lastInvoicedMonth.get(organisationId);
    const firstMonth = istMonth(firstIssuedAt);
    for (let month = lastMonth === undefined || lastMonth < firstMonth ? firstMonth : nextIstMonth(lastMonth); ; month = nextIstMonth(month)) {
      const end = istMonthStart(nextIstMonth(month));
      if (end.getTime() + monthCloseGraceMs > now.getTime()) break;
      // The ledger is asked before the transaction opens: no network call inside it.
      const summary = await ledger.summarizeUsage({ organisationId, fromMs: istMonthStart(month).getTime(), toMs: end.getTime() });
      const usageDebitedMicros = summary.reduce((sum, row) => sum + row.debitedMicros, 0n);
      const invoice = await db.transaction((tx) => issueMonthlyUsageInvoice(tx, settings, { organisationId, usageMonth: month, usageDebitedMicros }, { issuedAt: now }));
      if (invoice !== undefined) issued.push(invoice.serial);
    }
  }
  return { issued };
}
