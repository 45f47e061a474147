import { isTransientResult, ledgerResultTransient, ledgerV1 } from '@gateway/contracts';
import { fromGrpcError } from '@gateway/errors';
import type { Logger } from '@gateway/logger';
import { activeTraceparent, contextFromTraceparent, withContext } from '@gateway/telemetry';

/** The single-attempt ledger calls the outbox repeats (LedgerClient in production); a failed call throws. */
export interface OutboxLedger {
  settle(request: ledgerV1.SettleRequest): Promise<ledgerV1.SettleResponse>;
  release(request: ledgerV1.ReleaseRequest): Promise<ledgerV1.ReleaseResponse>;
}

/** Who an outbox entry belongs to: for SettlesInFlight-style waits and for the replay line. */
export interface OutboxOwner {
  organisationId: string;
  /** The request id of the request the entry resolves (echoed to the client, kept on the usage record). */
  requestId: string;
  /**
   * False when the entry's answer returns nothing to the organisation's available balance (a
   * carve's Settle, whose unused part stays in its grant, or a Settle costing its whole
   * Reserve): a refused Reserve does not wait for it. Unset: it may.
   */
  freesAvailable?: boolean;
}

/** An unanswered entry as it leaves the process at shutdown, for the shared outbox (outbox-handover.ts). */
export type OutboxRecord = {
  owner: OutboxOwner;
  /** Date.now() when it was first queued (on whichever replica). */
  queuedAtMs: number;
  traceparent: string | undefined;
  /** The shared outbox's id of the entry when this replica adopted it from there (it is acknowledged once handed over again). */
  adoptedId: string | undefined;
} & ({ kind: 'settle'; request: ledgerV1.SettleRequest } | { kind: 'release'; request: ledgerV1.ReleaseRequest });

/** Where a Settle or Release came from when it was not queued by a request of this replica. */
export interface OutboxOrigin {
  /** The shared outbox's id of the entry (an entry another replica handed over). */
  adoptedId: string;
  /** Date.now() when it was first queued, on the replica that handed it over. */
  queuedAtMs: number;
  traceparent: string | undefined;
}

/** Options of the outbox. */
export interface SettleOutboxOptions {
  ledger: OutboxLedger;
  logger: Logger;
  /** Most entries not yet answered; at this depth the proxy takes no new request (PROXY_SETTLE_OUTBOX_MAX). */
  maxEntries: number;
  /** Wait before the 2nd attempt of an entry, ms; doubled per attempt (PROXY_SETTLE_RETRY_INITIAL_MS). */
  retryInitialMs: number;
  /** Longest wait between two attempts, ms, before jitter (PROXY_SETTLE_RETRY_MAX_MS). */
  retryMaxMs: number;
  /** A number in [0, 1) for the jitter (tests may fix it). */
  random?: () => number;
}

/** One Settle or Release waiting for the ledger's final answer. */
type Entry = {
  owner: OutboxOwner;
  /** Date.now() when it was queued. */
  queuedAtMs: number;
  /**
   * The `traceparent` active when it was queued (the request's settle step), carried by every
   * attempt: a retry runs after the request's work has ended and its trace context with it.
   * Undefined with tracing off.
   */
  traceparent: string | undefined;
  attempts: number;
  /** Why the last attempt did not end it (a call error or a retryable result). */
  lastFailure: string | undefined;
  /** Set by abandon() and handOver(): the entry's loop stops at its next turn. */
  abandoned: boolean;
  /** The shared outbox's id when the entry was adopted from there (OutboxOrigin). */
  adoptedId: string | undefined;
  /** Ends the current backoff wait early (abandon). */
  wake: (() => void) | undefined;
  /** Resolves once the entry is answered or abandoned. */
  done: Promise<void>;
  markDone: () => void;
} & ({
  kind: 'settle';
  request: ledgerV1.SettleRequest;
  resolve: (response: ledgerV1.SettleResponse | undefined) => void;
} | {
  kind: 'release';
  request: ledgerV1.ReleaseRequest;
  resolve: (response: ledgerV1.ReleaseResponse | undefined) => void;
});

/** Attempts of one entry between two of its warn lines (the first failure always warns). */
const warnEveryAttempts = 10;

