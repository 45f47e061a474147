import type { ChatMessage, ChatRequest } from './chat-request.ts';
import type { NormalizedCompletion } from './normalized-completion.ts';

/**
 * Turns an upstream's tool-call ids into the gateway's own and back, statelessly: an id an
 * upstream made (`toolu_…`, `call_…`) tells a customer which vendor is behind a slug, so
 * clients only ever see ids the gateway issued, and the ids they send back are mapped to the
 * upstream's before the request leaves (docs/proxy.md, "Tool-call ids").
 */
export interface ToolCallIdCodec {
  /** The id a client is shown for an upstream's tool-call id. */
  conceal(upstreamId: string): string;
  /** The upstream's id behind an id the gateway issued; an id the gateway did not issue comes back unchanged. */
  reveal(clientId: string): string;
}

/** A codec that maps nothing: for tests of code that has no tool calls in it. */
export const unmappedToolCallIds: ToolCallIdCodec = {
  conceal: (upstreamId) => upstreamId,
  reveal: (clientId) => clientId,
};

/** Whether any message carries a tool-call id (assistant tool_calls or a tool message's tool_call_id). */
function carriesToolCallIds(messages: readonly ChatMessage[]): boolean {
  for (const message of messages) if (message.tool_calls !== undefined || message.tool_call_id !== undefined) return true;
  return false;
}

/**
 * The request as it goes upstream: every tool-call id the client sent back (assistant
 * `tool_calls[].id`, tool `tool_call_id`) mapped to the upstream's. The request itself is
 * returned when it has none (the common case costs no copy).
 */
export function revealToolCallIds(request: ChatRequest, codec: ToolCallIdCodec): ChatRequest {
  if (!carriesToolCallIds(request.messages)) return request;
  const messages = request.messages.map((message): ChatMessage => {
    if (message.tool_calls === undefined && message.tool_call_id === undefined) return message;
    const revealed: ChatMessage = { ...message };
    if (message.tool_call_id !== undefined) revealed.tool_call_id = codec.reveal(message.tool_call_id);
    if (message.tool_calls !== undefined) revealed.tool_calls = message.tool_calls.map((call) => ({ ...call, id: codec.reveal(call.id) }));
    return revealed;
  });
  return { ...request, messages };
}

/** The completion with each tool call's id replaced by the gateway's own. */
export function concealCompletionToolCallIds(completion: NormalizedCompletion, codec: ToolCallIdCodec): NormalizedCompletion {
  if (!completion.choices.some((choice) => choice.toolCalls.length > 0)) return completion;
  return {
    ...completion,
    choices: completion.choices.map((choice) => (choice.toolCalls.length === 0 ? choice : {
      ...choice,
      toolCalls: choice.toolCalls.map((call) => ({ ...call, id: codec.conceal(call.id) })),
    })),
  };
}

/**
 * Replaces, in place, the ids of the tool-call fragments of a decoded stream chunk with the
 * gateway's own (a fragment carries its id once, in the chunk that starts the call). The
 * choices are the decoder's fresh objects for this chunk only, so nothing else sees the change.
 */
export function concealStreamToolCallIds(
  choices: ReadonlyArray<{ delta: { tool_calls?: Array<{ id?: string }> } }>, codec: ToolCallIdCodec,
): void {
  for (const choice of choices) {
    const calls = choice.delta.tool_calls;
    if (calls === undefined) continue;
    for (const call of calls) if (call.id !== undefined) call.id = codec.conceal(call.id);
  }
}
