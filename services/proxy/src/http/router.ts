import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import { parse as parseQueryString, type ParsedUrlQuery } from 'node:querystring';
import { parse as parseLegacyUrl } from 'node:url';
import type { RequestContext } from './request-context.ts';

// The proxy's router on node:http (docs/decisions.md, "A thin router on the proxy"): a handful of
// fixed routes, looked up by method and path in a Map, with the matching rules express applied to
// them (case-insensitive, one optional trailing slash, HEAD served by GET, percent-decoded
// parameters) so every path answers as it did.

/** The path and query string of a request target, as express read them (parseurl): the query is undefined without a `?`. */
export interface RequestTarget {
  path: string;
  search: string | undefined;
}

/**
 * The path and query string of `url`. An origin-form target without characters that need a real
 * URL parser (nearly every request) is split at its first `?`; anything else (an absolute-form
 * target, a `#`, whitespace) goes through url.parse, as parseurl did for express.
 */
export function targetOf(url: string): RequestTarget {
  if (url.charCodeAt(0) === 0x2f /* / */) {
    let question = -1;
    let plain = true;
    for (let index = 1; index < url.length && plain; index += 1) {
      switch (url.charCodeAt(index)) {
        case 0x3f: /* ? */
          if (question < 0) question = index;
          break;
        case 0x09: case 0x0a: case 0x0c: case 0x0d: case 0x20: case 0x23: case 0xa0: case 0xfeff:
          plain = false;
          break;
        default:
          break;
      }
    }
    if (plain) return question < 0 ? { path: url, search: undefined } : { path: url.slice(0, question), search: url.slice(question + 1) };
  }
  const parsed = parseLegacyUrl(url);
  return { path: parsed.pathname ?? '', search: parsed.query ?? undefined };
}

/** One request as a route sees it: node's message, its path, the route's parameter and its query. */
export class RoutedRequest {
  readonly message: IncomingMessage;
  readonly method: string;
  readonly headers: IncomingHttpHeaders;
  /** The target's path, as received (percent-encoded). */
  readonly path: string;
  /** The route's parameter (`:id`, `*slug`), percent-decoded; '' on routes without one. */
  readonly param: string;
  readonly #search: string | undefined;

  /** A request `message` to `target`, matched with parameter `param`. */
  constructor(message: IncomingMessage, target: RequestTarget, param: string) {
    this.message = message;
    this.method = message.method ?? 'GET';
    this.headers = message.headers;
    this.path = target.path;
    this.param = param;
    this.#search = target.search;
  }

  /** The query string parsed as express's `simple` query parser did (node:querystring): a repeated name gives an array. */
  query(): ParsedUrlQuery {
    return parseQueryString(this.#search ?? '');
  }
}

/** A route's handler: answers `res` (or hands the work on); whatever it throws synchronously is answered as an error. */
export type RouteHandler = (req: RoutedRequest, res: ServerResponse, context: RequestContext) => void;

/** The methods a route is served on: one (HEAD is served by a GET route), or `*` for any. */
export type RouteMethod = 'GET' | 'POST' | 'DELETE' | '*';

/** A route with one parameter: a fixed prefix, then the parameter, then a fixed suffix. */
interface ParamRoute {
  /** Lower-cased, e.g. `/v1/responses/`. */
  prefix: string;
  /** Lower-cased, e.g. `/input_items`, or ''. */
  suffix: string;
  /** `segment` (`:id`) holds no `/`; `rest` (`*slug`) holds anything, a trailing slash included, as express's wildcard did. */
  kind: 'segment' | 'rest';
  handlers: Map<string, RouteHandler>;
}

/** What a request matched: its handler and parameter (percent-decoded). */
export interface RouteMatch {
  handler: RouteHandler;
  param: string;
}

/** The handler of `method` among a route's, HEAD falling back to GET and anything to `*`, as express's routes did. */
function handlerFor(handlers: Map<string, RouteHandler>, method: string): RouteHandler | undefined {
  return handlers.get(method) ?? (method === 'HEAD' ? handlers.get('GET') : undefined) ?? handlers.get('*');
}

/** The path without one trailing slash (express's non-strict routing), '/' kept. */
function withoutTrailingSlash(path: string): string {
  return path.length > 1 && path.charCodeAt(path.length - 1) === 0x2f ? path.slice(0, -1) : path;
}

/**
 * The proxy's route table. Fixed paths are one Map lookup of the lower-cased path; the four routes
 * with a parameter are tried, by prefix, only when no fixed path matched method and path.
 */
export class Router {
  readonly #fixed = new Map<string, Map<string, RouteHandler>>();
  readonly #withParam: ParamRoute[] = [];

  /** Adds a route: `template` is a fixed path, or one with a `:name` segment or a trailing `*name`. */
  add(method: RouteMethod, template: string, handler: RouteHandler): void {
    const lower = template.toLowerCase();
    const at = lower.search(/[:*]/);
    if (at < 0) {
      const handlers = this.#fixed.get(lower) ?? new Map<string, RouteHandler>();
      handlers.set(method, handler);
      this.#fixed.set(lower, handlers);
      return;
    }
    const kind = lower[at] === '*' ? 'rest' : 'segment';
    const end = lower.indexOf('/', at);
    const suffix = end < 0 ? '' : lower.slice(end);
    if (kind === 'rest' && suffix !== '') throw new Error(`a wildcard must end its template: ${template}`);
    const prefix = lower.slice(0, at);
    let route = this.#withParam.find((candidate) => candidate.prefix === prefix && candidate.suffix === suffix && candidate.kind === kind);
    if (route === undefined) {
      route = { prefix, suffix, kind, handlers: new Map() };
      this.#withParam.push(route);
    }
    route.handlers.set(method, handler);
  }

  /** The route `method` and `path` (the target's percent-encoded path) reach, or undefined (a 404). */
  match(method: string, path: string): RouteMatch | undefined {
    const trimmed = withoutTrailingSlash(path);
    const lower = trimmed.toLowerCase();
    const fixed = this.#fixed.get(lower);
    if (fixed !== undefined) {
      const handler = handlerFor(fixed, method);
      if (handler !== undefined) return { handler, param: '' };
    }
    for (const route of this.#withParam) {
      if (!lower.startsWith(route.prefix)) continue;
      const handler = handlerFor(route.handlers, method);
      if (handler === undefined) continue;
      if (route.kind === 'rest') {
        // The wildcard takes what follows the prefix as sent, trailing slash and all.
        const rest = path.slice(route.prefix.length);
        if (rest.length > 0) return { handler, param: decodeURIComponent(rest) };
        continue;
      }
      if (!lower.endsWith(route.suffix)) continue;
      const segment = trimmed.slice(route.prefix.length, trimmed.length - route.suffix.length);
      // The request guard has refused a path that does not decode, so decoding a piece of it cannot throw.
      if (segment.length > 0 && !segment.includes('/')) return { handler, param: decodeURIComponent(segment) };
    }
    return undefined;
  }
}
