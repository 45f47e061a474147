/**
 * The ledger as the proxy's billing sees it, in domain terms: money in bigint µ₹, durations in
 * ms, outcomes by name. The gRPC contract (proto enums, the Operate stream, the settle outbox)
 * stays behind it, in `ledger/grpc-ledger.ts`; inference and domain code know only this.
 */
import type { ClassUsage, TokenUsage } from './pricing.ts';

/** Whose money a Reserve holds: a commercial organisation's wallet, or none (INTERNAL_MODE). */
export type LedgerBillingMode = 'commercial' | 'internal';

/** Where a Settle's token counts come from (NOTHING_FREE: the record says which). */
export type UsageSource = 'upstream' | 'gateway_estimate';

/** A Reserve to hold before an upstream call. */
export interface ReserveOrder {
  /** Caller-generated, also its idempotency key (IDEMPOTENCY). */
  reservationId: string;
  organisationId: string;
  projectId: string;
  billingMode: LedgerBillingMode;
  /** What to hold, µ₹; positive. */
  amountMicros: bigint;
  /** The reservation expires this long after the ledger's clock at reserve time, ms (EXPIRY). */
  ttlMs: number;
  modelSlug: string;
  /**
   * Set when a carve from this grant becomes its own reservation (a promoted stream): the
   * Reserve is held out of the grant's remaining hold, with no new money checks.
   */
  grantId?: string;
}

/** How the ledger answered a Reserve, in its precedence order; `unrecognized` is a result this build does not know (or none). */
export type ReserveOutcome =
  | 'ok' | 'idempotency_conflict' | 'invalid_argument' | 'organisation_unknown' | 'insufficient_balance'
  | 'project_budget_exceeded' | 'released' | 'grant_not_held' | 'unrecognized';

/** The ledger's answer to a Reserve. */
export interface ReserveAnswer {
  outcome: ReserveOutcome;
  /** True when sending the same Reserve again later can succeed (the contract's transient table). */
  transient: boolean;
  /** The ledger's reason, for logs only. */
  detail: string;
  /**
   * On a refusal for balance or budget: how many grants (of other replicas or this one) the ledger
   * is pulling back because of it; when positive the same Reserve may fit shortly.
   */
  grantsRecalled: number;
  /**
   * On a refusal for balance or budget: false when no money now held (a Settle in flight, a
   * recalled grant) could make it fit, only a credit or a budget change: the refusal is final at
   * once. True otherwise, and when the ledger does not say.
   */
  liftable: boolean;
}

/** What a stream's checkpoint records: its running totals so far (EXPIRY). */
export interface CheckpointOrder {
  reservationId: string;
  /** Increases with every checkpoint of a reservation. */
  sequence: bigint;
  usage: TokenUsage;
  /** Customer-price cost of the usage, µ₹. */
  costMicros: bigint;
  /** What the provider charges for it, µ₹. */
  providerCostMicros: bigint;
  /** The reservation's deadline becomes the ledger's now plus this, ms. */
  extendTtlMs: number;
  /** Kept on the usage record an expiry writes, so a stream whose proxy died is billed under its request id. */
  requestId: string;
  /** The deployment streaming the answer (its name within the model), kept for an expiry's usage record. */
  deployment: string;
}

/** How the ledger answered a Checkpoint. */
export type CheckpointOutcome = 'ok' | 'invalid_argument' | 'reservation_unknown' | 'already_resolved' | 'unrecognized';

/** The ledger's answer to a Checkpoint. */
export interface CheckpointAnswer {
  outcome: CheckpointOutcome;
  detail: string;
}

