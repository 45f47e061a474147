/**
 * The grant book's records (grant-book.ts): a grant, its key's slot and the carves made from it.
 * Only billing/ reads or changes them; a request sees its carve through its Hold (hold.ts).
 */
import type { LedgerBillingMode } from '../domain/ledger-port.ts';

/** Who a grant is for: one (organisation, project), in one billing mode. */
interface GrantKey {
  organisationId: string;
  projectId: string;
  billingMode: LedgerBillingMode;
}

/**
 * Where a carve's money is, for the grant's accounting:
 * - `carved`: a part of the grant (its Settle returns r − c to the uncarved remainder);
 * - `promoting`: its own Reserve was sent and not answered (outcome unknown: conservative, nothing returns);
 * - `promoted`: its own reservation at the ledger (its unused part returns to the wallet, not the grant);
 * - `stranded`: its promotion was refused (the grant is no longer held): settled as a carve, debited from available;
 * - `done`: released in memory or its Settle sent.
 */
type CarveState = 'carved' | 'promoting' | 'promoted' | 'stranded' | 'done';

/** A grant's lifecycle in the book. */
type GrantState = 'active' | 'draining' | 'closing' | 'closed';

/** A credit grant this replica holds: the ledger holds `uncarved + outstanding carves + costs not yet applied` for it. */
export class Grant {
  readonly id: string;
  readonly slot: KeySlot;
  /** What the ledger granted, µ₹. */
  readonly grantedMicros: bigint;
  /** U: what may still be carved, µ₹; never more than what the ledger holds for the grant. */
  uncarvedMicros: bigint;
  /** Carves not yet released, settled or promoted. */
  outstanding = 0;
  /** Carved Settles sent and not yet answered. */
  settlesInFlight = 0;
  /** Local deadline, ms: the local clock when the (re)newing call was sent plus the TTL, never later than the ledger's. */
  deadlineMs: number;
  /** Last carve, ms. */
  lastUsedMs: number;
  state: GrantState = 'active';
  /** Why a draining grant will be closed (`recalled`, `replaced`, `shutdown`, `idle`). */
  closeReason = '';
  extending = false;
  /** The ledger's recall was answered (U returned, or the grant closed): later pushes of it are ignored. */
  recallAnswered = false;
  /** The close's adjustment id, kept so a retried close is the same adjustment (IDEMPOTENCY). */
  closeAdjustmentId: string | undefined;
  /** The close in flight, so shutdown can wait for it. */
  closing: Promise<void> | undefined;
  #adjustments = 0;

  constructor(id: string, slot: KeySlot, grantedMicros: bigint, sentAtMs: number, ttlMs: number) {
    this.id = id;
    this.slot = slot;
    this.grantedMicros = grantedMicros;
    this.uncarvedMicros = grantedMicros;
    this.deadlineMs = sentAtMs + ttlMs;
    this.lastUsedMs = sentAtMs;
  }

  /** A fresh adjustment id of this grant. */
  nextAdjustmentId(): string {
    this.#adjustments += 1;
    return `${this.id}:${this.#adjustments}`;
  }

  /** True while a carve is outstanding or a carved Settle is unanswered: the grant cannot close yet. */
  get busy(): boolean {
    return this.outstanding > 0 || this.settlesInFlight > 0;
  }
}

/** One (organisation, project) of the book: its current grant, the acquire in flight, the back-off and the spend estimate. */
export interface KeySlot {
  key: GrantKey;
  current: Grant | undefined;
  acquiring: Promise<void> | undefined;
  /** No AcquireGrant before this, ms (after NOT_GRANTED or a failed call): the exact path meanwhile. */
  notBeforeMs: number;
  /** µ₹ carved in the previous and the current estimate bucket (each windowMs long), and when the current began. */
  previousBucketMicros: bigint;
  currentBucketMicros: bigint;
  bucketStartMs: number;
}

/** One Reserve carved from a grant in memory: the money it holds and where that money is. */
export class Carve {
  /** The grant it was carved from. */
  readonly grantId: string;
  /** Its Reserve, µ₹. */
  readonly amountMicros: bigint;
  /** When it was carved, ms. */
  readonly carvedAtMs: number;
  /** @internal the book's accounting. */
  state: CarveState = 'carved';
  /** @internal */
  readonly grant: Grant;

  /** Made by the book only. */
  constructor(grant: Grant, amountMicros: bigint, nowMs: number) {
    this.grant = grant;
    this.grantId = grant.id;
    this.amountMicros = amountMicros;
    this.carvedAtMs = nowMs;
  }
}
