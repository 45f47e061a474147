import type { Database } from '@gateway/db';
import type { AdminConfig } from '../config.ts';
import type { ResourceAccess } from './resource-access.ts';

/** What the invoices aggregate is built from. */
export interface InvoicesServiceDeps {
  db: Database;
  access: ResourceAccess;
  config: AdminConfig;
}

/** Tax invoices, receipt vouchers and credit notes: listing, PDFs, CSV (route tag "invoices"). */
export function createInvoicesService(_deps: InvoicesServiceDeps) {
  return {};
}