/** The usage a request is billed for, and the Reserve it settles. */
export interface SettleOrder {
  reservationId: string;
  usage: TokenUsage;
  /** Customer-price cost of `usage`, µ₹ (what the wallet is debited, commercial mode). */
  costMicros: bigint;
  /** What the provider charges for everything it produced, µ₹ (analytics only). */
  providerCostMicros: bigint;
  modelSlug: string;
  usageSource: UsageSource;
  requestId: string;
  /** Output tokens produced beyond what the client got (BOUNDED_OVERRUN); 0 when none. */
  overrunOutputTokens: number;
  /** `usage` by token price class, its costs summing to costMicros (pricing.ts costByClass); absent: plain input and output only. */
  tokenClasses?: readonly ClassUsage[] | undefined;
  /**
   * Set when the Reserve was carved from a grant in memory (the ledger has never seen it): the
   * grant and the carve's size, µ₹. Ignored by the ledger when the reservation exists (a promoted carve).
   */
  carve?: { grantId: string; reservedMicros: bigint };
  /** The deployment that answered (its name within the model; docs/proxy.md "Routing"). */
  deployment: string;
  /** Earlier attempts that failed over but that their provider may have billed; absent or empty: none. */
  failedAttempts?: readonly FailedAttempt[] | undefined;
}

/**
 * One attempt of a request that failed over but that its provider may have billed (a timeout
 * after the request was sent, a stream that broke before anything reached the client): provider
 * cost of its deployment, never the customer's (docs/proxy.md "Routing").
 */
export interface FailedAttempt {
  /** 1 for the request's first attempt, then 2, 3, ... */
  attempt: number;
  /** The deployment's name within the model. */
  deployment: string;
  outcome: 'timeout' | 'stream_broken';
  /** Prompt tokens sent (the gateway's count). */
  inputTokens: number;
  /** Output tokens seen before it broke. */
  outputTokens: number;
  /** Their cost at the deployment's provider costs, µ₹. */
  providerCostMicros: bigint;
}

/** How the ledger answered a Settle. */
export type SettleOutcome = 'ok' | 'idempotency_conflict' | 'invalid_argument' | 'reservation_unknown' | 'already_resolved' | 'unrecognized';

/** The ledger's final answer to a Settle. */
export interface SettleAnswer {
  outcome: SettleOutcome;
  /** Debited from the wallet, µ₹ (0 in internal mode). */
  debitedMicros: bigint;
  detail: string;
}

/** A Reserve to free: its request certainly reached no upstream, or its Reserve call's outcome is unknown. */
export interface ReleaseOrder {
  reservationId: string;
  /** Why, for the ledger's movement row (e.g. `upstream_unreachable`). */
  reason: string;
  /** Attempts that failed over but that their provider may have billed (recorded, never charged); absent: none. */
  failedAttempts?: readonly FailedAttempt[] | undefined;
  /** The model the reservation was for, so those attempts' analytics name it; absent: none given. */
  modelSlug?: string | undefined;
}

/** How the ledger answered a Release. */
export type ReleaseOutcome = 'ok' | 'invalid_argument' | 'reservation_unknown' | 'already_resolved' | 'unrecognized';

/** The ledger's final answer to a Release. */
export interface ReleaseAnswer {
  outcome: ReleaseOutcome;
  detail: string;
}

/** A credit grant to ask for: a hold this replica carves its Reserves from in memory (docs/proxy.md "Credit grants"). */
export interface AcquireGrantOrder {
  /** Caller-generated, also its idempotency key. */
  grantId: string;
  organisationId: string;
  projectId: string;
  billingMode: LedgerBillingMode;
  /** Smallest grant worth holding (the Reserve that asked), µ₹; positive. */
  minMicros: bigint;
  /** What the replica would like, µ₹ (>= minMicros). */
  wantMicros: bigint;
  /** Deadline after the ledger's clock, ms (EXPIRY). */
  ttlMs: number;
  /** This replica's PROXY_ID: recalls are pushed on its Operate streams. */
  ownerId: string;
}

/** How the ledger answered an AcquireGrant; `not_granted`: too little available (or budget headroom) for minMicros. */
export type AcquireGrantOutcome = 'ok' | 'idempotency_conflict' | 'invalid_argument' | 'organisation_unknown' | 'not_granted' | 'unrecognized';

