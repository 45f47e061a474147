import type { IncomingMessage } from 'node:http';
import type { Readable, Transform } from 'node:stream';
import zlib from 'node:zlib';
import { parse as parseContentType } from 'content-type';
import iconv from 'iconv-lite';
import { GatewayError } from '@gateway/errors';
import { acceptedContentEncodings } from './json-body.ts';
import { fieldPathOf, findJsonProblem, maxJsonDepth, problemMessage, type TextRule } from './json-problems.ts';

// A JSON body read on node:http's own request, with no framework: what createJsonBodyParser
// (express.json(), i.e. body-parser, raw-body and iconv-lite) does, outcome for outcome, for a
// service that routes without express (the proxy). Every refusal is the same GatewayError (code,
// message, internal detail) the middleware's `next` got; the timing is the same too: a body
// refused while it is read is drained to its end before the refusal is answered, so the client
// gets the answer rather than a reset.

/** Options of createJsonBodyReader: those of createJsonBodyParser but keepRawBody (only signed webhooks need the bytes). */
export interface JsonBodyReaderOptions {
  /** Largest body accepted, bytes, measured after decoding (a zip bomb is cut at this size: 413). */
  limitBytes: number;
  /** Most nesting levels; default maxJsonDepth. */
  maxDepth?: number;
  /** What strings of the body may hold (see TextRule); default `any`. */
  text?: TextRule;
}

/** Reads the JSON body of a request: resolves to its value (undefined when the request has no body), rejects with the GatewayError of a refusal. */
export type JsonBodyReader = (req: IncomingMessage) => Promise<unknown>;

const unsupportedEncodingMessage = `Content-Encoding must be one of ${acceptedContentEncodings.join(', ')}.`;

/** Whether the request is over as far as its body goes (on-finished's test, which body-parser skips reading on): an upgrade, no socket, a socket that reads no more, or a body already read. */
function requestFinished(req: IncomingMessage): boolean {
  const { socket } = req;
  return Boolean((req as { upgrade?: boolean }).upgrade || !socket || !socket.readable || (req.complete && !req.readable));
}

/** Whether the request declares a body at all (type-is's hasBody): Transfer-Encoding, or a Content-Length that is a number. */
function declaresBody(req: IncomingMessage): boolean {
  return req.headers['transfer-encoding'] !== undefined || !Number.isNaN(Number(req.headers['content-length']));
}

/** The request's charset parameter, lower-cased, or undefined when its Content-Type has none. */
function charsetOf(req: IncomingMessage): string | undefined {
  const header = req.headers['content-type'];
  // Most requests say `application/json` (or nothing): no parameter to parse.
  if (!header || !header.includes(';')) return undefined;
  return parseContentType(header).parameters.charset?.toLowerCase();
}

/** The stream of a non-identity coding's decoded bytes, or undefined for a coding body-parser does not decode. */
function decoderOf(coding: string): Transform | undefined {
  switch (coding) {
    case 'deflate': return zlib.createInflate();
    case 'gzip': return zlib.createGunzip();
    case 'br': return zlib.createBrotliDecompress();
    // zstd is refused before this (acceptedContentEncodings).
    default: return undefined;
  }
}

/** Calls `done` once the request is over (its end, or its socket's error or close), reading and dropping what is left of it. */
function drain(req: IncomingMessage, done: () => void): void {
  if (requestFinished(req)) {
    done();
    return;
  }
  const socket = req.socket;
  const finish = () => {
    req.off('end', finish);
    socket.off('error', finish);
    socket.off('close', finish);
    done();
  };
  req.on('end', finish);
  socket.on('error', finish);
  socket.on('close', finish);
  req.resume();
}

/** The first character of a JSON text that is not JSON whitespace, or '' (body-parser's strict check). */
function firstNonWhitespace(text: string): string {
  for (let index = 0; index < text.length; index += 1) {
    const code = text.charCodeAt(index);
    if (code !== 0x20 && code !== 0x09 && code !== 0x0a && code !== 0x0d) return text[index]!;
  }
  return '';
}

/** JSON.parse as body-parser's strict mode: an empty body is `{}`, a top level other than an object or array is invalid JSON. */
function parseStrictJson(text: string): unknown {
  if (text.length === 0) return {};
  const first = text[0];
  if (first !== '{' && first !== '[') {
    const found = firstNonWhitespace(text);
    if (found !== '{' && found !== '[') throw new GatewayError('invalid_json', { cause: new SyntaxError('strict violation') });
  }
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new GatewayError('invalid_json', { cause: error });
  }
}

/**
 * A reader of JSON bodies on node:http: whatever the content type (so a wrong type is a clear
 * 400, not an empty body), codings in acceptedContentEncodings are decoded and anything else is
 * 415; the charset must be UTF-something (415 otherwise); the limit applies to the decoded bytes
 * (413); a body cut short, or longer or shorter than its Content-Length, is 400; the value must
 * keep `maxDepth` and the text rule (400 naming the field). The same outcomes as
 * createJsonBodyParser's middleware.
 */
