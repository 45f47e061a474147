import { randomUUID } from 'node:crypto';
import { createServer, STATUS_CODES, type IncomingMessage, type RequestListener, type Server, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { GatewayError, toHttpError, type ErrorCode } from '@gateway/errors';
import type { Logger } from '@gateway/logger';

/**
 * Most bytes of request line and headers together, Node's own default made explicit so that a
 * `--max-http-header-size` flag cannot change it: 16 KiB holds any API key or admin token many
 * times over; beyond it the answer is 431 `headers_too_large`.
 */
export const maxHeaderBytes = 16 * 1024;

/**
 * How long a connection refused at the parser stays open to read (and discard) what its client is
 * still sending, ms. Closing a socket with unread bytes makes the kernel send a reset, which can
 * reach the client before the 431/400 answer does; lingering lets the answer arrive first.
 */
export const clientErrorLingerMs = 2_000;

/** Options of createGuardedServer. */
export interface GuardedServerOptions {
  /** Receives one line per connection refused at the HTTP parser. */
  logger?: Logger;
}

/** Catalogue code of a Node HTTP parser error, as Node itself would pick the status. */
function codeOfClientError(error: NodeJS.ErrnoException): ErrorCode {
  switch (error.code) {
    case 'HPE_HEADER_OVERFLOW':
      return 'headers_too_large';
    case 'HPE_CHUNK_EXTENSIONS_OVERFLOW':
      return 'request_too_large';
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return 'request_timeout';
    default:
      return 'invalid_request';
  }
}

/** The raw bytes of an error response in the gateway's error shape, closing the connection. */
export function rawErrorResponse(error: GatewayError, requestId: string = randomUUID()): string {
  const { status, body, headers } = toHttpError(error);
  const json = JSON.stringify(body);
  const lines = [
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Error'}`,
    'content-type: application/json; charset=utf-8',
    `content-length: ${Buffer.byteLength(json)}`,
    `x-request-id: ${requestId}`,
    'connection: close',
    ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`),
  ];
  return `${lines.join('\r\n')}\r\n\r\n${json}`;
}

/** Writes a last answer on a raw socket, then reads and drops what the client still sends until it closes or the linger ends. */
function answerAndLinger(socket: Duplex, response: string): void {
  const timer = setTimeout(() => socket.destroy(), clientErrorLingerMs);
  timer.unref();
  socket.once('close', () => clearTimeout(timer));
  socket.on('error', () => socket.destroy());
  socket.end(response);
  socket.resume();
}

/** Sockets already answered after a parser error. */
const answered = new WeakSet<Duplex>();

/** Public messages of parser errors; Node's own text (which may quote bytes of the request) is never shown. */
const clientErrorMessages: Partial<Record<ErrorCode, string>> = {
  headers_too_large: `The request line and headers are larger than ${maxHeaderBytes} bytes.`,
  invalid_request: 'The request is not valid HTTP/1.1.',
};

/**
 * The answer to a connection Node's HTTP parser refused (`clientError`): 431 for oversize headers,
 * 408 for a request not received in time, 400 for anything else malformed (request line, header
 * syntax, chunked encoding), each with a JSON body in the error shape, then the connection closes.
 * A socket already reset, or one whose response has started, is only destroyed.
 */
export function answerClientError(error: NodeJS.ErrnoException, socket: Duplex, logger?: Logger): void {
  // Node's parser reports again on every later chunk of a socket it refused; answer only once.
  if (answered.has(socket)) return;
  answered.add(socket);
  // Node itself checks the in-flight response this way before writing its own answer.
  const inFlight = (socket as Duplex & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
  if (error.code === 'ECONNRESET' || error.code === 'EPIPE' || !socket.writable || inFlight?.headersSent === true) {
    logger?.debug({ code: error.code }, 'client connection error');
    socket.destroy();
    return;
  }
  const code = codeOfClientError(error);
  const gatewayError = new GatewayError(code, {
    ...(clientErrorMessages[code] === undefined ? {} : { publicMessage: clientErrorMessages[code] }),
  });
  const requestId = randomUUID();
  logger?.info({ requestId, status: toHttpError(gatewayError).status, code, parserError: error.code }, 'request refused by the HTTP parser');
  answerAndLinger(socket, rawErrorResponse(gatewayError, requestId));
}


/** Answers a response object with a catalogue error in the error shape and closes its connection. */
function answerResponse(res: ServerResponse, error: GatewayError): void {
  const { status, body, headers } = toHttpError(error);
  const json = JSON.stringify(body);
  res.shouldKeepAlive = false;
  res.writeHead(status, {
    ...headers, 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(json), 'x-request-id': randomUUID(),
  });
  res.end(json);
}

/**
 * An HTTP server for a service's express app whose every answer is JSON in the error shape,
 * including those Node would otherwise write itself: parser errors and oversize headers
 * (`clientError`), an `Expect` other than 100-continue (417), a CONNECT request (which Node would
 * drop without a word), a PRI request (400), and a missing Host (left to createRequestGuard). Headers are limited to
 * maxHeaderBytes.
 */
export function createGuardedServer(listener: RequestListener, options: GuardedServerOptions = {}): Server {
  const server = createServer({ maxHeaderSize: maxHeaderBytes, requireHostHeader: false }, (req, res) => {
    // PRI is HTTP/2's connection preface, not an HTTP/1.1 method: Node closes such a request's
    // connection as soon as this handler returns, so an answer from async middleware would never
    // arrive. It is answered here, synchronously, like any other request that is not HTTP/1.1.
    if (req.method === 'PRI') {
      answerResponse(res, new GatewayError('invalid_request', { publicMessage: clientErrorMessages.invalid_request! }));
      return;
    }
    listener(req, res);
  });
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Duplex) => answerClientError(error, socket, options.logger));
  server.on('checkExpectation', (_req: IncomingMessage, res: ServerResponse) => answerResponse(res, new GatewayError('expectation_failed')));
  server.on('connect', (_req: IncomingMessage, socket: Duplex) => {
    answered.add(socket);
    answerAndLinger(socket, rawErrorResponse(new GatewayError('invalid_request', { publicMessage: 'CONNECT is not supported.' })));
  });
  return server;
}
