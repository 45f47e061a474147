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

const { ReserveResult, SettleResult, ReleaseResult, CheckpointResult, BillingMode } = ledgerV1;

/** The ledger's laws, by the names docs/ledger.md gives them. */
export type LedgerLaw =
  | 'NO_OVERSPEND' | 'CONSERVATION' | 'ONE_OUTCOME' | 'IDEMPOTENCY' | 'NOTHING_FREE' | 'BOUNDED_OVERRUN'
  | 'EXPIRY' | 'INTERNAL_MODE' | 'PROJECT_BUDGET';

/** An organisation's money after a step, µ₹ (credited is checked as their sum: CONSERVATION). */
export interface ScenarioMoney {
  availableMicros: bigint;
  heldMicros: bigint;
  debitedMicros: bigint;
}

/** What every step may carry besides its call: the money after it and why it answers so. */
interface StepCommon {
  /** The organisation's money after the step (read through the target's `balance` hook). */
  money?: ScenarioMoney;
  /** Why the step answers as it does, when the result alone does not say. */
  why?: string;
}

/** A response's fields a step expects (the free-text `detail` is never compared). */
type Expected<Response> = Partial<Omit<Response, 'detail'>>;

/** How a step's answer relates to another step's, for replays (IDEMPOTENCY: the first result). */
interface ReplayCheck {
  /**
   * Index (in the scenario's steps) of the step whose answer this one must equal, detail and
   * availableMicros aside: a replay returns the first outcome, with the balance read now.
   */
  sameAnswerAs?: number;
}

/** A Reserve of a reservation named within the scenario ("r1"), with the scenario's organisation and project unless overridden. */
export interface ReserveStep extends StepCommon, ReplayCheck {
  call: 'reserve';
  reservation: string;
  amountMicros: bigint;
  /** Default 60 000 ms. */
  ttlMs?: bigint;
  /** Default commercial. */
  billingMode?: 'commercial' | 'internal';
  /** Another project of the same organisation (named within the scenario). */
  project?: string;
  /** Fields sent as given, last (ids that must be malformed, an unknown organisation, …). */
  raw?: Partial<ledgerV1.ReserveRequest>;
  expect: Expected<ledgerV1.ReserveResponse>;
  /** When OK: the deadline must be the ledger's now plus ttl (within a second). */
  deadlineFromTtl?: boolean;
}

/** A Settle of a named reservation. */
export interface SettleStep extends StepCommon, ReplayCheck {
  call: 'settle';
  reservation: string;
  costMicros: bigint;
  inputTokens?: bigint;
  outputTokens?: bigint;
  /** Default "req-1". */
  requestId?: string;
  raw?: Partial<ledgerV1.SettleRequest>;
  expect: Expected<ledgerV1.SettleResponse>;
}

/** A Release of a named reservation. */
export interface ReleaseStep extends StepCommon, ReplayCheck {
  call: 'release';
  reservation: string;
  raw?: Partial<ledgerV1.ReleaseRequest>;
  expect: Expected<ledgerV1.ReleaseResponse>;
}

/** A Checkpoint of a named reservation's running usage. */
export interface CheckpointStep extends StepCommon {
  call: 'checkpoint';
  reservation: string;
  sequence: bigint;
  costMicros?: bigint;
  outputTokens?: bigint;
  extendTtlMs?: bigint;
  requestId?: string;
  raw?: Partial<ledgerV1.CheckpointRequest>;
  expect: Expected<ledgerV1.CheckpointResponse>;
  /** 'extended': the deadline is now plus extendTtlMs; 'unchanged': the last deadline this reservation answered. */
  deadline?: 'extended' | 'unchanged';
}

/** The reservation's deadline passes and the ledger's sweeper resolves it (needs the target's `expire` hook). */
export interface ExpireStep extends StepCommon {
  call: 'expire';
  reservation: string;
}

/** One step of a scenario. */
export type ScenarioStep = ReserveStep | SettleStep | ReleaseStep | CheckpointStep | ExpireStep;

/** A named sequence of ledger calls and what each must answer. */
export interface LedgerScenario {
  name: string;
  /** The laws the scenario checks, by name. */
  laws: LedgerLaw[];
  /** What the organisation is credited before the first step, µ₹ (default 10 INR); null: it has no account. */
  creditMicros?: bigint | null;
  /** A monthly cap on the scenario's main project, µ₹ (PROJECT_BUDGET). */
  projectCapMicros?: bigint;
  /** Set when the scenario needs what only the real ledger models: the reason. It runs where the hooks it needs exist. */
  realLedgerOnly?: string;
  steps: ScenarioStep[];
}

const inr = 1_000_000n;
const money = (availableMicros: bigint, heldMicros: bigint, debitedMicros: bigint): ScenarioMoney =>
  ({ availableMicros, heldMicros, debitedMicros });

