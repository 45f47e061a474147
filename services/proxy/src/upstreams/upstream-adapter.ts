import type { ChatRequest } from '../domain/chat-request.ts';
import type { UpstreamTarget } from '../domain/config-snapshot.ts';
import type { NormalizedCompletion, NormalizedUsage, StreamChoice } from '../domain/normalized-completion.ts';

export type {
  NormalizedChoice, NormalizedCompletion, NormalizedTokenLogprob, NormalizedUsage, StreamChoice, StreamToolCallDelta,
} from '../domain/normalized-completion.ts';

/** The HTTP request an adapter wants sent to its upstream. */
export interface UpstreamRequest {
  /** Path (and query) appended to the path of the upstream's base URL, e.g. `/chat/completions`. */
  path: string;
  headers: Record<string, string>;
  /** JSON text. */
  body: string;
}

/** The validated request plus what the gateway decided for it. */
export interface UpstreamChatRequest {
  request: ChatRequest;
  /** Completion budget after defaults and the context clamp. */
  maxTokens: number;
}

/** What a stream decoder makes of the upstream's events. */
export type StreamEvent =
  /** Choices to relay; `text` is everything in them that counts as completion tokens. */
  | { kind: 'chunk'; choices: StreamChoice[]; text: string }
  /**
   * The common chunk, already serialised: one choice of index 0 whose delta is `text` as its
   * content (and maybe the assistant role), without logprobs or a finish reason; `json` is exactly
   * the `JSON.stringify` of its choices array, so it is relayed without building objects.
   */
  | { kind: 'text'; text: string; json: string }
  /** The usage the upstream reports for the whole request. */
  | { kind: 'usage'; usage: NormalizedUsage }
  /** The upstream ended the stream normally. */
  | { kind: 'done' }
  /** The upstream reported an error inside the stream, or sent something unusable; the reason is for logs only. */
  | { kind: 'error'; reason: string };

/** Where a decoder's events go, in order: an array, or the relay taking each at once. */
export interface StreamEventSink {
  push(event: StreamEvent): unknown;
}

/** Turns one upstream's SSE events into the gateway's stream events; holds the state of one stream. */
export interface StreamDecoder {
  /** Decodes one SSE event (name and data), handing what it yields to `out`. */
  decode(event: string | undefined, data: string, out: StreamEventSink): void;
}

/**
 * One provider's translation, as pure transforms: the gateway's request to the provider's
 * HTTP request (streaming or not), the provider's JSON answer to the gateway's normalized
 * completion, and its SSE events to the gateway's stream events. Transport (pools, timeouts)
 * is shared and lives elsewhere.
 */
export interface UpstreamAdapter {
  /** The `provider_kind` of gateway models this adapter serves. */
  readonly providerKind: string;
  /**
   * The upstream HTTP request. Throws `invalid_request` (naming the param) for what this
   * provider cannot honour; it runs before the Reserve, so such a request moves no money.
   * When streaming, it always asks the upstream for usage.
   */
  buildRequest(target: UpstreamTarget, chat: UpstreamChatRequest): UpstreamRequest;
  /** The normalized completion of a JSON answer; throws when it is not a usable completion. */
  parseResponse(json: unknown): NormalizedCompletion;
  /** A decoder for one streamed answer. */
  createStreamDecoder(): StreamDecoder;
}
