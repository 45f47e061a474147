import express, { type Express, type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import { GatewayError } from '@gateway/errors';
import { createRequestGuard } from '@gateway/http-guard';
import type { StreamChatDeps, StreamStopReason } from '../inference/stream-chat.ts';
import type { ProxyRoute } from '../telemetry/request-labels.ts';
import { adapterFor } from '../upstreams/upstream-adapters.ts';
import { createAdmission } from './admission.ts';
import type { ErrorShape, HttpAppServices, InferenceHandler, InferenceRouteKit } from './route-kit.ts';
import { sendJson, sseSink } from './answers.ts';
import { resolveModelOfKind } from './model-resolution.ts';
import { contextOf, requestContext, sendAnthropicError, sendError } from './request-context.ts';
import { mountChatCompletionsRoute } from './routes/chat-completions-route.ts';
import { mountEmbeddingsRoute } from './routes/embeddings-route.ts';
import { mountMessagesRoute } from './routes/messages-route.ts';
import { mountModelsRoutes } from './routes/models-route.ts';
import { mountResponsesRoute } from './routes/responses-route.ts';

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

  app.use(requestContext(services.logger, services.isShuttingDown, services.telemetry, services.requestLog));
  // A malformed path is a 400 before any key check: no credential is needed to learn it, and nothing is revealed.
  app.use(createRequestGuard());

  app.get('/healthz', services.probes.handleLiveness);
  // Ready decides routing (docs/proxy.md "Readiness"); the dependencies are named for operators only.
  app.get('/readyz', services.probes.handleReadiness);

  const inferenceDeps: StreamChatDeps = {
    ledger: services.ledger, grants: services.grants, upstream: services.upstream, routing: services.routing, logger: services.logger, reserveTtlMs: services.reserveTtlMs,
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
