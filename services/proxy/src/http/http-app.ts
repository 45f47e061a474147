import express, { type Express, type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import { GatewayError } from '@gateway/errors';
import { createJsonBodyParser, createRequestGuard } from '@gateway/http-guard';
import type { Logger } from '@gateway/logger';
import type { HealthProbes } from '@gateway/service-runtime';
import type { CacheScoping } from '../domain/cache-scope.ts';
import { authenticate, type AuthenticatedCaller } from '../domain/authenticate.ts';
import type { ConfigSnapshot, GatewayModelEntry, GatewayModelKind, OrganisationEntry } from '../domain/config-snapshot.ts';
import type { GrantBook } from '../billing/grant-book.ts';
import type { Ledger } from '../domain/ledger-port.ts';
import { resolveModelName } from '../domain/model-aliases.ts';
import { rateLimitHeaders, retryAfterSeconds, type RateLimitDecision, type RateLimiter } from '../domain/rate-limit.ts';
import type { ToolCallIdCodec } from '../domain/tool-call-ids.ts';
import type { ChatRequest } from '../domain/chat-request.ts';
import type { StoredResponses } from '../domain/responses/stored-responses.ts';
import type { ChatInput } from '../inference/plan-chat.ts';
import { elapsedMs } from '../telemetry/elapsed-ms.ts';
import type { UpstreamPort } from '../inference/complete-chat.ts';
import type { StreamChatDeps, StreamSink, StreamStopReason } from '../inference/stream-chat.ts';
import type { ProxyRoute, ProxyTelemetry, RequestObserver } from '../telemetry/request-observer.ts';
import type { UpstreamAdapter } from '../upstreams/upstream-adapter.ts';
import { adapterFor } from '../upstreams/upstream-adapters.ts';
import { BodyByteBudget } from './body-byte-budget.ts';
import { contextOf, requestContext, sendAnthropicError, sendError, type RequestContext } from './request-context.ts';
import { mountChatCompletionsRoute } from './routes/chat-completions-route.ts';
import { mountEmbeddingsRoute } from './routes/embeddings-route.ts';
import { mountMessagesRoute } from './routes/messages-route.ts';
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

/** Where an inference route reads its API key: `Authorization: Bearer` only, or also Anthropic's `x-api-key`. */
type ApiKeySource = 'bearer' | 'bearer_or_x_api_key';

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

function sameAnswerForMissingModel(slug: string): GatewayError {
  return new GatewayError('model_not_found', {
    param: 'model',
    publicMessage: `The model '${slug.slice(0, 256)}' does not exist or you do not have access to it.`,
  });
}

/** The model a caller asked for, when it exists and the organisation may use it; one 404 otherwise. */
function modelAllowed(snapshot: ConfigSnapshot, organisation: OrganisationEntry, slug: string): GatewayModelEntry {
  const model = snapshot.modelsBySlug.get(slug);
  if (model === undefined || !organisation.allowedModelSlugs.has(slug)) throw sameAnswerForMissingModel(slug);
  return model;
}

/** The endpoints a model of a kind is served on, as /v1/models lists them and a wrong-kind 400 names them. */
const endpointsOfKind: Record<GatewayModelKind, readonly string[]> = {
  chat: ['/v1/chat/completions', '/v1/responses', '/v1/messages'],
  embedding: ['/v1/embeddings'],
};

/**
 * Answers 200 with a JSON body in one write (headers and body together), without express's
 * res.json/res.send (content-type lookup, freshness check, extra header passes): the same
 * status, content-type and content-length they send for a completion.
 */
function sendJson(res: Response, body: unknown, observer: RequestObserver): void {
  const json = JSON.stringify(body);
  // A client that hung up was counted (499) when it left: its answer has no first byte to time.
  if (res.destroyed) return;
  observer.firstByte();
  res.statusCode = 200;
  res.setHeader('content-type', 'application/json; charset=utf-8');
  res.setHeader('content-length', Buffer.byteLength(json));
  res.end(json);
}

/** A model as /v1/models shows it: OpenAI's fields (the slug and nothing upstream) plus what the model serves and accepts. */
interface ModelObject {
  id: string;
  object: 'model';
  created: number;
  owned_by: 'gateway';
  capabilities: { kind: GatewayModelKind; endpoints: readonly string[]; input_modalities: string[] };
}

function modelObject(model: GatewayModelEntry): ModelObject {
  return {
    id: model.slug, object: 'model', created: model.createdAtS, owned_by: 'gateway',
    capabilities: {
      kind: model.kind,
      endpoints: endpointsOfKind[model.kind],
      input_modalities: ['text', ...[...model.mediaModalities].sort()],
    },
  };
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

  // NUL is legal in message text and goes to the upstream (the proxy stores no content); a lone
  // surrogate is not Unicode and is refused (docs/proxy.md, "Bad input").
  const parseJson = createJsonBodyParser({ limitBytes: services.maxBodyBytes, text: 'unicode' });
  const bodyBudget = new BodyByteBudget(services.maxInflightBodyBytes, services.maxBodyBytes);

  /** Reads the JSON body; only for a caller whose key has passed (see readBodyWithinRateLimit for why not after RPM). */
  function readJsonBody(req: Request, res: Response): Promise<unknown> {
    return new Promise((resolve, reject) => {
      parseJson(req, res, (error?: unknown) => {
        if (error !== undefined && error !== null) reject(error);
        else resolve(req.body);
      });
    });
  }

  function requireSnapshot(): ConfigSnapshot {
    // A request that reaches us on a kept-alive connection after SIGTERM is refused, not started.
    if (services.isShuttingDown()) throw new GatewayError('service_unavailable', { internalMessage: 'shutting down' });
    const snapshot = services.freshSnapshot();
    if (snapshot === undefined) {
      throw new GatewayError('service_unavailable', { internalMessage: 'no fresh config snapshot' });
    }
    return snapshot;
  }

  /** Sets the x-ratelimit-* headers of a decision; throws the 429 of a refusal. */
  function answerRateLimit(decision: RateLimitDecision, res: Response, context: RequestContext, startedAtMs: number): void {
    context.log.rateLimitMs = elapsedMs(startedAtMs);
    context.observer?.rpmChecked(startedAtMs, decision.allowed);
    const headers = rateLimitHeaders(decision);
    for (const name in headers) res.setHeader(name, headers[name]!);
    if (!decision.allowed) {
      context.observer?.rpmRefused('organisation');
      throw new GatewayError('rate_limit_exceeded', { headers: { 'retry-after': String(retryAfterSeconds(decision)) } });
    }
  }

  /**
   * Counts the request against its organisation's pool; sets the x-ratelimit-* headers either way.
   * Synchronous (no promise) when the limiter decides without I/O (a leased token, a full pool,
   * the in-process pool); consume() only when decideNow has no answer, or the request would be
   * counted twice.
   */
  function applyRateLimit(organisation: OrganisationEntry, res: Response, context: RequestContext): Promise<void> | undefined {
    if (organisation.rpmLimit === 0) return undefined; // 0: the organisation has no RPM limit
    const startedAtMs = performance.now();
    const decided = services.rateLimiter.decideNow?.(organisation.id, organisation.rpmLimit);
    if (decided !== undefined) {
      answerRateLimit(decided, res, context, startedAtMs);
      return undefined;
    }
    return services.rateLimiter.consume(organisation.id, organisation.rpmLimit, context.requestUuid)
      .then((decision) => { answerRateLimit(decision, res, context, startedAtMs); });
  }

  /** Snapshot and key: what every inference route checks first, synchronously. */
  function identify(req: Request, context: RequestContext, keySource: ApiKeySource = 'bearer'): { snapshot: ConfigSnapshot; caller: AuthenticatedCaller } {
    const snapshot = requireSnapshot();
    // Anthropic's clients send the key as x-api-key; Authorization wins when both are present.
    const xApiKey = req.headers['x-api-key'];
    const authorization = keySource === 'bearer_or_x_api_key' && req.headers.authorization === undefined && typeof xApiKey === 'string'
      ? `Bearer ${xApiKey}`
      : req.headers.authorization;
    const caller = authenticate(snapshot, authorization);
    context.log.organisationId = caller.organisation.id;
    context.log.projectId = caller.project.id;
    return { snapshot, caller };
  }

  /** Snapshot, key and RPM: the common start of the routes that read no body. */
  async function admit(req: Request, res: Response, context: RequestContext): Promise<{ snapshot: ConfigSnapshot; caller: AuthenticatedCaller }> {
    const identified = identify(req, context);
    await applyRateLimit(identified.caller.organisation, res, context);
    return identified;
  }

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

  /** The SSE response of a stream, with backpressure: a slow client slows the relay, nothing piles up. */
  function sseSink(res: Response, observer: RequestObserver): StreamSink {
    return {
      open() {
        observer.firstByte();
        res.status(200);
        res.setHeader('content-type', 'text/event-stream; charset=utf-8');
        res.setHeader('cache-control', 'no-cache');
      },
      write(frame) {
        if (res.destroyed || res.writableEnded) return false;
        if (res.write(frame)) return true;
        return new Promise<boolean>((resolve) => {
          const settle = (open: boolean) => { res.off('drain', onDrain); res.off('close', onClose); resolve(open); };
          const onDrain = () => settle(true);
          const onClose = () => settle(false);
          res.on('drain', onDrain);
          res.on('close', onClose);
        });
      },
      isOpen() { return !res.destroyed && !res.writableEnded; },
      end(frames) {
        // write + end rather than end(frames): the socket is corked, so the frames, the chunked
        // framing and the terminating chunk still leave in one writev, and the response head is
        // not concatenated to (and copied with) the frames, as res.end(string) before the head went out would do.
        if (frames !== undefined && !res.destroyed && !res.writableEnded) res.write(frames);
        res.end();
      },
    };
  }

  const kit: InferenceRouteKit = {
    services,
    inferenceDeps,
    inference,
    identify,
    admit,
    async readBodyWithinRateLimit(req, res, context, caller) {
      // The body's share of PROXY_MAX_INFLIGHT_BODY_BYTES before its first byte is read (a 503
      // when it does not fit, before the RPM count), given back once it is parsed or has failed.
      const giveBack = bodyBudget.take(req.headers);
      // The body is read while the RPM check's Redis round trip is in flight rather than after it
      // (that round trip is on every request's latency). Only callers with a valid key get this
      // far, the body is bounded by PROXY_MAX_BODY_BYTES, and a refusal still answers 429 first.
      const body = readJsonBody(req, res).then((json) => ({ json }), (error: unknown) => ({ error })).finally(giveBack);
      const limited = applyRateLimit(caller.organisation, res, context);
      if (limited !== undefined) await limited;
      const read = await body;
      if ('error' in read) throw read.error;
      return read.json;
    },
    resolveModel(snapshot, caller, name, kind, observer, stream) {
      // A slug or an alias of one (domain/model-aliases.ts); from here on only the slug's model
      // counts: the allowed-models rule, prices, the Reserve, usage records and the response's `model`.
      const resolved = resolveModelName(snapshot, caller.organisation, name);
      // The label is the slug when the name reaches one (bounded by the catalogue), whatever the client sent otherwise.
      if (resolved !== undefined) observer.modelResolved(resolved.slug, stream);
      else observer.modelUnknown(stream);
      if (resolved === undefined || !caller.organisation.allowedModelSlugs.has(resolved.slug)) throw sameAnswerForMissingModel(name);
      const model = resolved;
      if (model.kind !== kind) {
        throw new GatewayError('invalid_request', {
          param: 'model',
          publicMessage: `The model '${model.slug}' is ${model.kind === 'embedding' ? 'an embedding' : 'a chat'} model; use POST ${endpointsOfKind[model.kind].join(' or POST ')}.`,
        });
      }
      return model;
    },
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

  app.get('/v1/models', inference('/v1/models', async (req, res, context) => {
    const { snapshot, caller } = await admit(req, res, context);
    const data = [...caller.organisation.allowedModelSlugs]
      .map((slug) => snapshot.modelsBySlug.get(slug))
      .filter((model): model is GatewayModelEntry => model !== undefined)
      .sort((a, b) => (a.slug < b.slug ? -1 : a.slug > b.slug ? 1 : 0))
      .map(modelObject);
    res.json({ object: 'list', data });
  }));

  app.get('/v1/models/*slug', inference('/v1/models/:slug', async (req, res, context) => {
    const { snapshot, caller } = await admit(req, res, context);
    const segments = (req.params as { slug?: string[] }).slug ?? [];
    res.json(modelObject(modelAllowed(snapshot, caller.organisation, segments.join('/'))));
  }));

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
