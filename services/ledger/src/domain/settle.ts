import { runnerOf, type LedgerTarget } from './apply-ledger-operations.ts';
import { fingerprintOf } from './fingerprint.ts';
import { attemptsJson, attemptsProblem, deploymentProblem, type ProviderAttemptInput } from './provider-attempts.ts';
import type { UsageSource } from './ledger-types.ts';
import { tokenClassesJson, tokenClassesProblem, type TokenClassUsage } from './token-classes.ts';
import { idProblem, nonNegativeAmountProblem, optionalIdProblem, positiveAmountProblem, problemsOf } from './validation.ts';

/** The actual usage of a reserved request, to debit and record. */
export interface SettleInput {
  /** The reservation to settle; also the idempotency key of the settlement. */
  reservationId: string;
  inputTokens: bigint;
  outputTokens: bigint;
  /** Customer-price cost of the usage, µ₹. */
  costMicros: bigint;
  /** What the upstream provider charges for it, µ₹ (analytics only). */
  providerCostMicros: bigint;
  modelSlug: string;
  /** null when the caller sent no (or an unknown) usage source: refused as INVALID_ARGUMENT. */
  usageSource: UsageSource | null;
  /** The gateway's request id, kept on the usage record; may be empty. */
  requestId: string;
  /**
   * Output tokens the upstream produced beyond what the Reserve covered (BOUNDED_OVERRUN):
   * neither delivered nor in costMicros, their provider cost inside providerCostMicros; 0: none.
   */
  overrunOutputTokens: bigint;
  /**
   * A carve's Settle: the grant the proxy carved this Reserve from in memory (the ledger has no
   * reservation of this id yet). Ignored when the reservation exists (a promoted carve).
   */
  grantId?: string;
  /** The carve's Reserve, µ₹; positive when grantId is set (BOUNDED_OVERRUN is measured against it). */
  reservedMicros?: bigint;
  /** The usage by token price class, kept on the record; absent or empty: plain input and output. */
  tokenClasses?: readonly TokenClassUsage[];
  /** The upstream deployment that answered (its name within the model); absent or '': not known. */
  deployment?: string;
  /** Earlier attempts its provider may have billed (analytics only, never charged); absent or empty: none. */
  failedAttempts?: readonly ProviderAttemptInput[];
}

/** Results of Settle, in precedence order. */
export type SettleResultName =
  | 'ok' | 'idempotency_conflict' | 'invalid_argument' | 'reservation_unknown' | 'already_resolved';

/** The answer to Settle. */
export interface SettleOutcome {
  result: SettleResultName;
  /** Debited from the wallet, µ₹ (0 in internal billing mode). */
  debitedMicros: bigint;
  /** Unused Reserve returned to available, µ₹. */
  releasedMicros: bigint;
  /** Debited beyond what was held, µ₹ (streaming overrun, or the whole cost after expiry). */
  overrunMicros: bigint;
  /** Available balance at the time of the answer, µ₹. */
  availableMicros: bigint;
  detail: string;
}

/** Builds an answer that moved nothing. */
function refusal(result: Exclude<SettleResultName, 'ok'>, detail: string): SettleOutcome {
  return { result, debitedMicros: 0n, releasedMicros: 0n, overrunMicros: 0n, availableMicros: 0n, detail };
}

/**
 * Settles a reservation in one transaction, under a row lock on the reservation so that a
 * racing settle, release or expiry sees the outcome of whichever came first (ONE_OUTCOME):
 * commercial: held -= Reserve, available += Reserve - cost, debited += cost (a cost above the
 * Reserve is an overrun that may take available below zero); internal: no wallet change.
 * Either way exactly one usage record is written (NOTHING_FREE), with the overrun output tokens (BOUNDED_OVERRUN,
 * part of the idempotency payload). A settle after the sweeper expired the reservation still
 * records the usage and debits the cost, all of it as overrun, because usage that happened
 * must never be lost; a settle after an explicit Release is refused.
 * Input is checked here; the database work is `ledger_settle` (services/ledger/sql/ledger_settle.sql;
 * the money split is sql/ledger_settlement_split.sql), one round trip
 * alone (`target` a Database) or one operation of a group-committed batch (a LedgerBatcher).
 */
