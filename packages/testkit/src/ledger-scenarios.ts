/**
 * One table of ledger scenarios, run against the real ledger and against the proxy's in-memory
 * ledger peer, so the peer cannot drift from the rules it imitates: each scenario is a sequence
 * of LedgerService calls with the result each must answer and the money after it, citing the
 * laws it checks by name (docs/ledger.md). The real ledger is the truth; where the peer does not
 * model something (expiry timing), the scenario says so and runs only where its hook exists.
 */
import { randomUUID } from 'node:crypto';
import { ledgerV1 } from '@gateway/contracts';
import { callUnary } from '@gateway/grpc';

import { inr, type LedgerScenario, type ScenarioMoney } from './ledger-scenario-types.ts';
import { limitsAndExpiryScenarios } from './ledger-scenarios-limits-and-expiry.ts';
import { reservationLifeScenarios } from './ledger-scenarios-reservation-life.ts';

export type {
  LedgerLaw, LedgerScenario, ScenarioMoney, ScenarioStep,
} from './ledger-scenario-types.ts';

const { ReserveResult, CheckpointResult, BillingMode } = ledgerV1;

/** Every scenario, in the order they are run (the table is split by what the scenarios cover). */
export const ledgerScenarios: LedgerScenario[] = [...reservationLifeScenarios, ...limitsAndExpiryScenarios];

/** The organisation's balance as a target reads it, µ₹; undefined when it has no account. */
export interface ScenarioBalance extends ScenarioMoney {
  creditedMicros: bigint;
}

/**
 * What the runner needs of a ledger: a client for the four hot-path calls and hooks for the
 * setup the proxy's identity may not do (the real ledger's admin calls; the peer's methods).
 */
export interface LedgerScenarioTarget {
  /** A LedgerService client allowed Reserve, Settle, Release and Checkpoint (the proxy's identity). */
  client: ledgerV1.LedgerServiceClient;
  /** Whether the calls go one unary call each or as messages on one Operate stream (the same semantics). */
  transport: 'unary' | 'operate';
  /** Opens an organisation's account and credits it `creditMicros` (0: opened, not credited). */
  openAccount(organisationId: string, creditMicros: bigint): Promise<void>;
  /** Reads an organisation's balance, µ₹. */
  balance(organisationId: string): Promise<ScenarioBalance | undefined>;
  /** Sets a project's monthly cap, µ₹ (PROJECT_BUDGET). */
  setProjectCap(organisationId: string, projectId: string, capMicros: bigint): Promise<void>;
  /** Makes a reservation's deadline pass now and waits until the ledger has resolved it (EXPIRY); absent where expiry is not modelled. */
  expire?(reservationId: string): Promise<void>;
}

/** Deadline of each call, ms: a bound on a hung call, not a timing assertion. */
const callDeadlineMs = 10_000;
/** How far a deadline may sit from the caller's view of now plus ttl, ms (the ledger uses its database's clock). */
const clockSlackMs = 1_000n;

/** One Operate stream whose calls are matched to their answers by call id. */
function operateChannel(client: ledgerV1.LedgerServiceClient) {
  const stream = client.operate();
  const pending = new Map<bigint, { resolve: (response: ledgerV1.OperationResponse) => void; reject: (error: Error) => void }>();
  let nextCallId = 1n;
  stream.on('data', (response: ledgerV1.OperationResponse) => {
    const waiter = pending.get(BigInt(response.callId));
    pending.delete(BigInt(response.callId));
    waiter?.resolve(response);
  });
  stream.on('error', (error: Error) => {
    for (const waiter of pending.values()) waiter.reject(error);
    pending.clear();
  });
  return {
    call(operation: Partial<ledgerV1.OperationRequest>): Promise<ledgerV1.OperationResponse> {
      const callId = nextCallId++;
      return new Promise((resolve, reject) => {
        pending.set(callId, { resolve, reject });
        stream.write(ledgerV1.OperationRequest.fromPartial({ ...operation, callId: callId as never }));
      });
    },
    close() { stream.end(); },
  };
}

/** The response fields compared between a step and the one it replays: all but `detail` and the balance read at the time of the answer. */
function replayedFields(response: object): Record<string, unknown> {
  const { detail: _detail, availableMicros: _availableMicros, ...rest } = response as Record<string, unknown>;
  return rest;
}

const show = (value: unknown) => JSON.stringify(value, (_key, inner) => (typeof inner === 'bigint' ? `${inner}n` : inner));

/**
 * Runs one scenario against a target, with a fresh organisation and projects, and throws one
 * error listing every step that answered otherwise than the table says (all of them, so a
 * drifted peer shows its whole difference at once).
 */
