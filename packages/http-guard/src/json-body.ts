import express, { type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import { GatewayError } from '@gateway/errors';
import { fieldPathOf, findJsonProblem, maxJsonDepth, problemMessage, type TextRule } from './json-problems.ts';

/**
 * Content codings a request body may arrive in; each is decoded before the size limit applies.
 * zstd is left out on purpose: a zstd frame may declare a window of up to 128 MiB that the
 * decoder allocates before a byte is checked, so one small request could cost that much memory.
 * gzip and deflate use 32 KiB windows, brotli at most 16 MiB.
 */
export const acceptedContentEncodings: readonly string[] = ['identity', 'gzip', 'deflate', 'br'];

/** Options of createJsonBodyParser. */
export interface JsonBodyOptions {
  /** Largest body accepted, bytes, measured after decoding (a zip bomb is cut at this size: 413). */
  limitBytes: number;
  /** Most nesting levels; default maxJsonDepth. */
  maxDepth?: number;
  /** What strings of the body may hold (see TextRule); default `any`. */
  text?: TextRule;
  /** Keep the body's bytes for `rawBodyOf` (signed webhooks); off by default, so the proxy's hot path pays nothing for it. */
  keepRawBody?: boolean;
}

/** The coding a request declares, normalised; `identity` when it declares none. */
function contentEncodingOf(req: Request): string {
  const header = req.headers['content-encoding'];
  return header === undefined ? 'identity' : header.trim().toLowerCase();
}

/**
 * A body-parser failure as a catalogue error, or undefined when `error` did not come from
 * reading a body. Every failure of the body (too large, not JSON, an unknown coding or
 * charset, a body that claims gzip and is not, a Content-Length that lies) is the caller's.
 */
export function bodyReadError(error: unknown, limitBytes: number, contentEncoding = 'identity'): GatewayError | undefined {
  if (error instanceof GatewayError) return error;
  if (typeof error !== 'object' || error === null) return undefined;
  const { type, status } = error as { type?: unknown; status?: unknown };
  switch (type) {
    case 'entity.too.large':
      return new GatewayError('request_too_large', {
        publicMessage: `The request body is larger than ${limitBytes} bytes (measured after decoding its Content-Encoding).`, cause: error,
      });
    case 'entity.parse.failed':
      return new GatewayError('invalid_json', { cause: error });
    case 'encoding.unsupported':
      return new GatewayError('unsupported_media_type', {
        publicMessage: `Content-Encoding must be one of ${acceptedContentEncodings.join(', ')}.`, cause: error,
      });
    case 'charset.unsupported':
      return new GatewayError('unsupported_media_type', { publicMessage: 'The request body must be JSON in UTF-8.', cause: error });
    case 'request.aborted':
      return new GatewayError('invalid_request', { publicMessage: 'The request body ended before it was complete.', cause: error });
    case 'request.size.invalid':
      return new GatewayError('invalid_request', { publicMessage: 'The request body does not match its Content-Length.', cause: error });
    default:
      break;
  }
  // What is left with a 4xx status from body-parser is a decoder's failure: the body is not what
  // its Content-Encoding says (zlib's Z_DATA_ERROR, brotli's format errors).
  if (typeof status === 'number' && status >= 400 && status < 500) {
    return new GatewayError('invalid_request', {
      publicMessage: contentEncoding === 'identity'
        ? 'The request body could not be read.'
        : `The request body is not valid ${contentEncoding} data.`,
      internalMessage: `body: ${String((error as { code?: unknown }).code ?? type)}`,
      cause: error,
    });
  }
  return undefined;
}

/** A request whose JSON body was read: `rawBody` holds its bytes after Content-Encoding decoding. */
interface RequestWithRawBody extends Request {
  rawBody?: Buffer;
}

/** The body's bytes as received (after Content-Encoding decoding), for signature checks; empty when there was none or the parser did not keep them. */
export function rawBodyOf(request: Request): Buffer {
  return (request as RequestWithRawBody).rawBody ?? Buffer.alloc(0);
}

/**
 * express middleware reading a JSON body whatever its content type (so a wrong type is a clear
 * 400, not an empty body): codings in acceptedContentEncodings are decoded, anything else is
 * 415; the limit applies to the decoded bytes; the parsed value must keep `maxDepth` and the
 * text rule. Every failure reaches `next` as a GatewayError.
 */
export function createJsonBodyParser(options: JsonBodyOptions): RequestHandler {
  // The bytes as received (decoded) stay on the request: a signed webhook is verified over them,
  // never over a re-serialisation of the parsed value.
  const parse = express.json({
    limit: options.limitBytes, type: () => true, strict: true,
    ...(options.keepRawBody === true ? { verify: (req: Request, _res: Response, buffer: Buffer) => { (req as RequestWithRawBody).rawBody = buffer; } } : {}),
  });
  const maxDepth = options.maxDepth ?? maxJsonDepth;
  const text = options.text ?? 'any';
  return (req: Request, res: Response, next: NextFunction) => {
    const contentEncoding = contentEncodingOf(req);
    if (!acceptedContentEncodings.includes(contentEncoding)) {
      next(new GatewayError('unsupported_media_type', { publicMessage: `Content-Encoding must be one of ${acceptedContentEncodings.join(', ')}.` }));
      return;
    }
    // express.json()'s handler returns nothing: every outcome, failures included, reaches the callback.
    parse(req, res, (error?: unknown) => {
      if (error !== undefined && error !== null) {
        next(bodyReadError(error, options.limitBytes, contentEncoding) ?? error);
        return;
      }
      const problem = findJsonProblem(req.body, { maxDepth, text });
      if (problem !== undefined) {
        const field = fieldPathOf(problem.path);
        next(new GatewayError('invalid_request', {
          publicMessage: `Invalid ${field === '' ? 'body' : field}: it ${problemMessage(problem, maxDepth)}.`,
          ...(field === '' ? {} : { param: field }),
        }));
        return;
      }
      next();
    });
  };
}
