import type { Logger } from '@gateway/logger';
import { invoiceCompletedUsageMonths, type MonthlyInvoicingDeps } from './domain/monthly-invoicing.ts';
import { startPeriodicJob } from '../wiring/periodic-job.ts';

/** How often the monthly usage invoicing pass runs, ms (it issues only for completed months, so hourly is prompt enough). */
const invoicingIntervalMs = 60 * 60_000;

/** What the invoicing jobs need. */
export interface InvoicingJobsDeps extends MonthlyInvoicingDeps {
  logger: Logger;
}

/**
 * The background work of invoicing: in receipt-voucher mode, the monthly usage invoice pass at
 * start and then hourly (passes never overlap); nothing in tax_invoice mode, where the top-up's
 * tax invoice is the whole story. close() stops the timer and waits for a pass.
 */
export function startInvoicingJobs(deps: InvoicingJobsDeps): { close(): Promise<void> } {
  const { settings, logger } = deps;
  if (settings.documentMode !== 'receipt_voucher') return { close: async () => {} };
  return startPeriodicJob({
    name: 'monthly usage invoicing', firstDelayMs: 0, intervalMs: invoicingIntervalMs, logger,
    failureMessage: 'monthly usage invoicing failed; retried at the next interval',
    run: async () => {
      const { issued } = await invoiceCompletedUsageMonths(deps);
      if (issued.length > 0) logger.info({ serials: issued }, 'monthly usage invoices issued');
    },
  });
}
