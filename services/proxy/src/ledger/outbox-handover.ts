import { ledgerV1 } from '@gateway/contracts';
import type { Logger } from '@gateway/logger';
import type { RedisClient } from '../redis/redis-client.ts';
import type { OutboxOrigin, OutboxOwner, OutboxRecord, SettleOutbox } from './settle-outbox.ts';

/** The outbox operations the hand-over needs (SettleOutbox in production). */
type AdoptingOutbox = Pick<SettleOutbox, 'settle' | 'release' | 'outboxDepth'>;

/** Options of OutboxHandover. */
export interface OutboxHandoverOptions {
  /** The proxy's shared Redis (REDIS_URL): a Redis stream outlives any pod. */
  redis: RedisClient;
  /** Key of the stream (PROXY_OUTBOX_STREAM). */
  streamKey: string;
  /** This replica's name in the stream's consumer group (PROXY_ID: unique per pod). */
  consumer: string;
  outbox: AdoptingOutbox;
  logger: Logger;
  /** Adopts only while the outbox holds fewer entries than this (half of PROXY_SETTLE_OUTBOX_MAX: room for its own requests). */
  adoptBelowDepth: number;
  /** How often the stream is read for entries to adopt, ms (PROXY_OUTBOX_ADOPT_INTERVAL_MS). */
  intervalMs: number;
  /** An entry adopted by a replica that has not touched it this long is claimed by another, ms (PROXY_OUTBOX_CLAIM_IDLE_MS). */
  claimIdleMs: number;
  /** Most entries adopted per read. */
  batch?: number;
}

/** The consumer group every replica reads the shared outbox in: one delivery per entry, re-delivered if its adopter goes. */
const group = 'proxies';

/** One stream entry as Redis answers it: its id and its fields as [name, value, name, value, …]. */
type StreamEntry = [id: string, fields: string[]];

/**
 * The settle outbox's life beyond one process (docs/operations.md, "Settles that outlive a
 * replica"). At shutdown a replica writes the Settles and Releases the ledger has not answered to
 * a Redis stream (handOver, one MULTI: all or none); every live replica reads that stream in one
 * consumer group and adopts entries into its own outbox, which sends them until the ledger's
 * final answer, then acknowledges and deletes them. An adopter killed without a hand-over leaves
 * its entries pending in the group, where another replica claims them once they have been idle
 * for claimIdleMs (XAUTOCLAIM); an adopter refreshes its own entries' idle time on every round,
 * so a live one keeps them. A Settle may thus be sent by two replicas, or twice: the ledger
 * applies it once (IDEMPOTENCY: services/ledger/src/domain/settle.ts keys a Settle by its
 * reservation id and answers a replay with its first result, a Release likewise).
 */
export class OutboxHandover {
  readonly #options: OutboxHandoverOptions;
  readonly #redis: RedisClient;
  /** Stream ids of the entries this replica adopted and has not yet seen answered. */
  readonly #adopted = new Set<string>();
  #timer: NodeJS.Timeout | undefined;
  #round: Promise<void> | undefined;
  #groupReady = false;
  #stopped = false;
  #lastErrorLoggedAtMs = 0;

  /** Wires the hand-over; nothing runs before start(). */
  constructor(options: OutboxHandoverOptions) {
    this.#options = options;
    this.#redis = options.redis;
  }

