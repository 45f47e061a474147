import type { Database } from '@gateway/db';
import { idProblem } from './validation.ts';

/** Results of OpenAccount, in precedence order. */
export type OpenAccountResultName = 'ok' | 'invalid_argument';

/** The answer to OpenAccount. */
export interface OpenAccountOutcome {
  result: OpenAccountResultName;
  detail: string;
}

/** Opens the wallet of an organisation with every balance at zero; opening an open one is a no-op. */
export async function openAccount(db: Database, organisationId: string): Promise<OpenAccountOutcome> {
  const problem = idProblem('organisation_id', organisationId);
  if (problem) return { result: 'invalid_argument', detail: problem };
  const { rowCount } = await db.query(
    'INSERT INTO accounts (organisation_id) VALUES ($1) ON CONFLICT (organisation_id) DO NOTHING',
    [organisationId],
  );
  return { result: 'ok', detail: rowCount === 1 ? 'opened' : 'already open' };
}
