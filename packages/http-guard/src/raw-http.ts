import { connect } from 'node:net';

/** What came back on a raw connection: the parsed answer (when there was one) and how the connection ended. */
export interface RawHttpAnswer {
  /** HTTP status, or undefined when no complete status line arrived. */
  status: number | undefined;
  /** Header names lower-cased. */
  headers: Record<string, string>;
  /** The body as text (by Content-Length when given, else all that arrived). */
  body: string;
  /** The body parsed as JSON, or undefined when it is not JSON. */
  json: unknown;
  /** How the connection ended: closed by the server, reset (ECONNRESET/EPIPE), or cut by us after the answer or the timeout. */
  ending: 'closed' | 'reset' | 'answered' | 'timeout';
}

/** Splits what arrived into status, headers and body; undefined while the head or body is incomplete. */
function parseAnswer(data: Buffer): Omit<RawHttpAnswer, 'ending'> | undefined {
  const headEnd = data.indexOf('\r\n\r\n');
  if (headEnd < 0) return undefined;
  const [statusLine = '', ...headerLines] = data.subarray(0, headEnd).toString('latin1').split('\r\n');
  const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(statusLine)?.[1]);
  const headers: Record<string, string> = {};
  for (const line of headerLines) {
    const colon = line.indexOf(':');
    if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  const rest = data.subarray(headEnd + 4);
  const length = headers['content-length'] === undefined ? undefined : Number(headers['content-length']);
  if (length !== undefined && rest.length < length) return undefined;
  const body = (length === undefined ? rest : rest.subarray(0, length)).toString('utf8');
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch {
    json = undefined;
  }
  return { status: Number.isNaN(status) ? undefined : status, headers, body, json };
}

/**
 * Sends exact bytes to host:port over a plain TCP connection and reads one answer, for tests of
 * what Node's HTTP parser does with malformed requests (fetch would refuse to send them). The
 * bytes may be given in pieces, written one after another. Resolves on the first complete answer
 * with a Content-Length, when the server closes or resets, or after timeoutMs.
 */
export function sendRawHttp(port: number, pieces: string | Buffer | ReadonlyArray<string | Buffer>, timeoutMs = 10_000, host = '127.0.0.1'): Promise<RawHttpAnswer> {
  const chunks = typeof pieces === 'string' || Buffer.isBuffer(pieces) ? [pieces] : pieces;
  return new Promise((resolve) => {
    const socket = connect(port, host);
    let data = Buffer.alloc(0);
    let done = false;
    const finish = (ending: RawHttpAnswer['ending']) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      resolve({ ...(parseAnswer(data) ?? { status: undefined, headers: {}, body: data.toString('utf8'), json: undefined }), ending });
    };
    const timer = setTimeout(() => finish('timeout'), timeoutMs);
    socket.on('data', (chunk: Buffer) => {
      data = Buffer.concat([data, chunk]);
      const answer = parseAnswer(data);
      if (answer !== undefined && answer.headers['content-length'] !== undefined) finish('answered');
    });
    socket.on('error', (error: NodeJS.ErrnoException) => finish(error.code === 'ECONNRESET' || error.code === 'EPIPE' ? 'reset' : 'closed'));
    socket.on('close', () => finish('closed'));
    socket.on('connect', () => {
      for (const chunk of chunks) {
        if (socket.destroyed) break;
        socket.write(chunk);
      }
    });
  });
}
