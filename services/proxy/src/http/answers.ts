import type { IncomingMessage, ServerResponse } from 'node:http';
import type { StreamSink } from '../inference/stream-chat.ts';
import type { RequestObserver } from '../telemetry/request-observer.ts';

// The two ways an inference route answers 200: one JSON body, or an SSE stream.

/**
 * Answers 200 with a JSON body in one write (headers and body together): the same status,
 * content-type and content-length express's res.json sent for a completion, without its
 * content-type lookup, freshness check and extra header passes.
 */
export function sendJson(res: ServerResponse, body: unknown, observer: RequestObserver): void {
  const json = JSON.stringify(body);
  // A client that hung up was counted (499) when it left: its answer has no first byte to time.
  if (res.destroyed) return;
  observer.firstByte();
  res.statusCode = 200;
  res.setHeader('content-type', 'application/json; charset=utf-8');
  res.setHeader('content-length', Buffer.byteLength(json));
  res.end(json);
}

/** The SSE response of a stream, with backpressure: a slow client slows the relay, nothing piles up. */
export function sseSink(res: ServerResponse, observer: RequestObserver): StreamSink {
  return {
    open() {
      observer.firstByte();
      res.statusCode = 200;
      res.setHeader('content-type', 'text/event-stream; charset=utf-8');
      res.setHeader('cache-control', 'no-cache');
    },
    write(frame) {
      if (res.destroyed || res.writableEnded) return false;
      if (res.write(frame)) return true;
      return new Promise<boolean>((resolve) => {
        const settle = (open: boolean) => { res.off('drain', onDrain); res.off('close', onClose); resolve(open); };
        const onDrain = () => settle(true);
        const onClose = () => settle(false);
        res.on('drain', onDrain);
        res.on('close', onClose);
      });
    },
    isOpen() { return !res.destroyed && !res.writableEnded; },
    end(frames) {
      // write + end rather than end(frames): the socket is corked, so the frames, the chunked
      // framing and the terminating chunk still leave in one writev, and the response head is
      // not concatenated to (and copied with) the frames, as res.end(string) before the head went out would do.
      if (frames !== undefined && !res.destroyed && !res.writableEnded) res.write(frames);
      res.end();
    },
  };
}

/** Cache-Control asking for an end-to-end reload (fresh's test, which express applied). */
const noCache = /(?:^|,)\s*?no-cache\s*?(?:,|$)/;

/**
 * Answers 200 with a JSON body in the bytes express's res.json wrote for /v1/models, which its
 * clients have always had: `Content-Type` and `Content-Length` with those capitals, and a GET or
 * HEAD with `If-None-Match: *` (and no `Cache-Control: no-cache`) answered 304 without a body, as
 * express's freshness check did for a response with no ETag.
 */
export function sendExpressJson(req: IncomingMessage, res: ServerResponse, body: unknown): void {
  const json = JSON.stringify(body);
  res.statusCode = 200;
  const cacheControl = req.headers['cache-control'];
  if ((req.method === 'GET' || req.method === 'HEAD') && req.headers['if-none-match'] === '*'
    && (cacheControl === undefined || !noCache.test(cacheControl))) {
    res.statusCode = 304;
    res.end();
    return;
  }
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.setHeader('Content-Length', String(Buffer.byteLength(json)));
  res.end(json);
}
