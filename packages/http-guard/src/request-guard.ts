import type { IncomingMessage } from 'node:http';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { GatewayError } from '@gateway/errors';

/**
 * Why a request target's path is refused, or undefined when it is fine: it must decode as
 * percent-encoded UTF-8 (express would otherwise throw while decoding a route parameter, which
 * surfaced as a 500) and must not decode to a NUL, which no identifier holds and PostgreSQL
 * cannot store.
 */
export function pathProblem(path: string): string | undefined {
  let decoded: string;
  try {
    decoded = decodeURIComponent(path);
  } catch {
    return 'The request path is not valid percent-encoded UTF-8.';
  }
  if (decoded.includes('\u0000')) return 'The request path must not contain a NUL character.';
  return undefined;
}

/**
 * The refusal of a request before authentication and routing, or undefined when it may go on: a
 * malformed path (`path`: the request target's path, without its query) gets 400
 * `invalid_request` without any credential (and the path is not echoed, so nothing is revealed);
 * an HTTP/1.1 request without Host gets the 400 RFC 9112 asks for (the server is created with
 * requireHostHeader off, because Node's own answer has no body). A plain function of node's
 * request, so a service that routes without express answers the refusal in its own error shape.
 */
export function requestProblem(req: IncomingMessage, path: string): GatewayError | undefined {
  const problem = pathProblem(path);
  if (problem !== undefined) return new GatewayError('invalid_request', { publicMessage: problem });
  if (req.httpVersionMajor === 1 && req.httpVersionMinor >= 1 && req.headers.host === undefined) {
    return new GatewayError('invalid_request', { publicMessage: 'An HTTP/1.1 request needs a Host header.' });
  }
  return undefined;
}

/** requestProblem as express middleware (the admin's): a refusal goes to `next`, for the app's error handler to answer. */
export function createRequestGuard(): RequestHandler {
  return (req: Request, _res: Response, next: NextFunction) => {
    const problem = requestProblem(req, req.path);
    if (problem !== undefined) next(problem);
    else next();
  };
}

/**
 * Errors the HTTP framework throws with a 4xx status of its own (express's router decoding a
 * parameter, http-errors) as `invalid_request`; anything else unchanged, for toHttpError. The
 * framework's own message is not shown: it may quote the request.
 */
export function frameworkRequestError(error: unknown): unknown {
  if (error instanceof GatewayError || typeof error !== 'object' || error === null) return error;
  const status = (error as { status?: unknown; statusCode?: unknown }).status ?? (error as { statusCode?: unknown }).statusCode;
  if (typeof status === 'number' && status >= 400 && status < 500) {
    return new GatewayError('invalid_request', {
      internalMessage: `framework ${status}: ${error instanceof Error ? error.message.slice(0, 200) : ''}`, cause: error,
    });
  }
  return error;
}
