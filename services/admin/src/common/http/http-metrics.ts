import { match } from 'path-to-regexp';
import type { AdminMetrics } from '@gateway/telemetry';
import { expressPathOf, type AdminRoute, type RouteDescription } from './route-definition.ts';

/** The two metrics every answered HTTP request feeds. */
export type HttpMetrics = Pick<AdminMetrics, 'httpRequests' | 'httpRequestDuration'>;

/** The `route` label of a request that matches no route of the table and was not the dashboard's. */
const unmatchedRoute = 'unmatched';
/** The `route` labels of the dashboard's answers (its hashed assets, and its page for any other path). */
const dashboardAssetRoute = '/assets/:asset';
const dashboardPageRoute = '/*page';

/** A route's template as a label: the OpenAPI path with `{param}` written `:param` (`/admin/v1/organisations/:id`). */
function routeTemplateOf(route: Pick<RouteDescription, 'path'>): string {
  return route.path.replace(/\{([^}]+)\}/g, ':$1');
}

/**
 * Finds the template of the route a request is for, with the matcher express routes with
 * (path-to-regexp, case-insensitive, a trailing slash allowed), so a request refused before
 * routing (401, 400 for a malformed path) is labelled as the route it was aimed at. HEAD
 * matches GET routes, as in express. Undefined when no route of the table matches.
 */
function createRouteResolver(routes: readonly RouteDescription[]): (method: string, path: string) => string | undefined {
  const byMethod = new Map<string, Array<{ matches: (path: string) => boolean; template: string }>>();
  for (const route of routes) {
    const matcher = match(expressPathOf(route), { sensitive: false, end: true, trailing: true, decode: false });
    const entries = byMethod.get(route.method) ?? [];
    entries.push({ matches: (path) => matcher(path) !== false, template: routeTemplateOf(route) });
    byMethod.set(route.method, entries);
  }
  return (method, path) => {
    const lower = method === 'HEAD' ? 'get' : method.toLowerCase();
    return byMethod.get(lower)?.find((entry) => entry.matches(path))?.template;
  };
}

/** What one answered request was, for its metrics. */
export interface AnsweredRequest {
  /** The route template, or undefined when no route of the table matched. */
  template: string | undefined;
  method: string;
  /** The request's path (no query), only to tell dashboard assets from pages; never a label. */
  path: string;
  /** The status sent (499 when the client went away first). */
  status: number;
  /** The catalogue code answered, '' on success. */
  errorCode: string;
  seconds: number;
}

/**
 * Records one answered request: `httpRequests{route,method,model,status,error_code}` and
 * `httpRequestDuration{route,model,status_class}`, `model` always '' on the admin. A request no
 * route matched is the dashboard's when it succeeded (only the dashboard answers outside the
 * table), else `unmatched`: the path itself never becomes a label.
 */
function observeHttpRequest(metrics: HttpMetrics, request: AnsweredRequest): void {
  const route = request.template
    ?? (request.status >= 400 ? unmatchedRoute : request.path.startsWith('/assets/') ? dashboardAssetRoute : dashboardPageRoute);
  const status = String(request.status);
  metrics.httpRequests.inc({ route, method: request.method, model: '', status, error_code: request.errorCode });
  metrics.httpRequestDuration.observe({ route, model: '', status_class: `${status[0]}xx` }, request.seconds);
}

/**
 * The admin's request counter as its HTTP app uses it: resolves each answered request's route
 * template and records it, except the probes (/healthz, /readyz, the table's probe routes): the
 * kubelet asks them every few seconds on every pod, so counting them would drown the admin's
 * request rate and latency in probe traffic. (GET /metrics is served on its own port by
 * @gateway/telemetry's metrics server, which counts nothing.)
 */
export function createHttpObserver(metrics: HttpMetrics, routes: readonly AdminRoute[]): (request: Omit<AnsweredRequest, 'template'>) => void {
  const routeOf = createRouteResolver(routes);
  const probeTemplates = new Set(routes.filter((route) => route.probe !== undefined).map(routeTemplateOf));
  return (request) => {
    const template = routeOf(request.method, request.path);
    if (template !== undefined && probeTemplates.has(template)) return;
    observeHttpRequest(metrics, { ...request, template });
  };
}
