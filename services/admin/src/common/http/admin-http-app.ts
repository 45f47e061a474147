import express, { type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import { GatewayError, toGatewayError, toHttpError } from '@gateway/errors';
import { createJsonBodyParser, createRequestGuard, frameworkRequestError, rawBodyOf } from '@gateway/http-guard';
import { requestIdFrom, type Logger } from '@gateway/logger';
import type { HealthProbes } from '@gateway/service-runtime';
import {
  canSeeOrganisation, organisationRoles, requirePlatformAdmin, requireRole, roleAllows, selectedOrganisation, systemActor, type Actor, type OrganisationRole,
} from '../domain/actor.ts';
import { isId } from '../domain/ids.ts';
import { notFound } from '../domain/resource-access.ts';
import { sameOriginRequest } from '../../people/http/session-cookie.ts';
import { createHttpObserver, type HttpMetrics } from './http-metrics.ts';
import { expressPathOf, type AdminRoute, type RouteAccess, type RouteContext, type RouteScope } from './route-definition.ts';
import { idempotencyKeyHeader } from './request-schemas.ts';
import type { TrustProxySetting } from './trust-proxy.ts';
import { invalidRequest, validateInput, type FieldProblem } from './validation.ts';

/** What the HTTP app needs besides its routes. */
export interface AdminHttpAppDeps {
  routes: readonly AdminRoute[];
  /** What handlers use; the allowed operations per role are added here, from `routes`. */
  context: Omit<RouteContext, 'operationsAllowedFor'>;
  /**
   * Who a request's credentials authenticate: a bearer admin token, or a session cookie (with
   * whether its X-CSRF-Token matches the session's); undefined when neither is valid.
   */
  authenticate(credentials: RequestCredentials): Promise<Authentication | undefined>;
  /** The organisation a project belongs to (for routes scoped by a project id), or undefined if there is no such project. */
  organisationOfProject(projectId: string): Promise<string | undefined>;
  logger: Logger;
  /** Serves the dashboard's pages and assets (GET, outside /admin/v1 and /auth); undefined: none. */
  dashboard?: RequestHandler | undefined;
  /** The service's /healthz and /readyz (@gateway/service-runtime): the probe routes of the table only document them. */
  probes: HealthProbes;
  /**
   * The proxies in front (ADMIN_TRUST_PROXY): their X-Forwarded-Proto decides `secure` and their
   * X-Forwarded-For the client address (throttling per address); false or absent: none.
   */
  trustProxy?: TrustProxySetting | undefined;
  /**
   * The dashboard's public address (ADMIN_PUBLIC_URL): when set, its scheme decides whether the
   * session and device cookies are Secure, whatever Host or X-Forwarded-Proto a request carries.
   */
  publicUrl?: string | undefined;
  /** Where every answered request is counted and timed, by route template (ADMIN_METRICS_PORT); none: not recorded. */
  metrics?: HttpMetrics | undefined;
}

/** What a request presents to prove who it is. */
export interface RequestCredentials {
  /** The Authorization header, if any. */
  authorization: string | undefined;
  /** The Cookie header ('' when absent). */
  cookieHeader: string;
  /** The X-CSRF-Token header, if any. */
  csrfToken: string | undefined;
}

/** Who a request is, and how it proved it. */
export type Authentication =
  | { actor: Actor; via: 'token' }
  | { actor: Actor; via: 'session'; /** Whether X-CSRF-Token matched the session's token. */ csrfTokenValid: boolean };

/** Methods that change nothing, and so need no CSRF token. */
const safeMethods = new Set(['GET', 'HEAD', 'OPTIONS']);

/** The largest request body accepted, bytes, measured after decoding its Content-Encoding. */
const bodyLimitBytes = 1024 * 1024;

/** A header's single value (the first, if repeated). */
function headerValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/** A request's path for its log line: no query, and a one-time link's token (a secret) left out. */
function pathForLog(url: string): string {
  return url.split('?')[0]!.replace(/^\/auth\/links\/[^/]*/, '/auth/links/{token}');
}

/** Who made a request, for its log line: the kind and token id, never the token. */
function actorForLog(actor: Actor): Record<string, string> {
  if (actor.kind === 'platform_admin' || actor.kind === 'organisation_token') return { kind: actor.kind, tokenId: actor.tokenId };
  if (actor.kind === 'person') return { kind: actor.kind, personId: actor.personId };
  return { kind: actor.kind };
}


/**
 * The organisation a route's scope names (see RouteScope): an organisation the caller cannot see
 * answers 404 naming the field that named it, exactly as an unknown id. Undefined: a platform
 * actor selected no organisation (every organisation).
 */
async function organisationInScope(
  scope: RouteScope, actor: Actor, params: Record<string, string>, query: Record<string, unknown>, deps: AdminHttpAppDeps,
): Promise<string | undefined> {
  let named: string;
  let found: string | undefined;
  let param = 'id';
  if (scope === 'organisation_id') {
    const value = query.organisation_id;
    // Which organisation a repeated parameter means is a guess: refused before any look-up.
    if (value !== undefined && typeof value !== 'string') throw invalidRequest([{ field: 'organisation_id', message: 'must be given once' }]);
    const selected = selectedOrganisation(actor, value);
    if (selected === undefined) return undefined;
    named = selected;
    param = 'organisation_id';
    found = isId('organisation', named) ? named : undefined;
  } else {
    named = params.id ?? '';
    found = scope === 'organisation'
      ? (isId('organisation', named) ? named : undefined)
      : (isId('project', named) ? await deps.organisationOfProject(named) : undefined);
  }
  if (found === undefined || !canSeeOrganisation(actor, found)) throw notFound(scope === 'project' ? 'project' : 'organisation', named, param);
  return found;
}

/**
 * The one authorization of a route (the rule is RouteAccess's), the same for a bearer token and
 * a session, before its input is even validated: the organisation the route's scope names must
 * exist for the actor (404, exactly as if it did not exist), then the actor needs the route's
 * role there (403), and a platform route needs a platform actor (403). Returns the organisation
 * the route acts on (undefined: none, or every one for a platform actor).
 */
async function authorizeRoute(
  route: AdminRoute, actor: Actor, params: Record<string, string>, query: Record<string, unknown>, deps: AdminHttpAppDeps,
): Promise<string | undefined> {
  if (route.access === 'public') return undefined;
  const organisationId = route.scope === undefined ? undefined : await organisationInScope(route.scope, actor, params, query, deps);
  requireAccess(route, actor, organisationId);
  return organisationId;
}

/**
 * The role part of RouteAccess, once the organisation in scope is known to exist for the actor:
 * a platform route needs a platform actor (403), a route with a role needs that role or more in
 * `organisationId` (403). Also what guards an endpoint outside the table (the live WebSocket),
 * so who may call what is said in one place.
 */
export function requireAccess(access: RouteAccess, actor: Actor, organisationId: string | undefined): void {
  if (access.access === 'platform') requirePlatformAdmin(actor);
  else if (access.role !== undefined) {
    // No organisation selected is every organisation: only a platform actor holds a role in all of them.
    if (organisationId === undefined) requirePlatformAdmin(actor);
    else requireRole(actor, organisationId, access.role);
  }
}

/**
 * For each organisation role, the operationIds of the routes whose declared role it allows (by
 * roleAllows, the comparison requireRole makes): what a member may call in their organisation.
 */
function operationsByRole(routes: readonly AdminRoute[]): (role: OrganisationRole) => readonly string[] {
  const byRole = new Map(organisationRoles.map((held) => [held, routes
    .filter((route) => route.access === 'organisation' && route.role !== undefined && roleAllows(held, route.role))
    .map((route) => route.operationId)] as const));
  return (role) => byRole.get(role) ?? [];
}

/** Answers with the catalogue mapping of `error`; a 5xx keeps `original` for the request's log line. */
function sendError(response: Response, error: GatewayError, original: unknown): void {
  const { status, body, headers } = toHttpError(error);
  response.locals.errorCode = body.error.code;
  if (status >= 500) response.locals.error = original;
  response.status(status).set(headers).json(body);
}

/**
 * A route's Idempotency-Key header, query and body, validated by its schemas; all three are
 * checked before failing, so one 400 names every bad field.
 */
function validatedInput(route: AdminRoute, request: Request): { idempotencyKey: string; query: unknown; body: unknown } {
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
  return { idempotencyKey, query, body };
}

/**
 * The admin's express app: request ids and one log line per request, malformed paths refused
 * and platform-admin auth before the body is even read, JSON bodies up to 1 MiB, validated
 * routes (text PostgreSQL cannot store refused per field), and every error
 * answered through the one catalogue mapping (`toHttpError`).
 */
export function createAdminHttpApp(deps: AdminHttpAppDeps): express.Express {
  const { routes, logger } = deps;
  const context: RouteContext = { ...deps.context, operationsAllowedFor: operationsByRole(routes) };
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  // A hop count: the proxies' own X-Forwarded-* entries count, whatever a client put before them
  // does not; a list: only a connection from a listed proxy is believed at all.
  if (deps.trustProxy !== undefined && deps.trustProxy !== false) app.set('trust proxy', deps.trustProxy);
  const observeHttp = deps.metrics ? createHttpObserver(deps.metrics, routes) : undefined;
  // People reach the dashboard at ADMIN_PUBLIC_URL: an https one means their browser is on TLS
  // (the cookies get Secure and `__Host-`), whichever Host or forwarded scheme reached the pod.
  const publicUrlSecure = deps.publicUrl === undefined ? undefined : new URL(deps.publicUrl).protocol === 'https:';

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
        path: pathForLog(request.originalUrl),
        status: response.headersSent ? response.statusCode : 499,
        durationMs,
        ...(response.locals.actor ? { actor: actorForLog(response.locals.actor as Actor) } : {}),
        ...(response.locals.errorCode ? { code: response.locals.errorCode } : {}),
        ...(response.locals.error ? { err: response.locals.error } : {}),
      };
      if (line.status >= 500) logger.error(line, 'request failed');
      else logger.info(line, 'request');
      observeHttp?.({
        method: request.method, path: request.originalUrl.split('?')[0]!, status: line.status,
        errorCode: (response.locals.errorCode as string | undefined) ?? '', seconds: durationMs / 1000,
      });
    };
    response.on('finish', logOnce);
    response.on('close', logOnce);
    next();
  });

  // A malformed path (bad percent-escape, %00) is a 400 before the token is even looked at.
  app.use(createRequestGuard());

  // Public paths under /admin/v1 (the OpenAPI document); everything else there needs a token or
  // a session. A session's state change needs its CSRF token and, from a browser, the same origin.
  const publicPaths = new Set(routes.filter((route) => !route.authenticated).map((route) => route.path));
  app.use('/admin/v1', async (request: Request, response: Response, next: NextFunction) => {
    if (publicPaths.has(request.originalUrl.split('?')[0]!)) return next();
    const authentication = await deps.authenticate({
      authorization: request.headers.authorization,
      cookieHeader: request.headers.cookie ?? '',
      csrfToken: headerValue(request.headers['x-csrf-token']),
    });
    if (authentication === undefined) {
      throw new GatewayError('unauthenticated', {
        publicMessage: 'Missing or invalid credentials. Send Authorization: Bearer gwadm_…, or sign in to the dashboard.',
        headers: { 'www-authenticate': 'Bearer realm="admin"' },
      });
    }
    response.locals.actor = authentication.actor;
    if (authentication.via === 'session' && !safeMethods.has(request.method)) {
      if (!sameOriginRequest(headerValue(request.headers.origin), request.headers.host ?? '')) throw new GatewayError('permission_denied', { publicMessage: 'Cross-origin request refused.' });
      if (!authentication.csrfTokenValid) {
        throw new GatewayError('permission_denied', { publicMessage: 'Missing or invalid X-CSRF-Token header (see GET /auth/session).' });
      }
    }
    next();
  });

  // Every body is read as JSON whatever its content type, so a wrong type is a clear error;
  // gzip, deflate and br bodies are decoded (the limit counts decoded bytes), other codings are 415.
  // NUL and lone surrogates are refused per field by validateInput, with every other problem.
  app.use(createJsonBodyParser({ limitBytes: bodyLimitBytes, keepRawBody: true }));

  // The probes are answered where their routes stand, after the same middleware as every route.
  for (const route of routes) {
    if (route.probe !== undefined) {
      app.get(expressPathOf(route), route.probe === 'liveness' ? deps.probes.handleLiveness : deps.probes.handleReadiness);
      continue;
    }
    app[route.method](expressPathOf(route), async (request: Request, response: Response) => {
      const params = Object.fromEntries(Object.entries(request.params).map(([name, value]) => [
        name, Array.isArray(value) ? value.join('/') : String(value),
      ]));
      const actor = (response.locals.actor as Actor | undefined) ?? systemActor;
      const organisationId = await authorizeRoute(route, actor, params, { ...(request.query as object) }, deps);

      const { idempotencyKey, query, body } = validatedInput(route, request);
      const result = await route.handle(context, {
        actor, organisationId, params, query, body, idempotencyKey,
        clientAddress: request.ip ?? request.socket.remoteAddress ?? '',
        userAgent: (headerValue(request.headers['user-agent']) ?? '').slice(0, 300),
        cookieHeader: request.headers.cookie ?? '',
        secure: publicUrlSecure ?? request.secure,
        host: request.headers.host ?? '',
        origin: request.headers.origin,
        csrfToken: headerValue(request.headers['x-csrf-token']),
        rawBody: rawBodyOf(request),
        header: (name) => headerValue(request.headers[name.toLowerCase()]),
      });
      if (result.propagation && !result.propagation.acknowledged) response.setHeader('x-config-propagation', 'pending');
      response.status(result.status).set(result.headers ?? {});
      if (result.contentType === undefined) response.json(result.body);
      else response.type(result.contentType).send(result.body);
    });
  }

  if (deps.dashboard !== undefined) app.use(deps.dashboard);

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
