import type { AdminRoute } from './route-definition.ts';

/** The billing routes of the admin API. */
export function billingRoutes(): AdminRoute[] {
  return [];
}
