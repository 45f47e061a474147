import type { RequestHandler } from 'express';
import type { Logger } from '@gateway/logger';

/** Builds the dashboard's pages and assets; the handler serves them (undefined: no dashboard). */
export async function createDashboard(_deps: { logger: Logger }): Promise<RequestHandler | undefined> {
  return undefined;
}