/**
 * Every Settle and Release of the proxy goes through here: each is sent at once and, until the
 * ledger gives a final answer (a result the contract's `ledgerResultTransient` calls final: every
 * named Settle and Release result, a late Settle after expiry included; UNSPECIFIED and results
 * newer than this build are sent again, since dropping a usage record is worse than holding an
 * outbox slot), it is sent again with exponential backoff
 * (`retryInitialMs` doubling up to `retryMaxMs`, equal jitter), through an outage of minutes.
 * Both are idempotent on the reservation id, so a repeat can never debit twice. The outbox lives
 * in memory: a SIGKILL loses what is in it (docs/decisions.md, "What a SIGKILL of a proxy can
 * lose"); a shutdown drains it within the grace and hands what is left to the shared outbox in
 * Redis, where a live replica adopts it (handOver, outbox-handover.ts), or, without Redis, logs
 * one replayable line per entry (abandon). It is bounded by admission, not by dropping: at `maxEntries` unanswered entries
 * `outboxFull()` is true, the proxy is not ready and refuses new requests before their Reserve,
 * while requests already admitted still queue theirs (so the depth can pass the bound by at
 * most the requests in flight).
 */
export class SettleOutbox {
  readonly #ledger: OutboxLedger;
  readonly #logger: Logger;
  readonly #maxEntries: number;
  readonly #retryInitialMs: number;
  readonly #retryMaxMs: number;
  readonly #random: () => number;
  readonly #entries = new Set<Entry>();
  /** The depth from which new requests wait for room (waitForRoom): a tenth of maxEntries. */
  readonly #pacingDepth: number;
  /** Requests waiting for room, oldest first. */
  readonly #roomWaiters = new Set<{ resolve: (room: boolean) => void; timer: NodeJS.Timeout }>();
  readonly #byOrganisation = new Map<string, Set<Entry>>();
  #abandonedCount = 0;

  /** Creates an empty outbox; nothing runs until the first entry. */
  constructor(options: SettleOutboxOptions) {
    this.#ledger = options.ledger;
    this.#logger = options.logger;
    this.#maxEntries = options.maxEntries;
    this.#pacingDepth = Math.max(1, Math.floor(options.maxEntries / 10));
    this.#retryInitialMs = options.retryInitialMs;
    this.#retryMaxMs = options.retryMaxMs;
    this.#random = options.random ?? Math.random;
  }

  /**
   * Queues a Settle; resolves with the ledger's final answer, or undefined if it was handed over
   * or abandoned at shutdown. `origin`: set for an entry adopted from the shared outbox.
   */
  settle(request: ledgerV1.SettleRequest, owner: OutboxOwner, origin?: OutboxOrigin): Promise<ledgerV1.SettleResponse | undefined> {
    return new Promise((resolve) => {
      this.#start({ kind: 'settle', request, resolve, ...this.#fresh(owner, origin) });
    });
  }

  /** Queues a Release; resolves like settle(). */
  release(request: ledgerV1.ReleaseRequest, owner: OutboxOwner, origin?: OutboxOrigin): Promise<ledgerV1.ReleaseResponse | undefined> {
    return new Promise((resolve) => {
      this.#start({ kind: 'release', request, resolve, ...this.#fresh(owner, origin) });
    });
  }

  /** True while the unanswered entries are at the bound: the proxy is not ready and takes no new request. */
  outboxFull(): boolean {
    return this.#entries.size >= this.#maxEntries;
  }

