import { GatewayError } from '@gateway/errors';
import type { ChatMessage, ChatRequest } from './chat-request.ts';
import type { NormalizedCompletion } from './normalized-completion.ts';
import type { ReasoningSeal } from './reasoning-seal.ts';

/**
 * Turns an upstream's tool-call ids into the gateway's own and back, statelessly: an id an
 * upstream made (`toolu_…`, `call_…`) tells a customer which vendor is behind a slug, so
 * clients only ever see ids the gateway issued, and the ids they send back are mapped to the
 * upstream's before the request leaves (docs/surfaces/tool-call-ids.md).
 */
export interface ToolCallIdCodec {
  /** The id a client is shown for an upstream's tool-call id. */
  conceal(upstreamId: string): string;
  /**
   * The upstream's id behind an id the gateway issued; an id the gateway did not issue comes
   * back unchanged; undefined for an id shaped like the gateway's that does not open (altered,
   * or issued under another key), which the request is refused for (400).
   */
  reveal(clientId: string): string | undefined;
  /** Seals reasoning tokens under the same key (domain/reasoning-seal.ts); absent: reasoning tokens pass as they are. */
  readonly reasoning?: ReasoningSeal;
}

/** Whether any message carries a tool-call id (assistant tool_calls or a tool message's tool_call_id). */
function carriesToolCallIds(messages: readonly ChatMessage[]): boolean {
  for (const message of messages) if (message.tool_calls !== undefined || message.tool_call_id !== undefined) return true;
  return false;
}

/** The upstream's id behind a client's, or the 400 naming the parameter that carried one the gateway cannot map back. */
function revealOrRefuse(codec: ToolCallIdCodec, clientId: string, param: string): string {
  const upstreamId = codec.reveal(clientId);
  if (upstreamId !== undefined) return upstreamId;
  // Refused here, before the Reserve: the upstream would refuse the id too (a 502 the client
  // could not act on), and no money moves for a request that cannot succeed.
  throw new GatewayError('invalid_request', {
    param,
    publicMessage: `Invalid ${param}: it is not a tool-call id this gateway issued, or it was altered or issued under an earlier key. `
      + 'Send back each id exactly as the gateway returned it.',
  });
}

/**
 * Refuses the first tool message that answers no tool call of the nearest assistant message
 * before it (OpenAI's own rule), with a 400 naming `messages[i].tool_call_id`. Ids are compared
 * as the upstream will see them (revealed). Refused here, before the Reserve: the upstream would
 * refuse the conversation (a retryable-looking 502 the client could not act on) after money had
 * been held, and no money moves for a request that cannot succeed.
 */
function refuseUnansweredToolResults(messages: readonly ChatMessage[]): void {
  let called: ReadonlySet<string> = new Set();
  messages.forEach((message, i) => {
    if (message.role === 'assistant') called = new Set((message.tool_calls ?? []).map((call) => call.id));
    if (message.role !== 'tool' || message.tool_call_id === undefined || called.has(message.tool_call_id)) return;
    const param = `messages[${i}].tool_call_id`;
    throw new GatewayError('invalid_request', {
      param,
      publicMessage: `Invalid ${param}: it matches no tool_calls id of the preceding assistant message. `
        + 'Each tool message answers one of the tool calls of the assistant message before it, with that call\'s id exactly.',
    });
  });
}

/**
 * The request as it goes upstream: every tool-call id the client sent back (assistant
 * `tool_calls[].id`, tool `tool_call_id`) mapped to the upstream's. The request itself is
 * returned when it has none (the common case costs no copy). Refused with a 400
 * `invalid_request`: an id shaped like the gateway's that does not open, naming it
 * (`messages[i].tool_call_id`, `messages[i].tool_calls[j].id`, in the internal request's order),
 * and a tool message whose id matches no tool call of the nearest preceding assistant message
 * (`messages[i].tool_call_id`).
 */
export function revealToolCallIds(request: ChatRequest, codec: ToolCallIdCodec): ChatRequest {
  if (!carriesToolCallIds(request.messages)) return request;
  const messages = request.messages.map((message, i): ChatMessage => {
    if (message.tool_calls === undefined && message.tool_call_id === undefined) return message;
    const revealed: ChatMessage = { ...message };
    if (message.tool_call_id !== undefined) revealed.tool_call_id = revealOrRefuse(codec, message.tool_call_id, `messages[${i}].tool_call_id`);
    if (message.tool_calls !== undefined) {
      revealed.tool_calls = message.tool_calls.map((call, j) => ({ ...call, id: revealOrRefuse(codec, call.id, `messages[${i}].tool_calls[${j}].id`) }));
    }
    return revealed;
  });
  refuseUnansweredToolResults(messages);
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

/** The tool-call fragments of one decoded stream chunk, as the concealer reads and changes them. */
type StreamChunkChoices = ReadonlyArray<{ delta: { tool_calls?: Array<{ id?: string }> } }>;

/**
 * The function that replaces, in place, the tool-call ids of each decoded chunk of one stream
 * with the gateway's own. Each distinct upstream id is sealed once and every fragment that
 * repeats it (vLLM resends the id in each arguments fragment) gets the same gateway id, because
 * clients merge a call's fragments by index and id (LangChain's ChatOpenAI splits a call whose
 * fragments carry different ids into broken ones). The choices it changes are the decoder's
 * fresh objects for one chunk only, so nothing else sees the change.
 */
export function createStreamToolCallIdConcealer(codec: ToolCallIdCodec): (choices: StreamChunkChoices) => void {
  const gatewayIds = new Map<string, string>();
  return (choices) => {
    for (const choice of choices) {
      const calls = choice.delta.tool_calls;
      if (calls === undefined) continue;
      for (const call of calls) {
        if (call.id === undefined) continue;
        let gatewayId = gatewayIds.get(call.id);
        if (gatewayId === undefined) {
          gatewayId = codec.conceal(call.id);
          gatewayIds.set(call.id, gatewayId);
        }
        call.id = gatewayId;
      }
    }
  };
}
