import { randomUUID } from 'node:crypto';
import type { Logger } from '@gateway/logger';
import type { AcquireGrantAnswer, AcquireGrantOrder, AdjustGrantAnswer, AdjustGrantOrder, LedgerBillingMode } from '../domain/ledger-port.ts';
import { Carve, Grant, type KeySlot } from './grant.ts';

/** The grant calls the book makes (the Ledger port in production); each is one attempt and may throw. */
interface GrantLedger {
  acquireGrant(order: AcquireGrantOrder): Promise<AcquireGrantAnswer>;
  adjustGrant(order: AdjustGrantOrder): Promise<AdjustGrantAnswer>;
}

/** Options of the grant book (PROXY_GRANT_* and the stream checkpoint interval). */
export interface GrantBookOptions {
  ledger: GrantLedger;
  logger: Logger;
  /** This replica's PROXY_ID: the ledger pushes recalls of its grants on its Operate streams. */
  ownerId: string;
  /** A grant's deadline after the ledger's clock, ms (PROXY_GRANT_TTL_MS); extended while it is in use. */
  ttlMs: number;
  /** A grant asks for this long of the recent spend of its project, ms (PROXY_GRANT_WINDOW_MS); also the back-off after NOT_GRANTED. */
  windowMs: number;
  /** A grant nothing was carved from for this long, with nothing outstanding, is closed, ms (PROXY_GRANT_IDLE_RETURN_MS). */
  idleReturnMs: number;
  /** A carved stream still running this long after its carve becomes its own reservation, ms (PROXY_CHECKPOINT_INTERVAL_MS). */
  checkpointIntervalMs: number;
  /** The book's one periodic check (extend, idle return, drained closes), ms; 0: no timer (tests call tick()). */
  tickMs?: number;
  /** Clock, ms (Date.now by default; tests drive their own). */
  now?: () => number;
}

/** How many Reserves a grant holds at least, when the replica has no recent spend to size it by. */
const fewReserves = 4n;

/**
 * The replica's credit grants (RFC 4006's pattern; docs/proxy.md "Credit grants: the hot path
 * step by step"). A request's Reserve is carved synchronously from the uncarved remainder U of
 * the grant for its (organisation, project): no network call before the upstream call. When it
 * does not fit, one AcquireGrant per key is shared by every request waiting; when no grant is
 * given (NOT_GRANTED, ledger down) the key takes the exact per-request path for a back-off.
 *
 * Its carve, promotion, settle and release steps have one caller, a request's Hold (hold.ts),
 * which calls them in the order they need; the wiring only constructs the book, passes it
 * recalls and stream ends, reads its gauge and closes it.
 *
 * Invariant (NO_OVERSPEND, CONSERVATION): U never exceeds what the ledger holds for the grant.
 * The ledger holds U + outstanding carves + costs of settles not yet applied; U only grows when a
 * carve is released in memory (U += r) or its Settle is sent (U += r − c), both of which leave
 * the ledger's hold unchanged or larger than U.
 */
export class GrantBook {
  readonly #options: GrantBookOptions;
  readonly #now: () => number;
  readonly #slots = new Map<string, Map<string, KeySlot>>();
  readonly #grants = new Map<string, Grant>();
  readonly #timer: NodeJS.Timeout | undefined;
  #closed = false;
  /** Grant ids of AcquireGrants sent and not yet answered: a recall may overtake its grant's answer. */
  readonly #acquiresInFlight = new Set<string>();
  /** Of those, the ones a recall named before the answer came: given back as soon as it does. */
  readonly #recalledBeforeAnswer = new Set<string>();
  /** Counts the ledger's Operate streams that ended: a grant acquired on an ended one is not carved from. */
  #streamGeneration = 0;

  /** An empty book; its one periodic check runs every tickMs (unref'd: it never keeps the process up). */
  constructor(options: GrantBookOptions) {
    this.#options = options;
    this.#now = options.now ?? Date.now;
    const tickMs = options.tickMs ?? Math.max(10, Math.min(Math.floor(options.ttlMs / 6), Math.floor(options.idleReturnMs / 2), 1_000));
    if (tickMs > 0) {
      this.#timer = setInterval(() => this.tick(), tickMs);
      this.#timer.unref();
    }
  }

