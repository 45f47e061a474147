import type { AdminRoute } from './route-definition.ts';

/** The people routes of the admin API. */
export function peopleRoutes(): AdminRoute[] {
  return [];
}
