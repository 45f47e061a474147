import type { ErrorCode } from '@gateway/errors';
import type { z } from 'zod';
import type { Actor, OrganisationRole } from '../domain/actor.ts';
import type { Propagation } from '../domain/admin-records.ts';
import type { AdminService } from '../../admin-service.ts';

/** What a route handler may use besides its request. */
export interface RouteContext {
  service: AdminService;
  /** The OpenAPI document of these routes (served by GET /admin/v1/openapi.json). */
  openApiDocument(): object;
  /**
   * The operationIds of the organisation routes a member with `role` may call in their
   * organisation, read from the route table by the rule authorizeRoute enforces (GET /admin/v1/me).
   */
  operationsAllowedFor(role: OrganisationRole): readonly string[];
}

/** A request after validation: who is calling, path parameters, parsed query and body, the Idempotency-Key. */
export interface RouteRequest<Query, Body> {
  /** The caller its bearer token or session authenticated; the system actor on public routes. */
  actor: Actor;
  /**
   * The organisation the route acts on, as its authorization found it from the route's scope;
   * undefined on a route without a scope, or when a platform actor selected none (every organisation).
   */
  organisationId: string | undefined;
  params: Record<string, string>;
  query: Query;
  body: Body;
  /** The validated Idempotency-Key header, on routes that require one; '' elsewhere. */
  idempotencyKey: string;
  /** The client's address as the socket saw it (for sign-in throttling and the session list). */
  clientAddress: string;
  /** The User-Agent header, at most 300 characters ('' when absent). */
  userAgent: string;
  /** The raw Cookie header ('' when absent), for the sign-in routes. */
  cookieHeader: string;
  /** The body's bytes as received (after Content-Encoding decoding), for signed webhooks; empty when there was none. */
  rawBody: Buffer;
  /** A request header's value (the first, if repeated), by case-insensitive name; for webhook signatures and event ids. */
  header(name: string): string | undefined;
  /** Whether the request reached the admin over TLS (directly or through a trusted proxy): cookies get Secure. */
  secure: boolean;
  /** The Host header ('' when absent): the sign-in routes compare it with Origin and name the session cookie by it. */
  host: string;
  /** The Origin header, if any (browsers send it on POST): the sign-in routes refuse a cross-origin one. */
  origin: string | undefined;
  /** The X-CSRF-Token header, if any: sign-out checks it against the session's. */
  csrfToken: string | undefined;
}

/** What a handler answers: status and body (JSON unless `contentType` says otherwise), plus extra headers and config propagation. */
export interface RouteResult {
  status: number;
  body: unknown;
  headers?: Record<string, string | string[]>;
  /** A body sent as is with this content type (e.g. text/csv) instead of JSON. */
  contentType?: string;
  /** Set by calls that change what proxies serve; `pending` becomes `x-config-propagation: pending`. */
  propagation?: Propagation;
}

/**
 * Which organisation a route acts on, found before its handler runs, the same way for a token
 * and a session: the path's `{id}` as an organisation id ('organisation') or as a project id
 * ('project': the project's organisation), or the `organisation_id` query parameter
 * ('organisation_id'; left out, the caller's only organisation: see selectedOrganisation, and
 * for a platform actor every organisation).
 */
export type RouteScope = 'organisation' | 'project' | 'organisation_id';

/**
 * Who may call a route: the one rule of route access, which authorizeRoute enforces for every
 * route, whatever its path. A declared role is the least role in the organisation the route's
 * scope finds, so a role needs a scope: a route without one acts on no single organisation.
 * - 'public': anyone, without credentials.
 * - 'platform': platform admins (by token or session) only, 403 for anyone else; with a scope,
 *   an organisation the caller cannot see answers 404 first, exactly as an unknown id.
 * - 'organisation' with a scope and a role: the organisation the scope finds must exist for the
 *   caller (404 otherwise, exactly as an unknown id), and the caller needs the role there (403
 *   below it). An organisation token is an owner of its own organisation; platform admins always may.
 * - 'organisation' without a scope (and so without a role): any authenticated caller; the route
 *   answers only what the caller sees (its own organisations, itself, the packages on sale).
 */
export type RouteAccess =
  | { access: 'public'; scope?: undefined; role?: undefined }
  | { access: 'platform'; scope?: RouteScope; role?: undefined }
  | { access: 'organisation'; scope: RouteScope; role: OrganisationRole }
  | { access: 'organisation'; scope?: undefined; role?: undefined };

/** What the OpenAPI document and the server read of every route besides its access. */
export interface RouteFields {
  method: 'get' | 'post' | 'patch' | 'put' | 'delete';
  /** OpenAPI path template, e.g. /admin/v1/organisations/{id}. */
  path: string;
  /** Express path when it differs from the template (a slug may contain slashes). */
  expressPath?: string;
  operationId: string;
  summary: string;
  description?: string;
  tag: string;
  /** Whether an admin-API bearer token or a session is required. */
  authenticated: boolean;
  query?: z.ZodType;
  body?: z.ZodType;
  /** Whether the route requires an Idempotency-Key header. */
  idempotencyKey?: boolean;
  /** Whether the route changes what proxies serve (waits for acks; may answer x-config-propagation: pending). */
  changesConfig?: boolean;
  success: { status: number; description: string; schema: z.ZodType; contentType?: string };
  /** Extra documented success answers, e.g. 200 for an idempotent replay. */
  alsoSucceeds?: Array<{ status: number; description: string }>;
  /** Catalogue codes the route can answer with, for the document. */
  errors: ErrorCode[];
}

/** What the OpenAPI document and the server read of every route, handled or a probe. */
export type RouteDescription = RouteFields & RouteAccess;

/**
 * One route of the admin HTTP API: everything the server and the OpenAPI document need. A probe
 * route only documents /healthz or /readyz: the service runtime's probes answer it
 * (@gateway/service-runtime, the same on every service), so it has no handler of its own.
 */
export type AdminRoute = RouteDescription & (
  | { probe?: undefined; handle(context: RouteContext, request: RouteRequest<unknown, unknown>): Promise<RouteResult> }
  | { probe: 'liveness' | 'readiness'; handle?: undefined }
);

/** Express path of a route: `{param}` becomes `:param` unless the route gives its own. */
export function expressPathOf(route: Pick<RouteDescription, 'path' | 'expressPath'>): string {
  return route.expressPath ?? route.path.replace(/\{([^}]+)\}/g, ':$1');
}

/** Declares a route with handler types inferred from its query and body schemas. */
export function defineRoute<Query extends z.ZodType = z.ZodUndefined, Body extends z.ZodType = z.ZodUndefined>(
  route: Omit<RouteFields, 'query' | 'body'> & RouteAccess & {
    query?: Query;
    body?: Body;
    handle(context: RouteContext, request: RouteRequest<z.output<Query>, z.output<Body>>): Promise<RouteResult>;
  },
): AdminRoute {
  return route as AdminRoute;
}

/** Error codes most routes share, for the document. */
export const routeErrors = {
  read: ['unauthenticated', 'not_found', 'invalid_request'] as ErrorCode[],
  platform: ['permission_denied'] as ErrorCode[],
  write: ['unauthenticated', 'invalid_request', 'invalid_json', 'request_too_large', 'unsupported_media_type', 'permission_denied'] as ErrorCode[],
  ledger: ['service_unavailable'] as ErrorCode[],
};
