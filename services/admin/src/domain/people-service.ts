import type { Database } from '@gateway/db';
import type { AdminConfig } from '../config.ts';
import type { ResourceAccess } from './resource-access.ts';

/** What the people aggregate is built from. */
export interface PeopleServiceDeps {
  db: Database;
  access: ResourceAccess;
  config: AdminConfig;
}

/** People, memberships, invitation and reset links, sessions (route tags "people" and "sign-in"). */
export function createPeopleService(_deps: PeopleServiceDeps) {
  return {};
}
