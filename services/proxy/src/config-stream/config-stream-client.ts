import { configV1 } from '@gateway/contracts';
import { channelCredentials, clientChannelOptions, duplexStream, type DuplexStream, type GrpcTransportSecurity } from '@gateway/grpc';
import type { Logger } from '@gateway/logger';
import { applyConfigChange, type ConfigSnapshot, type LiveConfigSnapshot } from '../domain/config-snapshot.ts';
import { loadTokenizer } from '../domain/token-estimate.ts';
import { configChangeFromProto } from './snapshot-from-proto.ts';

/** Options of the config stream client. */
export interface ConfigStreamClientOptions {
  /** host:port of the admin's gRPC server. */
  address: string;
  /** This proxy's id, sent in every ack. */
  proxyId: string;
  /** After this long without an applied update (heartbeats included) the snapshot is stale, ms. */
  stalenessMs: number;
  logger: Logger;
  /** The proxy's certificate (its identity at the admin) and the CA, or plaintext under GRPC_INSECURE. */
  security: GrpcTransportSecurity;
  supportsProviderKind(kind: string): boolean;
  /**
   * Largest config update accepted in one gRPC message, bytes (grpc-js refuses larger ones; its
   * default is 4 MiB). Default 64 MiB, so a large snapshot the admin sends whole is not refused.
   */
  maxReceiveMessageBytes?: number;
  /** First reconnect delay, doubling up to maxBackoffMs, ms (default 100). */
  initialBackoffMs?: number;
  /**
   * Longest wait between two re-subscribes, ms (default 2000, the same cap as the channel's own
   * reconnect backoff): an admin back after an outage is found again within about 2 s.
   */
  maxBackoffMs?: number;
  now?: () => number;
}

/** The proxy's side of StreamConfig: updates in, acks out. */
type ConfigStream = DuplexStream<configV1.ConfigUpdate, configV1.ConfigAck>;

/** Default largest config update in one message, bytes: 64 MiB. */
const defaultMaxReceiveMessageBytes = 64 * 1024 * 1024;

/**
 * The proxy's side of `gateway.config.v1.ConfigService/StreamConfig` (docs/config-stream.md):
 * sends a hello, applies every full snapshot (fresh maps swapped in) or delta (in place, in one
 * synchronous step) atomically, acks every version it applied (heartbeats too), and reconnects
 * with exponential backoff and jitter. It serves a snapshot only while fresh: once nothing has been applied for
 * `stalenessMs`, it refuses to serve, drops the stream and resyncs, and becomes fresh again
 * only with a new full snapshot. A partitioned proxy therefore stops honouring keys that may
 * have been rotated since.
 */
export class ConfigStreamClient {
  readonly #options: Required<Omit<ConfigStreamClientOptions, 'supportsProviderKind' | 'logger' | 'maxReceiveMessageBytes' | 'security'>>;
  readonly #logger: Logger;
  readonly #supportsProviderKind: (kind: string) => boolean;
  readonly #client: configV1.ConfigServiceClient;
  #snapshot: LiveConfigSnapshot | undefined;
  /** When the last update was applied (or the current stream opened, before any), ms. */
  #lastAppliedAtMs = 0;
  /** When start() ran, ms: staleness counts from here until the first update is applied. */
  #startedAtMs = 0;
  /** When the current stream was opened, ms: a stream that never speaks is redialled too. */
  #streamOpenedAtMs = 0;
  /** Set when the snapshot went stale; cleared only by a full snapshot. */
  #awaitingFull = false;
  /** The open stream, and what cancels it. */
  #call: { stream: ConfigStream; cancel: AbortController } | undefined;
  /** Increments per stream, so what a stream we abandoned still yields is ignored. */
  #generation = 0;
  #failedAttempts = 0;
  #reconnectTimer: NodeJS.Timeout | undefined;
  #watchdogTimer: NodeJS.Timeout | undefined;
  #closed = false;

