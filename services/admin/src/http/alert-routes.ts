import type { AdminRoute } from './route-definition.ts';

/** The alert routes of the admin API. */
export function alertRoutes(): AdminRoute[] {
  return [];
}