export function createJsonBodyReader(options: JsonBodyReaderOptions): JsonBodyReader {
  const { limitBytes } = options;
  const maxDepth = options.maxDepth ?? maxJsonDepth;
  const text = options.text ?? 'any';
  const tooLarge = () => new GatewayError('request_too_large', {
    publicMessage: `The request body is larger than ${limitBytes} bytes (measured after decoding its Content-Encoding).`,
  });

  /** The value of a body's decoded text, checked against the depth and text rules. */
  function valueOf(bytes: Buffer, charset: string): unknown {
    let decoded: string;
    if (charset === 'utf-8') {
      decoded = bytes.toString('utf8');
      // iconv-lite's decoder (what body-parser used) drops a leading byte order mark.
      if (decoded.charCodeAt(0) === 0xfeff) decoded = decoded.slice(1);
    } else {
      decoded = iconv.decode(bytes, charset);
    }
    const value = parseStrictJson(decoded);
    const problem = findJsonProblem(value, { maxDepth, text });
    if (problem !== undefined) {
      const field = fieldPathOf(problem.path);
      throw new GatewayError('invalid_request', {
        publicMessage: `Invalid ${field === '' ? 'body' : field}: it ${problemMessage(problem, maxDepth)}.`,
        ...(field === '' ? {} : { param: field }),
      });
    }
    return value;
  }

  return (req) => new Promise((resolve, reject) => {
    const header = req.headers['content-encoding'];
    const contentEncoding = header === undefined ? 'identity' : header.trim().toLowerCase();
    if (!acceptedContentEncodings.includes(contentEncoding)) {
      reject(new GatewayError('unsupported_media_type', { publicMessage: unsupportedEncodingMessage }));
      return;
    }
    if (requestFinished(req) || !declaresBody(req)) {
      resolve(undefined);
      return;
    }
    // `||`, as body-parser: an empty charset parameter is UTF-8 too.
    const charset = charsetOf(req) || 'utf-8';
    if (charset.slice(0, 4) !== 'utf-') {
      reject(new GatewayError('unsupported_media_type', { publicMessage: 'The request body must be JSON in UTF-8.' }));
      return;
    }
    // body-parser's own reading of the header: lower-cased, not trimmed (Node has trimmed it already).
    const coding = (header || 'identity').toLowerCase();
    let stream: Readable = req;
    let decoder: Transform | undefined;
    let length: number | null = null;
    if (coding === 'identity') {
      const declared = req.headers['content-length'];
      length = declared != null && !Number.isNaN(Number(declared)) ? Number.parseInt(declared, 10) : null;
    } else {
      decoder = decoderOf(coding);
      if (decoder === undefined) {
        reject(new GatewayError('unsupported_media_type', { publicMessage: unsupportedEncodingMessage }));
        return;
      }
      stream = decoder;
      req.pipe(decoder);
    }

    /** Refuses the body once the request is over: the decoder is dropped and the rest of the request read and discarded first. */
    const refuse = (error: GatewayError) => {
      stream.unpipe();
      stream.pause();
      if (decoder !== undefined) {
        req.unpipe();
        decoder.destroy();
      }
      drain(req, () => reject(error));
    };

    if (length !== null && length > limitBytes) {
      // Refused before a byte is read (raw-body answers on the next tick).
      process.nextTick(() => refuse(tooLarge()));
      return;
    }
    if (!stream.readable) {
      process.nextTick(() => refuse(new GatewayError('internal_error', { internalMessage: 'request body stream is not readable' })));
      return;
    }
    if (charset !== 'utf-8' && !iconv.encodingExists(charset)) {
      process.nextTick(() => refuse(new GatewayError('unsupported_media_type', { publicMessage: 'The request body must be JSON in UTF-8.' })));
      return;
    }

    const chunks: Buffer[] = [];
    let received = 0;
    let complete = false;
    const cleanup = () => {
      stream.off('aborted', onAborted);
      stream.off('data', onData);
      stream.off('end', onEnd);
      stream.off('error', onError);
      stream.off('close', cleanup);
      if (decoder !== undefined) {
        req.off('aborted', onAborted);
        req.off('close', onRequestClose);
      }
    };
    const fail = (error: GatewayError) => {
      complete = true;
      cleanup();
      refuse(error);
    };
    function onAborted() {
      if (complete) return;
      fail(new GatewayError('invalid_request', { publicMessage: 'The request body ended before it was complete.' }));
    }
    // A compressed body is read from its decoder, which never hears that the client went away: the
    // request's own abort (or a close before its end) ends the read, or it would wait forever and
    // keep its share of the proxy's in-flight body budget (every later large body a 503).
    function onRequestClose() {
      if (!req.complete) onAborted();
    }
    function onData(chunk: Buffer) {
      if (complete) return;
      received += chunk.length;
      if (received > limitBytes) fail(tooLarge());
      else chunks.push(chunk);
    }
    function onError(error: unknown) {
      if (complete) return;
      // A decoder's failure (the body is not what its Content-Encoding says) or the request's own stream error.
      fail(new GatewayError('invalid_request', {
        publicMessage: contentEncoding === 'identity' ? 'The request body could not be read.' : `The request body is not valid ${contentEncoding} data.`,
        internalMessage: `body: ${String((error as { code?: unknown } | null)?.code ?? undefined)}`,
        cause: error,
      }));
    }
    function onEnd() {
      if (complete) return;
      complete = true;
      cleanup();
      if (length !== null && received !== length) {
        refuse(new GatewayError('invalid_request', { publicMessage: 'The request body does not match its Content-Length.' }));
        return;
      }
      if (decoder !== undefined) {
        // The decoder is done with: detached and dropped, and what is left of the request read so it can finish.
        req.unpipe(decoder);
        decoder.on('error', () => {});
        decoder.destroy();
        req.resume();
      }
      try {
        resolve(valueOf(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, received), charset));
      } catch (error) {
        reject(error);
      }
    }
    stream.on('aborted', onAborted);
    stream.on('close', cleanup);
    if (decoder !== undefined) {
      req.on('aborted', onAborted);
      req.on('close', onRequestClose);
    }
    stream.on('data', onData);
    stream.on('end', onEnd);
    stream.on('error', onError);
  });
}