export async function runLedgerScenario(scenario: LedgerScenario, target: LedgerScenarioTarget): Promise<void> {
  if (scenario.steps.some((step) => step.call === 'expire') && target.expire === undefined) {
    throw new Error(`"${scenario.name}" needs the expire hook: ${scenario.realLedgerOnly ?? 'mark it realLedgerOnly'}`);
  }
  const runId = randomUUID().slice(0, 12);
  const organisationId = `org-${runId}`;
  const projectOf = (name = 'main') => `project-${name}-${runId}`;
  const reservationOf = (name: string) => `${name}-${runId}`;
  const { client } = target;
  if (scenario.creditMicros !== null) await target.openAccount(organisationId, scenario.creditMicros ?? 10n * inr);
  if (scenario.projectCapMicros !== undefined) await target.setProjectCap(organisationId, projectOf(), scenario.projectCapMicros);

  const channel = target.transport === 'operate' ? operateChannel(client) : undefined;
  const problems: string[] = [];
  const answers: object[] = [];
  const deadlines = new Map<string, bigint>();
  const compare = (index: number, what: string, actual: unknown, expected: unknown) => {
    if (show(actual) !== show(expected)) problems.push(`step ${index} ${what}: expected ${show(expected)}, got ${show(actual)}`);
  };

  try {
    for (const [index, step] of scenario.steps.entries()) {
      const label = `${index} (${step.call} ${step.reservation})`;
      const before = BigInt(Date.now());
      let answer: Record<string, unknown> = {};
      if (step.call === 'reserve') {
        const request = ledgerV1.ReserveRequest.fromPartial({
          reservationId: reservationOf(step.reservation), organisationId, projectId: projectOf(step.project),
          billingMode: step.billingMode === 'internal' ? BillingMode.BILLING_MODE_INTERNAL : BillingMode.BILLING_MODE_COMMERCIAL,
          amountMicros: step.amountMicros, ttlMs: step.ttlMs ?? 60_000n, modelSlug: 'model-a', ...step.raw,
        });
        const response = channel ? (await channel.call({ reserve: request })).reserve : await callUnary(client.reserve, client, request, callDeadlineMs);
        answer = { ...(response ?? { missing: 'reserve answer' }) };
        if (response?.result === ReserveResult.RESERVE_RESULT_OK && step.sameAnswerAs === undefined) {
          deadlines.set(step.reservation, response.expiresAtMs);
          if (step.deadlineFromTtl) {
            const after = BigInt(Date.now());
            if (response.expiresAtMs < before + request.ttlMs - clockSlackMs || response.expiresAtMs > after + request.ttlMs + clockSlackMs) {
              problems.push(`step ${label}: deadline ${response.expiresAtMs} is not now + ${request.ttlMs} ms`);
            }
          }
        }
      } else if (step.call === 'settle') {
        const request = ledgerV1.SettleRequest.fromPartial({
          reservationId: reservationOf(step.reservation), inputTokens: step.inputTokens ?? 0n, outputTokens: step.outputTokens ?? 0n,
          costMicros: step.costMicros, providerCostMicros: step.costMicros > 0n ? step.costMicros / 2n : 0n, modelSlug: 'model-a',
          usageSource: ledgerV1.UsageSource.USAGE_SOURCE_UPSTREAM, requestId: step.requestId ?? 'req-1', ...step.raw,
        });
        const response = channel ? (await channel.call({ settle: request })).settle : await callUnary(client.settle, client, request, callDeadlineMs);
        answer = { ...(response ?? { missing: 'settle answer' }) };
      } else if (step.call === 'release') {
        const request = ledgerV1.ReleaseRequest.fromPartial({ reservationId: reservationOf(step.reservation), reason: 'upstream_not_called', ...step.raw });
        const response = channel ? (await channel.call({ release: request })).release : await callUnary(client.release, client, request, callDeadlineMs);
        answer = { ...(response ?? { missing: 'release answer' }) };
      } else if (step.call === 'checkpoint') {
        const request = ledgerV1.CheckpointRequest.fromPartial({
          reservationId: reservationOf(step.reservation), sequence: step.sequence, costMicros: step.costMicros ?? 0n,
          outputTokens: step.outputTokens ?? 0n, providerCostMicros: (step.costMicros ?? 0n) > 0n ? step.costMicros! / 2n : 0n,
          extendTtlMs: step.extendTtlMs ?? 0n, requestId: step.requestId ?? '', ...step.raw,
        });
        const response = channel
          ? (await channel.call({ checkpoint: request })).checkpoint
          : await callUnary(client.checkpoint, client, request, callDeadlineMs);
        answer = { ...(response ?? { missing: 'checkpoint answer' }) };
        if (response?.result === CheckpointResult.CHECKPOINT_RESULT_OK) {
          if (step.deadline === 'unchanged') compare(index, 'deadline', response.expiresAtMs, deadlines.get(step.reservation));
          if (step.deadline === 'extended') {
            const after = BigInt(Date.now());
            if (response.expiresAtMs < before + request.extendTtlMs - clockSlackMs || response.expiresAtMs > after + request.extendTtlMs + clockSlackMs) {
              problems.push(`step ${label}: deadline ${response.expiresAtMs} is not now + ${request.extendTtlMs} ms`);
            }
          }
          deadlines.set(step.reservation, response.expiresAtMs);
        }
      } else {
        await target.expire!(reservationOf(step.reservation));
      }
      answers.push(answer);

      if (step.call !== 'expire') {
        for (const [field, expected] of Object.entries(step.expect)) compare(index, `${step.call} ${field}`, answer[field], expected);
        if (step.call !== 'checkpoint' && step.sameAnswerAs !== undefined) {
          compare(index, `answer (the same as step ${step.sameAnswerAs}'s)`, replayedFields(answer), replayedFields(answers[step.sameAnswerAs]!));
        }
      }
      if (step.money) {
        const balance = await target.balance(organisationId);
        compare(index, 'money', balance && { availableMicros: balance.availableMicros, heldMicros: balance.heldMicros, debitedMicros: balance.debitedMicros }, step.money);
        if (balance && balance.creditedMicros !== balance.availableMicros + balance.heldMicros + balance.debitedMicros) {
          problems.push(`step ${label}: CONSERVATION broken: credited ${balance.creditedMicros} != ${show(balance)}`);
        }
      }
    }
  } finally {
    channel?.close();
  }
  if (problems.length > 0) throw new Error(`"${scenario.name}" over ${target.transport}:\n  ${problems.join('\n  ')}`);
}
