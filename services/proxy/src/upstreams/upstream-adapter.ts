import type { ChatRequest } from '../domain/chat-request.ts';
import type { UpstreamTarget } from '../domain/config-snapshot.ts';
import type { NormalizedCompletion } from '../domain/normalized-completion.ts';

export type {
  NormalizedChoice, NormalizedCompletion, NormalizedTokenLogprob, NormalizedToolCall, NormalizedUsage,
} from '../domain/normalized-completion.ts';

/** The HTTP request an adapter wants sent to its upstream. */
export interface UpstreamRequest {
  /** Path appended to the path of the upstream's base URL, e.g. `/chat/completions`. */
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

/**
 * One provider's translation, as pure transforms: the gateway's request to the provider's
 * HTTP request, and the provider's JSON answer to the gateway's normalized completion.
 * Transport (pools, timeouts) is shared and lives elsewhere. `parseResponse` throws when the
 * answer is not a usable completion.
 */
export interface UpstreamAdapter {
  /** The `provider_kind` of gateway models this adapter serves. */
  readonly providerKind: string;
  buildRequest(target: UpstreamTarget, chat: UpstreamChatRequest): UpstreamRequest;
  parseResponse(json: unknown): NormalizedCompletion;
}
