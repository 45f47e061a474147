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
 * express middleware put before authentication and routing: a malformed path gets 400
 * `invalid_request` without any credential (and the path is not echoed, so nothing is revealed);
 * an HTTP/1.1 request without Host gets the 400 RFC 9112 asks for, in the error shape (the server
 * is created with requireHostHeader off, because Node's own answer has no body).
 */
export function createRequestGuard(): RequestHandler {
  return (req: Request, _res: Response, next: NextFunction) => {
    const problem = pathProblem(req.path);
    if (problem !== undefined) {
      next(new GatewayError('invalid_request', { publicMessage: problem }));
      return;
    }
    if (req.httpVersionMajor === 1 && req.httpVersionMinor >= 1 && req.headers.host === undefined) {
      next(new GatewayError('invalid_request', { publicMessage: 'An HTTP/1.1 request needs a Host header.' }));
      return;
    }
    next();
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
