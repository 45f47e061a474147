import type { ServerResponse } from 'node:http';
import type { Logger } from '@gateway/logger';
import type { HealthProbes } from '@gateway/service-runtime';
import type { CacheScoping } from '../domain/cache-scope.ts';
import type { AuthenticatedCaller } from '../domain/authenticate.ts';
import type { ConfigSnapshot, GatewayModelEntry, GatewayModelKind } from '../domain/config-snapshot.ts';
import type { GrantBook } from '../billing/grant-book.ts';
import type { Ledger } from '../domain/ledger-port.ts';
import type { RateLimiter } from '../domain/rate-limit.ts';
import type { ToolCallIdCodec } from '../domain/tool-call-ids.ts';
import type { ChatRequest } from '../domain/chat-request.ts';
import type { StoredResponses } from '../domain/responses/stored-responses.ts';
import type { ChatInput } from '../inference/plan-chat.ts';
import type { UpstreamPort } from '../inference/complete-chat.ts';
import type { Routing } from '../inference/attempts.ts';
import type { StreamChatDeps, StreamSink } from '../inference/stream-chat.ts';
import type { ProxyTelemetry, RequestObserver } from '../telemetry/request-observer.ts';
import type { ProxyRoute } from '../telemetry/request-labels.ts';
import type { UpstreamAdapter } from '../upstreams/upstream-adapter.ts';
import type { RequestContext, RequestLogSink } from './request-context.ts';
import type { RouteHandler, RoutedRequest } from './router.ts';

// What the HTTP app hands each route module (http/routes/) and its admission steps: the services
// it was built with and the kit of common steps. Apart from http-app.ts, so that the routes and
// admission.ts, which http-app.ts imports, need not import it back for these types.

/** Where an inference route reads its API key: `Authorization: Bearer` only, or also Anthropic's `x-api-key`. */
export type ApiKeySource = 'bearer' | 'bearer_or_x_api_key';

/** Everything the HTTP layer uses, wired by createProxyApp. */
export interface HttpAppServices {
  logger: Logger;
  /** The snapshot to serve from; undefined while there is none or it is stale. */
  freshSnapshot(): ConfigSnapshot | undefined;
  /** The proxy's /healthz and /readyz (readiness and each dependency's state, by name: `config`, `ledger`, `redis`). */
  probes: HealthProbes;
  isShuttingDown(): boolean;
  rateLimiter: RateLimiter;
  /** The ledger port: every Settle and Release goes through its outbox. */
  ledger: Ledger;
  /** The replica's credit grants (billing/grant-book.ts); absent with PROXY_CREDIT_GRANTS=off. */
  grants?: GrantBook | undefined;
  upstream: UpstreamPort;
  /** Routing across a model's upstream deployments (docs/proxy.md "Routing"); absent: each model's first deployment, one attempt. */
  routing?: Routing | undefined;
  /** The tool-call id mapping of a snapshot: the ids clients see are the gateway's (domain/tool-call-ids.ts). */
  toolCallIds(snapshot: ConfigSnapshot): ToolCallIdCodec;
  /** How a snapshot's requests keep prompt caches to their organisation (domain/cache-scope.ts). */
  cacheScoping(snapshot: ConfigSnapshot): CacheScoping;
  /** Tracks work that must end before the process stops. */
  track<T>(work: Promise<T>): Promise<T>;
  maxBodyBytes: number;
  /** Most request-body bytes being read at once, process-wide (PROXY_MAX_INFLIGHT_BODY_BYTES; http/body-byte-budget.ts). */
  maxInflightBodyBytes: number;
  maxMessageChars: number;
  reserveTtlMs: number;
  checkpointIntervalMs: number;
  /** A stream's reservation is a lease of this long, renewed by its checkpoints, ms (PROXY_STREAM_LEASE_MS). */
  streamLeaseMs: number;
  /** Stop controllers of the streams being relayed; shutdown aborts them with 'shutdown' once the grace runs out. */
  activeStreams: Set<AbortController>;
  /** The proxy's metrics, observed per request (PROXY_METRICS_PORT serves them). */
  telemetry: ProxyTelemetry;
  /** Where finished requests go for the request log (docs/proxy.md "Request log"); absent: nothing is recorded (PROXY_REQUEST_LOG=off). */
  requestLog?: RequestLogSink | undefined;
  /** Stored Responses, sealed per organisation (Redis or this process; docs/decisions.md "Stored Responses"). */
  storedResponses: StoredResponses;
}

