/** The shape of a ledger scenario (ledger-scenarios.ts runs them): steps, what each must answer, the money after it. */
import type { ledgerV1 } from '@gateway/contracts';

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

/** One INR, µ₹: scenario amounts are written in it. */
export const inr = 1_000_000n;
/** The money after a step, µ₹ (credited is checked as their sum: CONSERVATION). */
export const money = (availableMicros: bigint, heldMicros: bigint, debitedMicros: bigint): ScenarioMoney =>
  ({ availableMicros, heldMicros, debitedMicros });
