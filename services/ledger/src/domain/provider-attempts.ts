import { nonNegativeAmountProblem } from './validation.ts';

/**
 * A failed upstream attempt of a request that its provider may have billed (issue 29; docs/ledger.md,
 * "Deployments and failed attempts"): kept for platform analytics, never charged. Tokens are counts,
 * the cost µ₹ at that deployment's provider costs.
 */
export interface ProviderAttemptInput {
  /** 1 for the request's first attempt, then 2, 3, ...; unique within the request. */
  attempt: number;
  /** The deployment's name within the model. */
  deployment: string;
  /** Why it failed over. */
  outcome: string;
  inputTokens: bigint;
  outputTokens: bigint;
  providerCostMicros: bigint;
}

/** A deployment name: what the admin allows (and provider_attempts' CHECK). */
const deploymentNamePattern = /^[a-z0-9][a-z0-9-]{0,31}$/;

/** The outcomes a failed attempt the provider may have billed can have. */
const billableOutcomes: ReadonlySet<string> = new Set(['timeout', 'stream_broken']);

/** The most attempts one request may report (the proxy's PROXY_ROUTING_MAX_ATTEMPTS is far below). */
const maxAttempts = 32;

/** What is wrong with a deployment name ('' allowed when `optional`: not known), if anything. */
export function deploymentProblem(field: string, value: string, optional: boolean): string | undefined {
  if (value === '' && optional) return undefined;
  return deploymentNamePattern.test(value) ? undefined : `${field} must match ${deploymentNamePattern.source}`;
}

/** What is wrong with a request's failed attempts, if anything. */
export function attemptsProblem(attempts: readonly ProviderAttemptInput[]): string | undefined {
  if (attempts.length > maxAttempts) return `failed_attempts must have at most ${maxAttempts} entries`;
  const seen = new Set<number>();
  for (const entry of attempts) {
    const problem = !Number.isInteger(entry.attempt) || entry.attempt < 1 ? 'failed_attempts[].attempt must be 1 or more'
      : seen.has(entry.attempt) ? `failed_attempts[].attempt ${entry.attempt} appears twice`
        : deploymentProblem('failed_attempts[].deployment', entry.deployment, false)
          ?? (billableOutcomes.has(entry.outcome) ? undefined : 'failed_attempts[].outcome must be "timeout" or "stream_broken"')
          ?? nonNegativeAmountProblem('failed_attempts[].input_tokens', entry.inputTokens)
          ?? nonNegativeAmountProblem('failed_attempts[].output_tokens', entry.outputTokens)
          ?? nonNegativeAmountProblem('failed_attempts[].provider_cost_micros', entry.providerCostMicros);
    if (problem !== undefined) return problem;
    seen.add(entry.attempt);
  }
  return undefined;
}

/** The attempts as the SQL reads them (a JSON text; ordered by attempt so equal payloads fingerprint alike). */
export function attemptsJson(attempts: readonly ProviderAttemptInput[]): string {
  return JSON.stringify([...attempts].sort((a, b) => a.attempt - b.attempt).map((entry) => ({
    attempt: entry.attempt, deployment: entry.deployment, outcome: entry.outcome,
    inputTokens: entry.inputTokens.toString(), outputTokens: entry.outputTokens.toString(),
    providerCostMicros: entry.providerCostMicros.toString(),
  })));
}