/** Every scenario, in the order they are run. Amounts are µ₹. */
export const ledgerScenarios: LedgerScenario[] = [
  {
    name: 'a Reserve holds, a Settle debits the cost and gives the rest back',
    laws: ['NO_OVERSPEND', 'CONSERVATION', 'NOTHING_FREE'],
    steps: [
      { call: 'reserve', reservation: 'r1', amountMicros: 2_500_000n, ttlMs: 90_000n, deadlineFromTtl: true,
        expect: { result: ReserveResult.RESERVE_RESULT_OK, availableMicros: 7_500_000n }, money: money(7_500_000n, 2_500_000n, 0n) },
      { call: 'settle', reservation: 'r1', costMicros: 1_234_567n, inputTokens: 1200n, outputTokens: 345n,
        expect: { result: SettleResult.SETTLE_RESULT_OK, debitedMicros: 1_234_567n, releasedMicros: 1_265_433n, overrunMicros: 0n, availableMicros: 8_765_433n },
        money: money(8_765_433n, 0n, 1_234_567n) },
      { call: 'reserve', reservation: 'r2', amountMicros: inr,
        expect: { result: ReserveResult.RESERVE_RESULT_OK, availableMicros: 7_765_433n }, money: money(7_765_433n, inr, 1_234_567n) },
      { call: 'settle', reservation: 'r2', costMicros: 0n, why: 'a request that produced nothing is still settled, at zero',
        expect: { result: SettleResult.SETTLE_RESULT_OK, debitedMicros: 0n, releasedMicros: inr, overrunMicros: 0n, availableMicros: 8_765_433n },
        money: money(8_765_433n, 0n, 1_234_567n) },
    ],
  },
  {
    name: 'a Release gives the whole Reserve back; the released reservation takes no other outcome',
    laws: ['ONE_OUTCOME', 'CONSERVATION', 'IDEMPOTENCY'],
    steps: [
      { call: 'reserve', reservation: 'r1', amountMicros: inr, expect: { result: ReserveResult.RESERVE_RESULT_OK, availableMicros: 9n * inr } },
      { call: 'release', reservation: 'r1',
        expect: { result: ReleaseResult.RELEASE_RESULT_OK, releasedMicros: inr, availableMicros: 10n * inr }, money: money(10n * inr, 0n, 0n) },
      { call: 'release', reservation: 'r1', why: 'a replay of the Release answers OK again and moves nothing',
        expect: { result: ReleaseResult.RELEASE_RESULT_OK, releasedMicros: inr, availableMicros: 10n * inr }, money: money(10n * inr, 0n, 0n) },
      { call: 'settle', reservation: 'r1', costMicros: 100n,
        expect: { result: SettleResult.SETTLE_RESULT_ALREADY_RESOLVED }, money: money(10n * inr, 0n, 0n) },
      { call: 'checkpoint', reservation: 'r1', sequence: 1n, costMicros: 100n, expect: { result: CheckpointResult.CHECKPOINT_RESULT_ALREADY_RESOLVED } },
    ],
  },
  {
    name: 'a settled reservation is neither released nor checkpointed',
    laws: ['ONE_OUTCOME', 'CONSERVATION'],
    steps: [
      { call: 'reserve', reservation: 'r1', amountMicros: inr, expect: { result: ReserveResult.RESERVE_RESULT_OK } },
      { call: 'settle', reservation: 'r1', costMicros: 400_000n,
        expect: { result: SettleResult.SETTLE_RESULT_OK, debitedMicros: 400_000n, releasedMicros: 600_000n }, money: money(9_600_000n, 0n, 400_000n) },
      { call: 'release', reservation: 'r1', expect: { result: ReleaseResult.RELEASE_RESULT_ALREADY_RESOLVED, releasedMicros: 0n }, money: money(9_600_000n, 0n, 400_000n) },
      { call: 'checkpoint', reservation: 'r1', sequence: 1n, costMicros: 500_000n, expect: { result: CheckpointResult.CHECKPOINT_RESULT_ALREADY_RESOLVED } },
    ],
  },
  {
    name: 'a Settle past the Reserve debits the overrun, below zero only by it',
    laws: ['BOUNDED_OVERRUN', 'CONSERVATION'],
    creditMicros: inr,
    steps: [
      { call: 'reserve', reservation: 'r1', amountMicros: inr, expect: { result: ReserveResult.RESERVE_RESULT_OK, availableMicros: 0n } },
      { call: 'settle', reservation: 'r1', costMicros: 1_000_250n, outputTokens: 10n,
        expect: { result: SettleResult.SETTLE_RESULT_OK, debitedMicros: 1_000_250n, releasedMicros: 0n, overrunMicros: 250n, availableMicros: -250n },
        money: money(-250n, 0n, 1_000_250n) },
      { call: 'reserve', reservation: 'r2', amountMicros: 1n, expect: { result: ReserveResult.RESERVE_RESULT_INSUFFICIENT_BALANCE, availableMicros: -250n } },
    ],
  },
  {
    name: 'a Reserve that does not fit is refused, writes nothing, and is evaluated afresh when repeated',
    laws: ['NO_OVERSPEND', 'CONSERVATION'],
    creditMicros: inr,
    steps: [
      { call: 'reserve', reservation: 'r1', amountMicros: inr + 1n,
        expect: { result: ReserveResult.RESERVE_RESULT_INSUFFICIENT_BALANCE, availableMicros: inr }, money: money(inr, 0n, 0n) },
      { call: 'reserve', reservation: 'r2', amountMicros: inr, why: 'an exact fit is allowed',
        expect: { result: ReserveResult.RESERVE_RESULT_OK, availableMicros: 0n }, money: money(0n, inr, 0n) },
      { call: 'reserve', reservation: 'r3', amountMicros: 1n, expect: { result: ReserveResult.RESERVE_RESULT_INSUFFICIENT_BALANCE, availableMicros: 0n } },
      { call: 'release', reservation: 'r2', expect: { result: ReleaseResult.RELEASE_RESULT_OK } },
      { call: 'reserve', reservation: 'r3', amountMicros: 1n, why: 'the refused id held nothing, so it may hold now',
        expect: { result: ReserveResult.RESERVE_RESULT_OK, availableMicros: inr - 1n }, money: money(inr - 1n, 1n, 0n) },
      { call: 'reserve', reservation: 'r1', amountMicros: inr + 1n,
        expect: { result: ReserveResult.RESERVE_RESULT_INSUFFICIENT_BALANCE, availableMicros: inr - 1n } },
      { call: 'settle', reservation: 'r1', costMicros: 1n, why: 'the refused Reserve left no reservation to settle',
        expect: { result: SettleResult.SETTLE_RESULT_RESERVATION_UNKNOWN }, money: money(inr - 1n, 1n, 0n) },
    ],
  },
  {
    name: 'a Reserve for an organisation without an account is refused in both billing modes',
    laws: ['NO_OVERSPEND', 'INTERNAL_MODE'],
    creditMicros: null,
    steps: [
      { call: 'reserve', reservation: 'r1', amountMicros: inr, expect: { result: ReserveResult.RESERVE_RESULT_ORGANISATION_UNKNOWN } },
      { call: 'reserve', reservation: 'r2', amountMicros: inr, billingMode: 'internal', expect: { result: ReserveResult.RESERVE_RESULT_ORGANISATION_UNKNOWN } },
    ],
  },
  {
    name: 'a Reserve replayed with the same payload returns the first result; with another payload it conflicts and changes nothing',
    laws: ['IDEMPOTENCY', 'CONSERVATION'],
    steps: [
      { call: 'reserve', reservation: 'r1', amountMicros: inr, expect: { result: ReserveResult.RESERVE_RESULT_OK, availableMicros: 9n * inr } },
      { call: 'reserve', reservation: 'r2', amountMicros: 2n * inr, expect: { result: ReserveResult.RESERVE_RESULT_OK, availableMicros: 7n * inr } },
      { call: 'reserve', reservation: 'r1', amountMicros: inr, sameAnswerAs: 0, why: 'the first outcome and deadline; the balance as it is now',
        expect: { result: ReserveResult.RESERVE_RESULT_OK, availableMicros: 7n * inr }, money: money(7n * inr, 3n * inr, 0n) },
      { call: 'reserve', reservation: 'r1', amountMicros: 2n * inr, expect: { result: ReserveResult.RESERVE_RESULT_IDEMPOTENCY_CONFLICT },
        money: money(7n * inr, 3n * inr, 0n) },
      { call: 'reserve', reservation: 'r1', amountMicros: inr, ttlMs: 61_000n, expect: { result: ReserveResult.RESERVE_RESULT_IDEMPOTENCY_CONFLICT } },
      { call: 'reserve', reservation: 'r1', amountMicros: inr, project: 'other', expect: { result: ReserveResult.RESERVE_RESULT_IDEMPOTENCY_CONFLICT } },
      { call: 'reserve', reservation: 'r1', amountMicros: inr, billingMode: 'internal', expect: { result: ReserveResult.RESERVE_RESULT_IDEMPOTENCY_CONFLICT } },
      { call: 'reserve', reservation: 'r1', amountMicros: 0n, why: 'a conflict precedes invalid input (the enum order)',
        expect: { result: ReserveResult.RESERVE_RESULT_IDEMPOTENCY_CONFLICT }, money: money(7n * inr, 3n * inr, 0n) },
      { call: 'settle', reservation: 'r1', costMicros: 250_000n, expect: { result: SettleResult.SETTLE_RESULT_OK } },
      { call: 'reserve', reservation: 'r1', amountMicros: inr, sameAnswerAs: 0, why: 'a replay after the settle still returns the first result and holds nothing again',
        expect: { result: ReserveResult.RESERVE_RESULT_OK, availableMicros: 7_750_000n }, money: money(7_750_000n, 2n * inr, 250_000n) },
    ],
  },
  {
    name: 'a Settle replayed with the same payload returns the first result; with another payload it conflicts and changes nothing',
    laws: ['IDEMPOTENCY', 'NOTHING_FREE', 'CONSERVATION'],
    steps: [
      { call: 'reserve', reservation: 'r1', amountMicros: inr, expect: { result: ReserveResult.RESERVE_RESULT_OK } },
      { call: 'settle', reservation: 'r1', costMicros: 300_000n, outputTokens: 30n,
        expect: { result: SettleResult.SETTLE_RESULT_OK, debitedMicros: 300_000n, releasedMicros: 700_000n, availableMicros: 9_700_000n } },
      { call: 'reserve', reservation: 'r2', amountMicros: inr, expect: { result: ReserveResult.RESERVE_RESULT_OK, availableMicros: 8_700_000n } },
      { call: 'settle', reservation: 'r1', costMicros: 300_000n, outputTokens: 30n, sameAnswerAs: 1,
        expect: { result: SettleResult.SETTLE_RESULT_OK, availableMicros: 8_700_000n }, money: money(8_700_000n, inr, 300_000n) },
      { call: 'settle', reservation: 'r1', costMicros: 300_001n, outputTokens: 30n,
        expect: { result: SettleResult.SETTLE_RESULT_IDEMPOTENCY_CONFLICT }, money: money(8_700_000n, inr, 300_000n) },
      { call: 'settle', reservation: 'r1', costMicros: 300_000n, outputTokens: 30n, requestId: 'req-2',
        expect: { result: SettleResult.SETTLE_RESULT_IDEMPOTENCY_CONFLICT } },
      { call: 'settle', reservation: 'r1', costMicros: 300_000n, outputTokens: 30n, raw: { overrunOutputTokens: 5n },
        expect: { result: SettleResult.SETTLE_RESULT_IDEMPOTENCY_CONFLICT }, money: money(8_700_000n, inr, 300_000n) },
    ],
  },
  {
    name: 'a Release that overtakes its Reserve leaves a tombstone: the late Reserve holds nothing',
    laws: ['ONE_OUTCOME', 'NO_OVERSPEND', 'CONSERVATION'],
    steps: [
      { call: 'release', reservation: 'r1', expect: { result: ReleaseResult.RELEASE_RESULT_RESERVATION_UNKNOWN, releasedMicros: 0n } },
      { call: 'release', reservation: 'r1', why: 'final: a repeat answers the same',
        expect: { result: ReleaseResult.RELEASE_RESULT_RESERVATION_UNKNOWN, releasedMicros: 0n } },
      { call: 'reserve', reservation: 'r1', amountMicros: inr, expect: { result: ReserveResult.RESERVE_RESULT_RELEASED }, money: money(10n * inr, 0n, 0n) },
      { call: 'reserve', reservation: 'r1', amountMicros: 2n * inr, billingMode: 'internal', why: 'the tombstone precedes a conflict and every refusal',
        expect: { result: ReserveResult.RESERVE_RESULT_RELEASED } },
      { call: 'reserve', reservation: 'r1', amountMicros: 0n, why: 'only invalid input precedes the tombstone',
        expect: { result: ReserveResult.RESERVE_RESULT_INVALID_ARGUMENT } },
      { call: 'settle', reservation: 'r1', costMicros: 100n, expect: { result: SettleResult.SETTLE_RESULT_RESERVATION_UNKNOWN } },
      { call: 'checkpoint', reservation: 'r1', sequence: 1n, expect: { result: CheckpointResult.CHECKPOINT_RESULT_RESERVATION_UNKNOWN } },
      { call: 'reserve', reservation: 'r2', amountMicros: inr, expect: { result: ReserveResult.RESERVE_RESULT_OK }, money: money(9n * inr, inr, 0n) },
    ],
  },
  {
    name: 'a Settle or Checkpoint of an unknown reservation changes nothing and leaves no tombstone',
    laws: ['ONE_OUTCOME', 'CONSERVATION'],
    steps: [
      { call: 'settle', reservation: 'r1', costMicros: 100n, expect: { result: SettleResult.SETTLE_RESULT_RESERVATION_UNKNOWN }, money: money(10n * inr, 0n, 0n) },
      { call: 'checkpoint', reservation: 'r1', sequence: 1n, expect: { result: CheckpointResult.CHECKPOINT_RESULT_RESERVATION_UNKNOWN } },
      { call: 'checkpoint', reservation: 'r1', sequence: 0n, why: 'invalid input precedes an unknown reservation (the enum order)',
        expect: { result: CheckpointResult.CHECKPOINT_RESULT_INVALID_ARGUMENT } },
      { call: 'release', reservation: 'r1', raw: { reason: 'bad\nreason' }, why: 'an invalid Release leaves no tombstone',
        expect: { result: ReleaseResult.RELEASE_RESULT_INVALID_ARGUMENT } },
      { call: 'reserve', reservation: 'r1', amountMicros: inr, expect: { result: ReserveResult.RESERVE_RESULT_OK, availableMicros: 9n * inr } },
    ],
  },
  {
    name: "a project's cap bounds its spend plus what it holds; balance is decided before the cap",
    laws: ['PROJECT_BUDGET', 'NO_OVERSPEND', 'CONSERVATION'],
    projectCapMicros: 3n * inr,
    steps: [
      { call: 'reserve', reservation: 'r1', amountMicros: 2n * inr, expect: { result: ReserveResult.RESERVE_RESULT_OK, availableMicros: 8n * inr } },
      { call: 'reserve', reservation: 'r2', amountMicros: inr + 1n,
        expect: { result: ReserveResult.RESERVE_RESULT_PROJECT_BUDGET_EXCEEDED, availableMicros: 8n * inr }, money: money(8n * inr, 2n * inr, 0n) },
      { call: 'reserve', reservation: 'r3', amountMicros: 11n * inr, why: 'past both: INSUFFICIENT_BALANCE comes first in the enum order',
        expect: { result: ReserveResult.RESERVE_RESULT_INSUFFICIENT_BALANCE } },
      { call: 'reserve', reservation: 'r2', amountMicros: inr, why: 'an exact fit under the cap is allowed',
        expect: { result: ReserveResult.RESERVE_RESULT_OK, availableMicros: 7n * inr } },
      { call: 'settle', reservation: 'r1', costMicros: 500_000n, expect: { result: SettleResult.SETTLE_RESULT_OK }, money: money(8_500_000n, inr, 500_000n) },
      { call: 'reserve', reservation: 'r4', amountMicros: 1_500_000n, why: 'spend 0.5 + held 1 + 1.5 reaches the cap exactly',
        expect: { result: ReserveResult.RESERVE_RESULT_OK, availableMicros: 7n * inr } },
      { call: 'reserve', reservation: 'r5', amountMicros: 1n, expect: { result: ReserveResult.RESERVE_RESULT_PROJECT_BUDGET_EXCEEDED } },
      { call: 'release', reservation: 'r4', expect: { result: ReleaseResult.RELEASE_RESULT_OK } },
      { call: 'reserve', reservation: 'r5', amountMicros: 1n, why: 'a released Reserve no longer counts against the cap',
        expect: { result: ReserveResult.RESERVE_RESULT_OK } },
      { call: 'reserve', reservation: 'r6', amountMicros: 5n * inr, project: 'other', why: "another project of the organisation has no cap",
        expect: { result: ReserveResult.RESERVE_RESULT_OK }, money: money(3_499_999n, 6_000_001n, 500_000n) },
    ],
  },
  {
    name: 'internal billing mode holds and debits nothing, and records the settle',
    laws: ['INTERNAL_MODE', 'CONSERVATION', 'NOTHING_FREE'],
    creditMicros: 0n,
    steps: [
      { call: 'reserve', reservation: 'r1', amountMicros: 5n * inr, billingMode: 'internal', deadlineFromTtl: true,
        expect: { result: ReserveResult.RESERVE_RESULT_OK, availableMicros: 0n }, money: money(0n, 0n, 0n) },
      { call: 'settle', reservation: 'r1', costMicros: 1_234n, outputTokens: 7n,
        expect: { result: SettleResult.SETTLE_RESULT_OK, debitedMicros: 0n, releasedMicros: 0n, overrunMicros: 0n, availableMicros: 0n },
        money: money(0n, 0n, 0n) },
      { call: 'reserve', reservation: 'r2', amountMicros: inr, billingMode: 'internal', expect: { result: ReserveResult.RESERVE_RESULT_OK } },
      { call: 'settle', reservation: 'r2', costMicros: 3n * inr, why: 'no overrun either: nothing is debited',
        expect: { result: SettleResult.SETTLE_RESULT_OK, debitedMicros: 0n, releasedMicros: 0n, overrunMicros: 0n, availableMicros: 0n } },
      { call: 'reserve', reservation: 'r3', amountMicros: inr, billingMode: 'internal', expect: { result: ReserveResult.RESERVE_RESULT_OK } },
      { call: 'release', reservation: 'r3', expect: { result: ReleaseResult.RELEASE_RESULT_OK, releasedMicros: 0n, availableMicros: 0n }, money: money(0n, 0n, 0n) },
    ],
  },
  {
    name: 'a project budget applies in internal billing mode too',
    laws: ['INTERNAL_MODE', 'PROJECT_BUDGET'],
    creditMicros: 0n,
    projectCapMicros: inr,
    steps: [
      { call: 'reserve', reservation: 'r1', amountMicros: 600_000n, billingMode: 'internal', expect: { result: ReserveResult.RESERVE_RESULT_OK } },
      { call: 'reserve', reservation: 'r2', amountMicros: 500_000n, billingMode: 'internal', expect: { result: ReserveResult.RESERVE_RESULT_PROJECT_BUDGET_EXCEEDED } },
      { call: 'settle', reservation: 'r1', costMicros: 100_000n, expect: { result: SettleResult.SETTLE_RESULT_OK, debitedMicros: 0n } },
      { call: 'reserve', reservation: 'r2', amountMicros: 500_000n, billingMode: 'internal', why: 'spend 0.1 + 0.5 fits under the cap',
        expect: { result: ReserveResult.RESERVE_RESULT_OK }, money: money(0n, 0n, 0n) },
      { call: 'reserve', reservation: 'r3', amountMicros: 400_001n, billingMode: 'internal', expect: { result: ReserveResult.RESERVE_RESULT_PROJECT_BUDGET_EXCEEDED } },
      { call: 'reserve', reservation: 'r4', amountMicros: 1n, why: 'a commercial Reserve of the same project counts against the same cap: balance first',
        expect: { result: ReserveResult.RESERVE_RESULT_INSUFFICIENT_BALANCE } },
    ],
  },
  {
    name: 'invalid input is refused and moves nothing',
    laws: ['CONSERVATION', 'IDEMPOTENCY'],
    steps: [
      { call: 'reserve', reservation: 'r1', amountMicros: 0n, expect: { result: ReserveResult.RESERVE_RESULT_INVALID_ARGUMENT } },
      { call: 'reserve', reservation: 'r1', amountMicros: -1n, expect: { result: ReserveResult.RESERVE_RESULT_INVALID_ARGUMENT } },
      { call: 'reserve', reservation: 'r1', amountMicros: 2n ** 62n + 1n, expect: { result: ReserveResult.RESERVE_RESULT_INVALID_ARGUMENT } },
      { call: 'reserve', reservation: 'r1', amountMicros: inr, ttlMs: 0n, expect: { result: ReserveResult.RESERVE_RESULT_INVALID_ARGUMENT } },
      { call: 'reserve', reservation: 'r1', amountMicros: inr, ttlMs: 999n, why: 'a Reserve lives 1 s .. 24 h',
        expect: { result: ReserveResult.RESERVE_RESULT_INVALID_ARGUMENT } },
      { call: 'reserve', reservation: 'r1', amountMicros: inr, ttlMs: 86_400_001n, expect: { result: ReserveResult.RESERVE_RESULT_INVALID_ARGUMENT } },
      { call: 'reserve', reservation: 'r1', amountMicros: inr, raw: { reservationId: '' }, expect: { result: ReserveResult.RESERVE_RESULT_INVALID_ARGUMENT } },
      { call: 'reserve', reservation: 'r1', amountMicros: inr, raw: { reservationId: 'has space' }, expect: { result: ReserveResult.RESERVE_RESULT_INVALID_ARGUMENT } },
      { call: 'reserve', reservation: 'r1', amountMicros: inr, raw: { reservationId: 'x'.repeat(129) }, expect: { result: ReserveResult.RESERVE_RESULT_INVALID_ARGUMENT } },
      { call: 'reserve', reservation: 'r1', amountMicros: inr, raw: { organisationId: '' }, expect: { result: ReserveResult.RESERVE_RESULT_INVALID_ARGUMENT } },
      { call: 'reserve', reservation: 'r1', amountMicros: inr, raw: { projectId: '' }, expect: { result: ReserveResult.RESERVE_RESULT_INVALID_ARGUMENT } },
      { call: 'reserve', reservation: 'r1', amountMicros: inr, raw: { modelSlug: '' }, expect: { result: ReserveResult.RESERVE_RESULT_INVALID_ARGUMENT } },
      { call: 'reserve', reservation: 'r1', amountMicros: inr, raw: { billingMode: BillingMode.BILLING_MODE_UNSPECIFIED },
        expect: { result: ReserveResult.RESERVE_RESULT_INVALID_ARGUMENT }, money: money(10n * inr, 0n, 0n) },
      { call: 'settle', reservation: 'r1', costMicros: -1n, why: 'invalid input precedes an unknown reservation (the enum order)',
        expect: { result: SettleResult.SETTLE_RESULT_INVALID_ARGUMENT } },
      { call: 'reserve', reservation: 'r1', amountMicros: inr, expect: { result: ReserveResult.RESERVE_RESULT_OK }, money: money(9n * inr, inr, 0n) },
      { call: 'settle', reservation: 'r1', costMicros: -1n, expect: { result: SettleResult.SETTLE_RESULT_INVALID_ARGUMENT } },
      { call: 'settle', reservation: 'r1', costMicros: 1n, inputTokens: -1n, expect: { result: SettleResult.SETTLE_RESULT_INVALID_ARGUMENT } },
      { call: 'settle', reservation: 'r1', costMicros: 1n, outputTokens: -1n, expect: { result: SettleResult.SETTLE_RESULT_INVALID_ARGUMENT } },
      { call: 'settle', reservation: 'r1', costMicros: 1n, raw: { providerCostMicros: -1n }, expect: { result: SettleResult.SETTLE_RESULT_INVALID_ARGUMENT } },
      { call: 'settle', reservation: 'r1', costMicros: 1n, raw: { overrunOutputTokens: -1n }, expect: { result: SettleResult.SETTLE_RESULT_INVALID_ARGUMENT } },
      { call: 'settle', reservation: 'r1', costMicros: 1n, raw: { reservationId: '' }, expect: { result: SettleResult.SETTLE_RESULT_INVALID_ARGUMENT } },
      { call: 'release', reservation: 'r1', raw: { reservationId: '' }, expect: { result: ReleaseResult.RELEASE_RESULT_INVALID_ARGUMENT } },
      { call: 'release', reservation: 'r1', raw: { reason: 'bad\u0000reason' }, expect: { result: ReleaseResult.RELEASE_RESULT_INVALID_ARGUMENT } },
      { call: 'checkpoint', reservation: 'r1', sequence: 0n, expect: { result: CheckpointResult.CHECKPOINT_RESULT_INVALID_ARGUMENT } },
      { call: 'checkpoint', reservation: 'r1', sequence: 1n, costMicros: -1n, expect: { result: CheckpointResult.CHECKPOINT_RESULT_INVALID_ARGUMENT } },
      { call: 'checkpoint', reservation: 'r1', sequence: 1n, extendTtlMs: -1n, expect: { result: CheckpointResult.CHECKPOINT_RESULT_INVALID_ARGUMENT } },
      { call: 'checkpoint', reservation: 'r1', sequence: 1n, raw: { reservationId: '' }, expect: { result: CheckpointResult.CHECKPOINT_RESULT_INVALID_ARGUMENT } },
      { call: 'settle', reservation: 'r1', costMicros: 0n, why: 'none of the refusals resolved it', expect: { result: SettleResult.SETTLE_RESULT_OK, releasedMicros: inr },
        money: money(10n * inr, 0n, 0n) },
      { call: 'settle', reservation: 'r1', costMicros: -1n, why: 'a settled reservation\'s conflict precedes invalid input (the enum order)',
        expect: { result: SettleResult.SETTLE_RESULT_IDEMPOTENCY_CONFLICT } },
    ],
  },
  {
    name: 'an invalid Settle of a released reservation is INVALID_ARGUMENT before ALREADY_RESOLVED',
    laws: ['ONE_OUTCOME'],
    steps: [
      { call: 'reserve', reservation: 'r1', amountMicros: inr, expect: { result: ReserveResult.RESERVE_RESULT_OK } },
      { call: 'release', reservation: 'r1', expect: { result: ReleaseResult.RELEASE_RESULT_OK } },
      { call: 'settle', reservation: 'r1', costMicros: -1n, expect: { result: SettleResult.SETTLE_RESULT_INVALID_ARGUMENT } },
    ],
  },
  {
    name: 'checkpoints record running usage in sequence, move no money, and push the deadline out when asked',
    laws: ['EXPIRY', 'IDEMPOTENCY', 'CONSERVATION'],
    steps: [
      { call: 'reserve', reservation: 'r1', amountMicros: inr, ttlMs: 60_000n, deadlineFromTtl: true, expect: { result: ReserveResult.RESERVE_RESULT_OK } },
      { call: 'checkpoint', reservation: 'r1', sequence: 1n, costMicros: 100_000n, outputTokens: 10n, deadline: 'unchanged',
        expect: { result: CheckpointResult.CHECKPOINT_RESULT_OK }, money: money(9n * inr, inr, 0n) },
      { call: 'checkpoint', reservation: 'r1', sequence: 1n, costMicros: 100_000n, outputTokens: 10n, deadline: 'unchanged', why: 'a replay changes nothing',
        expect: { result: CheckpointResult.CHECKPOINT_RESULT_OK } },
      { call: 'checkpoint', reservation: 'r1', sequence: 2n, costMicros: 200_000n, outputTokens: 20n, extendTtlMs: 120_000n, deadline: 'extended',
        expect: { result: CheckpointResult.CHECKPOINT_RESULT_OK } },
      { call: 'checkpoint', reservation: 'r1', sequence: 1n, costMicros: 900_000n, extendTtlMs: 600_000n, deadline: 'unchanged',
        why: 'one out of order changes nothing, its extension neither', expect: { result: CheckpointResult.CHECKPOINT_RESULT_OK } },
      { call: 'checkpoint', reservation: 'r1', sequence: 3n, costMicros: 300_000n, outputTokens: 30n, requestId: 'req-a', deadline: 'unchanged',
        expect: { result: CheckpointResult.CHECKPOINT_RESULT_OK } },
      { call: 'checkpoint', reservation: 'r1', sequence: 4n, costMicros: 400_000n, outputTokens: 40n, requestId: 'req-b',
        why: 'a reservation keeps the first request id it was given', expect: { result: CheckpointResult.CHECKPOINT_RESULT_INVALID_ARGUMENT } },
      { call: 'checkpoint', reservation: 'r1', sequence: 4n, costMicros: 250_000n, outputTokens: 40n, why: 'running totals, never going down',
        expect: { result: CheckpointResult.CHECKPOINT_RESULT_INVALID_ARGUMENT } },
      { call: 'checkpoint', reservation: 'r1', sequence: 4n, costMicros: 400_000n, outputTokens: 29n,
        expect: { result: CheckpointResult.CHECKPOINT_RESULT_INVALID_ARGUMENT } },
      { call: 'checkpoint', reservation: 'r1', sequence: 4n, costMicros: 400_000n, outputTokens: 40n, extendTtlMs: 999n, why: 'an extension is a Reserve lifetime: 1 s .. 24 h',
        expect: { result: CheckpointResult.CHECKPOINT_RESULT_INVALID_ARGUMENT } },
      { call: 'checkpoint', reservation: 'r1', sequence: 4n, costMicros: 400_000n, outputTokens: 40n, requestId: 'req-a', deadline: 'unchanged',
        expect: { result: CheckpointResult.CHECKPOINT_RESULT_OK }, money: money(9n * inr, inr, 0n) },
      { call: 'checkpoint', reservation: 'r1', sequence: 5n, costMicros: 400_000n, outputTokens: 40n, why: 'a checkpoint without a request id keeps the recorded one',
        expect: { result: CheckpointResult.CHECKPOINT_RESULT_OK } },
      { call: 'settle', reservation: 'r1', costMicros: 450_000n,
        expect: { result: SettleResult.SETTLE_RESULT_OK, debitedMicros: 450_000n, releasedMicros: 550_000n }, money: money(9_550_000n, 0n, 450_000n) },
      { call: 'checkpoint', reservation: 'r1', sequence: 6n, costMicros: 500_000n, outputTokens: 50n, expect: { result: CheckpointResult.CHECKPOINT_RESULT_ALREADY_RESOLVED } },
      { call: 'checkpoint', reservation: 'r1', sequence: 5n, costMicros: 400_000n, outputTokens: 40n, deadline: 'unchanged',
        why: 'a replay is OK and changes nothing, also after the reservation resolved', expect: { result: CheckpointResult.CHECKPOINT_RESULT_OK } },
    ],
  },
  {
    name: 'an expired reservation is charged its last checkpoint; a late Settle still records the usage and charges the rest',
    laws: ['EXPIRY', 'ONE_OUTCOME', 'NOTHING_FREE', 'CONSERVATION'],
    realLedgerOnly: 'the peer does not model expiry: no sweeper runs in it, and proxy tests never wait for a deadline',
    steps: [
      { call: 'reserve', reservation: 'r1', amountMicros: inr, expect: { result: ReserveResult.RESERVE_RESULT_OK } },
      { call: 'checkpoint', reservation: 'r1', sequence: 1n, costMicros: 300_000n, outputTokens: 30n, requestId: 'req-r1',
        expect: { result: CheckpointResult.CHECKPOINT_RESULT_OK } },
      { call: 'expire', reservation: 'r1', money: money(9_700_000n, 0n, 300_000n) },
      { call: 'settle', reservation: 'r1', costMicros: 400_000n, why: 'usage that happened is never lost: what the expiry did not charge is debited, as overrun',
        expect: { result: SettleResult.SETTLE_RESULT_OK, debitedMicros: 100_000n, releasedMicros: 0n, overrunMicros: 100_000n, availableMicros: 9_600_000n },
        money: money(9_600_000n, 0n, 400_000n) },
      { call: 'settle', reservation: 'r1', costMicros: 400_000n, sameAnswerAs: 3, expect: { result: SettleResult.SETTLE_RESULT_OK } },
      { call: 'release', reservation: 'r1', expect: { result: ReleaseResult.RELEASE_RESULT_ALREADY_RESOLVED } },
      { call: 'checkpoint', reservation: 'r1', sequence: 2n, costMicros: 400_000n, outputTokens: 40n, expect: { result: CheckpointResult.CHECKPOINT_RESULT_ALREADY_RESOLVED } },
      { call: 'reserve', reservation: 'r2', amountMicros: inr, expect: { result: ReserveResult.RESERVE_RESULT_OK } },
      { call: 'expire', reservation: 'r2', why: 'without a checkpoint an expiry charges nothing', money: money(9_600_000n, 0n, 400_000n) },
      { call: 'release', reservation: 'r2', expect: { result: ReleaseResult.RELEASE_RESULT_ALREADY_RESOLVED }, money: money(9_600_000n, 0n, 400_000n) },
    ],
  },
];

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