  /**
   * Waits, up to `timeoutMs`, until fewer entries than the pacing depth (a tenth of the bound)
   * are unanswered; at once when there are. A new request waits here before its Reserve: when
   * the ledger settles more slowly than this proxy admits, requests are admitted at the rate
   * Settles are answered (clients see latency), instead of the outbox climbing to its bound and
   * every request after that being refused (issue 30's soak: the outbox full within a minute,
   * then 503s). True when there is room; false when the wait ran out (the request goes on: the
   * bound still refuses it when full).
   */
  waitForRoom(timeoutMs: number): Promise<boolean> {
    if (this.#entries.size < this.#pacingDepth) return Promise.resolve(true);
    return new Promise((resolve) => {
      const waiter = { resolve, timer: setTimeout(() => {
        this.#roomWaiters.delete(waiter);
        resolve(false);
      }, timeoutMs) };
      this.#roomWaiters.add(waiter);
    });
  }

  /** Entries not yet answered (in their first attempt or waiting to be sent again). */
  outboxDepth(): number {
    return this.#entries.size;
  }

  /**
   * Date.now() when the oldest unanswered entry was queued, or undefined when the outbox is empty
   * (a Set iterates in insertion order, so its first entry is the oldest).
   */
  oldestQueuedAtMs(): number | undefined {
    for (const entry of this.#entries) return entry.queuedAtMs;
    return undefined;
  }

  /** Entries given up at shutdown since the process started (each logged with what a replay needs). */
  get abandonedCount(): number {
    return this.#abandonedCount;
  }

  /**
   * Waits until every entry of the organisation queued so far whose answer may return money to
   * its available balance is answered, or timeoutMs passes; false when it had none. Their answers
   * return unused holds, so a Reserve refused for balance meanwhile may fit when tried again;
   * entries that free nothing (`freesAvailable: false`) cannot help it and are not waited for.
   */
  async waitForOrganisation(organisationId: string, timeoutMs: number): Promise<boolean> {
    const entries = [...(this.#byOrganisation.get(organisationId) ?? [])].filter((entry) => entry.owner.freesAvailable !== false);
    if (entries.length === 0) return false;
    await withTimeout(Promise.all(entries.map((entry) => entry.done)), timeoutMs);
    return true;
  }

  /** Waits until the outbox is empty (entries queued meanwhile included) or timeoutMs passes; true when empty. */
  async drain(timeoutMs: number): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    while (this.#entries.size > 0) {
      const remainingMs = deadline - Date.now();
      if (remainingMs <= 0) return false;
      await withTimeout(Promise.all([...this.#entries].map((entry) => entry.done)), remainingMs);
    }
    return true;
  }

  /**
   * Shutdown, after the drain: hands every entry still unanswered to `sink` (the shared outbox in
   * Redis, where a live replica adopts it: outbox-handover.ts). Without a sink, or when it fails,
   * abandons them instead (abandon). Either way each entry's waiter gets undefined. Settles and
   * Releases are idempotent on the reservation id (IDEMPOTENCY), so an entry the ledger answers
   * while it is being handed over is only sent again, never applied twice.
   */
  async handOver(sink?: (records: OutboxRecord[]) => Promise<boolean>): Promise<{ handedOver: number; abandoned: number }> {
    const entries = [...this.#entries];
    if (entries.length === 0) return { handedOver: 0, abandoned: 0 };
    // Their loops stop; an attempt already under way may still land (harmless, see above).
    for (const entry of entries) entry.abandoned = true;
    const written = sink === undefined ? false : await sink(entries.map(recordOf)).catch(() => false);
    if (!written) return { handedOver: 0, abandoned: this.abandon() };
    for (const entry of entries) {
      this.#finish(entry, undefined);
      entry.wake?.();
    }
    this.#logger.warn({ handedOver: entries.length }, 'ledger outbox entries not answered before shutdown handed over to the shared outbox; a live replica sends them');
    return { handedOver: entries.length, abandoned: 0 };
  }

  /**
   * Gives up every entry still unanswered (shutdown without a shared outbox): logs each at error
   * level, one line per entry with every field a replay needs (a Settle or Release carries no
   * secret), resolves its waiter with undefined, and returns how many there were. An entry
   * adopted from the shared outbox is not lost: it stays pending there under this replica's name,
   * and another replica claims it once idle (PROXY_OUTBOX_CLAIM_IDLE_MS); it is logged, not counted.
   */
  abandon(): number {
    const entries = [...this.#entries];
    let lost = 0;
    for (const entry of entries) {
      const adopted = entry.adoptedId !== undefined;
      if (!adopted) lost += 1;
      this.#logger[adopted ? 'warn' : 'error']({
        outboxEntry: {
          kind: entry.kind,
          organisationId: entry.owner.organisationId,
          requestId: entry.owner.requestId,
          queuedAt: new Date(entry.queuedAtMs).toISOString(),
          attempts: entry.attempts,
          lastFailure: entry.lastFailure,
          adoptedId: entry.adoptedId,
          request: replayable(entry.request),
        },
      }, adopted ? `ledger ${entry.kind} left pending in the shared outbox; another replica claims it` : `ledger ${entry.kind} not delivered before shutdown; replay it`);
      entry.abandoned = true;
      this.#finish(entry, undefined);
      entry.wake?.();
    }
    this.#abandonedCount += lost;
    if (lost > 0) this.#logger.error({ abandoned: lost }, 'ledger outbox entries not delivered before shutdown');
    return lost;
  }

  #fresh(owner: OutboxOwner, origin: OutboxOrigin | undefined): Omit<Entry, 'kind' | 'request' | 'resolve'> {
    let markDone = () => {};
    const done = new Promise<void>((resolve) => { markDone = resolve; });
    return {
      owner, queuedAtMs: origin?.queuedAtMs ?? Date.now(), traceparent: origin === undefined ? activeTraceparent() : origin.traceparent,
      adoptedId: origin?.adoptedId, attempts: 0, lastFailure: undefined, abandoned: false, wake: undefined, done, markDone,
    };
  }

  #start(entry: Entry): void {
    this.#entries.add(entry);
    let ofOrganisation = this.#byOrganisation.get(entry.owner.organisationId);
    if (ofOrganisation === undefined) {
      ofOrganisation = new Set();
      this.#byOrganisation.set(entry.owner.organisationId, ofOrganisation);
    }
    ofOrganisation.add(entry);
    void this.#run(entry);
  }

  /** Removes an entry and hands its answer to its waiter, once. */
  #finish(entry: Entry, response: ledgerV1.SettleResponse | ledgerV1.ReleaseResponse | undefined): void {
    if (!this.#entries.delete(entry)) return;
    const ofOrganisation = this.#byOrganisation.get(entry.owner.organisationId);
    ofOrganisation?.delete(entry);
    if (ofOrganisation?.size === 0) this.#byOrganisation.delete(entry.owner.organisationId);
    (entry.resolve as (answer: typeof response) => void)(response);
    entry.markDone();
    // One waiting request per answered entry: admission follows the ledger's pace.
    if (this.#roomWaiters.size > 0 && this.#entries.size < this.#pacingDepth) {
      for (const waiter of this.#roomWaiters) {
        this.#roomWaiters.delete(waiter);
        clearTimeout(waiter.timer);
        waiter.resolve(true);
        break;
      }
    }
  }

  async #run(entry: Entry): Promise<void> {
    while (!entry.abandoned) {
      entry.attempts += 1;
      try {
        if (entry.kind === 'settle') {
          const response = await this.#traced(entry, () => this.#ledger.settle(entry.request));
          if (!isTransientResult(ledgerResultTransient.settle, response.result)) { this.#finish(entry, response); return; }
          entry.lastFailure = `result ${response.result}${response.detail ? ` (${response.detail})` : ''}`;
        } else {
          const response = await this.#traced(entry, () => this.#ledger.release(entry.request));
          if (!isTransientResult(ledgerResultTransient.release, response.result)) { this.#finish(entry, response); return; }
          entry.lastFailure = `result ${response.result}${response.detail ? ` (${response.detail})` : ''}`;
        }
      } catch (error) {
        entry.lastFailure = fromGrpcError(error).message;
      }
      if (entry.abandoned) return;
      const level = entry.attempts === 1 || entry.attempts % warnEveryAttempts === 0 ? 'warn' : 'debug';
      this.#logger[level]({
        reservationId: entry.request.reservationId, requestId: entry.owner.requestId, method: entry.kind,
        attempt: entry.attempts, err: { message: entry.lastFailure },
      }, `ledger ${entry.kind} failed; the outbox sends it again`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, this.#backoffMs(entry.attempts));
        entry.wake = () => { clearTimeout(timer); resolve(); };
      });
      entry.wake = undefined;
    }
  }

  /**
   * Makes one attempt in the trace context the entry was queued in (its captured traceparent), so
   * the ledger links the batch that settles it to its request whichever attempt gets through.
   */
  #traced<T>(entry: Entry, attempt: () => Promise<T>): Promise<T> {
    return entry.traceparent === undefined ? attempt() : withContext(contextFromTraceparent(entry.traceparent), attempt);
  }

  /** Wait after the n-th failed attempt, ms: initial × 2^(n−1), capped, with equal jitter (half fixed, half random). */
  #backoffMs(attempts: number): number {
    const capped = Math.min(this.#retryMaxMs, this.#retryInitialMs * 2 ** Math.min(attempts - 1, 30));
    return capped / 2 + this.#random() * (capped / 2);
  }
}

/** An entry as it leaves the process (handOver). */
function recordOf(entry: Entry): OutboxRecord {
  const common = { owner: entry.owner, queuedAtMs: entry.queuedAtMs, traceparent: entry.traceparent, adoptedId: entry.adoptedId };
  return entry.kind === 'settle' ? { ...common, kind: 'settle', request: entry.request } : { ...common, kind: 'release', request: entry.request };
}

/** A request as a log-safe object: int64 fields as decimal strings (JSON has no bigint). */
function replayable(request: ledgerV1.SettleRequest | ledgerV1.ReleaseRequest): Record<string, unknown> {
  return Object.fromEntries(Object.entries(request).map(([field, value]) => [field, logSafe(value)]));
}

/** A field's value with every int64 in it (nested lists and messages too: token classes, failed attempts) as a decimal string. */
function logSafe(value: unknown): unknown {
  if (typeof value === 'bigint') return value.toString();
  if (Array.isArray(value)) return value.map(logSafe);
  if (value !== null && typeof value === 'object' && !(value instanceof Uint8Array)) {
    return Object.fromEntries(Object.entries(value).map(([field, inner]) => [field, logSafe(inner)]));
  }
  return value;
}

/** Resolves when the promise settles or timeoutMs passes, whichever comes first. */
async function withTimeout(promise: Promise<unknown>, timeoutMs: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<void>((resolve) => { timer = setTimeout(resolve, timeoutMs); });
  await Promise.race([promise.then(() => undefined, () => undefined), timeout]);
  clearTimeout(timer);
}