/** A handler of an inference route: gets the request's context and observer; whatever it throws becomes the error response. */
export type InferenceHandler = (req: RoutedRequest, res: ServerResponse, context: RequestContext, observer: RequestObserver) => Promise<void>;

/** The error shape an inference route answers in: OpenAI's (every route but one) or Anthropic's (`/v1/messages`). */
export type ErrorShape = 'openai' | 'anthropic';

/**
 * The common steps of every inference route, handed to each route module (http/routes/): one
 * home for the order snapshot → key → RPM → body, for model resolution, for JSON and SSE
 * answers, and for tracking and cutting streams at shutdown.
 */
export interface InferenceRouteKit {
  readonly services: HttpAppServices;
  /** What the inference functions (inference/) need: ledger, upstream, logger, TTLs, background work. */
  readonly inferenceDeps: StreamChatDeps;
  /** Wraps a handler as tracked work with its route's observer; whatever it throws is answered in `errorShape` (default OpenAI's). */
  inference(route: ProxyRoute, handler: InferenceHandler, errorShape?: ErrorShape): RouteHandler;
  /** Fresh snapshot (else 503) and API key (401/403), synchronously; `keySource` default `bearer`. */
  identify(req: RoutedRequest, context: RequestContext, keySource?: ApiKeySource): { snapshot: ConfigSnapshot; caller: AuthenticatedCaller };
  /** Snapshot, key and the organisation's RPM check: the start of a route that reads no body. */
  admit(req: RoutedRequest, res: ServerResponse, context: RequestContext): Promise<{ snapshot: ConfigSnapshot; caller: AuthenticatedCaller }>;
  /**
   * The organisation's RPM check (429, x-ratelimit-* headers) with the JSON body read while the
   * check's round trip is in flight; resolves to the parsed body.
   */
  readBodyWithinRateLimit(req: RoutedRequest, res: ServerResponse, context: RequestContext, caller: AuthenticatedCaller): Promise<unknown>;
  /**
   * The gateway model a request names (its slug, or an alias of it: domain/model-aliases.ts), when
   * it exists, the organisation may use it and it is of `kind` (a 400 naming the endpoint to use
   * otherwise); sets the observer's model label either way.
   */
  resolveModel(
    snapshot: ConfigSnapshot, caller: AuthenticatedCaller, name: string, kind: GatewayModelKind, observer: RequestObserver, stream: boolean,
  ): GatewayModelEntry;
  /** The upstream adapter of a model's provider kind (503 when this proxy has none). */
  adapterOf(model: GatewayModelEntry): UpstreamAdapter;
  /** One chat completion of a resolved model, as every chat surface hands it to completeChat / streamChat. */
  chatInput(
    context: RequestContext, snapshot: ConfigSnapshot, caller: AuthenticatedCaller, model: GatewayModelEntry, request: ChatRequest, observer: RequestObserver,
  ): ChatInput;
  /** Answers 200 with a JSON body in one write. */
  sendJson(res: ServerResponse, body: unknown, observer: RequestObserver): void;
  /** Answers 200 with a JSON body in the bytes express's res.json wrote (/v1/models: its capitals, and its 304 to `If-None-Match: *`). */
  sendExpressJson(req: RoutedRequest, res: ServerResponse, body: unknown): void;
  /** The SSE response of a stream, with backpressure. */
  sseSink(res: ServerResponse, observer: RequestObserver): StreamSink;
  /** Runs a stream's relay with its stop signal: aborted when the client goes away, or by shutdown once the grace runs out. */
  withStreamStop(res: ServerResponse, relay: (stop: AbortSignal) => Promise<void>): Promise<void>;
}