  /** Starts adopting: a round at once (entries left by replicas gone before this one started), then every intervalMs. */
  start(): void {
    const run = () => { this.#round ??= this.#adoptRound().finally(() => { this.#round = undefined; }); };
    run();
    this.#timer = setInterval(run, this.#options.intervalMs);
    this.#timer.unref();
  }

  /** Stops adopting (the drain, before the hand-over) and waits for a round under way. */
  async stopAdopting(): Promise<void> {
    this.#stopped = true;
    clearInterval(this.#timer);
    await this.#round;
  }

  /**
   * Writes the records to the stream and acknowledges those that were adopted from it, in one
   * MULTI (all or nothing); true once Redis has them. The outbox's handOver sink.
   */
  async handOver(records: OutboxRecord[]): Promise<boolean> {
    if (this.#redis.status !== 'ready') return false;
    const { streamKey } = this.#options;
    const multi = this.#redis.multi();
    for (const record of records) {
      multi.xadd(streamKey, '*', ...this.#fieldsOf(record));
      if (record.adoptedId !== undefined) multi.xack(streamKey, group, record.adoptedId).xdel(streamKey, record.adoptedId);
    }
    const results = await multi.exec();
    const failed = (results ?? []).find(([error]) => error !== null);
    if (results === null || failed !== undefined) {
      this.#options.logger.error({ err: { message: failed?.[0]?.message ?? 'transaction discarded' } }, 'could not hand the outbox over to Redis');
      return false;
    }
    return true;
  }

  /**
   * Removes this replica from the consumer group when nothing is pending under its name (after the
   * hand-over acknowledged what it had adopted), so the group does not collect one consumer per pod.
   */
  async leaveGroup(): Promise<void> {
    if (this.#redis.status !== 'ready' || !this.#groupReady) return;
    const { streamKey, consumer } = this.#options;
    try {
      const pending = await this.#redis.xpending(streamKey, group, '-', '+', 1, consumer) as unknown[];
      if (pending.length === 0) await this.#redis.xgroup('DELCONSUMER', streamKey, group, consumer);
    } catch (error) {
      this.#logError(error);
    }
  }

  /** One round: claim entries idle under a gone adopter, read new ones, keep ours from being claimed. */
  async #adoptRound(): Promise<void> {
    if (this.#stopped || this.#redis.status !== 'ready') return;
    const { streamKey, consumer, claimIdleMs, batch = 100 } = this.#options;
    try {
      await this.#ensureGroup();
      // Ours first: refreshing their idle time tells other replicas this adopter is alive.
      if (this.#adopted.size > 0) await this.#redis.call('XCLAIM', streamKey, group, consumer, 0, ...this.#adopted, 'JUSTID');
      const room = () => this.#options.adoptBelowDepth - this.#options.outbox.outboxDepth();
      if (room() <= 0) return;
      const [, claimed] = await this.#redis.xautoclaim(streamKey, group, consumer, claimIdleMs, '0-0', 'COUNT', Math.min(batch, room())) as [string, Array<StreamEntry | null>];
      for (const entry of claimed) if (entry !== null) this.#adopt(entry);
      if (room() <= 0 || this.#stopped) return;
      const read = await this.#redis.xreadgroup('GROUP', group, consumer, 'COUNT', Math.min(batch, room()), 'STREAMS', streamKey, '>') as Array<[string, StreamEntry[]]> | null;
      for (const entry of read?.[0]?.[1] ?? []) this.#adopt(entry);
    } catch (error) {
      this.#logError(error);
    }
  }

  /** Creates the consumer group (from the stream's start, so entries written before any replica read are adopted) once. */
  async #ensureGroup(): Promise<void> {
    if (this.#groupReady) return;
    try {
      await this.#redis.xgroup('CREATE', this.#options.streamKey, group, '0', 'MKSTREAM');
    } catch (error) {
      if (!String((error as Error).message).startsWith('BUSYGROUP')) throw error;
    }
    this.#groupReady = true;
  }

  /** Queues one stream entry in this replica's outbox; acknowledges and deletes it once the ledger answered it for good. */
  #adopt([id, fields]: StreamEntry): void {
    if (this.#adopted.has(id)) return;
    const record = recordFrom(id, fields);
    const { streamKey, outbox, logger } = this.#options;
    if (record === undefined) {
      // Not something this build can send: kept in the group (never acknowledged), logged once per claim.
      logger.error({ streamId: id, fields }, 'shared outbox entry this build cannot read; left pending');
      return;
    }
    this.#adopted.add(id);
    logger.info({ streamId: id, kind: record.kind, requestId: record.owner.requestId }, 'adopted a ledger call another replica handed over');
    const origin: OutboxOrigin = { adoptedId: id, queuedAtMs: record.queuedAtMs, traceparent: record.traceparent };
    const answered = record.kind === 'settle' ? outbox.settle(record.request, record.owner, origin) : outbox.release(record.request, record.owner, origin);
    void answered.then(async (response) => {
      this.#adopted.delete(id);
      // Undefined: handed over again at this replica's shutdown (acknowledged there) or left pending.
      if (response === undefined) return;
      try {
        await this.#redis.multi().xack(streamKey, group, id).xdel(streamKey, id).exec();
      } catch (error) {
        // Still pending: claimed and sent again later, which the ledger answers as a replay.
        this.#logError(error);
      }
    });
  }

  #fieldsOf(record: OutboxRecord): string[] {
    const request = record.kind === 'settle'
      ? ledgerV1.SettleRequest.encode(record.request).finish()
      : ledgerV1.ReleaseRequest.encode(record.request).finish();
    return [
      'kind', record.kind, 'request', Buffer.from(request).toString('base64'),
      'organisationId', record.owner.organisationId, 'requestId', record.owner.requestId,
      'freesAvailable', record.owner.freesAvailable === undefined ? '' : String(record.owner.freesAvailable),
      'queuedAtMs', String(record.queuedAtMs), 'traceparent', record.traceparent ?? '', 'from', this.#options.consumer,
    ];
  }

  #logError(error: unknown): void {
    // ioredis repeats a connection error on every retry; one line per 10 s is enough.
    const now = Date.now();
    if (now - this.#lastErrorLoggedAtMs < 10_000) return;
    this.#lastErrorLoggedAtMs = now;
    this.#options.logger.warn({ err: { message: (error as Error).message } }, 'shared outbox unavailable; entries handed over wait there');
  }
}

/** A stream entry's fields as a record, or undefined when they are not one (another build's, or damaged). */
function recordFrom(id: string, fields: string[]): (OutboxRecord & { adoptedId: string }) | undefined {
  const field = new Map<string, string>();
  for (let index = 0; index + 1 < fields.length; index += 2) field.set(fields[index]!, fields[index + 1]!);
  const kind = field.get('kind');
  const request = Buffer.from(field.get('request') ?? '', 'base64');
  const organisationId = field.get('organisationId');
  const requestId = field.get('requestId');
  const queuedAtMs = Number(field.get('queuedAtMs'));
  if ((kind !== 'settle' && kind !== 'release') || request.length === 0 || !organisationId || requestId === undefined || !Number.isFinite(queuedAtMs)) return undefined;
  const freesAvailable = field.get('freesAvailable');
  const owner: OutboxOwner = { organisationId, requestId, ...(freesAvailable === 'true' || freesAvailable === 'false' ? { freesAvailable: freesAvailable === 'true' } : {}) };
  const common = { owner, queuedAtMs, traceparent: field.get('traceparent') || undefined, adoptedId: id };
  try {
    return kind === 'settle'
      ? { ...common, kind, request: ledgerV1.SettleRequest.decode(request) }
      : { ...common, kind, request: ledgerV1.ReleaseRequest.decode(request) };
  } catch {
    return undefined;
  }
}
