import type { AdminRoute } from './route-definition.ts';

/** The invoice routes of the admin API. */
export function invoiceRoutes(): AdminRoute[] {
  return [];
}
