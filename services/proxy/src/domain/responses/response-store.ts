/** Where one stored Response lives: its organisation and its id (a lookup under another organisation finds nothing). */
export interface StoredResponseKey {
  organisationId: string;
  responseId: string;
}

/**
 * Where sealed Responses are kept (docs/decisions.md, "Stored Responses"): Redis when the proxy
 * has REDIS_URL (every replica reads what another wrote), else this process's memory. Values are
 * already sealed (response-sealer.ts); a store never sees plaintext. A store that cannot answer
 * rejects (the caller turns that into a 503 before any Reserve, or a logged "not stored").
 */
export interface ResponseStore {
  /** Keeps a sealed record for `ttlMs`, replacing one under the same key. */
  put(key: StoredResponseKey, sealed: Buffer, ttlMs: number): Promise<void>;
  /** The sealed record, or undefined when there is none (never stored, deleted or expired). */
  get(key: StoredResponseKey): Promise<Buffer | undefined>;
  /** Deletes a record; true when there was one. */
  delete(key: StoredResponseKey): Promise<boolean>;
  /** For /readyz's body: `up`/`down` for Redis, `in_process` otherwise. */
  state(): string;
  close(): Promise<void>;
}

/**
 * The store of a proxy without Redis (`pnpm start`'s single machine, tests): a map bounded to
 * `maxEntries` (the oldest record goes first when full), each record dropped at its expiry
 * (checked on read, and swept once a minute so unread records do not stay in memory).
 */
export class InProcessResponseStore implements ResponseStore {
  readonly #records = new Map<string, { sealed: Buffer; expiresAtMs: number }>();
  readonly #maxEntries: number;
  readonly #now: () => number;
  readonly #sweep: NodeJS.Timeout;

  /** `now`: the clock records expire by, ms (a test clock in unit tests). */
  constructor(options: { maxEntries: number; now?: () => number }) {
    this.#maxEntries = options.maxEntries;
    this.#now = options.now ?? Date.now;
    this.#sweep = setInterval(() => this.#dropExpired(), 60_000);
    this.#sweep.unref();
  }

  async put(key: StoredResponseKey, sealed: Buffer, ttlMs: number): Promise<void> {
    const id = storeKeyOf(key);
    this.#records.delete(id);
    if (this.#records.size >= this.#maxEntries) {
      const oldest = this.#records.keys().next().value;
      if (oldest !== undefined) this.#records.delete(oldest);
    }
    this.#records.set(id, { sealed, expiresAtMs: this.#now() + ttlMs });
  }

  async get(key: StoredResponseKey): Promise<Buffer | undefined> {
    const id = storeKeyOf(key);
    const record = this.#records.get(id);
    if (record === undefined) return undefined;
    if (record.expiresAtMs <= this.#now()) {
      this.#records.delete(id);
      return undefined;
    }
    return record.sealed;
  }

  async delete(key: StoredResponseKey): Promise<boolean> {
    const id = storeKeyOf(key);
    const record = this.#records.get(id);
    this.#records.delete(id);
    return record !== undefined && record.expiresAtMs > this.#now();
  }

  state(): string {
    return 'in_process';
  }

  async close(): Promise<void> {
    clearInterval(this.#sweep);
    this.#records.clear();
  }

  #dropExpired(): void {
    const now = this.#now();
    for (const [id, record] of this.#records) if (record.expiresAtMs <= now) this.#records.delete(id);
  }
}

/** One string per (organisation, response): the organisation first, so no response id can reach another's records. */
export function storeKeyOf(key: StoredResponseKey): string {
  return `${key.organisationId}:${key.responseId}`;
}
