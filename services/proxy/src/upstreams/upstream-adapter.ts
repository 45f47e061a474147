import type { CacheScope } from '../domain/cache-scope.ts';
import type { ChatRequest } from '../domain/chat-request.ts';
import type { UpstreamTarget } from '../domain/config-snapshot.ts';
import type { EmbeddingsInput } from '../domain/embeddings-request.ts';
import type { NormalizedCompletion, NormalizedUsage, StreamChoice } from '../domain/normalized-completion.ts';
import type { ForwardedReasoning } from '../domain/reasoning.ts';

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
  /**
   * The organisation's cache scope when the request can be cached (domain/cache-scope.ts): the
   * adapter puts its marker where the provider's prefix cache starts and sends its
   * prompt_cache_key where the provider takes one. Absent: the request is sent as it is.
   */
  cacheScope?: CacheScope;
  /** The reasoning controls to send, as checkReasoning judged them; absent: none. */
  reasoning?: ForwardedReasoning;
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

/** What an embeddings call asks of the upstream: the validated request, minus what the gateway answers itself. */
export interface UpstreamEmbeddingsRequest {
  /** As the client gave it: one text or token array, or a batch of either. */
  input: EmbeddingsInput;
  /** The size of each vector, when the client asked for one (models that can shorten theirs). */
  dimensions: number | undefined;
  /** The client's end-user id, forwarded as OpenAI's `user`. */
  user: string | undefined;
}

/** One vector of an upstream's embeddings answer, decoded. */
export interface NormalizedEmbedding {
  /** Which input it belongs to (the position in the request's batch). */
  index: number;
  /** The vector's components, as the upstream's numbers (or the float32 values of its base64). */
  embedding: number[];
}

/** An upstream's embeddings answer after its allowlist: the vectors and the usage it reports. */
export interface NormalizedEmbeddings {
  /** In the order the upstream sent them; the caller checks there is exactly one per input. */
  data: NormalizedEmbedding[];
  /** The upstream's `usage.prompt_tokens`; undefined when it reported none (or none usable). */
  promptTokens: number | undefined;
}

/** A provider's embeddings translation, as pure transforms (only providers with an embeddings API have one). */
export interface UpstreamEmbeddingsAdapter {
  /** The upstream HTTP request of an embeddings call: the upstream's model name and the request's fields, in the provider's terms. */
  buildRequest(target: UpstreamTarget, request: UpstreamEmbeddingsRequest): UpstreamRequest;
  /** The vectors and usage of a JSON answer, nothing else; throws when it is not a usable embeddings answer. */
  parseResponse(json: unknown): NormalizedEmbeddings;
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
  /** Its embeddings translation; absent for a provider with no embeddings API (Anthropic's). */
  readonly embeddings?: UpstreamEmbeddingsAdapter;
}
