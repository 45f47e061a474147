import { hostname } from 'node:os';
import { commonEnv, loadConfig, z } from '@gateway/config';
import { checkGrpcTlsEnv, grpcTlsEnv } from '@gateway/grpc';
import { tracingShutdownTimeoutMs } from '@gateway/telemetry';
import { checkRedisEnv, redisEnv } from './redis/redis-target.ts';

const grpcAddress = z.string().regex(/^\S+:\d+$/, 'must be host:port');

/**
 * The proxy's environment. Shared variables (docs/development.md) plus its own; it has no
 * DATABASE_URL or DATA_DIR because it keeps no data: everything it serves arrives over the
 * config stream, and every rupee lives in the ledger.
 */
export const proxyConfigSchema = z.object({
  BIND_HOST: z.string().min(1).default('127.0.0.1'),
  LOG_LEVEL: commonEnv.logLevel,
  /**
   * How long requests in flight at SIGTERM may still run before streams are cut, ms. Unset (the
   * manifests leave it unset): proxyRequestBoundMs, the longest request the gateway's own limits
   * allow, so a rollout cuts no stream. A shorter value cuts streams that outlast it (they end
   * with an error event and settle what they delivered).
   */
  SHUTDOWN_GRACE_MS: z.coerce.number().int().positive().optional(),
  PROXY_HTTP_PORT: commonEnv.port(8080),
  /** Internal port of GET /metrics (Prometheus), apart from the public API (0: any free port). */
  PROXY_METRICS_PORT: commonEnv.port(9101),
  /** Stable id of this process in the admin's view of connected proxies. */
  PROXY_ID: z.string().min(1).max(200).default(() => `${hostname()}-${process.pid}`),
  ADMIN_GRPC_URL: grpcAddress.default('127.0.0.1:50052'),
  LEDGER_GRPC_URL: grpcAddress.default('127.0.0.1:50051'),
  /** Service identity (mTLS) of the proxy's gRPC channels: see @gateway/grpc's grpcTlsEnv. */
  ...grpcTlsEnv,
  /**
   * The shared Redis of the RPM pools (and stored Responses): REDIS_URL, or REDIS_SENTINELS +
   * REDIS_SENTINEL_MASTER, or REDIS_CLUSTER_NODES (redis/redis-target.ts); none: an in-process
   * limiter (one replica only).
   */
  ...redisEnv,
  PROXY_REDIS_PREFIX: z.string().min(1).default('gw:rpm:'),
  /**
   * The Redis stored Responses live in, when not REDIS_URL's (say, a persistent one apart from the
   * RPM pools'); default REDIS_URL; with neither, they are kept in this process.
   */
  PROXY_RESPONSE_STORE_REDIS_URL: z.string().regex(/^rediss?:\/\//, 'must be a redis:// or rediss:// URL').optional(),
  /** Prefix of stored Responses' keys in their Redis (docs/decisions.md, "Stored Responses"). */
  PROXY_RESPONSE_STORE_PREFIX: z.string().min(1).default('gw:resp:'),
  /**
   * Most bytes of stored Responses (sealed) kept in memory when there is no Redis, the oldest
   * dropped first to make room; 64 MiB by default, about a tenth of the manifest's heap.
   */
  PROXY_RESPONSE_STORE_MAX_BYTES: z.coerce.number().int().min(1024 * 1024).max(64 * 1024 * 1024 * 1024).default(64 * 1024 * 1024),
  PROXY_CONFIG_STALENESS_MS: commonEnv.durationMs(30_000),
  /**
   * Largest config update the proxy accepts in one gRPC message, bytes (grpc-js's default is
   * 4 MiB). 64 MiB holds a snapshot of a few hundred thousand keys whole; the admin still splits
   * updates over about 3 MiB, so this is headroom, not the normal path. At least 4 MiB.
   */
  PROXY_CONFIG_MAX_MESSAGE_BYTES: z.coerce.number().int().min(4 * 1024 * 1024).max(1024 * 1024 * 1024).default(64 * 1024 * 1024),
  /** The ledger accepts 1 s – 24 h; checked here so a bad value fails at start, not on every Reserve. */
  RESERVE_TTL_MS: z.coerce.number().int().min(1_000).max(86_400_000).default(600_000),
  /**
   * Largest request body, bytes after decoding its Content-Encoding (413 above). 16 MiB holds a
   * few base64 photos (a data URL is 4/3 of its image) under Anthropic's 32 MB and OpenAI's 50 MB
   * request limits. How many are read at once is PROXY_MAX_INFLIGHT_BODY_BYTES'. At most 256 MiB.
   */
  PROXY_MAX_BODY_BYTES: z.coerce.number().int().positive().max(256 * 1024 * 1024).default(16 * 1024 * 1024),
  /**
   * Most request-body bytes being read at once by the process, bytes (503 with retry-after: 1 for
   * a body that does not fit, before a byte of it is read): an identity body counts its
   * Content-Length, a compressed or chunked one PROXY_MAX_BODY_BYTES (its decoded size is unknown).
   * Reading costs about its size in heap (12 unfinished 16 MiB bodies: +170 MB), so 64 MiB (four
   * bodies of the largest size) keeps reading under ~60 MB of the manifest's 512 MB old space, and
   * even four such bodies at their parsed peak (about four copies each) under half of it. At least
   * PROXY_MAX_BODY_BYTES, at most 4 GiB.
   */
  PROXY_MAX_INFLIGHT_BODY_BYTES: z.coerce.number().int().positive().max(4 * 1024 * 1024 * 1024).default(64 * 1024 * 1024),
  /** Most characters of text (content parts, name, tool call arguments) one message may carry. */
  PROXY_MAX_MESSAGE_CHARS: z.coerce.number().int().positive().default(524_288),
  /**
   * Estimated prompt tokens from which a request without cache_control or prompt_cache_key is
   * marked with its organisation's cache scope (domain/cache-scope.ts): half the shortest prefix
   * OpenAI caches by itself (1,024), a margin for the estimate. Set 0 when an upstream caches
   * shorter prefixes (vLLM's automatic prefix caching has no minimum).
   */
  PROXY_CACHE_SCOPE_MIN_PROMPT_TOKENS: z.coerce.number().int().nonnegative().default(512),
  /**
   * A stream checkpoints its running usage to the ledger on its first content chunk and then at
   * most this often (EXPIRY): a SIGKILL of the proxy loses at most this much delivered output.
   */
  PROXY_CHECKPOINT_INTERVAL_MS: commonEnv.durationMs(2_000),
  /**
   * A stream's reservation at the ledger (its own Reserve, or a promoted carve) is a lease once it
   * checkpoints: each checkpoint, sent every PROXY_CHECKPOINT_INTERVAL_MS whether or not new
   * tokens came, sets its deadline to the ledger's now() plus this, ms (EXPIRY). So a killed
   * proxy's streams hold their money for at most this (plus one sweep) after their last
   * checkpoint, not RESERVE_TTL_MS. At least 2 × PROXY_CHECKPOINT_INTERVAL_MS +
   * LEDGER_CALL_TIMEOUT_MS, so a live stream's renewal always lands before its lease ends, even
   * when the one before it took a whole call timeout to be answered.
   */
  PROXY_STREAM_LEASE_MS: z.coerce.number().int().min(1_000).max(86_400_000).default(15_000),
  /**
   * Most Settles and Releases waiting in the outbox for the ledger's answer; at this depth the
   * proxy is not ready and refuses new requests with 503 rather than drop a record.
   */
  PROXY_SETTLE_OUTBOX_MAX: z.coerce.number().int().min(1).max(10_000_000).default(10_000),
  /**
   * The Redis stream (in REDIS_URL's Redis) where a stopping replica leaves the Settles and
   * Releases the ledger has not answered, and every live replica adopts them from
   * (ledger/outbox-handover.ts; docs/operations.md, "Settles that outlive a replica").
   * Default: outboxStreamKey, under PROXY_REDIS_PREFIX.
   */
  PROXY_OUTBOX_STREAM: z.string().min(1).optional(),
  /** How often a replica reads the shared outbox for entries to adopt, ms. */
  PROXY_OUTBOX_ADOPT_INTERVAL_MS: z.coerce.number().int().min(10).max(60_000).default(1_000),
  /**
   * An adopted entry its adopter has not touched for this long (the adopter was killed) is claimed
   * by another replica, ms. Adopters touch theirs every PROXY_OUTBOX_ADOPT_INTERVAL_MS.
   */
  PROXY_OUTBOX_CLAIM_IDLE_MS: z.coerce.number().int().min(100).max(3_600_000).default(30_000),
  /** Wait before an outbox entry's 2nd attempt, ms; doubled per attempt up to PROXY_SETTLE_RETRY_MAX_MS. */
  PROXY_SETTLE_RETRY_INITIAL_MS: z.coerce.number().int().min(1).max(60_000).default(100),
  /** Longest wait between two attempts of an outbox entry, ms (jittered to between half and all of it). */
  PROXY_SETTLE_RETRY_MAX_MS: z.coerce.number().int().min(1).max(300_000).default(3_000),
  UPSTREAM_CONNECT_TIMEOUT_MS: commonEnv.durationMs(10_000),
  UPSTREAM_FIRST_BYTE_TIMEOUT_MS: commonEnv.durationMs(60_000),
  /** Longest gap between two chunks of an upstream body (streamed or not). */
  UPSTREAM_IDLE_TIMEOUT_MS: commonEnv.durationMs(60_000),
  UPSTREAM_TOTAL_TIMEOUT_MS: commonEnv.durationMs(300_000),
  /** Most attempts one request makes across its model's upstream deployments (docs/proxy.md "Routing"), 1..16. */
  PROXY_ROUTING_MAX_ATTEMPTS: z.coerce.number().int().min(1).max(16).default(3),
  /** Time for a request's attempts before the first byte of its answer reaches the client, ms; no new attempt starts after it. */
  PROXY_ROUTING_DEADLINE_MS: z.coerce.number().int().min(1).max(3_600_000).default(60_000),
  /**
   * One deployment's time to answer (its response headers) before the next is tried, ms. The last
   * deployment a request can try is bounded by the deadline (and the UPSTREAM_* timeouts) only.
   * At most PROXY_ROUTING_DEADLINE_MS.
   */
  PROXY_ROUTING_ATTEMPT_TIMEOUT_MS: z.coerce.number().int().min(1).max(3_600_000).default(20_000),
  /** Consecutive failed attempts (connect error, timeout, 429, 5xx, broken stream) that eject a deployment from this proxy's routing. */
  PROXY_OUTLIER_CONSECUTIVE_FAILURES: z.coerce.number().int().min(1).max(1_000).default(5),
  /** A deployment's first ejection, ms; doubled with each ejection that follows without a success between, up to PROXY_OUTLIER_MAX_EJECTION_MS. */
  PROXY_OUTLIER_BASE_EJECTION_MS: z.coerce.number().int().min(1).max(3_600_000).default(30_000),
  /** Longest ejection (and longest upstream Retry-After honoured), ms; at least PROXY_OUTLIER_BASE_EJECTION_MS. */
  PROXY_OUTLIER_MAX_EJECTION_MS: z.coerce.number().int().min(1).max(86_400_000).default(300_000),
  LEDGER_CALL_TIMEOUT_MS: commonEnv.durationMs(5_000),
  /**
   * Credit grants (docs/proxy.md "Credit grants"): `on` carves each Reserve from a grant this
   * replica holds, with no ledger round trip before the upstream call; `off` sends every Reserve
   * to the ledger (the exact per-request path, which near exhaustion every Reserve takes anyway).
   */
  PROXY_CREDIT_GRANTS: z.enum(['on', 'off']).default('on'),
  /**
   * The request log (docs/proxy.md "Request log"): `on` sends a record of every finished request
   * of a known organisation to the ledger in batches off the hot path; `off` records nothing
   * (the bench's comparison; docs/benchmarks.md).
   */
  PROXY_REQUEST_LOG: z.enum(['on', 'off']).default('on'),
  /** A grant asks for this long of the replica's recent spend for the project, ms. */
  PROXY_GRANT_WINDOW_MS: z.coerce.number().int().min(100).max(60_000).default(2_000),
  /** A grant's deadline is this long after the ledger's clock, ms; the proxy extends it while it carves from it (EXPIRY). */
  PROXY_GRANT_TTL_MS: z.coerce.number().int().min(1_000).max(600_000).default(15_000),
  /** A grant nothing was carved from for this long is returned to the wallet, ms. */
  PROXY_GRANT_IDLE_RETURN_MS: z.coerce.number().int().min(10).max(600_000).default(2_000),
  /**
   * Longest a Reserve refused while the ledger pulls back the organisation's grants from other
   * replicas keeps trying, ms: money idling in another replica's grant never causes a 402.
   */
  PROXY_RECALL_WAIT_MS: z.coerce.number().int().min(0).max(60_000).default(2_000),
  /** Most RPM tokens one lease from the shared Redis pool takes (fewer as the pool nears its limit). */
  PROXY_RPM_LEASE_MAX: z.coerce.number().int().min(1).max(1_000).default(8),
  /** A leased RPM token not used within this long is spent unused, ms (the pool is never exceeded, only briefly under-used). */
  PROXY_RPM_LEASE_MS: z.coerce.number().int().min(10).max(10_000).default(1_000),
  /**
   * Most proxy replicas that can run at once (the manifests set the HPA's maxReplicas): while
   * Redis is down each replica admits floor(limit / PROXY_REPLICAS) per organisation and minute.
   * Unset: no degraded mode, a Redis outage refuses inference with 503.
   */
  PROXY_REPLICAS: z.coerce.number().int().min(1).max(10_000).optional(),
  /** Longest a replica admits from its share while Redis is down, ms (then 503); default 5 minutes. */
  PROXY_RPM_DEGRADED_MS: z.coerce.number().int().min(0).max(3_600_000).default(300_000),
}).superRefine(checkGrpcTlsEnv).superRefine(checkRedisEnv).refine(
  (config) => config.PROXY_STREAM_LEASE_MS >= 2 * config.PROXY_CHECKPOINT_INTERVAL_MS + config.LEDGER_CALL_TIMEOUT_MS,
  {
    path: ['PROXY_STREAM_LEASE_MS'], message: 'must be at least 2 × PROXY_CHECKPOINT_INTERVAL_MS + LEDGER_CALL_TIMEOUT_MS (a live stream must renew its lease before it ends)',
    when: (payload) => !payload.issues.some((issue) => ['PROXY_STREAM_LEASE_MS', 'PROXY_CHECKPOINT_INTERVAL_MS', 'LEDGER_CALL_TIMEOUT_MS'].includes(String(issue.path?.[0]))),
  },
).refine(
  (config) => config.PROXY_ROUTING_ATTEMPT_TIMEOUT_MS <= config.PROXY_ROUTING_DEADLINE_MS,
  {
    path: ['PROXY_ROUTING_ATTEMPT_TIMEOUT_MS'], message: 'must be at most PROXY_ROUTING_DEADLINE_MS',
    when: (payload) => !payload.issues.some((issue) => ['PROXY_ROUTING_ATTEMPT_TIMEOUT_MS', 'PROXY_ROUTING_DEADLINE_MS'].includes(String(issue.path?.[0]))),
  },
).refine(
  (config) => config.PROXY_OUTLIER_MAX_EJECTION_MS >= config.PROXY_OUTLIER_BASE_EJECTION_MS,
  {
    path: ['PROXY_OUTLIER_MAX_EJECTION_MS'], message: 'must be at least PROXY_OUTLIER_BASE_EJECTION_MS',
    when: (payload) => !payload.issues.some((issue) => ['PROXY_OUTLIER_MAX_EJECTION_MS', 'PROXY_OUTLIER_BASE_EJECTION_MS'].includes(String(issue.path?.[0]))),
  },
).refine(
  // A chunked or compressed body takes the whole per-body limit: a smaller budget could read none.
  (config) => config.PROXY_MAX_INFLIGHT_BODY_BYTES >= config.PROXY_MAX_BODY_BYTES,
  {
    path: ['PROXY_MAX_INFLIGHT_BODY_BYTES'], message: 'must be at least PROXY_MAX_BODY_BYTES',
    // Compared only when both are valid numbers: one already reported is not reported twice.
    when: (payload) => !payload.issues.some((issue) => issue.path?.[0] === 'PROXY_MAX_BODY_BYTES' || issue.path?.[0] === 'PROXY_MAX_INFLIGHT_BODY_BYTES'),
  },
);

/**
 * The proxy's validated configuration; keys are the environment variable names. SHUTDOWN_GRACE_MS
 * is always set: the environment's value, else proxyRequestBoundMs.
 */
export type ProxyConfig = Omit<z.infer<typeof proxyConfigSchema>, 'SHUTDOWN_GRACE_MS'> & { SHUTDOWN_GRACE_MS: number };

/** Reads the proxy's configuration from an environment, reporting every problem at once (ConfigError). */
export function loadProxyConfig(env: Record<string, string | undefined> = process.env): ProxyConfig {
  const parsed = loadConfig('proxy', proxyConfigSchema, env);
  return { ...parsed, SHUTDOWN_GRACE_MS: proxyShutdownGraceMs(parsed) };
}

/**
 * The shared outbox's stream key: PROXY_OUTBOX_STREAM, else `<PROXY_REDIS_PREFIX>outbox`
 * (`gw:rpm:outbox`), so proxies that keep their RPM pools apart in one Redis keep their outboxes
 * apart too.
 */
export function outboxStreamKey(config: Pick<ProxyConfig, 'PROXY_OUTBOX_STREAM' | 'PROXY_REDIS_PREFIX'>): string {
  return config.PROXY_OUTBOX_STREAM ?? `${config.PROXY_REDIS_PREFIX}outbox`;
}

/** The variables the longest request is derived from. */
type RequestBoundInputs = Pick<ProxyConfig, 'UPSTREAM_TOTAL_TIMEOUT_MS' | 'LEDGER_CALL_TIMEOUT_MS' | 'PROXY_RECALL_WAIT_MS'>;

/**
 * The longest one request can run inside the gateway's own limits, ms: its upstream call,
 * streamed body included, is cut at UPSTREAM_TOTAL_TIMEOUT_MS (upstreams/stream-call.ts), which
 * the attempts of a request that fails over share (inference/attempts.ts); before
 * it comes the Reserve: a ledger call, a second one after waiting for the organisation's Settles
 * in flight, and at most PROXY_RECALL_WAIT_MS of retries while other replicas' grants are
 * recalled. Its Settle goes to the outbox after the last byte (proxySettleBoundMs covers it).
 * 300 s + 2 × 5 s + 2 s = 312 s by default.
 */
export function proxyRequestBoundMs(config: RequestBoundInputs): number {
  return config.UPSTREAM_TOTAL_TIMEOUT_MS + 2 * config.LEDGER_CALL_TIMEOUT_MS + config.PROXY_RECALL_WAIT_MS;
}

/**
 * The grace SIGTERM gives requests in flight, ms: SHUTDOWN_GRACE_MS when set, else the longest
 * request (proxyRequestBoundMs), so a stream that the gateway's limits allow finishes.
 */
export function proxyShutdownGraceMs(config: RequestBoundInputs & { SHUTDOWN_GRACE_MS?: number | undefined }): number {
  return config.SHUTDOWN_GRACE_MS ?? proxyRequestBoundMs(config);
}

/**
 * How long the proxy may still work for cut streams after SHUTDOWN_GRACE_MS, ms: their Settles get
 * a few attempts at the ledger (three call deadlines and a second) before the outbox hands over.
 */
export function proxySettleBoundMs(config: Pick<ProxyConfig, 'LEDGER_CALL_TIMEOUT_MS'>): number {
  return config.LEDGER_CALL_TIMEOUT_MS * 3 + 1000;
}

/** Longest the hand-over of the outbox to Redis may take at shutdown, ms (its command timeout). */
export const outboxHandOverTimeoutMs = 1_000;

/**
 * The longest the proxy's stop takes after SIGTERM, ms: the HTTP drain (the grace, the cut
 * streams' settle bound, the outbox's hand-over to Redis (outboxHandOverTimeoutMs), a second for
 * the requests it resolves and a second for the last responses to flush), then the stop steps
 * after it: the credit grants' closing AdjustGrant calls (sent together, each bounded by
 * LEDGER_CALL_TIMEOUT_MS) and tracing's last export (tracingShutdownTimeoutMs). The process exit
 * and the pod's terminationGracePeriodSeconds are both measured against it.
 */
export function proxyDrainBoundMs(config: Pick<ProxyConfig, 'SHUTDOWN_GRACE_MS' | 'LEDGER_CALL_TIMEOUT_MS'>): number {
  const httpDrainMs = config.SHUTDOWN_GRACE_MS + proxySettleBoundMs(config) + outboxHandOverTimeoutMs + 2000;
  return httpDrainMs + config.LEDGER_CALL_TIMEOUT_MS + tracingShutdownTimeoutMs;
}
