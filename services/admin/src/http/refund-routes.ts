import type { AdminRoute } from './route-definition.ts';

/** The refund routes of the admin API. */
export function refundRoutes(): AdminRoute[] {
  return [];
}