  /**
   * Carves `amountMicros` from the key's grant, in memory: the fast path, no I/O and no
   * allocation but the carve. Undefined when there is no active grant with room, or it is near
   * its deadline (a carve must be settled while the grant is held).
   */
  tryCarve(organisationId: string, projectId: string, billingMode: LedgerBillingMode, amountMicros: bigint): Carve | undefined {
    if (this.#closed) return undefined;
    const slot = this.#slot(organisationId, projectId, billingMode);
    const grant = slot.current;
    const nowMs = this.#now();
    this.#recordSpend(slot, amountMicros, nowMs);
    if (grant === undefined || grant.state !== 'active' || grant.uncarvedMicros < amountMicros) return undefined;
    if (grant.deadlineMs - nowMs < this.#options.ttlMs / 4) return undefined;
    grant.uncarvedMicros -= amountMicros;
    grant.outstanding += 1;
    grant.lastUsedMs = nowMs;
    // Renewed before it runs out: once three quarters are carved, the next grant is asked for in
    // the background, so no request waits for an AcquireGrant while traffic is steady. (The ledger
    // sizes it; near exhaustion it grants nothing and this key takes the exact path after U is used.)
    if (grant.uncarvedMicros * 4n < grant.grantedMicros && slot.acquiring === undefined && nowMs >= slot.notBeforeMs) {
      slot.acquiring = this.#acquire(slot, amountMicros).finally(() => { slot.acquiring = undefined; });
    }
    return new Carve(grant, amountMicros, nowMs);
  }

  /**
   * Asks the ledger for a grant for the key (one call shared by every request waiting on the
   * key), then carves. Undefined when the key is backing off, nothing was granted, or the new
   * grant has no room for this Reserve: the caller takes the exact path.
   */
  async acquireAndCarve(organisationId: string, projectId: string, billingMode: LedgerBillingMode, amountMicros: bigint): Promise<Carve | undefined> {
    if (this.#closed) return undefined;
    const slot = this.#slot(organisationId, projectId, billingMode);
    if (this.#now() < slot.notBeforeMs) return undefined;
    slot.acquiring ??= this.#acquire(slot, amountMicros).finally(() => { slot.acquiring = undefined; });
    await slot.acquiring;
    const grant = slot.current;
    if (grant === undefined || grant.state !== 'active' || grant.uncarvedMicros < amountMicros) return undefined;
    grant.uncarvedMicros -= amountMicros;
    grant.outstanding += 1;
    grant.lastUsedMs = this.#now();
    return new Carve(grant, amountMicros, grant.lastUsedMs);
  }

  /** A carve whose request certainly reached no upstream: its money goes back to U, no ledger call. */
  release(carve: Carve): void {
    if (carve.state !== 'carved' && carve.state !== 'stranded') return;
    carve.state = 'done';
    carve.grant.outstanding -= 1;
    carve.grant.uncarvedMicros += carve.amountMicros;
  }

  /**
   * The carve's Settle (cost c, µ₹) is being sent: a carve still in its grant returns r − c to U
   * (the ledger debits c from the grant and keeps r − c in it); a promoted one, or one whose
   * promotion outcome is unknown, returns nothing (its unused part goes to the wallet).
   */
  settleSent(carve: Carve, costMicros: bigint): void {
    const { grant } = carve;
    if (carve.state === 'done') return;
    if (carve.state === 'carved' || carve.state === 'stranded') grant.uncarvedMicros += carve.amountMicros - costMicros;
    if (carve.state !== 'promoted') grant.outstanding -= 1;
    carve.state = 'done';
    grant.settlesInFlight += 1;
  }

  /** The carve's Settle has its final answer (or was abandoned): a draining grant may now close. */
  settleAnswered(carve: Carve): void {
    carve.grant.settlesInFlight -= 1;
    if (carve.grant.state === 'draining' && !carve.grant.busy) void this.#close(carve.grant);
  }

  /** True when the carve (a stream) has run one checkpoint interval and should become its own reservation (EXPIRY). */
  promotionDue(carve: Carve): boolean {
    return (carve.state === 'carved' || carve.state === 'promoting') && this.#now() - carve.carvedAtMs >= this.#options.checkpointIntervalMs;
  }

  /** Its own Reserve is being sent: until answered its money is nowhere certain, so nothing returns to U. */
  promotionSent(carve: Carve): void {
    if (carve.state === 'carved') carve.state = 'promoting';
  }

  /**
   * The promotion's answer: `held` (its own reservation now: no longer part of the grant),
   * `refused` (the grant is not held: it stays a carve whose Settle the ledger debits from
   * available), or `unknown` (the call failed: sent again at the next checkpoint).
   */
  promotionAnswered(carve: Carve, outcome: 'held' | 'refused' | 'unknown'): void {
    if (carve.state !== 'promoting') return;
    if (outcome === 'held') {
      carve.state = 'promoted';
      carve.grant.outstanding -= 1;
      if (carve.grant.state === 'draining' && !carve.grant.busy) void this.#close(carve.grant);
    } else if (outcome === 'refused') {
      carve.state = 'stranded';
    }
  }

  /**
   * The ledger wants these grants back (its organisation runs low): carve nothing more from
   * them, return U at once, close each once its carves are settled and their Settles answered.
   */
  recall(grantIds: readonly string[]): void {
    for (const grantId of grantIds) {
      if (this.#acquiresInFlight.has(grantId)) this.#recalledBeforeAnswer.add(grantId);
      const grant = this.#grants.get(grantId);
      // A grant already closing answers the recall by its close.
      if (grant === undefined || grant.recallAnswered || grant.state === 'closing' || grant.state === 'closed') continue;
      grant.recallAnswered = true;
      this.#options.logger.info({ grantId, uncarvedMicros: grant.uncarvedMicros.toString() }, 'credit grant recalled');
      // A draining grant (replaced, idle) is answered too: its U is still held at the ledger.
      this.#drain(grant, 'recalled');
      if (!grant.busy) { void this.#close(grant); continue; }
      // Return U, even when it is 0: the adjustment is the recall's answer, after which a Reserve
      // refused at the ledger no longer waits for this grant (ReserveResponse.grants_recalled).
      const returnMicros = grant.uncarvedMicros;
      grant.uncarvedMicros = 0n;
      void this.#adjust(grant, { returnMicros, close: false, extendTtlMs: 0, reason: 'recalled' }).then((answer) => {
        // Not returned (the call failed): it stays held until the grant closes (and at worst expires).
        if (answer === undefined) this.#options.logger.warn({ grantId }, 'credit grant recall: return failed; returned at close');
      });
    }
  }

  /**
   * The Operate stream to the ledger ended or broke (the ledger restarted, the connection was
   * cut): every grant is treated as recalled, carving nothing more, its U returned and closed
   * once its carves are settled, and an AcquireGrant still unanswered on that stream is given
   * back when it answers. The ledger closes the grants of an owner whose stream it saw end, so a
   * replica carves only from grants of the stream it has open (docs/proxy.md "Credit grants").
   */
  streamEnded(): void {
    this.#streamGeneration += 1;
    const held = [...this.#grants.values()].filter((grant) => grant.state !== 'closing' && grant.state !== 'closed');
    if (held.length > 0) this.#options.logger.warn({ grants: held.length }, 'ledger operation stream ended: credit grants treated as recalled');
    this.recall(held.map((grant) => grant.id));
  }

  /**
   * The book's periodic check: extends the deadline of grants in use when a third of the TTL is
   * left, closes idle ones and drained ones, and forgets those past their deadline (the ledger's
   * sweeper expired them: everything they held is back in the wallet).
   */
  tick(): void {
    const nowMs = this.#now();
    const { ttlMs, idleReturnMs } = this.#options;
    for (const grant of this.#grants.values()) {
      if (grant.state === 'closing' || grant.state === 'closed') continue;
      if (nowMs >= grant.deadlineMs) {
        this.#options.logger.warn({ grantId: grant.id }, 'credit grant passed its deadline; the ledger expires it');
        this.#forget(grant);
        continue;
      }
      if (grant.state === 'draining') {
        if (!grant.busy) void this.#close(grant);
      } else if (!grant.busy && nowMs - grant.lastUsedMs >= idleReturnMs) {
        this.#drain(grant, 'idle');
        void this.#close(grant);
        continue;
      }
      if (!grant.extending && grant.deadlineMs - nowMs <= ttlMs / 3 && (grant.busy || grant.state === 'active')) this.#extend(grant, nowMs);
    }
  }

  /** Closes every grant (SIGTERM, after the HTTP drain): carves nothing more; resolves when each close was answered or failed. */
  async closeAll(): Promise<void> {
    this.#closed = true;
    if (this.#timer !== undefined) clearInterval(this.#timer);
    const closing: Promise<unknown>[] = [];
    for (const grant of this.#grants.values()) {
      this.#drain(grant, 'shutdown');
      closing.push(this.#close(grant));
    }
    await Promise.all(closing);
  }

  /** µ₹ the replica's grants still hold uncarved (U summed over every grant not yet forgotten): the proxyGrantHeldMicros gauge, read at scrape time. */
  uncarvedMicros(): bigint {
    let total = 0n;
    for (const grant of this.#grants.values()) total += grant.uncarvedMicros;
    return total;
  }

  /** The grants held, for tests and the log: id, key, U and what is outstanding. */
  grants(): Array<{ grantId: string; organisationId: string; projectId: string; uncarvedMicros: bigint; outstanding: number; settlesInFlight: number; state: string }> {
    return [...this.#grants.values()].map((grant) => ({
      grantId: grant.id, organisationId: grant.slot.key.organisationId, projectId: grant.slot.key.projectId,
      uncarvedMicros: grant.uncarvedMicros, outstanding: grant.outstanding, settlesInFlight: grant.settlesInFlight, state: grant.state,
    }));
  }

  /** The key's slot (two map lookups, nothing allocated once it exists). */
  #slot(organisationId: string, projectId: string, billingMode: LedgerBillingMode): KeySlot {
    let projects = this.#slots.get(organisationId);
    if (projects === undefined) {
      projects = new Map();
      this.#slots.set(organisationId, projects);
    }
    let slot = projects.get(projectId);
    if (slot === undefined) {
      slot = {
        key: { organisationId, projectId, billingMode }, current: undefined, acquiring: undefined, notBeforeMs: 0,
        previousBucketMicros: 0n, currentBucketMicros: 0n, bucketStartMs: this.#now(),
      };
      projects.set(projectId, slot);
    }
    // INTERNAL_MODE can change with a config update: a grant holds money of the mode it was asked in.
    if (slot.key.billingMode !== billingMode) {
      if (slot.current !== undefined) this.#drain(slot.current, 'replaced');
      slot.key = { organisationId, projectId, billingMode };
    }
    return slot;
  }

  /** Counts a Reserve in the key's spend estimate (two buckets of windowMs). */
  #recordSpend(slot: KeySlot, amountMicros: bigint, nowMs: number): void {
    const { windowMs } = this.#options;
    const elapsedMs = nowMs - slot.bucketStartMs;
    if (elapsedMs >= windowMs) {
      slot.previousBucketMicros = elapsedMs >= 2 * windowMs ? 0n : slot.currentBucketMicros;
      slot.currentBucketMicros = 0n;
      slot.bucketStartMs = elapsedMs >= 2 * windowMs ? nowMs : slot.bucketStartMs + windowMs;
    }
    slot.currentBucketMicros += amountMicros;
  }

  /** What to ask for, µ₹: a few Reserves, or the recent spend per ms × window when that is more (integer arithmetic). */
  #wantMicros(slot: KeySlot, amountMicros: bigint): bigint {
    const { windowMs } = this.#options;
    const spanMs = BigInt(windowMs + Math.max(0, this.#now() - slot.bucketStartMs));
    const recent = (slot.previousBucketMicros + slot.currentBucketMicros) * BigInt(windowMs);
    const byRate = (recent + spanMs - 1n) / spanMs;
    const few = amountMicros * fewReserves;
    return byRate > few ? byRate : few;
  }

  async #acquire(slot: KeySlot, amountMicros: bigint): Promise<void> {
    const { key } = slot;
    const sentAtMs = this.#now();
    const grantId = `grant_${randomUUID()}`;
    const generation = this.#streamGeneration;
    let answer: AcquireGrantAnswer | undefined;
    this.#acquiresInFlight.add(grantId);
    try {
      answer = await this.#options.ledger.acquireGrant({
        grantId, organisationId: key.organisationId, projectId: key.projectId, billingMode: key.billingMode,
        minMicros: amountMicros, wantMicros: this.#wantMicros(slot, amountMicros), ttlMs: this.#options.ttlMs, ownerId: this.#options.ownerId,
      });
    } catch (error) {
      this.#options.logger.warn({ organisationId: key.organisationId, err: { message: (error as Error).message } }, 'credit grant: acquire failed; exact path for a while');
    } finally {
      this.#acquiresInFlight.delete(grantId);
    }
    const recalledBeforeAnswer = this.#recalledBeforeAnswer.delete(grantId) || generation !== this.#streamGeneration;
    if (answer?.outcome !== 'ok' || this.#closed) {
      // NOT_GRANTED (the organisation runs low), a failed call or a refusal: the key takes the exact
      // path, and asks again only after a back-off, so near exhaustion the ledger is not asked per request.
      slot.notBeforeMs = this.#now() + this.#options.windowMs;
      if (answer !== undefined && answer.outcome !== 'not_granted' && answer.outcome !== 'ok') {
        this.#options.logger.warn({ organisationId: key.organisationId, result: answer.outcome, detail: answer.detail }, 'credit grant refused');
      }
      // Granted after shutdown began: give it straight back.
      if (answer?.outcome === 'ok') void this.#options.ledger.adjustGrant({ adjustmentId: `${grantId}:close`, grantId, returnMicros: 0n, close: true, extendTtlMs: 0, reason: 'shutdown' }).catch(() => {});
      return;
    }
    const grant = new Grant(grantId, slot, answer.grantedMicros, sentAtMs, this.#options.ttlMs);
    this.#grants.set(grantId, grant);
    if (recalledBeforeAnswer) {
      // Recalled (a budget change, a low balance) or acquired on a stream that has ended since:
      // nothing is carved from it; the recall's answer closes it.
      grant.state = 'draining';
      grant.closeReason = 'recalled';
      grant.recallAnswered = true;
      void this.#close(grant);
      return;
    }
    // The old grant (too small now) carves nothing more and closes once its carves are settled.
    if (slot.current !== undefined && slot.current.state === 'active') this.#drain(slot.current, 'replaced');
    slot.current = grant;
  }

  /** Carves nothing more from the grant; it closes once nothing is outstanding. */
  #drain(grant: Grant, reason: string): void {
    if (grant.state !== 'active') return;
    grant.state = 'draining';
    grant.closeReason = reason;
    if (grant.slot.current === grant) grant.slot.current = undefined;
  }

  /** Closes a draining grant (everything it still holds returns to the wallet); a failed close is tried again by the next tick. */
  #close(grant: Grant): Promise<void> {
    if (grant.state === 'closing') return grant.closing ?? Promise.resolve();
    if (grant.state !== 'draining') return Promise.resolve();
    grant.state = 'closing';
    grant.closeAdjustmentId ??= grant.nextAdjustmentId();
    grant.closing = this.#adjust(grant, { returnMicros: 0n, close: true, extendTtlMs: 0, reason: grant.closeReason }, grant.closeAdjustmentId).then((answer) => {
      grant.closing = undefined;
      if (answer === undefined || answer.outcome === 'unrecognized') grant.state = 'draining';
      else this.#forget(grant);
    });
    return grant.closing;
  }

  #extend(grant: Grant, nowMs: number): void {
    grant.extending = true;
    void this.#adjust(grant, { returnMicros: 0n, close: false, extendTtlMs: this.#options.ttlMs, reason: 'extend' }).then((answer) => {
      grant.extending = false;
      if (answer === undefined) return;
      if (answer.outcome === 'ok') grant.deadlineMs = Math.max(grant.deadlineMs, nowMs + this.#options.ttlMs);
      else if (answer.outcome === 'already_resolved' || answer.outcome === 'grant_unknown') this.#forget(grant);
      // The pull side of a recall: the ledger said so on an answer instead of a push.
      if (answer.recalled) this.recall([grant.id]);
    });
  }

  /** One AdjustGrant call; undefined when the call failed (logged). */
  async #adjust(grant: Grant, change: Omit<AdjustGrantOrder, 'adjustmentId' | 'grantId'>, adjustmentId = grant.nextAdjustmentId()): Promise<AdjustGrantAnswer | undefined> {
    try {
      const answer = await this.#options.ledger.adjustGrant({ adjustmentId, grantId: grant.id, ...change });
      if (answer.outcome !== 'ok' && answer.outcome !== 'already_resolved') {
        this.#options.logger.warn({ grantId: grant.id, reason: change.reason, result: answer.outcome, detail: answer.detail }, 'credit grant adjustment refused');
      }
      return answer;
    } catch (error) {
      this.#options.logger.warn({ grantId: grant.id, reason: change.reason, err: { message: (error as Error).message } }, 'credit grant adjustment failed');
      return undefined;
    }
  }

  /** Drops a grant that is resolved at the ledger (closed or expired); its late Settles are debited from available there. */
  #forget(grant: Grant): void {
    grant.state = 'closed';
    if (grant.slot.current === grant) grant.slot.current = undefined;
    this.#grants.delete(grant.id);
  }
}