  /** Creates the client; call start() to connect. */
  constructor(options: ConfigStreamClientOptions) {
    this.#options = {
      address: options.address,
      proxyId: options.proxyId,
      stalenessMs: options.stalenessMs,
      initialBackoffMs: options.initialBackoffMs ?? 100,
      maxBackoffMs: options.maxBackoffMs ?? 2000,
      now: options.now ?? Date.now,
    };
    this.#logger = options.logger;
    this.#supportsProviderKind = options.supportsProviderKind;
    this.#client = new configV1.ConfigServiceClient(options.address, channelCredentials(options.security), {
      ...clientChannelOptions,
      'grpc.max_receive_message_length': options.maxReceiveMessageBytes ?? defaultMaxReceiveMessageBytes,
    });
  }

  /** Opens the stream and starts the staleness watchdog. */
  start(): void {
    this.#startedAtMs = this.#options.now();
    const checkEveryMs = Math.max(10, Math.min(1000, Math.floor(this.#options.stalenessMs / 4)));
    this.#watchdogTimer = setInterval(() => this.#checkStaleness(), checkEveryMs);
    this.#watchdogTimer.unref();
    this.#connect();
  }

  /** The snapshot to serve from, or undefined when there is none or it is stale. */
  freshSnapshot(): ConfigSnapshot | undefined {
    return this.isFresh() ? this.#snapshot : undefined;
  }

  /** Whether the proxy holds a snapshot it may serve from. */
  isFresh(): boolean {
    return this.#snapshot !== undefined && !this.#awaitingFull
      && this.#options.now() - this.#lastAppliedAtMs <= this.#options.stalenessMs;
  }

  /**
   * How long since the admin last confirmed the snapshot (an update or heartbeat applied), ms;
   * before the first one, since start(). What the proxyConfigStaleness gauge reports (in seconds):
   * past PROXY_CONFIG_STALENESS_MS the proxy refuses traffic.
   */
  stalenessMs(): number {
    return this.#options.now() - (this.#snapshot === undefined ? this.#startedAtMs : this.#lastAppliedAtMs);
  }

  /** The version of the snapshot held (fresh or not); 0 before the first. */
  appliedVersion(): bigint {
    return this.#snapshot?.version ?? 0n;
  }

  /** Stops reconnecting, cancels the stream and closes the channel. */
  close(): void {
    this.#closed = true;
    clearTimeout(this.#reconnectTimer);
    clearInterval(this.#watchdogTimer);
    this.#abandonCall();
    this.#client.close();
  }

  #connect(): void {
    if (this.#closed) return;
    this.#generation += 1;
    const generation = this.#generation;
    const cancel = new AbortController();
    const stream: ConfigStream = duplexStream(this.#client.streamConfig(), { signal: cancel.signal });
    this.#call = { stream, cancel };
    this.#streamOpenedAtMs = this.#options.now();
    void stream.send({ proxyId: this.#options.proxyId, appliedVersion: 0n, error: '' });
    void this.#follow(stream, generation);
  }

  /** Applies what one stream brings until it ends, then reconnects unless the stream was abandoned. */
  async #follow(stream: ConfigStream, generation: number): Promise<void> {
    let receivedAny = false;
    let failure: Error | undefined;
    try {
      for await (const update of stream) {
        if (generation !== this.#generation) return;
        receivedAny = true;
        this.#failedAttempts = 0;
        this.#onUpdate(stream, update);
      }
    } catch (error) {
      failure = error as Error;
    }
    if (generation !== this.#generation || this.#closed) return;
    this.#abandonCall();
    this.#failedAttempts = receivedAny ? 1 : this.#failedAttempts + 1;
    // One warning when a working stream breaks or the first dial fails; retries log at debug.
    const level = this.#failedAttempts === 1 ? 'warn' : 'debug';
    this.#logger[level]({ err: failure === undefined ? undefined : { message: failure.message }, attempt: this.#failedAttempts }, 'config stream unavailable; reconnecting');
    this.#scheduleReconnect();
  }

  #onUpdate(stream: ConfigStream, update: configV1.ConfigUpdate): void {
    this.#markStaleIfDue();
    if (this.#awaitingFull && !update.full) {
      // Whatever was missed while stale is unknown; only a full snapshot makes the proxy current.
      void stream.send({ proxyId: this.#options.proxyId, appliedVersion: this.appliedVersion(), error: 'snapshot went stale; full snapshot needed' });
      return;
    }
    const result = applyConfigChange(this.#snapshot, configChangeFromProto(update, { supportsProviderKind: this.#supportsProviderKind }));
    if (!result.ok) {
      this.#logger.warn({ version: update.version.toString(), reason: result.reason }, 'config update not applied; asking for a full snapshot');
      void stream.send({ proxyId: this.#options.proxyId, appliedVersion: this.appliedVersion(), error: result.reason });
      return;
    }
    this.#snapshot = result.snapshot;
    this.#lastAppliedAtMs = this.#options.now();
    if (update.full) {
      if (this.#awaitingFull) this.#logger.info({ version: update.version.toString() }, 'config resynced; serving again');
      this.#awaitingFull = false;
    }
    for (const problem of result.problems) this.#logger.error({ version: update.version.toString(), problem }, 'config entry left out');
    // Before the ack: the admin's call returns once the model is servable without a cold tokenizer.
    if (update.gatewayModels.length > 0) {
      for (const slug of new Set(update.gatewayModels.map((model) => model.slug))) {
        const model = result.snapshot.modelsBySlug.get(slug);
        if (model !== undefined) loadTokenizer(model.tokenizer);
      }
    }
    if (result.changed) {
      this.#logger.info({
        version: update.version.toString(), full: update.full,
        organisations: result.snapshot.organisationsById.size, projects: result.snapshot.projectsById.size,
        keys: result.snapshot.keysByHash.size, models: result.snapshot.modelsBySlug.size,
        platformModelAliases: result.snapshot.platformModelAliases.size,
      }, 'config applied');
    }
    void stream.send({ proxyId: this.#options.proxyId, appliedVersion: update.version, error: '' });
  }

  /** Once the snapshot is older than the bound, only a full snapshot may make it fresh again. */
  #markStaleIfDue(): void {
    if (this.#snapshot === undefined || this.#awaitingFull) return;
    if (this.#options.now() - this.#lastAppliedAtMs <= this.#options.stalenessMs) return;
    this.#awaitingFull = true;
    this.#logger.warn({ stalenessMs: this.#options.stalenessMs }, 'config stale: refusing inference until a new full snapshot arrives');
  }

  #checkStaleness(): void {
    if (this.#closed) return;
    this.#markStaleIfDue();
    const now = this.#options.now();
    const heardAtMs = Math.max(this.#lastAppliedAtMs, this.#streamOpenedAtMs);
    if (this.#call !== undefined && now - heardAtMs > this.#options.stalenessMs) {
      // The stream is open but silent (a half-dead connection or a hung admin): redial.
      this.#abandonCall();
      this.#connect();
    }
  }

  #scheduleReconnect(): void {
    const exponent = Math.min(this.#failedAttempts - 1, 16);
    const ceilingMs = Math.min(this.#options.maxBackoffMs, this.#options.initialBackoffMs * 2 ** Math.max(0, exponent));
    // Jitter spreads the reconnects of many proxies after an admin restart.
    const delayMs = ceilingMs / 2 + Math.random() * (ceilingMs / 2);
    clearTimeout(this.#reconnectTimer);
    this.#reconnectTimer = setTimeout(() => this.#connect(), delayMs);
    this.#reconnectTimer.unref();
  }

  #abandonCall(): void {
    const call = this.#call;
    this.#call = undefined;
    this.#generation += 1;
    // Cancels the call; its iteration ends quietly and, with the generation moved on, changes nothing.
    call?.cancel.abort();
  }
}
