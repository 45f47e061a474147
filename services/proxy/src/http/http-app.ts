import type { RequestListener } from 'node:http';
import { GatewayError } from '@gateway/errors';
import { requestProblem } from '@gateway/http-guard';
import type { StreamChatDeps, StreamStopReason } from '../inference/stream-chat.ts';
import type { ProxyRoute } from '../telemetry/request-labels.ts';
import { adapterFor } from '../upstreams/upstream-adapters.ts';
import { createAdmission } from './admission.ts';
import type { ErrorShape, HttpAppServices, InferenceHandler, InferenceRouteKit } from './route-kit.ts';
import { sendExpressJson, sendJson, sseSink } from './answers.ts';
import { resolveModelOfKind } from './model-resolution.ts';
import { requestContext, sendAnthropicError, sendError } from './request-context.ts';
import { RoutedRequest, Router, targetOf, type RouteHandler } from './router.ts';
import { mountChatCompletionsRoute } from './routes/chat-completions-route.ts';
import { mountEmbeddingsRoute } from './routes/embeddings-route.ts';
import { mountMessagesRoute } from './routes/messages-route.ts';
import { mountModelsRoutes } from './routes/models-route.ts';
import { mountResponsesRoute } from './routes/responses-route.ts';

/**
 * The proxy's HTTP request listener: `/healthz`, `/readyz`, and the `/v1` routes: chat completions,
 * Responses, Anthropic Messages, embeddings (http/routes/ has one module per surface) and
 * models, on a thin router over node:http (router.ts; docs/decisions.md says why not express).
 * Every inference route runs, in order: fresh snapshot (else 503), API key (401/403), the
 * organisation's RPM pool (429), then its own work (docs/proxy.md).
 */
export function createHttpApp(services: HttpAppServices): RequestListener {
  const router = new Router();
  const startContext = requestContext(services.logger, services.isShuttingDown, services.telemetry, services.requestLog);

  /** Runs an inference handler of a route as tracked work, answering with the error of anything it throws; the route's observer counts it. */
  function inference(route: ProxyRoute, handler: InferenceHandler, errorShape: ErrorShape = 'openai'): RouteHandler {
    const answerError = errorShape === 'anthropic' ? sendAnthropicError : sendError;
    return (req, res, context) => {
      const observer = services.telemetry.startRequest(route, req.method, context.requestId, context.startedAtMs);
      context.observer = observer;
      // observer.run: with tracing on, the handler's ledger calls carry the request's spans.
      const work = observer.run(() => handler(req, res, context, observer)).catch((error: unknown) => answerError(res, context, error));
      context.work = work;
      void services.track(work);
    };
  }

  router.add('GET', '/healthz', (req, res) => services.probes.handleLiveness(req.message, res));
  // Ready decides routing (docs/proxy.md "Readiness"); the dependencies are named for operators only.
  router.add('GET', '/readyz', (req, res) => services.probes.handleReadiness(req.message, res));

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
    sendExpressJson: (req, res, body) => sendExpressJson(req.message, res, body),
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

  mountChatCompletionsRoute(router, kit);
  mountResponsesRoute(router, kit);
  mountMessagesRoute(router, kit);
  mountEmbeddingsRoute(router, kit);
  mountModelsRoutes(router, kit);

  // Legacy completions are not served (docs/proxy.md, "What is served"): a prompt-continuation
  // API few upstreams still offer, which cannot be translated to chat without changing what a
  // prompt means. The 404 says where to go instead; no key is needed to learn it.
  router.add('*', '/v1/completions', (_req, res, context) => {
    sendError(res, context, new GatewayError('not_found', {
      publicMessage: 'The legacy completions endpoint (POST /v1/completions) is not served by this gateway; use POST /v1/chat/completions or POST /v1/responses.',
    }));
  });

  return (req, res) => {
    const target = targetOf(req.url ?? '');
    const context = startContext(req, res, target.path);
    try {
      // A malformed path is a 400 before any key check: no credential is needed to learn it, and nothing is revealed.
      const problem = requestProblem(req, target.path);
      if (problem !== undefined) {
        sendError(res, context, problem);
        return;
      }
      const method = req.method ?? '';
      const matched = router.match(method, target.path);
      if (matched === undefined) {
        // Anything else, any method: OpenAI's answer to an unknown route is a 404 in its error shape.
        sendError(res, context, new GatewayError('not_found', { publicMessage: `Unknown route: ${method} ${target.path.slice(0, 200)}` }));
        return;
      }
      matched.handler(new RoutedRequest(req, target, matched.param), res, context);
    } catch (error) {
      // What a handler throws before its work is tracked (an inference handler's own failures are answered by it).
      sendError(res, context, error);
    }
  };
}
