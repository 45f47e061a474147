import type { AdminRoute } from './route-definition.ts';

/** The analytics routes of the admin API. */
export function analyticsRoutes(): AdminRoute[] {
  return [];
}
