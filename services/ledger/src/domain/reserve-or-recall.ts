import type { Database } from '@gateway/db';
import type { LedgerTarget } from './apply-ledger-operations.ts';
import { recallGrants, refusalLiftable, type RecalledGrant } from './grants.ts';
import { reserve, type ReserveInput, type ReserveOutcome, type ReserveResultName } from './reserve.ts';

/** Reserve results after which held grants of the organisation (or project) are pulled back. */
const recallingReserveResults = new Set<ReserveResultName>(['insufficient_balance', 'project_budget_exceeded']);

/** A Reserve's answer, and what its refusal did to the grants other replicas hold. */
export interface ReserveOrRecallOutcome {
  outcome: ReserveOutcome;
  /** Grants recalled for a liftable refusal (0 when not liftable); undefined: no recall was considered. */
  grantsRecalled?: number;
  /** Whether returning holds could lift the refusal; undefined: no recall was considered. */
  liftable?: boolean;
  /** Grants this call newly recalled: their owners are told now rather than at the next poll. */
  newlyRecalled: RecalledGrant[];
}

/**
 * Holds a Reserve; a refusal while money may idle in other replicas' grants pulls them back and
 * says how many are coming, so the caller retries briefly instead of answering 402 (NO_OVERSPEND's
 * promise). A refusal no returning hold could lift says so instead, and recalls nothing: the caller
 * answers at once, and this call takes no grant lock behind Settles in flight. A Reserve promoted
 * out of a grant (`grantId`) never recalls.
 */
export async function reserveOrRecall(db: Database, target: LedgerTarget, input: ReserveInput): Promise<ReserveOrRecallOutcome> {
  const outcome = await reserve(target, input);
  if (!recallingReserveResults.has(outcome.result) || input.grantId !== undefined) return { outcome, newlyRecalled: [] };
  const budgetBound = outcome.result === 'project_budget_exceeded';
  const liftable = await refusalLiftable(db, {
    organisationId: input.organisationId, projectId: input.projectId, amountMicros: input.amountMicros, budget: budgetBound,
  });
  if (!liftable) return { outcome, grantsRecalled: 0, liftable, newlyRecalled: [] };
  const recalled = await recallGrants(db, {
    organisationId: budgetBound ? null : input.organisationId, projectId: budgetBound ? input.projectId : null,
  });
  return { outcome, grantsRecalled: recalled.length, liftable, newlyRecalled: recalled.filter((grant) => grant.newlyRecalled) };
}
