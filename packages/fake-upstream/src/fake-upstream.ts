import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { anthropicMessages } from './anthropic-routes.ts';
import { lastUserText, type ChatMessageLike } from './conversation.ts';
import { parseDirectives } from './directives.ts';
import { completeChat, embeddings } from './openai-routes.ts';
import { PrefixCache, type PrefixCacheOptions } from './prefix-cache.ts';
import { leakMarkers, readBody, sendJson, vendorError, vendorHeaders } from './wire.ts';

/** Options of startFakeUpstream. */
export interface FakeUpstreamOptions {
  /** Interface to listen on; default 127.0.0.1. */
  host?: string;
  /** Port; default 0 (any free port). */
  port?: number;
  /**
   * When set, requests must carry the key or get a vendor 401: `Authorization: Bearer <key>` on
   * the OpenAI routes, `x-api-key: <key>` on the Anthropic route.
   */
  requiredApiKey?: string;
  /** Name of this upstream, used in the model list; default `fake`. */
  name?: string;
  /** The prompt caches' minimum prefix and clock (prefix-cache.ts); default 1024 tokens and Date.now. */
  promptCache?: PrefixCacheOptions;
  /** How long an idle keep-alive connection stays open, ms; default node:http's (5 s). */
  keepAliveTimeoutMs?: number;
  /**
   * Whether `requests` records what arrives; default true (tests read it). A long-running upstream
   * (`pnpm start`'s demo) passes false: every request kept, with its headers and parsed body, grew
   * the process without bound (~300 MB of live heap after ~400,000 requests in `pnpm bench soak`).
   */
  recordRequests?: boolean;
}

/** One request the fake upstream received, as tests inspect it. */
export interface RecordedRequest {
  method: string;
  /** Path with query, e.g. `/v1/chat/completions`. */
  path: string;
  headers: IncomingHttpHeaders;
  /** The parsed JSON body; undefined when there was none or it was not JSON. */
  body: unknown;
  /** The `[[fake:tag=ID]]` of the last user message, when it had one: which request of a test this was. */
  tag?: string;
  /** When the request's body had arrived, ms since the epoch. */
  receivedAtMs: number;
}

/** A running fake upstream. */
export interface FakeUpstream {
  /** OpenAI-style base URL, e.g. `http://127.0.0.1:PORT/v1`. */
  baseUrl: string;
  port: number;
  /** Every request received, oldest first (tests may clear it with `requests.length = 0`); empty with `recordRequests: false`. */
  requests: RecordedRequest[];
  /** Stops listening and cuts every open socket, including hung requests. */
  close(): Promise<void>;
}

/**
 * Starts an OpenAI-compatible upstream on node:http (with an Anthropic Messages route at
 * `POST /v1/messages`): the built-in demo upstream of `pnpm start` and the steerable fake of tests. Replies are deterministic; usage is prompt_tokens = words
 * across all message contents + 3 per message + 85 per image (an `image_url` part, or an Anthropic
 * `image` block), completion_tokens = words of the reply. Prompt caching is modelled for both
 * wire formats (prefix-cache.ts): OpenAI's automatic prefix cache in `prompt_tokens_details.cached_tokens`,
 * Anthropic's `cache_control` breakpoints in `cache_read_input_tokens`, `cache_creation_input_tokens`
 * and `cache_creation`. Every
 * response leaks vendor details (see `leakMarkers`) so tests can prove the gateway hides them.
 * Steer it with directives in the last user message (see `parseDirectives`).
 */
export async function startFakeUpstream(options: FakeUpstreamOptions = {}): Promise<FakeUpstream> {
  const host = options.host ?? '127.0.0.1';
  const name = options.name ?? 'fake';
  const recordRequests = options.recordRequests ?? true;
  const requests: RecordedRequest[] = [];
  const sockets = new Set<Socket>();
  let requestCount = 0;
  const promptCache = new PrefixCache(options.promptCache);

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    requestCount += 1;
    const requestNumber = requestCount;
    const headers = vendorHeaders(requestNumber);
    const raw = await readBody(req);
    let body: unknown;
    let bodyIsJson = true;
    if (raw.length > 0) {
      try { body = JSON.parse(raw.toString('utf8')); } catch { bodyIsJson = false; }
    }
    const path = req.url ?? '/';
    const messages = typeof body === 'object' && body !== null && Array.isArray((body as { messages?: unknown }).messages)
      ? (body as { messages: ChatMessageLike[] }).messages : [];
    const { tag } = parseDirectives(lastUserText(messages));
    if (recordRequests) requests.push({ method: req.method ?? 'GET', path, headers: req.headers, body, ...(tag === undefined ? {} : { tag }), receivedAtMs: Date.now() });

    const route = `${req.method} ${path.split('?')[0]}`;
    if (route === 'POST /v1/messages') {
      await anthropicMessages(req, body, bodyIsJson, res, headers, requestNumber, promptCache, options.requiredApiKey);
      return;
    }
    if (options.requiredApiKey !== undefined && req.headers.authorization !== `Bearer ${options.requiredApiKey}`) {
      sendJson(res, 401, vendorError(401, 'Incorrect API key provided for vendor account acct_vendor', 'invalid_api_key'), headers);
      return;
    }
    if (route === 'GET /v1/models') {
      sendJson(res, 200, {
        object: 'list',
        data: [{ id: `${name}-model${leakMarkers.vendorModelSuffix}`, object: 'model', created: 1_700_000_000, owned_by: leakMarkers.organisationHeaderValue }],
      }, headers);
      return;
    }
    if (route === 'POST /v1/embeddings') {
      embeddings(body, bodyIsJson, res, headers);
      return;
    }
    if (route !== 'POST /v1/chat/completions') {
      sendJson(res, 404, vendorError(404, `Unknown vendor route ${route}`, 'unknown_url'), headers);
      return;
    }
    if (!bodyIsJson || typeof body !== 'object' || body === null || !Array.isArray((body as { messages?: unknown }).messages)) {
      sendJson(res, 400, vendorError(400, 'Vendor could not parse the request', 'invalid_body'), headers);
      return;
    }
    await completeChat(body as Record<string, unknown>, res, headers, requestNumber, promptCache);
  }

  const server = createServer((req, res) => {
    handle(req, res).catch(() => {
      if (!res.headersSent) sendJson(res, 500, vendorError(500, 'Vendor crashed', 'vendor_crash'), vendorHeaders(0));
      else res.destroy();
    });
  });
  if (options.keepAliveTimeoutMs !== undefined) server.keepAliveTimeout = options.keepAliveTimeoutMs;
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => { server.off('error', reject); resolve(); });
  });
  const { port } = server.address() as AddressInfo;
  const urlHost = host.includes(':') ? `[${host}]` : host;

  return {
    baseUrl: `http://${urlHost}:${port}/v1`,
    port,
    requests,
    close: () => new Promise<void>((resolve) => {
      server.close(() => resolve());
      for (const socket of sockets) socket.destroy();
    }),
  };
}
