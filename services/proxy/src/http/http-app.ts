import express, { type Express, type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import { GatewayError } from '@gateway/errors';
import { createRequestGuard } from '@gateway/http-guard';
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
import type { StreamChatDeps, StreamSink, StreamStopReason } from '../inference/stream-chat.ts';
import type { ProxyRoute, ProxyTelemetry, RequestObserver } from '../telemetry/request-observer.ts';
import type { UpstreamAdapter } from '../upstreams/upstream-adapter.ts';
import { adapterFor } from '../upstreams/upstream-adapters.ts';
import { createAdmission, type ApiKeySource } from './admission.ts';
import { sendJson, sseSink } from './answers.ts';
import { resolveModelOfKind } from './model-resolution.ts';
import { contextOf, requestContext, sendAnthropicError, sendError, type RequestContext } from './request-context.ts';
import { mountChatCompletionsRoute } from './routes/chat-completions-route.ts';
import { mountEmbeddingsRoute } from './routes/embeddings-route.ts';
import { mountMessagesRoute } from './routes/messages-route.ts';
import { mountModelsRoutes } from './routes/models-route.ts';
import { mountResponsesRoute } from './routes/responses-route.ts';

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
  /** Stored Responses, sealed per organisation (Redis or this process; docs/decisions.md "Stored Responses"). */
  storedResponses: StoredResponses;
}

/** A handler of an inference route: gets the request's context and observer; whatever it throws becomes the error response. */
type InferenceHandler = (req: Request, res: Response, context: RequestContext, observer: RequestObserver) => Promise<void>;

/** The error shape an inference route answers in: OpenAI's (every route but one) or Anthropic's (`/v1/messages`). */
type ErrorShape = 'openai' | 'anthropic';

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
  inference(route: ProxyRoute, handler: InferenceHandler, errorShape?: ErrorShape): RequestHandler;
  /** Fresh snapshot (else 503) and API key (401/403), synchronously; `keySource` default `bearer`. */
  identify(req: Request, context: RequestContext, keySource?: ApiKeySource): { snapshot: ConfigSnapshot; caller: AuthenticatedCaller };
  /** Snapshot, key and the organisation's RPM check: the start of a route that reads no body. */
  admit(req: Request, res: Response, context: RequestContext): Promise<{ snapshot: ConfigSnapshot; caller: AuthenticatedCaller }>;
  /**
   * The organisation's RPM check (429, x-ratelimit-* headers) with the JSON body read while the
   * check's round trip is in flight; resolves to the parsed body.
   */
  readBodyWithinRateLimit(req: Request, res: Response, context: RequestContext, caller: AuthenticatedCaller): Promise<unknown>;
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
  sendJson(res: Response, body: unknown, observer: RequestObserver): void;
  /** The SSE response of a stream, with backpressure. */
  sseSink(res: Response, observer: RequestObserver): StreamSink;
  /** Runs a stream's relay with its stop signal: aborted when the client goes away, or by shutdown once the grace runs out. */
  withStreamStop(res: Response, relay: (stop: AbortSignal) => Promise<void>): Promise<void>;
}

/**
 * The proxy's express app: `/healthz`, `/readyz`, and the `/v1` routes: chat completions,
 * Responses, Anthropic Messages, embeddings (http/routes/ has one module per surface) and
 * models. Every inference route runs, in order: fresh snapshot (else 503), API key (401/403),
 * the organisation's RPM pool (429), then its own work (docs/proxy.md).
 */
export function createHttpApp(services: HttpAppServices): Express {
  const app = express();
  app.disable('x-powered-by');
  app.disable('etag');
  app.set('query parser', 'simple');

  /** Runs an inference handler of a route as tracked work, answering with the error of anything it throws; the route's observer counts it. */
  function inference(route: ProxyRoute, handler: InferenceHandler, errorShape: ErrorShape = 'openai'): RequestHandler {
    const answerError = errorShape === 'anthropic' ? sendAnthropicError : sendError;
    return (req, res) => {
      const context = contextOf(res);
      const observer = services.telemetry.startRequest(route, req.method, context.requestId, context.startedAtMs);
      context.observer = observer;
      // observer.run: with tracing on, the handler's ledger calls carry the request's spans.
      const work = observer.run(() => handler(req, res, context, observer)).catch((error: unknown) => answerError(res, error));
      context.work = work;
      return services.track(work);
    };
  }

  app.use(requestContext(services.logger, services.isShuttingDown, services.telemetry));
  // A malformed path is a 400 before any key check: no credential is needed to learn it, and nothing is revealed.
  app.use(createRequestGuard());

  app.get('/healthz', services.probes.handleLiveness);
  // Ready decides routing (docs/proxy.md "Readiness"); the dependencies are named for operators only.
  app.get('/readyz', services.probes.handleReadiness);

  const inferenceDeps: StreamChatDeps = {
    ledger: services.ledger, grants: services.grants, upstream: services.upstream, logger: services.logger, reserveTtlMs: services.reserveTtlMs,
    background: (work: Promise<unknown>) => { void services.track(work); },
    checkpointIntervalMs: services.checkpointIntervalMs,
    streamLeaseMs: services.streamLeaseMs,
  };

  const kit: InferenceRouteKit = {
    services,
    inferenceDeps,
    inference,
    ...createAdmission(services),
    resolveModel: resolveModelOfKind,
    adapterOf(model) {
      const adapter = adapterFor(model.upstream.providerKind);
      if (adapter === undefined) {
        throw new GatewayError('service_unavailable', { internalMessage: `no adapter for ${model.upstream.providerKind}` });
      }
      return adapter;
    },
    chatInput(context, snapshot, caller, model, request, observer) {
      return {
        requestId: context.requestId, requestUuid: context.requestUuid, caller, model, adapter: kit.adapterOf(model), request,
        log: context.log, observer, toolCallIds: services.toolCallIds(snapshot), cacheScoping: services.cacheScoping(snapshot),
      };
    },
    sendJson,
    sseSink,
    async withStreamStop(res, relay) {
      const stop = new AbortController();
      const onClose = () => { if (!res.writableFinished) stop.abort('client_closed' satisfies StreamStopReason); };
      res.once('close', onClose);
      services.activeStreams.add(stop);
      try {
        await relay(stop.signal);
      } finally {
        services.activeStreams.delete(stop);
        res.off('close', onClose);
      }
    },
  };

  mountChatCompletionsRoute(app, kit);
  mountResponsesRoute(app, kit);
  mountMessagesRoute(app, kit);
  mountEmbeddingsRoute(app, kit);
  mountModelsRoutes(app, kit);

  // Legacy completions are not served (docs/proxy.md, "What is served"): a prompt-continuation
  // API few upstreams still offer, which cannot be translated to chat without changing what a
  // prompt means. The 404 says where to go instead; no key is needed to learn it.
  app.all('/v1/completions', (_req, res) => {
    sendError(res, new GatewayError('not_found', {
      publicMessage: 'The legacy completions endpoint (POST /v1/completions) is not served by this gateway; use POST /v1/chat/completions or POST /v1/responses.',
    }));
  });

  // Anything else, any method: OpenAI's answer to an unknown route is a 404 in its error shape.
  app.use((req, res) => {
    sendError(res, new GatewayError('not_found', { publicMessage: `Unknown route: ${req.method} ${req.path.slice(0, 200)}` }));
  });
  app.use((error: unknown, _req: Request, res: Response, _next: NextFunction) => { sendError(res, error); });
  return app;
}