/** The ledger's answer to an AcquireGrant. */
export interface AcquireGrantAnswer {
  outcome: AcquireGrantOutcome;
  /** What the grant holds, µ₹ (0 unless ok). */
  grantedMicros: bigint;
  detail: string;
}

/** A change to a grant: return part of it, close it, and/or push its deadline out. */
export interface AdjustGrantOrder {
  /** Caller-generated, its idempotency key. */
  adjustmentId: string;
  grantId: string;
  /** Returned to the wallet, µ₹ (>= 0): what the replica has not carved. */
  returnMicros: bigint;
  /** Return everything left and resolve the grant. */
  close: boolean;
  /** When positive, the deadline becomes the ledger's now plus this, ms. */
  extendTtlMs: number;
  /** Why (`idle`, `recalled`, `shutdown`, `extend`, `replaced`), for the movement rows. */
  reason: string;
}

/** How the ledger answered an AdjustGrant. */
export type AdjustGrantOutcome = 'ok' | 'idempotency_conflict' | 'invalid_argument' | 'grant_unknown' | 'already_resolved' | 'unrecognized';

/** The ledger's answer to an AdjustGrant. */
export interface AdjustGrantAnswer {
  outcome: AdjustGrantOutcome;
  /** What the grant still holds, µ₹. */
  remainingMicros: bigint;
  /** The ledger wants the grant back (the pull-side of a recall). */
  recalled: boolean;
  detail: string;
}

/** Who a Settle or Release is for: the organisation whose Settles in flight it counts among, and the request. */
export interface BillingOwner {
  organisationId: string;
  requestId: string;
  /** False when the Settle returns nothing to available (a carve's, or one costing its whole Reserve): a refused Reserve does not wait for it. */
  freesAvailable?: boolean;
}

/**
 * The ledger operations a completion needs. Reserve and Checkpoint are one attempt each; Settle
 * and Release are delivered until the ledger answers for good (retried through an outage), so
 * their promise resolves with that final answer, or undefined for one given up at shutdown.
 */
export interface Ledger {
  /** One attempt at holding a Reserve; a failed call (ledger down, deadline) throws a GatewayError. */
  reserve(order: ReserveOrder): Promise<ReserveAnswer>;
  /** One attempt at recording a stream's running usage (the next one supersedes it); a failed call throws. */
  checkpoint(order: CheckpointOrder): Promise<CheckpointAnswer>;
  /** Settles a Reserve with its usage; never rejects. Counts as a Settle in flight of the owner's organisation until answered. */
  settle(order: SettleOrder, owner: BillingOwner): Promise<SettleAnswer | undefined>;
  /** Releases a Reserve; never rejects. Counts as a Settle in flight until answered. */
  release(order: ReleaseOrder, owner: BillingOwner): Promise<ReleaseAnswer | undefined>;
  /** True while Settles and Releases wait in numbers at the bound: no new request may start. */
  settlesBacklogged(): boolean;
  /**
   * Waits (up to timeoutMs) while Settles and Releases wait in numbers short of the bound, so that
   * new requests start at the pace the ledger answers; true at once when they do not; false when the wait ran out.
   */
  waitForSettleRoom(timeoutMs: number): Promise<boolean>;
  /** Waits (up to timeoutMs) for the organisation's Settles and Releases queued so far; false when it had none. */
  waitForSettlesOf(organisationId: string, timeoutMs: number): Promise<boolean>;
  /** One attempt at holding a credit grant; a failed call throws. */
  acquireGrant(order: AcquireGrantOrder): Promise<AcquireGrantAnswer>;
  /** One attempt at adjusting a grant (idempotent on its adjustment id); a failed call throws. */
  adjustGrant(order: AdjustGrantOrder): Promise<AdjustGrantAnswer>;
  /** Calls `listener` with the ids of grants the ledger pushes back (GrantRecall on the Operate stream). */
  onRecall(listener: (grantIds: readonly string[]) => void): void;
  /** Longest a Reserve refused while the ledger recalls grants keeps trying, ms (PROXY_RECALL_WAIT_MS). */
  readonly recallWaitMs: number;
}