export async function settle(target: LedgerTarget, input: SettleInput): Promise<SettleOutcome> {
  const idIssue = idProblem('reservation_id', input.reservationId);
  if (idIssue) return refusal('invalid_argument', idIssue);
  const problems = problemsOf(
    nonNegativeAmountProblem('input_tokens', input.inputTokens),
    nonNegativeAmountProblem('output_tokens', input.outputTokens),
    nonNegativeAmountProblem('cost_micros', input.costMicros),
    nonNegativeAmountProblem('provider_cost_micros', input.providerCostMicros),
    idProblem('model_slug', input.modelSlug),
    input.usageSource === null ? 'usage_source must be USAGE_SOURCE_UPSTREAM or USAGE_SOURCE_GATEWAY_ESTIMATE' : undefined,
    optionalIdProblem('request_id', input.requestId),
    nonNegativeAmountProblem('overrun_output_tokens', input.overrunOutputTokens),
    input.grantId !== undefined ? idProblem('grant_id', input.grantId) : undefined,
    input.grantId !== undefined ? positiveAmountProblem('reserved_micros', input.reservedMicros ?? 0n) : undefined,
    input.grantId === undefined && (input.reservedMicros ?? 0n) !== 0n ? 'reserved_micros must be 0 without grant_id' : undefined,
    tokenClassesProblem(input.tokenClasses ?? [], input),
    deploymentProblem('deployment', input.deployment ?? '', true),
    attemptsProblem(input.failedAttempts ?? []),
  );
  const deployment = input.deployment ?? '';
  const failedAttempts = input.failedAttempts !== undefined && input.failedAttempts.length > 0 ? attemptsJson(input.failedAttempts) : undefined;
  const tokenClasses = input.tokenClasses !== undefined && input.tokenClasses.length > 0 ? tokenClassesJson(input.tokenClasses) : undefined;
  const fingerprint = fingerprintOf('settle', {
    inputTokens: input.inputTokens, outputTokens: input.outputTokens, costMicros: input.costMicros,
    providerCostMicros: input.providerCostMicros, modelSlug: input.modelSlug, usageSource: input.usageSource,
    requestId: input.requestId,
    // Only when non-zero, so a settle without overrun keeps the fingerprint it had before the
    // field existed (a replay across the upgrade is still a replay, not a conflict).
    ...(input.overrunOutputTokens !== 0n ? { overrunOutputTokens: input.overrunOutputTokens } : {}),
    // A carve's grant and Reserve are part of its payload (only when set, like the overrun).
    ...(input.grantId !== undefined ? { grantId: input.grantId, reservedMicros: input.reservedMicros ?? 0n } : {}),
    // The classes only when given, so a plain usage keeps the fingerprint it had before prices by token class.
    ...(tokenClasses !== undefined ? { tokenClasses: JSON.stringify(tokenClasses) } : {}),
    // The deployment and the failed attempts only when given, for the same reason (issue 29).
    ...(deployment !== '' ? { deployment } : {}),
    ...(failedAttempts !== undefined ? { failedAttempts } : {}),
  });

  const answer = problems.length > 0
    // Only the key and fingerprint travel: a replay or conflict still takes precedence in the database.
    ? await runnerOf(target).run({ kind: 'settle', reservationId: input.reservationId, fingerprint, problems: problems.join('; ') })
    : await runnerOf(target).run({
      kind: 'settle', reservationId: input.reservationId, fingerprint,
      fields: {
        inputTokens: input.inputTokens.toString(), outputTokens: input.outputTokens.toString(),
        costMicros: input.costMicros.toString(), providerCostMicros: input.providerCostMicros.toString(),
        modelSlug: input.modelSlug, usageSource: input.usageSource!, requestId: input.requestId,
        overrunOutputTokens: input.overrunOutputTokens.toString(),
        ...(input.grantId !== undefined ? { grantId: input.grantId, reservedMicros: (input.reservedMicros ?? 0n).toString() } : {}),
        // A JSON text like every other field (the SQL reads (op->>'tokenClasses')::jsonb).
        ...(tokenClasses !== undefined ? { tokenClasses: JSON.stringify(tokenClasses) } : {}),
        ...(deployment !== '' ? { deployment } : {}),
        // sql/ledger_record_attempts.sql keeps them once this Settle has settled the reservation.
        ...(failedAttempts !== undefined ? { failedAttempts } : {}),
      },
    });
  return {
    result: answer.result as SettleResultName, debitedMicros: answer.debitedMicros, releasedMicros: answer.releasedMicros,
    overrunMicros: answer.overrunMicros, availableMicros: answer.availableMicros, detail: answer.detail,
  };
}
