import type { Queryable } from '@gateway/db';
import { readBalances } from './read-balances.ts';
import { InvalidQueryError } from './invalid-query-error.ts';
import type { Balances } from './ledger-types.ts';
import { idProblem } from './validation.ts';

/** Reads an organisation's balances, µ₹; undefined when it has no account. Throws InvalidQueryError for a bad id. */
export async function getBalance(db: Queryable, organisationId: string): Promise<Balances | undefined> {
  const problem = idProblem('organisation_id', organisationId);
  if (problem) throw new InvalidQueryError(problem);
  return readBalances(db, organisationId);
}
