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
 * `maxBytes` of sealed records (the oldest go first to make room; one larger than the whole bound
 * is refused, so its response is returned "not stored"), each record dropped at its expiry
 * (checked on read, and swept once a minute so unread records do not stay in memory).
 */
export class InProcessResponseStore implements ResponseStore {
  readonly #records = new Map<string, { sealed: Buffer; expiresAtMs: number }>();
  readonly #maxBytes: number;
  #bytes = 0;
  readonly #now: () => number;
  readonly #sweep: NodeJS.Timeout;

  /** `maxBytes`: most bytes of sealed records held; `now`: the clock records expire by, ms (a test clock in unit tests). */
  constructor(options: { maxBytes: number; now?: () => number }) {
    this.#maxBytes = options.maxBytes;
    this.#now = options.now ?? Date.now;
    this.#sweep = setInterval(() => this.#dropExpired(), 60_000);
    this.#sweep.unref();
  }

  async put(key: StoredResponseKey, sealed: Buffer, ttlMs: number): Promise<void> {
    if (sealed.length > this.#maxBytes) throw new Error(`a stored response of ${sealed.length} bytes exceeds PROXY_RESPONSE_STORE_MAX_BYTES`);
    const id = storeKeyOf(key);
    this.#remove(id);
    for (const oldest of this.#records.keys()) {
      if (this.#bytes + sealed.length <= this.#maxBytes) break;
      this.#remove(oldest);
    }
    this.#records.set(id, { sealed, expiresAtMs: this.#now() + ttlMs });
    this.#bytes += sealed.length;
  }

  async get(key: StoredResponseKey): Promise<Buffer | undefined> {
    const id = storeKeyOf(key);
    const record = this.#records.get(id);
    if (record === undefined) return undefined;
    if (record.expiresAtMs <= this.#now()) {
      this.#remove(id);
      return undefined;
    }
    return record.sealed;
  }

  async delete(key: StoredResponseKey): Promise<boolean> {
    const id = storeKeyOf(key);
    const record = this.#records.get(id);
    this.#remove(id);
    return record !== undefined && record.expiresAtMs > this.#now();
  }

  state(): string {
    return 'in_process';
  }

  async close(): Promise<void> {
    clearInterval(this.#sweep);
    this.#records.clear();
    this.#bytes = 0;
  }

  #remove(id: string): void {
    const record = this.#records.get(id);
    if (record === undefined) return;
    this.#records.delete(id);
    this.#bytes -= record.sealed.length;
  }

  #dropExpired(): void {
    const now = this.#now();
    for (const [id, record] of this.#records) if (record.expiresAtMs <= now) this.#remove(id);
  }
}

/** One string per (organisation, response): the organisation first, so no response id can reach another's records. */
export function storeKeyOf(key: StoredResponseKey): string {
  return `${key.organisationId}:${key.responseId}`;
}
