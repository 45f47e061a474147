import express, { type NextFunction, type Request, type Response } from 'express';
import { GatewayError, toGatewayError, toHttpError } from '@gateway/errors';
import { createJsonBodyParser, createRequestGuard, frameworkRequestError } from '@gateway/http-guard';
import { requestIdFrom, type Logger } from '@gateway/logger';
import type { HealthProbes } from '@gateway/service-runtime';
import { bearerTokenOf } from '@gateway/secrets';
import { systemActor, type Actor } from '../domain/actor.ts';
import type { AdminRoute, RouteContext } from './admin-routes.ts';
import { idempotencyKeyHeader } from './request-schemas.ts';
import { invalidRequest, validateInput, type FieldProblem } from './validation.ts';

/** What the HTTP app needs besides its routes. */
export interface AdminHttpAppDeps {
  routes: readonly AdminRoute[];
  context: RouteContext;
  /** Who a presented bearer value authenticates (a platform admin or an organisation token), or undefined. */
  authenticate(token: string): Promise<Actor | undefined>;
  logger: Logger;
  /** The service's /healthz and /readyz (@gateway/service-runtime): the probe routes of the table only document them. */
  probes: HealthProbes;
}

/** The largest request body accepted, bytes, measured after decoding its Content-Encoding. */
const bodyLimitBytes = 1024 * 1024;

/** Express path of a route: `{param}` becomes `:param` unless the route gives its own. */
function expressPathOf(route: AdminRoute): string {
  return route.expressPath ?? route.path.replace(/\{([^}]+)\}/g, ':$1');
}

/** Who made a request, for its log line: the kind and token id, never the token. */
function actorForLog(actor: Actor): Record<string, string> {
  return actor.kind === 'platform_admin' || actor.kind === 'organisation_token' ? { kind: actor.kind, tokenId: actor.tokenId } : { kind: actor.kind };
}

/** Answers with the catalogue mapping of `error`; a 5xx keeps `original` for the request's log line. */
function sendError(response: Response, error: GatewayError, original: unknown): void {
  const { status, body, headers } = toHttpError(error);
  response.locals.errorCode = body.error.code;
  if (status >= 500) response.locals.error = original;
  response.status(status).set(headers).json(body);
}

/**
 * The admin's express app: request ids and one log line per request, malformed paths refused
 * and platform-admin auth before the body is even read, JSON bodies up to 1 MiB, validated
 * routes (text PostgreSQL cannot store refused per field), and every error
 * answered through the one catalogue mapping (`toHttpError`).
 */
export function createAdminHttpApp(deps: AdminHttpAppDeps): express.Express {
  const { routes, context, logger } = deps;
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);

  app.use((request: Request, response: Response, next: NextFunction) => {
    const startedAt = process.hrtime.bigint();
    const requestId = requestIdFrom(request.headers['x-request-id']);
    response.locals.requestId = requestId;
    response.setHeader('x-request-id', requestId);
    let logged = false;
    const logOnce = () => {
      if (logged) return;
      logged = true;
      const durationMs = Number((process.hrtime.bigint() - startedAt) / 1000n) / 1000;
      const line = {
        requestId,
        method: request.method,
        path: request.originalUrl.split('?')[0],
        status: response.headersSent ? response.statusCode : 499,
        durationMs,
        ...(response.locals.actor ? { actor: actorForLog(response.locals.actor as Actor) } : {}),
        ...(response.locals.errorCode ? { code: response.locals.errorCode } : {}),
        ...(response.locals.error ? { err: response.locals.error } : {}),
      };
      if (line.status >= 500) logger.error(line, 'request failed');
      else logger.info(line, 'request');
    };
    response.on('finish', logOnce);
    response.on('close', logOnce);
    next();
  });

  // A malformed path (bad percent-escape, %00) is a 400 before the token is even looked at.
  app.use(createRequestGuard());

  // Public paths under /admin/v1 (the OpenAPI document); everything else there needs a token.
  const publicPaths = new Set(routes.filter((route) => !route.authenticated).map((route) => route.path));
  app.use('/admin/v1', async (request: Request, response: Response, next: NextFunction) => {
    if (publicPaths.has(request.originalUrl.split('?')[0]!)) return next();
    const token = bearerTokenOf(request.headers.authorization);
    const actor = token === undefined ? undefined : await deps.authenticate(token);
    if (actor === undefined) {
      throw new GatewayError('unauthenticated', {
        publicMessage: 'Missing or invalid admin token. Send Authorization: Bearer gwadm_….',
        headers: { 'www-authenticate': 'Bearer realm="admin"' },
      });
    }
    response.locals.actor = actor;
    next();
  });

  // Every body is read as JSON whatever its content type, so a wrong type is a clear error;
  // gzip, deflate and br bodies are decoded (the limit counts decoded bytes), other codings are 415.
  // NUL and lone surrogates are refused per field by validateInput, with every other problem.
  app.use(createJsonBodyParser({ limitBytes: bodyLimitBytes }));

  // The probes are answered where their routes stand, after the same middleware as every route.
  for (const route of routes) {
    if (route.probe !== undefined) {
      app.get(expressPathOf(route), route.probe === 'liveness' ? deps.probes.handleLiveness : deps.probes.handleReadiness);
      continue;
    }
    app[route.method](expressPathOf(route), async (request: Request, response: Response) => {
      // Header, query and body are all checked before failing, so one answer names every bad field.
      const problems: FieldProblem[] = [];
      let idempotencyKey = '';
      if (route.idempotencyKey) {
        const header = validateInput(idempotencyKeyHeader, { 'Idempotency-Key': request.headers['idempotency-key'] }, 'header');
        if (header.ok) idempotencyKey = header.value['Idempotency-Key'];
        else problems.push(...header.problems);
      }
      let query: unknown;
      if (route.query) {
        const parsed = validateInput(route.query, { ...(request.query as object) }, 'query');
        if (parsed.ok) query = parsed.value;
        else problems.push(...parsed.problems);
      }
      let body: unknown;
      if (route.body) {
        const parsed = validateInput(route.body, request.body, 'body');
        if (parsed.ok) body = parsed.value;
        else problems.push(...parsed.problems);
      }
      if (problems.length > 0) throw invalidRequest(problems);

      const params = Object.fromEntries(Object.entries(request.params).map(([name, value]) => [
        name, Array.isArray(value) ? value.join('/') : String(value),
      ]));
      const actor = (response.locals.actor as Actor | undefined) ?? systemActor;
      const result = await route.handle(context, { actor, params, query, body, idempotencyKey });
      if (result.propagation && !result.propagation.acknowledged) response.setHeader('x-config-propagation', 'pending');
      response.status(result.status).set(result.headers ?? {}).json(result.body);
    });
  }

  app.use((request: Request) => {
    // The path is not echoed: whatever a caller pasted into it stays out of the response.
    throw new GatewayError('not_found', { publicMessage: `No ${request.method} route matches this path. See /admin/v1/openapi.json.` });
  });

  app.use((error: unknown, _request: Request, response: Response, _next: NextFunction) => {
    if (response.headersSent) {
      response.locals.error = error;
      response.end();
      return;
    }
    sendError(response, toGatewayError(frameworkRequestError(error)), error);
  });

  return app;
}
