/**
 * The fault suite's load: a few concurrent clients sending streaming and non-streaming chat
 * completions round-robin over the proxies until told to stop. Every request carries its own
 * `x-request-id`, also written into the prompt as `[[fake:tag=...]]` so the fake upstream's log
 * says which requests reached it; the client notes when each word of a reply arrived, which is
 * what "delivered" means in the SIGKILL bound.
 */

/** One request of the load, as the client saw it. */
export interface LoadRequest {
  requestId: string;
  proxyIndex: number;
  stream: boolean;
  startedAtMs: number;
  /** When the client was done with it (answer read, error or timeout); undefined while open. */
  endedAtMs?: number;
  /** HTTP status; 0 for a transport error (refused connection, reset). */
  status?: number;
  /** The `x-request-id` the proxy echoed. */
  echoedRequestId?: string | null;
  /** Arrival time of each reply word, ms since the epoch (streams: per chunk; JSON: all at once). */
  wordTimesMs: number[];
  /** The whole answer arrived: `[DONE]` for a stream, a parsed JSON body for a completion. */
  complete: boolean;
  /** An in-stream error event arrived. */
  streamError: boolean;
}

/** Shape of the load. */
export interface LoadOptions {
  proxyBases: string[];
  apiKey: string;
  model: string;
  /** Prefix of every request id (the scenario's). */
  requestIdPrefix: string;
  /** Concurrent clients; default 6. */
  clients?: number;
  /** Words of a streamed reply and the delay before each, ms. */
  streamWords?: number;
  chunkDelayMs?: number;
  /** Words of a non-streamed reply and the upstream's delay before it, ms. */
  jsonWords?: number;
  jsonDelayMs?: number;
  /** Longest a request may take, ms (a bound, so a hung request cannot stall the suite). */
  requestTimeoutMs?: number;
}

/** A running load. */
export interface Load {
  requests: LoadRequest[];
  /** Requests that ended with a 200 and a complete answer. */
  completed(): number;
  /** Requests still open. */
  open(): LoadRequest[];
  /** Stops starting new requests and waits for the open ones to end. */
  stop(): Promise<void>;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Reads an SSE body, noting each word's arrival; resolves when the body ends. */
async function readStream(response: Response, request: LoadRequest): Promise<void> {
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let boundary = buffer.indexOf('\n\n');
    while (boundary >= 0) {
      const frame = buffer.slice(0, boundary);
      buffer = buffer.slice(boundary + 2);
      boundary = buffer.indexOf('\n\n');
      const data = frame.split('\n').find((line) => line.startsWith('data: '))?.slice(6);
      if (data === undefined) continue;
      if (data === '[DONE]') { request.complete = true; continue; }
      const event = JSON.parse(data) as { error?: unknown; choices?: Array<{ delta?: { content?: string } }> };
      if (event.error !== undefined) { request.streamError = true; continue; }
      const content = event.choices?.[0]?.delta?.content ?? '';
      const now = Date.now();
      for (const word of content.split(/\s+/)) if (word !== '') request.wordTimesMs.push(now);
    }
  }
}

/** Starts the load; it runs until stop(). */
export function startLoad(options: LoadOptions): Load {
  const clients = options.clients ?? 6;
  const streamWords = options.streamWords ?? 30;
  const chunkDelayMs = options.chunkDelayMs ?? 100;
  const jsonWords = options.jsonWords ?? 8;
  const jsonDelayMs = options.jsonDelayMs ?? 150;
  const timeoutMs = options.requestTimeoutMs ?? 20_000;
  const requests: LoadRequest[] = [];
  let stopping = false;
  let sequence = 0;

  async function one(client: number, round: number): Promise<LoadRequest> {
    // Alternate kinds, and move to the next proxy every two requests, so both kinds reach every proxy.
    const stream = (client + round) % 2 === 0;
    const proxyIndex = Math.floor((client + round) / 2) % options.proxyBases.length;
    sequence += 1;
    const requestId = `${options.requestIdPrefix}-${String(sequence).padStart(5, '0')}`;
    const request: LoadRequest = { requestId, proxyIndex, stream, startedAtMs: Date.now(), wordTimesMs: [], complete: false, streamError: false };
    requests.push(request);
    const directives = stream
      ? `[[fake:reply_words=${streamWords}]] [[fake:chunk_delay_ms=${chunkDelayMs}]]`
      : `[[fake:reply_words=${jsonWords}]] [[fake:delay_ms=${jsonDelayMs}]]`;
    const body = {
      model: options.model, max_tokens: 64, stream,
      ...(stream ? { stream_options: { include_usage: true } } : {}),
      messages: [{ role: 'user', content: `fault load ${directives} [[fake:tag=${requestId}]]` }],
    };
    try {
      const response = await fetch(`${options.proxyBases[proxyIndex]}/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${options.apiKey}`, 'content-type': 'application/json', 'x-request-id': requestId },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(timeoutMs),
      });
      request.status = response.status;
      request.echoedRequestId = response.headers.get('x-request-id');
      if (response.status === 200 && stream) {
        await readStream(response, request);
      } else if (response.status === 200) {
        const json = await response.json() as { choices: Array<{ message: { content: string } }> };
        const now = Date.now();
        for (const word of json.choices[0]!.message.content.split(/\s+/)) if (word !== '') request.wordTimesMs.push(now);
        request.complete = true;
      } else {
        await response.arrayBuffer();
      }
    } catch {
      request.status ??= 0;
    }
    request.endedAtMs = Date.now();
    return request;
  }

  async function client(index: number): Promise<void> {
    for (let round = 0; !stopping; round += 1) {
      const request = await one(index, round);
      // A refused or failed request is followed by a short pause (pacing, not synchronisation),
      // so a dead proxy does not turn the clients into a busy loop.
      if (!request.complete) await sleep(100);
    }
  }

  const running = Promise.all(Array.from({ length: clients }, (_, index) => client(index)));
  return {
    requests,
    completed: () => requests.filter((r) => r.status === 200 && r.complete).length,
    open: () => requests.filter((r) => r.endedAtMs === undefined),
    async stop() { stopping = true; await running; },
  };
}

/** Polls `condition` every intervalMs until it holds; throws with `what` after timeoutMs (a bound, not a timing assertion). */
export async function waitFor(what: string, condition: () => boolean | Promise<boolean>, timeoutMs: number, intervalMs = 50): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await condition()) return;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(intervalMs);
  }
}
